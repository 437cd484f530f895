"""torch-npu wheels for the realcode suite: pinned, fetched once per machine, verified.

Each release is pinned by version, exact file and sha256. A missing wheel is fetched with
``pip download --no-deps`` (pip checks the pinned hash too) into a cache directory that
outlives the test run: ``$SKGATE_REALCODE_CACHE``, else ``$XDG_CACHE_HOME/skgate-realcode``,
else ``~/.cache/skgate-realcode``. The wheel is never imported or installed: only the few
torchair/npugraph_ex Python files the launcher needs are extracted (``zipfile``), next to
it in the cache, and loaded from there unmodified.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: pip's platform for the pinned files. The extracted files are pure Python: any
#: platform's wheel carries the same code; one file per version is pinned.
PLATFORM = "manylinux_2_28_x86_64"
PYTHON_VERSION = "3.11"
DOWNLOAD_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Pin:
    version: str
    filename: str
    sha256: str
    #: The project on the index (pure-Python wheels download under any --platform).
    project: str = "torch-npu"


PINS = (
    Pin(
        "2.7.1.post2",
        "torch_npu-2.7.1.post2-cp311-cp311-manylinux_2_28_x86_64.whl",
        "e3a463946b8ae13edb4a2fe035e652602c7c9eff86be8a57772d5e7f35432022",
    ),
    Pin(
        "2.9.0.post2",
        "torch_npu-2.9.0.post2-cp311-cp311-manylinux_2_28_x86_64.whl",
        "dfdb746cc6c66d05f1cad62a7b6f0842fc689ccfbeae7764e56a44ecae0423f0",
    ),
    Pin(
        "2.11.0.post3",
        "torch_npu-2.11.0.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
        "7489f67010989c56ed39deb6e25cb809c4d2cc99e7cc3426386e044c4ee8b55d",
    ),
    Pin(
        "2.14.0",
        "torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "7736f7d82cf9f16c7dfc4537f7e7c638153da760273a193455e70857f912189e",
    ),
)

#: The members the launcher reads, per flavour directory under torch_npu/dynamo/.
NEEDED = (
    "_acl_concrete_graph/static_kernel.py",
    "core/utils.py",
    "__init__.py",  # npugraph_ex: atexit / signal handler (read as text only)
    "core/_backend.py",  # torchair: atexit / signal handler (read as text only)
)
FLAVOURS = ("torchair", "npugraph_ex")


class Unavailable(Exception):
    """The wheel cannot be fetched (no index, no network): the suite skips, saying why."""


class Mismatch(Exception):
    """A file that does not have the pinned sha256: refused."""


def cache_dir() -> Path:
    override = os.environ.get("SKGATE_REALCODE_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skgate-realcode"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check(pin: Pin, path: Path) -> None:
    got = sha256_of(path)
    if got != pin.sha256:
        raise Mismatch(
            f"{path} has sha256 {got}, pinned {pin.sha256}: refused; delete it to fetch again"
        )


def _download(pin: Pin, dest: Path) -> None:
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{pin.project}=={pin.version} --hash=sha256:{pin.sha256}\n")
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
        argv += ["--only-binary=:all:", "--platform", PLATFORM, "--python-version", PYTHON_VERSION]
        argv += ["--disable-pip-version-check", "--dest", tmp, "-r", str(req)]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise Unavailable(
                f"pip download {pin.project}=={pin.version} took over {exc.timeout:g} s"
            ) from exc
        got = Path(tmp) / pin.filename
        if done.returncode != 0 or not got.is_file():
            lines = [ln for ln in (done.stderr or done.stdout).splitlines() if "ERROR" in ln]
            why = (lines or (done.stderr or done.stdout or "no output").splitlines() or ["?"])[-1]
            raise Unavailable(f"pip download {pin.project}=={pin.version} failed: {why.strip()}")
        _check(pin, got)
        got.replace(dest)  # whole, verified files only ever appear in the cache


def wheel(pin: Pin, fetch: bool = True) -> Path:
    """The pinned wheel in the cache, fetched when missing (unless ``fetch`` is false:
    the index is known unreachable), verified every time."""
    root = cache_dir() / "wheels"
    root.mkdir(parents=True, exist_ok=True)
    path = root / pin.filename
    if not path.is_file():
        if not fetch:
            raise Unavailable(f"{pin.project}=={pin.version} is not in the cache")
        _download(pin, path)
    _check(pin, path)
    return path


def extracted(pin: Pin, fetch: bool = True) -> Path:
    """The directory holding ``torch_npu/dynamo/<flavour>/...`` of the needed files only."""
    out = cache_dir() / "src" / f"{pin.version}-{pin.sha256[:12]}"
    whl = wheel(pin, fetch)  # verified on every use, extracted or not
    if (out / ".complete").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent))
    try:
        wanted = {f"torch_npu/dynamo/{fl}/{member}" for fl in FLAVOURS for member in NEEDED}
        wanted.add("torch_npu/version.py")
        with zipfile.ZipFile(whl) as zf:
            for name in zf.namelist():
                if name in wanted:
                    zf.extract(name, tmp)
        (tmp / ".complete").write_text(pin.filename + "\n")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out
