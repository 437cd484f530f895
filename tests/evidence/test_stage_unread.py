"""An op_compiler gone before its argv could be read is still a stage (issue 21 s5).

The Ray flake: on a loaded host a short op_compiler (``SKGATE_SIM_OPC_SECONDS=0.02``)
exec'ed, renamed itself and ended before the runner read its ``/proc/<pid>/cmdline``.
Its record then carried the launcher's argv (inherited at fork), the stage parsed no
``-p``/``-o`` and the arm came back unknown. Stage tracking must not depend on winning
that race: the stage is recognised from its evidence (the build directory the launcher
announced), and only where the pairing is unambiguous.
"""

from __future__ import annotations

from pathlib import Path

from skgate.model.stages import ArgsFrom, StageRecord
from skgate.proc.events import Kind, ProcEvent
from skgate.proc.observe import ProcStat
from skgate.proc.owned import SEEN_LAUNCH, OwnedTree, Proc
from skgate.runner.stage_tracker import StageTracker
from skgate.verdict.stages import not_final_reason

# pids far above pid_max: /proc has nothing of them, as of processes already gone.
LAUNCHER, DRIVER, WORKER = 4_000_000, 4_000_001, 4_000_002
LAUNCHER_ARGV = ("python3", "-m", "skgate.sim.launcher", "--inputs", "2")


class FakeConn:
    def start_ticks(self, ev: ProcEvent, hz: int) -> int:
        return ev.ts_ns // 10_000_000


def build_root(outputs: Path, name: str) -> Path:
    """A build directory as a finished sim compile leaves it: 2 inputs, 2 succ logs, a .run."""
    root = outputs / name
    chosen = root / "7_opcompile_selected"
    logs = root / "7_compile_log"
    chosen.mkdir(parents=True)
    logs.mkdir()
    for stem in ("A_float16_ND_1_0", "B_float16_ND_2_1"):
        (chosen / f"{stem}.json").write_text("{}")
        (logs / f"{stem}_compile_succ.log").write_text("ok\n")
    (root / "static_kernel_7.run").write_text("package\n")
    return root


def late_driver_records() -> list[object]:
    """The launcher forks op_compiler; every event of it is read only after it ended."""
    t = OwnedTree(leader_pgid=LAUNCHER)
    leader = ProcStat(LAUNCHER, "python3", "S", 1, LAUNCHER, LAUNCHER, 5)
    t._add(Proc(leader, LAUNCHER_ARGV, 0.0, SEEN_LAUNCH), "fork")

    def ev(kind: Kind, pid: int, ticks: int = 0, **kw: object) -> ProcEvent:
        return ProcEvent(kind, ticks * 10_000_000, pid, pid, **kw)  # type: ignore[arg-type]

    evs = [
        ev(Kind.FORK, DRIVER, 10, parent_tgid=LAUNCHER),
        ev(Kind.EXEC, DRIVER, 11),
        ev(Kind.COMM, DRIVER, 11, comm="op_compiler"),
        ev(Kind.FORK, WORKER, 12, parent_tgid=DRIVER),
        ev(Kind.EXEC, WORKER, 12),
        ev(Kind.EXIT, WORKER, 13),
        ev(Kind.EXIT, DRIVER, 14),
    ]
    t.on_events(evs, FakeConn(), 1.0)  # type: ignore[arg-type]
    return list(t.records())


def finish(tmp_path: Path, roots: list[str]) -> StageRecord:
    outputs = tmp_path / "static_kernel_compile_outputs"
    for name in roots:
        build_root(outputs, name)
    t = StageTracker(("opc", "op_compiler"), cwd=str(tmp_path))
    recs = late_driver_records()
    got = t.finish(
        recs,  # type: ignore[arg-type]
        after_return=True,
        announced=[(str(outputs / name), None) for name in roots],
        outputs=outputs,
    )
    (stage,) = got.stages
    return stage


def test_a_driver_gone_before_its_argv_is_read_is_recognised_from_its_build_dir(
    tmp_path: Path,
) -> None:
    stage = finish(tmp_path, ["ts1_pid7_outputs"])
    root = tmp_path / "static_kernel_compile_outputs" / "ts1_pid7_outputs"
    assert stage.pid == DRIVER
    # Never the launcher's argv: nothing of its own was read, and it says so.
    assert stage.args.argv == ()
    assert stage.args_from is ArgsFrom.ANNOUNCED_ROOT
    assert (stage.args.params_dir, stage.args.output) == (
        str(root / "7_opcompile_selected"),
        str(root),
    )
    assert stage.census is not None and stage.census.succeeded == 2
    assert not_final_reason(stage, tree_natural=True) is None
    # What the archive says is what a later reader gets back.
    back = StageRecord.from_dict(stage.to_dict(), "stages.json")
    assert (back.args, back.args_from) == (stage.args, stage.args_from)


def test_two_unclaimed_build_dirs_are_no_pairing_and_the_stage_stays_unread(
    tmp_path: Path,
) -> None:
    stage = finish(tmp_path, ["ts1_pid7_outputs", "ts2_pid7_outputs"])
    assert stage.args_from is ArgsFrom.ARGV and stage.args.argv == ()
    reason = not_final_reason(stage, tree_natural=True)
    assert reason is not None and "argv unreadable" in reason
