"""setuptools' real start-up files against the hook-probe cache's known code (C6, issue 29).

The catalogue (``skgate.preflight.hooks.startup_code.KNOWN_STARTUP_CODE``) names every
``distutils-precedence.pth`` and every ``_distutils_hack/__init__.py`` whose start-up
reads only ``SETUPTOOLS_USE_DISTUTILS``, by sha256. Here those files come from pinned
setuptools wheels on PyPI (fetched like the torch-npu ones: ``realcode_wheels``), are
planted into a real venv, and the scan is asked twice, from two directories with other
variables: known code keeps its start-up answer (``cached``), anything else probes again.
Releases: 59.8.0 (the line defaults to ``stdlib``; its ``_distutils_hack`` imports ``re``,
``importlib``, ``warnings`` and ``contextlib`` at start-up, so is not listed), 60.4.0 (the
first listed), 65.5.0 (Python 3.11's ``ensurepip``), 84.2.1 (the newest on 2026-12-04).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import realcode_wheels as wheels

from skgate.preflight.hooks import scan as hooks
from skgate.preflight.hooks import startup_code

pytestmark = pytest.mark.realcode

PINS = (
    wheels.Pin(
        "59.8.0",
        "setuptools-59.8.0-py3-none-any.whl",
        "608a7885b664342ae9fafc43840b29d219c5a578876f6f7e00c4e2612160587f",
        "setuptools",
    ),
    wheels.Pin(
        "60.4.0",
        "setuptools-60.4.0-py3-none-any.whl",
        "73e919a82b147f8a2a7b66662707af96b6154d3b8167e886f96875f0d9f3e159",
        "setuptools",
    ),
    wheels.Pin(
        "65.5.0",
        "setuptools-65.5.0-py3-none-any.whl",
        "f62ea9da9ed6289bfe868cd6845968a2c854d1427f8548d52cae02a42b4f0356",
        "setuptools",
    ),
    wheels.Pin(
        "84.2.1",
        "setuptools-84.2.1-py3-none-any.whl",
        "ca140b45d5325a9478f880e351484f62fef15f336462e449ca0c03c873d589c2",
        "setuptools",
    ),
)
#: The first release whose ``_distutils_hack`` start-up imports nothing beyond sys and os.
FIRST_KNOWN = (60, 4, 0)


def _release(pin: wheels.Pin) -> tuple[int, ...]:
    return tuple(int(x) for x in pin.version.split("."))


def _files(pin: wheels.Pin) -> tuple[bytes, bytes]:
    """(distutils-precedence.pth, _distutils_hack/__init__.py) of the pinned wheel."""
    try:
        whl = wheels.wheel(pin)
    except wheels.Unavailable as exc:
        pytest.skip(f"{exc} ({wheels.cache_dir()} keeps fetched wheels)")
    with zipfile.ZipFile(whl) as zf:
        return zf.read("distutils-precedence.pth"), zf.read("_distutils_hack/__init__.py")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.version)
def test_the_catalogue_lists_exactly_what_each_wheel_ships(pin: wheels.Pin) -> None:
    pth, hack = _files(pin)
    assert _sha(pth) in startup_code.DISTUTILS_PTH_SHA256
    assert (_sha(hack) in startup_code.DISTUTILS_HACK_SHA256) == (_release(pin) >= FIRST_KNOWN)


@pytest.mark.parametrize("use", [None, "local", "stdlib"])
@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.version)
def test_a_new_directory_reuses_the_start_up_answer_of_known_code_only(
    pin: wheels.Pin,
    use: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent runs each compile from a new directory with a new job id: the start-up
    answer of a stock venv holds there when all its start-up code is known."""
    pth, hack = _files(pin)
    monkeypatch.setenv("SKGATE_HOOK_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    v = sys.version_info
    site = venv / "lib" / f"python{v.major}.{v.minor}" / "site-packages"
    (site / "distutils-precedence.pth").write_bytes(pth)
    (site / "_distutils_hack").mkdir()
    (site / "_distutils_hack" / "__init__.py").write_bytes(hack)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "LANG": "C.UTF-8"}
    if use is not None:
        env["SETUPTOOLS_USE_DISTUTILS"] = use
    python = str(venv / "bin" / "python")
    first = hooks.scan(python, {**env, "JOB_ID": "1"}, cwd=str(one))
    assert (first.extra["probe_answer"], first.extra["startup_probe"]) == ("probed", "ran")
    assert first.unapproved == ()
    moved = hooks.scan(python, {**env, "JOB_ID": "2"}, cwd=str(two))
    # The line imports _distutils_hack when the variable says local, or is unset in the
    # releases whose default is local (all but 59.8.0 here).
    imported = use == "local" or (use is None and _release(pin) >= (60, 0, 0))
    known = not imported or _release(pin) >= FIRST_KNOWN
    assert moved.extra["probe_answer"] == ("cached" if known else "probed")
    assert moved.to_dict() | {"probe_answer": ""} == first.to_dict() | {"probe_answer": ""}
