"""``--enforce-jobs``: put skgate's op_compiler shim first on the command's PATH (C5).

A real launcher (torchair) passes ``-j os.cpu_count()`` and reads no
``NPU_STATIC_KERNEL_COMPILE_JOBS``, so the frozen value is recorded but not in effect
(``effective_jobs`` says so afterwards). With the explicit opt-in, preflight copies the
shim skgate ships (``skgate/data/op_compiler.sh``, a POSIX sh script: it starts no Python,
so no interpreter start-up hook runs, C6) into the attempt's own ``shim/bin/op_compiler``,
checks the copy's sha256 against the shipped file, and puts that directory first on the
command's PATH. The shim execs the real op_compiler found on the PATH the command had
before, with ``-j`` set to the frozen value, and leaves both argvs in ``shim/calls/``
(read into the stage record by :mod:`skgate.evidence.shim_calls`).

Never silent (C5: the value is never changed without a record): ``control.json`` says
the shim was in force (``controls.jobs.shim``: path, sha256, the PATH it was put on),
and the stage record keeps the launcher's own argv as ``original_argv``. Without the
opt-in nothing here runs and nothing changes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from skgate.evidence.digest import sha256_bytes, sha256_file
from skgate.evidence.files import SHIM_BIN, SHIM_CALLS

#: The name the launcher looks up on PATH.
SHIM_NAME = "op_compiler"
#: What the shim reads (set only in the command's environment).
ENV_JOBS = "SKGATE_SHIM_JOBS"
ENV_PATH = "SKGATE_SHIM_PATH"
ENV_DIR = "SKGATE_SHIM_DIR"
ENV_CALLS = "SKGATE_SHIM_CALLS"
SHIM_VARS = (ENV_JOBS, ENV_PATH, ENV_DIR, ENV_CALLS)


def shim_source() -> bytes:
    """The shim as shipped (package data)."""
    # Only with --enforce-jobs: importlib.resources loads tempfile, zipfile and more
    # (start-up, issue 29).
    from importlib import resources  # noqa: PLC0415

    return resources.files("skgate").joinpath("data/op_compiler.sh").read_bytes()


def shim_fingerprint() -> str:
    return "sha256:" + sha256_bytes(shim_source())


def install_shim(attempt_dir: Path | None, env: dict[str, str], frozen: object) -> dict[str, Any]:
    """Install the shim for one attempt and point ``env`` at it; the control record.

    ``attempt_dir`` None is ``skgate preflight`` (nothing is written: the record says
    what a run would do). A frozen value that is not a whole number leaves ``env``
    untouched and says why (``in_force`` false).
    """
    record: dict[str, Any] = {
        "opted_in": True,
        "name": SHIM_NAME,
        "fingerprint": shim_fingerprint(),
        "jobs": frozen,
        "in_force": False,
        "path": None,
        "calls": None,
        "original_path": env.get("PATH", ""),
        "note": "the shim execs the real op_compiler found on original_path with -j set to "
        "the frozen value; the stage record keeps the launcher's argv as original_argv",
    }
    if not isinstance(frozen, int) or isinstance(frozen, bool) or frozen < 1:
        record["problem"] = "no frozen jobs value: the shim was not installed"
        return record
    if attempt_dir is None:
        record["problem"] = "preflight only: a run installs the shim into its attempt"
        return record
    bin_dir = attempt_dir / SHIM_BIN
    calls = attempt_dir / SHIM_CALLS
    bin_dir.mkdir(parents=True, exist_ok=False)
    calls.mkdir(parents=True, exist_ok=False)
    shim = bin_dir / SHIM_NAME
    source = shim_source()
    # Created exclusively, executable, then read back: the file on PATH is the shipped one.
    fd = os.open(shim, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o555)
    try:
        os.write(fd, source)
    finally:
        os.close(fd)
    installed = f"sha256:{sha256_file(shim)}"
    if installed != record["fingerprint"]:  # pragma: no cover - a disk that lies
        record["problem"] = f"the installed shim's sha256 {installed} differs from the shipped one"
        return record
    original = env.get("PATH", "")
    # A shim of an outer skgate run already on PATH is not the real op_compiler: the
    # shim looks the real one up past it (else two shims would exec each other).
    dirs = original.split(os.pathsep)
    others = [d for d in dirs if _is_shim(Path(d or ".") / SHIM_NAME, record["fingerprint"])]
    env[ENV_JOBS] = str(frozen)
    env[ENV_PATH] = os.pathsep.join(d for d in dirs if d not in others)
    if others:
        record["skipped_shims"] = others
    env[ENV_DIR] = str(bin_dir)
    env[ENV_CALLS] = str(calls)
    env["PATH"] = str(bin_dir) + (os.pathsep + original if original else "")
    record.update(in_force=True, path=str(shim), calls=str(calls))
    return record


def _is_shim(path: Path, fingerprint: str) -> bool:
    try:
        return path.is_file() and f"sha256:{sha256_file(path)}" == fingerprint
    except OSError:
        return False
