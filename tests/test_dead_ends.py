"""No dead ends after a kill (issue 28, C4): SIGKILL at every ledger, seal and scene step
of ``run``, ``recover`` and ``retry``, then ``skgate recover`` of the root ends in a
verified attempt (``skgate verify`` exit 0), naming what it found left over.

Reproducers of the issue:

* the runner SIGKILLed between linking ``seal.json`` and removing ``.seal.json.*.tmp``:
  ``verify`` said "run skgate recover" and ``recover`` refused forever ("sealed, but the
  seal does not match");
* a ``retry`` SIGKILLed after moving the outputs into ``scene/01/`` and before writing
  its ``manifest.json``: the old attempt failed ``verify`` forever and ``recover`` said
  "nothing to recover".

The steps are counted by :mod:`crashpoints` as the command takes them; the quick tests
hit those two, and the sweep (``slow``) hits every step once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import as_if_runner_died, failed_attempt, run_skgate
from crashpoints import run_until, steps

#: A workload that leaves outputs in its working directory (what retry preserves).
WORKLOAD = (
    "from pathlib import Path\n"
    "out = Path('static_kernel_compile_outputs') / 'ts1_pid1_outputs'\n"
    "out.mkdir(parents=True, exist_ok=True)\n"
    "(out / 'static_kernel_1_1.run').write_text('package')\n"
    "Path('kernel_meta').mkdir(exist_ok=True)\n"
    "(Path('kernel_meta') / 'k.o').write_text('kernel')\n"
    "print('[summary] stage=compile inputs=1 succeeded=1 failed=0')\n"
)
RUN = ("run", "--root", "r", "--quiet", "--", sys.executable, "wl.py")


def _ready(tmp: Path) -> None:
    (tmp / "wl.py").write_text(WORKLOAD)


def _killed(tmp: Path, at: int, *args: str) -> list[str]:
    """Run ``skgate ARGS`` killed after step ``at``; the steps it took."""
    trace = tmp / f"trace-{at}"
    done = run_until(trace, at, *args, cwd=tmp)
    taken = steps(trace)
    if 0 < at <= len(taken):
        assert done.returncode == -9, (at, taken, done.stderr)
    return taken


def _recovered_and_verified(tmp: Path) -> str:
    """``recover`` of the root, then ``verify`` exit 0; what recover said."""
    rec = run_skgate("recover", "r", cwd=tmp)
    assert rec.returncode == 0, rec
    checked = run_skgate("verify", "r", cwd=tmp)
    assert checked.returncode == 0, (rec.stdout, checked.stdout, checked.stderr)
    again = run_skgate("recover", "r", cwd=tmp)
    assert again.returncode == 0 and "recovered" not in again.stdout, again
    return rec.stdout


def _kill_run_at(tmp: Path, label: str) -> str:
    _ready(tmp)
    learn = tmp / "learn"
    learn.mkdir()
    _ready(learn)
    labels = _killed(learn, 0, *RUN)
    assert label in labels, labels
    _killed(tmp, labels.index(label) + 1, *RUN)
    return _recovered_and_verified(tmp)


def test_a_runner_killed_between_linking_the_seal_and_removing_its_temp(tmp_path: Path) -> None:
    said = _kill_run_at(tmp_path, "link:seal.json")
    assert "removed the seal's temporary file .seal.json." in said, said
    assert "wrote the ledger's end entry" in said


def _prepare_retry_case(tmp: Path) -> None:
    _ready(tmp)
    first = run_skgate(*RUN, cwd=tmp)
    assert first.returncode == 0, first


def _kill_retry_at(tmp: Path, label: str) -> tuple[str, list[str]]:
    learn = tmp / "learn"
    learn.mkdir()
    _prepare_retry_case(learn)
    labels = _killed(learn, 0, "retry", "r/attempts/0001")
    assert label in labels, labels
    _prepare_retry_case(tmp)
    taken = _killed(tmp, labels.index(label) + 1, "retry", "r/attempts/0001")
    return _recovered_and_verified(tmp), taken


def test_a_retry_killed_after_moving_the_outputs_before_the_manifest(tmp_path: Path) -> None:
    said, _ = _kill_retry_at(tmp_path, "move:kernel_meta")
    assert "wrote scene/01/manifest.json over the 2 file(s) found there" in said, said
    assert "indexed scene/01/manifest.json in the ledger" in said
    manifest = json.loads((tmp_path / "r/attempts/0001/scene/01/manifest.json").read_text())
    assert manifest["recovered"]["by"] == "skgate recover"
    # Nothing was lost: every output is in the scene, none was rewritten.
    assert (tmp_path / "r/attempts/0001/scene/01/kernel_meta/k.o").read_text() == "kernel"
    assert not (tmp_path / "kernel_meta").exists()


def _sweep(tmp: Path, prepare: object, args: tuple[str, ...]) -> list[str]:
    """Kill ``args`` at each of its steps in a fresh directory; recover; verify."""
    assert callable(prepare)
    learn = tmp / "learn"
    learn.mkdir(parents=True)
    prepare(learn)
    labels = _killed(learn, 0, *args)
    assert any(lb.startswith("ledger:") for lb in labels), labels
    for at in range(1, len(labels) + 1):
        case = tmp / f"at{at}"
        case.mkdir()
        prepare(case)
        _killed(case, at, *args)
        _recovered_and_verified(case)
    return labels


def _for_recover(tmp: Path) -> None:
    as_if_runner_died(failed_attempt(tmp))


@pytest.mark.slow
def test_every_step_of_run_recover_and_retry_has_a_way_to_a_verified_attempt(
    tmp_path: Path,
) -> None:
    run_steps = _sweep(tmp_path / "run", _ready, RUN)
    for label in ("link:seal.json", "written:seal.json", "ledger:end:before", "temp:verdict.json"):
        assert label in run_steps, run_steps
    retry_steps = _sweep(tmp_path / "retry", _prepare_retry_case, ("retry", "r/attempts/0001"))
    assert "scene:mkdir" in retry_steps and "ledger:scene:before" in retry_steps, retry_steps
    recover_steps = _sweep(tmp_path / "recover", _for_recover, ("recover", "r"))
    assert "link:seal.json" in recover_steps and "ledger:end:after" in recover_steps


def test_a_scene_added_by_hand_is_never_vouched_for(tmp_path: Path) -> None:
    # Only what a cleanup moves (C8's output names) is taken for an interrupted one: a
    # file put into a scene by hand stays "added after sealing", and recover leaves it.
    attempt = failed_attempt(tmp_path)
    (attempt / "scene" / "01").mkdir(parents=True)
    (attempt / "scene" / "01" / "notes.txt").write_text("mine")
    rec = run_skgate("recover", "r", cwd=tmp_path)
    assert rec.returncode == 0 and "recovered" not in rec.stdout, rec
    assert not (attempt / "scene" / "01" / "manifest.json").exists()
    checked = run_skgate("verify", "r", cwd=tmp_path)
    assert checked.returncode == 1 and "CHANGED" in checked.stdout, checked
    assert "scene added after sealing has no manifest.json" in checked.stdout
