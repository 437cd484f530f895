"""An unsealed attempt's ``verdict.json`` is not final while its runner lives (C2.1).

The runner seals its attempt once its final files are written; until then a
``verdict.json`` there may be its own, a moment before the seal, or one another process
wrote while the run ran (tests/test_disowned_final.py: an agent's "succeeded", which
``status`` used to answer while the command ran). The journal's first entry names the
runner; its liveness (pid, start time, boot) decides, except for the runner itself,
reading after its run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_removed_runner import STAND_IN, started

from conftest import FORGED
from skgate.evidence.recorded import recorded_verdict
from skgate.proc.observe import boot_id, read_stat


def test_a_live_runner_holds_its_unsealed_verdict_back_but_not_from_itself(
    tmp_path: Path,
) -> None:
    # The journal's first entry names the runner; while that process lives, an unsealed
    # verdict.json is not final: unless the reader is that runner, after its run (an
    # in-process runner such as the demo's, which outlives the run it ran).
    attempt = tmp_path / "r" / "attempts" / "0001"
    attempt.mkdir(parents=True)
    (attempt / "verdict.json").write_text(json.dumps(FORGED))
    (attempt / "control.json").write_text('{"schema": "skgate.control/1"}')  # past preflight
    me = read_stat(os.getpid())
    assert me is not None

    def named(pid: int, ticks: int) -> None:
        created = {
            "schema": "skgate.event/1",
            "t": 1.0,
            "event": "created",
            "runner": {"pid": pid, "start_ticks": ticks},
            "boot_id": boot_id(),
        }
        (attempt / "events.jsonl").write_text(json.dumps(created) + "\n")

    named(os.getpid(), me.start_ticks)
    assert recorded_verdict(attempt) is not None  # this process: the run is over
    with started(STAND_IN) as other:
        st = read_stat(other.pid)
        assert st is not None
        named(other.pid, st.start_ticks)
        assert recorded_verdict(attempt) is None  # another live runner: not final yet
    assert recorded_verdict(attempt) is not None  # it has ended: read as it stands


def test_a_removed_journal_leaves_the_runner_control_json_names(tmp_path: Path) -> None:
    # ``rm events.jsonl`` while the run runs: the runner is the one control.json names,
    # and while it lives a verdict.json written meanwhile is not final either.
    attempt = tmp_path / "r" / "attempts" / "0001"
    attempt.mkdir(parents=True)
    (attempt / "verdict.json").write_text(json.dumps(FORGED))
    with started(STAND_IN) as other:
        st = read_stat(other.pid)
        assert st is not None
        runner = {"pid": other.pid, "start_ticks": st.start_ticks, "boot_id": boot_id()}
        control = {"schema": "skgate.control/1", "runner": runner}
        (attempt / "control.json").write_text(json.dumps(control))
        assert recorded_verdict(attempt) is None  # its runner lives: not final yet
