"""``skgate demo``, the README's main job, end to end: every scenario gives its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_skgate
from skgate.demo import scenario_names


@pytest.mark.parametrize("scenario", scenario_names())
def test_demo_scenario_gives_the_verdict_it_must(tmp_path: Path, scenario: str) -> None:
    res = run_skgate("demo", "--scenario", scenario, "--workdir", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "as it should" in res.stdout
    assert "Traceback" not in res.stderr


def test_demo_default_is_success_in_a_fresh_temp_dir(tmp_path: Path) -> None:
    res = run_skgate("demo", cwd=tmp_path, env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout[-3000:]
    assert "SUCCEEDED" in res.stdout
    assert "expected succeeded, the gate said succeeded" in res.stdout
    assert list(tmp_path.glob("skgate-demo-success-*/skgate-runs/attempts/0001/verdict.json"))
