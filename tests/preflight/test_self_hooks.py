"""skgate's own interpreter runs the start-up hooks it blocks for the workload (issue 21).

A ``sitecustomize.py`` on ``PYTHONPATH`` runs inside skgate before any check (C6). It
cannot be undone, so it is said in the preflight output and recorded in
``control.json`` (``controls.skgate_self``); ``python -I -m skgate`` does not run it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from conftest import ENV, read_json

HOOK = "import os\nSKGATE_TEST_HOOK_RAN = True\n"


def _skgate(tmp: Path, *args: str, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    hooks = tmp / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(HOOK)
    flags = ["-I"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "skgate", *args],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=60,
        env={**ENV, "PYTHONPATH": str(hooks)},
        check=False,
    )


def _self_record(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)["controls"]["skgate_self"]


def test_a_sitecustomize_on_pythonpath_that_ran_in_skgate_is_said_and_recorded(
    tmp_path: Path,
) -> None:
    got = _skgate(tmp_path, "preflight", "--json", "--", "true")
    record = _self_record(got)
    hook = str(tmp_path / "hooks" / "sitecustomize.py")
    assert {"kind": "sitecustomize", "path": hook, "from": "PYTHONPATH"} in record["hooks"]
    assert record["untrusted"] == 1 and record["isolated"] is False
    assert "python -I -m skgate" in record["note"]

    text = _skgate(tmp_path, "preflight", "--", "true")
    assert f"[ran in skgate] sitecustomize: {hook} (PYTHONPATH)" in text.stdout, text
    assert "python -I -m skgate" in text.stdout

    run = _skgate(tmp_path, "run", "--root", "r", "--quiet", "--", "true")
    assert run.returncode == 3, run.stdout + run.stderr  # the workload's scan blocks it
    assert "skgate's own interpreter ran 1 start-up hook" in run.stderr, run
    control = read_json(tmp_path / "r" / "attempts" / "0001" / "control.json")
    assert control["controls"]["skgate_self"]["hooks"] == record["hooks"]
    jsonschema = pytest.importorskip("jsonschema")
    text_schema = resources.files("skgate").joinpath("schemas/control.json").read_text("utf-8")
    jsonschema.Draft202012Validator(json.loads(text_schema)).validate(control)


def test_python_isolated_mode_runs_no_hook_in_skgate(tmp_path: Path) -> None:
    got = _skgate(tmp_path, "preflight", "--json", "--", "true", isolated=True)
    record = _self_record(got)
    assert record["isolated"] is True and record["untrusted"] == 0, record
    assert record["note"] is None
    text = _skgate(tmp_path, "preflight", "--", "true", isolated=True)
    assert "ran in skgate" not in text.stdout
