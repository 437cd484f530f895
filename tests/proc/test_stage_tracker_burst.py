"""The stage tracker in a launch burst (issue 29, C2, C3): the stage's argv is parsed
once, however many of its workers exec, and the workers stay workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from skgate.model import stages as stages_model
from skgate.model.records import ProcessRecord
from skgate.runner.stage_tracker import StageTracker

WORKERS = 64


def test_a_stage_argv_is_parsed_once_for_all_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params, out = tmp_path / "params", tmp_path / "out"
    params.mkdir()
    stage_argv = ("/opt/bin/op_compiler", "-p", str(params), "-o", str(out), "-j", "64")
    stage = ProcessRecord(5, 50, 1, 1, 1, stage_argv, "op_compiler", 1.0, 2.0)
    parsed: list[tuple[str, ...]] = []
    real = stages_model.parse_compiler_argv

    def counting(argv: tuple[str, ...]) -> stages_model.CompilerArgs:
        parsed.append(tuple(argv))
        return real(argv)

    monkeypatch.setattr(stages_model, "parse_compiler_argv", counting)
    t = StageTracker(("opc", "op_compiler"))
    t.on_process(stage)
    parsed.clear()  # the stage's own registration parses it: that one is needed
    workers = []
    for i in range(WORKERS):
        pid = 100 + i
        # Fork (the driver's argv), then exec into an opc of one input (C3: both seen).
        t.on_process(ProcessRecord(pid, pid, 5, 1, 1, stage_argv, "op_compiler", 1.1, 1.2))
        worker = ProcessRecord(
            pid, pid, 5, 1, 1, ("/opt/bin/opc", f"/tmp/in{i}.json"), "opc", 1.1, 1.2
        )
        t.on_process(worker)
        workers.append(worker)
    assert stage_argv not in parsed  # before: once per exec'd worker
    # A nested invocation (other inputs, another result root) is still a stage of its own.
    nested_argv = ("/opt/bin/op_compiler", "-p", str(tmp_path / "p2"), "-o", str(tmp_path / "o2"))
    nested = ProcessRecord(300, 300, 5, 1, 1, nested_argv, "op_compiler", 1.3, 1.4)
    t.on_process(nested)
    assert stage_argv not in parsed
    t.on_scan([(w.pid, w.start_ticks) for w in workers])
    assert t.peak_opc == WORKERS  # every worker an opc, none of them a stage
    found = t.finish([stage, *workers, nested], after_return=True).stages
    assert sorted(s.pid for s in found) == [5, 300]
