"""The stage census and tracker: inputs by stem, their logs, the packages (C2, C3)."""

from __future__ import annotations

from pathlib import Path

from skgate.evidence.stages import StageTracker, is_stage, stage_census
from skgate.model.records import ProcessRecord
from skgate.model.stages import InputOutcome


def tree(root: Path) -> Path:
    params = root / "1_opcompile_selected"
    logs = root / "2_compile_log"
    params.mkdir(parents=True)
    logs.mkdir()
    for name in ("ok", "bad", "lost", "both"):
        (params / f"{name}.json").write_text("{}")
    (params / "notes.txt").write_text("")
    (params / "dir.json").mkdir()  # a directory is no input
    (logs / "ok_compile_succ.log").touch()
    (logs / "bad_compile_error.log").touch()
    (logs / "both_compile_succ.log").touch()
    (logs / "both_compile_error.log").touch()
    (logs / "stranger_compile_error.log").touch()  # no such input: not counted
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "ok2_compile_succ.log").touch()  # not in a *_compile_log dir
    (root / "static_kernel_1_2.run").touch()
    (root / "link.run").symlink_to(root / "static_kernel_1_2.run")  # links never count
    return params


def test_census_names_every_outcome(tmp_path: Path) -> None:
    params = tree(tmp_path)
    c = stage_census(str(params), str(tmp_path), after_return=True)
    assert (c.inputs, c.succeeded, c.failed, c.no_log, c.both_logs) == (4, 1, 1, 1, 1)
    assert not c.accounted
    assert [r.name for r in c.of(InputOutcome.FAILED)] == ["bad"]
    assert c.of(InputOutcome.FAILED)[0].logs[0].endswith("2_compile_log/bad_compile_error.log")
    assert [r.name for r in c.of(InputOutcome.NO_LOG)] == ["lost"]
    assert [r.name for r in c.of(InputOutcome.BOTH_LOGS)] == ["both"]
    assert c.run_packages == (str(tmp_path / "static_kernel_1_2.run"),)


def test_unreadable_inputs_dir_is_not_accounted(tmp_path: Path) -> None:
    c = stage_census(str(tmp_path / "missing"), str(tmp_path), after_return=True)
    assert not c.params_readable and c.inputs == 0 and not c.accounted


def proc(pid: int, name: str, argv: tuple[str, ...]) -> ProcessRecord:
    return ProcessRecord(pid, pid * 10, 1, 1, 1, argv, name, 1.0, 2.0)


def test_tracker_records_stages_and_peak_opc(tmp_path: Path) -> None:
    params = tree(tmp_path)
    names = ("opc", "op_compiler")
    stage = proc(
        5, "op_compiler", ("op_compiler", "-p", str(params), "-o", str(tmp_path), "-j", "3")
    )
    assert is_stage(stage, names)
    assert not is_stage(proc(6, "opc", ("opc", "x.json")), names)
    assert not is_stage(proc(7, "python3", ("python3", "-p", "x", "-o", "y")), names)
    # A zombie seen only after it ended has no argv: still a stage (by its name).
    assert is_stage(proc(8, "op_compiler", ()), names)
    t = StageTracker(names)
    t.on_process(stage)
    for pid in (10, 11, 12):
        t.on_process(proc(pid, "opc", ("opc", f"{pid}.json")))
    t.on_scan([(10, 100), (11, 110), (5, 50)])
    t.on_scan([(12, 120)])
    rec = t.finish([stage, proc(10, "opc", ("opc",))], after_return=True)
    assert rec.peak_opc == 2
    (s,) = rec.stages
    assert s.inputs_first_seen == 4 and s.args.jobs == 3 and s.ended
    assert s.census is not None and s.census.after_return and s.census.inputs == 4
