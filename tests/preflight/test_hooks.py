"""Start-up hook scan (C6) against real interpreters and virtual environments made here.

Each test builds a fresh venv (``python -m venv --without-pip``, ~50 ms) and plants one
kind of hook; the scan must find it, it must block ``prepare``, and approving exactly its
fingerprint must let the run go.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skgate.model.errors import UsageError
from skgate.model.request import RunRequest
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.prepare import prepare
from skgate.proc.observe import read_stat

# The interpreter the test venv was made from (user site enabled there). Python 3.10's
# sys._base_executable names the venv's own python, so build the path from base_prefix.
_BASE_CANDIDATE = os.path.join(
    sys.base_prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}"
)
BASE_PYTHON = (
    _BASE_CANDIDATE
    if os.path.exists(_BASE_CANDIDATE)
    else getattr(sys, "_base_executable", sys.executable)
)
DISTUTILS_PTH = (
    "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') "
    "== 'local'; enabled and __import__('_distutils_hack').add_shim(); \n"
)


def make_venv(where: Path) -> tuple[Path, Path]:
    """A real venv without pip: (python, site-packages)."""
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(where)], check=True, timeout=60)
    python = where / "bin" / "python"
    v = sys.version_info
    site = where / "lib" / f"python{v.major}.{v.minor}" / "site-packages"
    assert site.is_dir()
    return python, site


@pytest.fixture
def venv(tmp_path: Path) -> tuple[Path, Path]:
    return make_venv(tmp_path / "venv")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


def request_for(interp: Path, tmp_path: Path, **kw: object) -> RunRequest:
    env = dict(kw.pop("env", {}))  # type: ignore[call-overload]
    # A compiler name nobody uses: other agents' simulated opc must not interfere.
    env.setdefault("SKGATE_COMPILER_NAMES", "skgt-none-xyz")
    unset = tuple(k for k in os.environ if k.startswith("PYTHON") and k not in env)
    return RunRequest(
        argv=(str(interp), "-c", "pass"),
        cwd=str(tmp_path),
        root=str(tmp_path / "runs"),
        jobs="2",
        env=env,
        unset_env=unset,
        lease_timeout=0.0,
        **kw,  # type: ignore[arg-type]
    )


def kinds(scan: hooks.HookScan) -> list[str]:
    return sorted(f.kind for f in scan.findings)


def test_clean_venv_scans_clean(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = venv
    result = hooks.scan(str(python), clean_env())
    assert result.findings == ()
    assert result.problems == ()
    assert result.interpreter["prefix"] == str(python.parent.parent)
    plan = prepare(request_for(python, tmp_path), tmp_path / "runs")
    assert plan.blocked == ()


def test_project_venv_scans_clean() -> None:
    """The project venv has an editable .pth (path line) and distutils-precedence.pth:
    both are allowed, and the allowance says so, or every demo run would block."""
    result = hooks.scan(sys.executable, clean_env())
    assert result.unapproved == ()
    # Whatever .pth files this environment has (an editable install adds a path-only one,
    # a plain install does not), each is covered by a stated allowance.
    site_dirs = {p for p in sys.path if p.endswith("site-packages")}
    present = {str(f) for d in site_dirs for f in Path(d).glob("*.pth")}
    allowed = {str(a["path"]) for a in result.allowances}
    assert present <= allowed
    assert all(a["reason"] for a in result.allowances)


@pytest.mark.parametrize("as_package", [False, True])
def test_sitecustomize_found_blocks_and_approval_lets_it_go(
    venv: tuple[Path, Path], tmp_path: Path, as_package: bool
) -> None:
    python, site = venv
    if as_package:
        (site / "sitecustomize").mkdir()
        (site / "sitecustomize" / "__init__.py").write_text("X = 1\n")
    else:
        (site / "sitecustomize.py").write_text("X = 1\n")
    plan = prepare(request_for(python, tmp_path), tmp_path / "runs")
    found = plan.controls["hooks"]["findings"]
    assert [f["kind"] for f in found] == ["sitecustomize"]
    assert len(plan.blocked) == 1
    assert found[0]["fingerprint"] in plan.blocked[0]
    approved = prepare(
        request_for(python, tmp_path, approved_hooks=(found[0]["fingerprint"],)),
        tmp_path / "runs",
    )
    assert approved.blocked == ()
    assert approved.controls["hooks"]["findings"][0]["approved_by"] == "--approve-hook"


def test_pth_import_line_found_path_line_allowed(venv: tuple[Path, Path]) -> None:
    python, site = venv
    (site / "aaa-paths.pth").write_text("# comment\nsomedir\n")
    (site / "somedir").mkdir()
    (site / "zzz-hook.pth").write_text("import os; os.environ.setdefault('X', '1')\n")
    result = hooks.scan(str(python), clean_env())
    assert kinds(result) == ["pth-import"]
    assert result.findings[0].path == str(site / "zzz-hook.pth")
    assert any(a["path"] == str(site / "aaa-paths.pth") for a in result.allowances)


def test_distutils_pth_allowed_only_by_content(venv: tuple[Path, Path]) -> None:
    python, site = venv
    (site / "distutils-precedence.pth").write_text(DISTUTILS_PTH)
    result = hooks.scan(str(python), clean_env())
    assert result.findings == ()
    assert any("distutils-precedence" in a["reason"] for a in result.allowances)
    # Same file name, other content: the name alone is not an allowance.
    (site / "distutils-precedence.pth").write_text("import json\n")
    assert kinds(hooks.scan(str(python), clean_env())) == ["pth-import"]


def test_pythonstartup_found(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = venv
    startup = tmp_path / "startup.py"
    startup.write_text("print('hi')\n")
    result = hooks.scan(str(python), clean_env(PYTHONSTARTUP=str(startup)))
    assert kinds(result) == ["pythonstartup"]


def test_monkey_patch_dir_on_pythonpath_found(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = venv
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "json.py").write_text("# shadows the stdlib json\n")
    (patch / "myapp_helpers.py").write_text("\n")  # shadows nothing
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "myapp_only.py").write_text("\n")
    env = clean_env(PYTHONPATH=os.pathsep.join([str(patch), str(plain), str(tmp_path / "gone")]))
    result = hooks.scan(str(python), env)
    assert kinds(result) == ["pythonpath-shadow"]
    assert result.findings[0].path == str(patch)
    entries = result.pythonpath
    assert [e["path"] for e in entries] == [str(patch), str(plain), str(tmp_path / "gone")]
    assert [e["exists"] for e in entries] == [True, True, False]
    assert entries[0]["shadows"] == ["json (stdlib)"]


def test_startup_shim_importing_torch_npu_found(venv: tuple[Path, Path]) -> None:
    """A .pth line that imports a (fake) torch_npu at start-up: the static scan names the
    hook and what it imports, without running it; once the hook is approved, the
    start-up probe runs and reports the module it dragged in."""
    python, site = venv
    (site / "torch_npu").mkdir()
    (site / "torch_npu" / "__init__.py").write_text("LOADED = True\n")
    (site / "shim.pth").write_text("import torch_npu\n")
    result = hooks.scan(str(python), clean_env())
    assert kinds(result) == ["pth-import"]
    assert "it imports torch_npu" in result.findings[0].detail
    assert result.extra["startup_probe"] == "not run"
    assert hooks.NOT_PROBED in result.notes
    fp = result.findings[0].fingerprint
    result = hooks.scan(str(python), clean_env(), approved=[fp])
    assert result.extra["startup_probe"] == "ran"
    assert kinds(result) == ["pth-import", "startup-module"]
    shim = next(f for f in result.findings if f.kind == "startup-module")
    assert shim.path == str(site / "torch_npu" / "__init__.py")
    assert "torch_npu" in shim.detail


def test_sitecustomize_importing_app_module_reports_both(
    venv: tuple[Path, Path], tmp_path: Path
) -> None:
    python, site = venv
    (site / "myapp_patch.py").write_text("PATCHED = True\n")
    (site / "sitecustomize.py").write_text("import myapp_patch\n")
    first = hooks.scan(str(python), clean_env())
    assert kinds(first) == ["sitecustomize"]  # the probe that would run it did not run
    assert "it imports myapp_patch" in first.findings[0].detail
    plan = prepare(request_for(python, tmp_path), tmp_path / "runs")
    assert len(plan.blocked) == 1
    one = (first.findings[0].fingerprint,)
    result = hooks.scan(str(python), clean_env(), approved=one)
    assert kinds(result) == ["sitecustomize", "startup-module"]
    plan = prepare(request_for(python, tmp_path, approved_hooks=one), tmp_path / "r1")
    assert len(plan.blocked) == 1
    assert "myapp_patch" in plan.blocked[0]
    fps = tuple(f.fingerprint for f in result.findings)
    assert prepare(request_for(python, tmp_path, approved_hooks=fps), tmp_path / "r2").blocked == ()


def test_usercustomize_in_user_site_found(tmp_path: Path) -> None:
    """usercustomize runs from the user site of an interpreter that enables it."""
    v = sys.version_info
    user_site = tmp_path / "ubase" / "lib" / f"python{v.major}.{v.minor}" / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "usercustomize.py").write_text("Y = 2\n")
    result = hooks.scan(BASE_PYTHON, clean_env(PYTHONUSERBASE=str(tmp_path / "ubase")))
    found = [f for f in result.findings if f.kind == "usercustomize"]
    assert [f.path for f in found] == [str(user_site / "usercustomize.py")]
    # With -s on the command, the user site is off: nothing from it runs.
    quiet = hooks.scan(
        BASE_PYTHON, clean_env(PYTHONUSERBASE=str(tmp_path / "ubase")), flags=("-s",)
    )
    assert not [f for f in quiet.findings if f.kind == "usercustomize"]


def test_fingerprint_stable_and_content_bound(venv: tuple[Path, Path]) -> None:
    python, site = venv
    (site / "sitecustomize.py").write_text("X = 1\n")
    first = hooks.scan(str(python), clean_env()).findings[0].fingerprint
    assert hooks.scan(str(python), clean_env()).findings[0].fingerprint == first
    (site / "sitecustomize.py").write_text("X = 2\n")
    assert hooks.scan(str(python), clean_env()).findings[0].fingerprint != first


def test_command_disabling_site_skips_site_hooks(venv: tuple[Path, Path]) -> None:
    python, site = venv
    (site / "sitecustomize.py").write_text("X = 1\n")
    result = hooks.scan(str(python), clean_env(), flags=("-S",))
    assert result.findings == ()
    assert any("-S" in n for n in result.notes)


def test_baseline_frozen_once_and_approves(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, site = venv
    (site / "sitecustomize.py").write_text("X = 1\n")
    (site / "hook.pth").write_text("import os\n")
    result = hooks.scan(str(python), clean_env())
    baseline = tmp_path / "baseline.json"
    data = hooks.freeze_baseline(baseline, result)
    assert data["schema"] == "skgate.hook-baseline/1"
    assert json.loads(baseline.read_text())["fingerprints"] == sorted(
        f.fingerprint for f in result.findings
    )
    with pytest.raises(UsageError, match="already exists"):
        hooks.freeze_baseline(baseline, result)
    plan = prepare(request_for(python, tmp_path, hook_baseline=str(baseline)), tmp_path / "runs")
    assert plan.blocked == ()
    assert {f["approved_by"] for f in plan.controls["hooks"]["findings"]} == {"baseline"}


def test_bad_baseline_and_bad_fingerprint_are_usage_errors(
    venv: tuple[Path, Path], tmp_path: Path
) -> None:
    python, _ = venv
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="unreadable"):
        prepare(request_for(python, tmp_path, hook_baseline=str(bad)), tmp_path / "runs")
    with pytest.raises(UsageError, match="does not exist"):
        prepare(request_for(python, tmp_path, hook_baseline=str(tmp_path / "no")), tmp_path / "r")
    with pytest.raises(UsageError, match="64 hex"):
        prepare(request_for(python, tmp_path, approved_hooks=("abc123",)), tmp_path / "runs")


@pytest.mark.slow
def test_hanging_probe_is_bounded_and_blocks(venv: tuple[Path, Path], tmp_path: Path) -> None:
    """A hook that hangs: the start-up probe is killed (its own group) at the timeout
    and the preflight is blocked, not passed."""
    python, site = venv
    pidfile = tmp_path / "hook.pid"
    (site / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "if not sys.flags.no_site:\n"
        f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "    signal.pause()  # a start-up hook that hangs\n"
    )
    fp = hooks.scan(str(python), clean_env()).findings[0].fingerprint
    assert not pidfile.exists()  # the static scan never ran it
    t0 = time.monotonic()
    result = hooks.scan(str(python), clean_env(), timeout=1.5, approved=[fp])
    assert time.monotonic() - t0 < 10
    assert any("did not finish" in p for p in result.problems)
    pid = int(pidfile.read_text())
    stat = read_stat(pid)
    assert stat is None or stat.zombie  # the probe's group was ended, by its own pid
    assert any("scan failed" in r for r in result.blocked_reasons())


def test_crashing_startup_probe_blocks(venv: tuple[Path, Path]) -> None:
    python, site = venv
    (site / "sitecustomize.py").write_text("import sys\nsys.exit(7)\n")
    fp = hooks.scan(str(python), clean_env()).findings[0].fingerprint
    result = hooks.scan(str(python), clean_env(), approved=[fp])
    assert any("exited with status 1" in p and "SystemExit" in p for p in result.problems)
    assert result.blocked_reasons()


def test_python_that_is_not_python_is_usage_error(tmp_path: Path) -> None:
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(UsageError, match="not a working Python"):
        prepare(request_for(fake, tmp_path, python=str(fake)), tmp_path / "runs")
    with pytest.raises(UsageError, match="does not exist"):
        prepare(request_for(fake, tmp_path, python=str(tmp_path / "nope")), tmp_path / "runs")
