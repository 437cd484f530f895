"""The stage census and tracker: inputs, their logs (by stem, hash, or op type and count),
the packages (C2, C3); real names as docs/cann-static-compile.md gives them (issue 19)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from skgate.evidence.follow import stage_announcer
from skgate.evidence.stage_census import (
    LogName,
    input_stems,
    json_op_type,
    parse_log_name,
    stage_census,
    walk_root,
)
from skgate.model.events import Event, StageSeen
from skgate.model.frozen import replace
from skgate.model.records import ProcessRecord
from skgate.model.stages import InputOutcome, Pairing, StageCensus
from skgate.runner.stage_tracker import StageTracker, is_stage


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
    (logs / "stranger_compile_error.log").touch()  # no such input: a log of no input
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
    # A log that pairs with no input is named and never makes a success (C2).
    assert c.extra_logs == 1 and c.unpaired_logs[0].endswith("stranger_compile_error.log")


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


# -- real names: static_kernel_<OpType>_<sha256>_<pid>_d<n>_compile_*.log -------------

H = "0123456789abcdef" * 4


def h(i: int) -> str:
    return f"{i:064x}"


def real(root: Path, inputs: dict[str, str], logs: list[tuple[str, str, int, int, str]]) -> Path:
    """inputs: stem -> JSON text; logs: (op type, hash, pid, variant, succ|error)."""
    params = root / "1738_opcompile_selected"
    logdir = root / "26560_compile_log"
    params.mkdir(parents=True)
    logdir.mkdir()
    for stem, text in inputs.items():
        (params / f"{stem}.json").write_text(text)
    for op, digest, pid, variant, kind in logs:
        (logdir / f"static_kernel_{op}_{digest}_{pid}_d{variant}_compile_{kind}.log").touch()
    return params


def census(params: Path, root: Path) -> StageCensus:
    return stage_census(str(params), str(root), after_return=True)


def test_real_names_pair_by_op_type_and_count(tmp_path: Path) -> None:
    params = real(
        tmp_path,
        {"HcPre_bfloat16_ND_32_4_5120_106": "{}", "HcPre_bfloat16_ND_64_4_5120_107": "{}",
         "MatMulV2_float_ND_1_2048_0": "{}"},
        [("HcPre", h(1), 26560, 0, "succ"), ("HcPre", h(2), 26560, 0, "succ"),
         ("MatMulV2", h(3), 26560, 0, "succ")],
    )  # fmt: skip
    c = census(params, tmp_path)
    assert c.accounted and (c.inputs, c.succeeded, c.logs) == (3, 3, 3)
    assert {t.op_type: t.pairing for t in c.op_types} == {
        "HcPre": Pairing.OP_TYPE,
        "MatMulV2": Pairing.OP_TYPE,
    }


def test_d0_and_d1_of_one_hash_are_one_input(tmp_path: Path) -> None:
    logs = [(op, h(i), 7, v, "succ") for i, op in enumerate(("A", "B")) for v in (0, 1)]
    c = census(real(tmp_path, {"A_float_ND_1_0": "{}", "B_float_ND_1_1": "{}"}, logs), tmp_path)
    assert c.accounted and c.succeeded == 2 and c.logs == 4


def test_a_hash_fixed_by_the_op_type_still_pairs_when_each_variant_counts(tmp_path: Path) -> None:
    # Three inputs of one op type, three d0 logs with one hash and three pids: however the
    # hash is made, three inputs compiled once each.
    logs = [("A", h(9), pid, 0, "succ") for pid in (11, 12, 13)]
    stems = {f"A_float_ND_{i}_{i}": "{}" for i in range(3)}
    c = census(real(tmp_path, stems, logs), tmp_path)
    assert c.accounted and c.succeeded == 3


def test_d0_and_d1_that_may_be_two_inputs_are_unpaired_never_succeeded(tmp_path: Path) -> None:
    # Two inputs, one hash with d0 and d1: one input with two logs (the other has none),
    # or two inputs with one log each. Not every reading pairs both: unknown (C2).
    logs = [("A", h(5), 7, 0, "succ"), ("A", h(5), 7, 1, "succ")]
    c = census(real(tmp_path, {"A_float_ND_1_0": "{}", "A_float_ND_2_1": "{}"}, logs), tmp_path)
    assert not c.accounted and c.unpaired == 1 and c.succeeded == 1
    (r,) = c.of(InputOutcome.UNPAIRED)
    assert r.op_type == "A" and r.candidates == ("A_float_ND_1_0", "A_float_ND_2_1")


def test_the_hash_pairs_exactly_where_it_is_the_inputs_sha256(tmp_path: Path) -> None:
    one, two = '{"op_type": "A", "n": 1}', '{"op_type": "A", "n": 2}'
    d1, d2 = (hashlib.sha256(t.encode()).hexdigest() for t in (one, two))
    # d0 and d1 of the first input, none of the second: the count alone cannot tell.
    logs = [("A", d1, 7, 0, "succ"), ("A", d1, 7, 1, "error")]
    c = census(real(tmp_path, {"A_float_ND_1_0": one, "A_float_ND_2_1": two}, logs), tmp_path)
    assert (c.failed, c.no_log, c.unpaired) == (1, 1, 0)
    assert [r.name for r in c.of(InputOutcome.FAILED)] == ["A_float_ND_1_0"]
    assert [r.name for r in c.of(InputOutcome.NO_LOG)] == ["A_float_ND_2_1"]
    assert {r.pairing for r in c.named} == {Pairing.HASH}
    assert d2 not in "".join(p for r in c.named for p in r.logs)


def test_a_failure_paired_by_count_names_op_type_error_log_and_candidates(tmp_path: Path) -> None:
    logs = [("A", h(1), 7, 0, "succ"), ("A", h(2), 7, 0, "error"), ("B", h(3), 7, 0, "succ")]
    stems = {"A_float_ND_1_0": "{}", "A_float_ND_2_1": "{}", "B_float_ND_1_2": "{}"}
    c = census(real(tmp_path, stems, logs), tmp_path)
    assert c.accounted and (c.succeeded, c.failed) == (2, 1)
    (r,) = c.of(InputOutcome.FAILED)
    assert r.name == "A" and r.logs[0].endswith(f"static_kernel_A_{h(2)}_7_d0_compile_error.log")
    assert r.candidates == ("A_float_ND_1_0", "A_float_ND_2_1")


def test_fewer_logs_than_inputs_and_logs_of_no_input_are_named(tmp_path: Path) -> None:
    logs = [("A", h(1), 7, 0, "succ"), ("Orphan", h(2), 7, 0, "succ")]
    stems = {"A_float_ND_1_0": "{}", "A_float_ND_2_1": "{}", "C_float_ND_1_2": "{}"}
    c = census(real(tmp_path, stems, logs), tmp_path)
    assert not c.accounted and c.no_log == 2 and c.extra_logs == 1
    assert c.unpaired_logs[0].endswith(f"static_kernel_Orphan_{h(2)}_7_d0_compile_succ.log")
    lost = {r.name: r.candidates for r in c.of(InputOutcome.NO_LOG)}
    assert lost == {"A": ("A_float_ND_1_0", "A_float_ND_2_1"), "C_float_ND_1_2": ()}


def test_op_type_from_the_json_and_op_types_with_underscores(tmp_path: Path) -> None:
    logs = [("Fused_Op", h(1), 7, 0, "succ"), ("Z", h(2), 7, 0, "succ")]
    stems = {"Fused_Op_float_ND_1_0": "{}", "renamed_input": '{"op_type": "Z"}'}
    c = census(real(tmp_path, stems, logs), tmp_path)
    assert c.accounted and c.succeeded == 2


def test_links_and_fifos_are_never_read_or_counted(tmp_path: Path) -> None:
    params = real(tmp_path, {"A_float_ND_1_0": "{}"}, [("A", h(1), 7, 0, "succ")])
    logdir = tmp_path / "26560_compile_log"
    (logdir / f"static_kernel_A_{h(2)}_7_d0_compile_succ.log").symlink_to(
        logdir / f"static_kernel_A_{h(1)}_7_d0_compile_succ.log"
    )
    os.mkfifo(params / "fifo_input.json")  # would block a plain open() forever
    c = census(params, tmp_path)
    assert c.logs == 1 and c.inputs == 2 and c.no_log == 1  # the FIFO is an input name only
    assert json_op_type(str(params / "fifo_input.json")) is None
    assert parse_log_name(f"static_kernel_A_{H[:63]}_7_d0") is None
    assert parse_log_name(f"static_kernel_A_B_{h(1)}_7_d1") == LogName("A_B", h(1), "7", "1")


def test_worker_forks_of_a_stage_are_not_stages(tmp_path: Path) -> None:
    params = real(tmp_path, {"A_float_ND_1_0": "{}"}, [("A", h(1), 7, 0, "succ")])
    argv = ("/usr/bin/python3", "/opt/bin/op_compiler", "-p", str(params), "-o", str(tmp_path))
    names = ("opc", "op_compiler")
    stage = ProcessRecord(5, 50, 1, 1, 1, argv, "op_compiler", 1.0, 2.0)
    # Between fork and exec a worker has its parent's name and argv (issue 19, item 5).
    fork = ProcessRecord(6, 60, 5, 1, 1, argv, "op_compiler", 1.1, 1.2)
    late = ProcessRecord(7, 70, 5, 1, 1, argv, "opc", 1.1, 1.2, argv_late=True)
    # Gone before anything of it could be read: the driver's name, no argv.
    gone = ProcessRecord(8, 80, 5, 1, 1, (), "op_compiler", 1.1, 1.2)
    emitted: list[Event] = []
    t = StageTracker(names)
    announce = stage_announcer(t, emitted.append)
    for rec in (stage, fork, late, gone):
        announce(rec)
    assert [type(e) for e in emitted] == [StageSeen]
    assert emitted == [
        StageSeen(
            pid=5, start_ticks=50, inputs=1, params_dir=str(params), output=str(tmp_path), jobs=None
        )
    ]
    (s,) = t.finish([stage, fork, late, gone], after_return=True).stages
    assert s.pid == 5 and s.census is not None and s.census.accounted
    assert t.progress() == [{"pid": 5, "inputs": 1, "done": 1}]


def test_inputs_listed_on_the_walk_equal_a_separate_listing(tmp_path: Path) -> None:
    # The walk takes the -p directory's stems on its way when it meets that very path
    # (issue 19's bench); spelt otherwise the directory is listed again: same census.
    params = tree(tmp_path)
    walk = walk_root(str(tmp_path), str(params) + "/")
    assert walk.stems is not None and sorted(walk.stems) == sorted(input_stems(str(params)) or ())
    assert walk_root(str(tmp_path), str(tmp_path / "elsewhere" / ".." / params.name)).stems is None
    assert walk_root(str(tmp_path)).stems is None
    spelt = str(tmp_path / "elsewhere" / ".." / params.name)
    assert census(Path(spelt), tmp_path) == replace(census(params, tmp_path), params_dir=spelt)
