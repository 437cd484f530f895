"""Issue 27: torchrun's workers leave the process group by design (C4).

torchrun starts every worker with ``start_new_session=True``: their sessions are said
once and calmly, naming torchrun; any other escape keeps its own line. Both are watched
and never signalled.
"""

from __future__ import annotations

from skgate.model.running import Ownership, ProcessRecord, is_torchrun


def _p(
    pid: int, ppid: int, sid: int, argv: tuple[str, ...], escaped: bool = False
) -> ProcessRecord:
    return ProcessRecord(pid, pid, ppid, sid, sid, argv, argv[0], 1.0, 2.0, 0, None, escaped)


def _ownership(*owned: ProcessRecord) -> Ownership:
    return Ownership("b", 1, 1, owned[0], 10, 10, owned, (), True, 2.0, 1.0)


def test_escapes_in_sessions_torchrun_started_are_counted_as_its_workers() -> None:
    run = _p(10, 1, 10, ("python3", "/usr/bin/torchrun", "--nproc-per-node", "2", "infer.py"))
    w1 = _p(11, 10, 11, ("python3", "infer.py"), escaped=True)
    w2 = _p(12, 10, 12, ("python3", "infer.py"), escaped=True)
    opc = _p(13, 11, 11, ("op_compiler", "-p", "x"), escaped=True)  # a worker's child
    other = _p(14, 10, 20, ("python3", "-c", "import os"), escaped=True)
    own = _ownership(run, w1, w2, opc, other, _p(20, 14, 20, ("sh",), escaped=True))
    assert [p.pid for p in own.torchrun_escaped] == [11, 12, 13]
    # Not torchrun: the same shape under another launcher is an ordinary escape.
    plain = _ownership(_p(10, 1, 10, ("python3", "launch.py")), w1, w2)
    assert plain.torchrun_escaped == ()
    assert is_torchrun(("python3", "-m", "torch.distributed.run", "x.py"))
    assert is_torchrun(("torchrun", "x.py")) and is_torchrun(("python3", "/t/rc_torchrun.py"))
    assert not is_torchrun(("python3", "/torchrun/x.py", "torchrun"))


def test_a_parent_whose_own_program_was_never_read_is_not_taken_for_torchrun() -> None:
    """A worker whose exec was gone before its argv could be read still carries torchrun's
    argv (a fork copies it; ``argv_late`` says so): a session its child made is an
    ordinary escape (C4), while the leader's launch argv counts either way."""
    run = _p(10, 1, 10, ("python3", "/usr/bin/torchrun", "infer.py"))
    w1 = ProcessRecord(
        11, 11, 10, 11, 11, run.argv, "python3", 1.0, 2.0, 0, None, True, argv_late=True
    )
    daemon = _p(12, 11, 12, ("python3", "-c", "pass"), escaped=True)
    own = _ownership(run, w1, daemon)
    assert [p.pid for p in own.torchrun_escaped] == [11]
    late_leader = ProcessRecord(10, 10, 1, 10, 10, run.argv, "python3", 1.0, 2.0, argv_late=True)
    assert [p.pid for p in _ownership(late_leader, w1).torchrun_escaped] == [11]
