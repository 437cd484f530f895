"""Preflight never runs the code it inspects (C6).

Every hook planted here writes a canary file when it runs. The static scan must find the
hook without the canary appearing, a blocked preflight or a blocked ``skgate run`` must
leave no canary, and the start-up probe (which does run the start-up) must only run once
everything the static scan found is approved, importing nothing shadowable itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_hooks import BASE_PYTHON, clean_env, make_venv, request_for

from skgate.cli.main import main
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.prepare import prepare


def canary_code(canary: Path) -> str:
    return f"open({str(canary)!r}, 'w').write('ran')\n"


@pytest.fixture
def venv(tmp_path: Path) -> tuple[Path, Path]:
    return make_venv(tmp_path / "venv")


def test_pythonpath_sitecustomize_is_found_not_run(
    venv: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python, _ = venv
    shim = tmp_path / "shim"
    shim.mkdir()
    canary = tmp_path / "canary"
    (shim / "sitecustomize.py").write_text(canary_code(canary))
    env = clean_env(PYTHONPATH=str(shim))
    result = hooks.scan(str(python), env)
    assert [f.kind for f in result.findings] == ["sitecustomize"]
    assert result.findings[0].path == str(shim / "sitecustomize.py")
    assert result.extra["startup_probe"] == "not run"
    assert not canary.exists()
    # The commands a person runs: preflight (exit 3) and a run that is blocked (exit 3).
    common = ["--root", str(tmp_path / "runs"), "--jobs", "1", "--lease-timeout", "0"]
    common += ["--env", f"PYTHONPATH={shim}", "--env", "SKGATE_COMPILER_NAMES=skgt-none-xyz"]
    assert main(["preflight", *common, "--python", str(python)]) == 3
    assert not canary.exists()
    assert main(["run", *common, "--quiet", "--", str(python), "-c", "pass"]) == 3
    out = capsys.readouterr().out
    assert "unapproved start-up hook" in out
    assert not canary.exists()


def test_json_shadow_is_never_executed_by_the_probes(
    venv: tuple[Path, Path], tmp_path: Path
) -> None:
    """A ``json.py`` on PYTHONPATH: blocked unapproved; once approved the start-up probe
    runs, and still nothing imports it (the probe imports nothing but ``sys``)."""
    python, _ = venv
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    canary = tmp_path / "canary"
    (shadow / "json.py").write_text(canary_code(canary))
    env = clean_env(PYTHONPATH=str(shadow))
    result = hooks.scan(str(python), env)
    assert [f.kind for f in result.findings] == ["pythonpath-shadow"]
    assert not canary.exists()
    approved = hooks.scan(str(python), env, approved=[result.findings[0].fingerprint])
    assert approved.extra["startup_probe"] == "ran"
    assert approved.unapproved == ()
    assert not canary.exists()


def test_encodings_shadow_runs_at_init_even_with_S_but_not_in_the_probe(
    venv: tuple[Path, Path], tmp_path: Path
) -> None:
    """``encodings`` is imported while the interpreter initialises, before site and
    even under ``-S``: only an isolated probe (``-I``) keeps a PYTHONPATH copy out."""
    python, _ = venv
    shadow = tmp_path / "shadow"
    (shadow / "encodings").mkdir(parents=True)
    canary = tmp_path / "canary"
    (shadow / "encodings" / "__init__.py").write_text(canary_code(canary))
    result = hooks.scan(str(python), clean_env(PYTHONPATH=str(shadow)))
    assert [f.kind for f in result.findings] == ["pythonpath-shadow"]
    assert "encodings (stdlib)" in result.findings[0].detail
    assert not canary.exists()


def test_pth_and_usercustomize_are_found_not_run(tmp_path: Path) -> None:
    python, site = make_venv(tmp_path / "venv")
    canary = tmp_path / "canary"
    (site / "zz-hook.pth").write_text(f"import os; {canary_code(canary).strip()}\n")
    result = hooks.scan(str(python), clean_env())
    assert [f.kind for f in result.findings] == ["pth-import"]
    assert not canary.exists()
    v = sys.version_info
    base = tmp_path / "ubase"
    user_site = base / "lib" / f"python{v.major}.{v.minor}" / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "usercustomize.py").write_text(canary_code(canary))
    result = hooks.scan(BASE_PYTHON, clean_env(PYTHONUSERBASE=str(base)))
    assert any(f.kind == "usercustomize" for f in result.findings)
    assert not canary.exists()


def test_pythonhome_is_a_finding_not_followed(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = venv
    home = tmp_path / "home"
    home.mkdir()
    plan = prepare(request_for(python, tmp_path, env={"PYTHONHOME": str(home)}), tmp_path / "runs")
    kinds = [f["kind"] for f in plan.controls["hooks"]["findings"]]
    assert kinds == ["pythonhome"]
    assert any("PYTHONHOME" in r for r in plan.blocked)


def test_probe_environment_drops_python_variables_and_preloads() -> None:
    env = {"PYTHONPATH": "/x", "PYTHONSTARTUP": "/s", "LD_PRELOAD": "/l.so", "HOME": "/h"}
    assert hooks.isolated_env(env) == {"HOME": "/h"}


def test_freeze_baseline_runs_the_startup_probe_and_freezes_what_it_finds(
    venv: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--freeze-baseline approves everything it finds: the start-up probe runs, so the
    module the hook imports is frozen too and one baseline lets the run go."""
    python, site = venv
    (site / "myapp_patch.py").write_text("PATCHED = True\n")
    (site / "sitecustomize.py").write_text("import myapp_patch\n")
    base = tmp_path / "baseline.json"
    common = ["--root", str(tmp_path / "runs"), "--jobs", "1", "--python", str(python)]
    common += ["--env", "SKGATE_COMPILER_NAMES=skgt-none-xyz"]
    assert main(["preflight", *common, "--freeze-baseline", str(base)]) == 0
    frozen = json.loads(base.read_text())
    assert sorted(f["kind"] for f in frozen["findings"]) == ["sitecustomize", "startup-module"]
    assert main(["preflight", *common, "--hook-baseline", str(base)]) == 0
    assert "preflight clean" in capsys.readouterr().out
