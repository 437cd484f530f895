"""A model of the owned tree under torchrun's shape: every interleaving of events,
scans and early exits must still count each worker session's escapes as torchrun's (C4).

A simulated kernel runs the realcode case's tree: torchrun (the leader) starts two
workers with ``start_new_session=True``; rank 0 forks op_compiler (which forks opc) and
a ``/bin/sh`` for a package install, and may start a daemon of its own (``setsid`` in a
child of rank 0: an ordinary escape, never torchrun's); rank 1 exits at once. Each
kernel step queues its process event, in causal order per process; the runner reads the
queue in batches of any size, at any moment, and scans the current simulated ``/proc``
(non-zombies only, as the runner's scan) at any moment. A fork event may be read late
and carry a time stamp off the child's stat start time (a preempted fork on a loaded
VM), a child may be reaped before its fork or exec event is read, and a stat read during
a worker's setsid may pair the old session with the new group.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from skgate.model.running import Ownership, ProcessRecord
from skgate.proc import owned
from skgate.proc.events import Kind, ProcEvent
from skgate.proc.observe import ProcStat
from skgate.proc.owned import OwnedTree

TICK_NS = 10_000_000  # one clock tick at HZ=100, in ns
TORCHRUN = ("python3", "/t/rc_torchrun.py", "2")
LAUNCHER = ("python3", "/t/rc_launcher.py", "spec.json")

RUNNER, T, R0, R1, OC, OPC, SH, DAEMON = 50, 100, 101, 102, 103, 104, 105, 106
#: Each process's program: its steps in order (a fork starts the child's program).
PROGRAMS: dict[int, list[tuple[str, object]]] = {
    T: [("fork", R0), ("fork", R1), ("wait", R0), ("wait", R1), ("exit", 0)],
    R0: [
        ("tear", None),
        ("setsid", None),
        ("exec", LAUNCHER),
        ("fork", OC),
        ("wait", OC),
        ("fork", SH),
        ("wait", SH),
        ("exit", 0),
    ],
    R1: [("tear", None), ("setsid", None), ("exec", LAUNCHER), ("exit", 0)],
    OC: [("exec", ("op_compiler", "-p", "k")), ("fork", OPC), ("wait", OPC), ("exit", 0)],
    OPC: [("exec", ("opc", "k.o")), ("exit", 0)],
    SH: [("exec", ("/bin/sh", "/w/k.run", "--install")), ("exit", 0)],
    DAEMON: [("setsid", None), ("exec", ("python3", "-c", "pass")), ("exit", 0)],
}
#: Processes in a worker's session (torchrun's, C4); DAEMON's session is its own.
WORKER_SESSIONS = {R0, R1, OC, OPC, SH}


@dataclass
class Sim:
    """The kernel: live and zombie processes, a clock in ticks, the event queue."""

    daemon: bool
    now: int = 1000
    procs: dict[int, ProcStat] = field(default_factory=dict)
    argv: dict[int, tuple[str, ...]] = field(default_factory=dict)
    pc: dict[int, int] = field(default_factory=dict)
    queue: list[ProcEvent] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)

    def program(self, pid: int) -> list[tuple[str, object]]:
        prog = PROGRAMS[pid]
        if pid == R0 and self.daemon:
            return [*prog[:4], ("fork", DAEMON), *prog[4:]]
        return prog

    def runnable(self) -> list[int]:
        out = []
        for pid, i in self.pc.items():
            prog = self.program(pid)
            if i >= len(prog):
                continue
            what, arg = prog[i]
            if what == "wait" and not self.procs[arg].zombie:  # type: ignore[index]
                continue
            out.append(pid)
        return out

    def step(self, pid: int, fork_delay: int) -> None:
        what, arg = self.program(pid)[self.pc[pid]]
        self.pc[pid] += 1
        me = self.procs[pid]
        ts = self.now * TICK_NS
        if what == "fork":
            child = int(arg)  # type: ignore[call-overload]
            self.procs[child] = ProcStat(child, me.name, "S", pid, me.pgid, me.sid, self.now)
            self.argv[child] = self.argv[pid]
            self.pc[child] = 0
            # The kernel stamps the event when it sends it: a fork preempted between its
            # start and its event carries a later time than the child's stat start time.
            ts = (self.now + fork_delay) * TICK_NS
            self.queue.append(ProcEvent(Kind.FORK, ts, child, child, parent_tgid=pid))
        elif what == "wait":
            del self.procs[int(arg)]  # type: ignore[call-overload]  # reaped by its parent
        elif what == "tear":
            # Half-way through setsid as /proc/<pid>/stat may show it: the kernel changes
            # the session, then the group, under tasklist_lock (kernel/sys.c
            # __set_special_pids); do_task_stat reads the session, then the group, under
            # the sighand lock only (fs/proc/array.c): a read in between pairs the old
            # session with the new group. The setsid event comes with the next step.
            self.procs[pid] = _with(me, pgid=pid)
        elif what == "setsid":
            self.procs[pid] = _with(me, pgid=pid, sid=pid)
            self.queue.append(ProcEvent(Kind.SID, ts, pid, pid))
        elif what == "exec":
            argv: tuple[str, ...] = arg  # type: ignore[assignment]
            self.argv[pid] = argv
            self.procs[pid] = _with(me, name=argv[0].rsplit("/", 1)[-1][:15])
            self.queue.append(ProcEvent(Kind.EXEC, ts, pid, pid))
        else:
            self.procs[pid] = _with(me, state="Z")
            self.queue.append(ProcEvent(Kind.EXIT, ts, pid, pid, exit_code=0))
            for kid, s in list(self.procs.items()):
                if s.ppid == pid:  # an orphan: re-parented to the runner (the subreaper)
                    self.procs[kid] = _with(s, ppid=RUNNER)
        self.now += 1

    def orphans(self) -> list[int]:
        """Zombies the runner reaps (never the leader: it is reaped at the very end)."""
        return [p for p, s in self.procs.items() if s.ppid == RUNNER and s.zombie and p != T]

    def live(self) -> dict[int, ProcStat]:
        """What the runner's scan reads: non-zombie descendants (the leader included)."""
        return {pid: s for pid, s in self.procs.items() if not s.zombie}

    def read_stat(self, pid: int) -> ProcStat | None:
        return self.procs.get(pid)

    def read_cmdline(self, pid: int) -> tuple[str, ...]:
        s = self.procs.get(pid)
        return () if s is None or s.zombie else self.argv[pid]


def _with(
    s: ProcStat, *, name: str = "", state: str = "", ppid: int = 0, pgid: int = 0, sid: int = 0
) -> ProcStat:
    """``s`` with the fields given changed (the kernel's view after a step)."""
    return ProcStat(
        s.pid,
        name or s.name,
        state or s.state,
        ppid or s.ppid,
        pgid or s.pgid,
        sid or s.sid,
        s.start_ticks,
    )


class SimClock:
    """``time`` as skgate.proc.owned reads it, on the simulated clock."""

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.CLOCK_BOOTTIME = 7

    def time(self) -> float:
        return self.sim.now / 100

    def monotonic_ns(self) -> int:
        return self.sim.now * TICK_NS

    def clock_gettime(self, _clock: int) -> float:
        return self.sim.now / 100


class SimConn:
    def start_ticks(self, ev: ProcEvent, hz: int) -> int:
        return ev.ts_ns // TICK_NS


#: One runner or kernel move: ("kernel", which runnable process, fork delay in ticks),
#: ("events", how many queued events to read), ("scan",), ("reap",): the runner reaps
#: its re-parented zombies and notes the leader's exit, as its supervisor loop does.
MOVES = st.one_of(
    st.tuples(st.just("kernel"), st.integers(0, 6), st.sampled_from([0, 0, 0, 1, 3, 5])),
    st.tuples(st.just("kernel"), st.integers(0, 6), st.just(0)),
    st.tuples(st.just("events"), st.integers(1, 8), st.just(0)),
    st.tuples(st.just("scan"), st.just(0), st.just(0)),
    st.tuples(st.just("reap"), st.just(0), st.just(0)),
)


def run_model(
    moves: list[tuple[str, int, int]], daemon: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[Sim, OwnedTree]:
    sim = Sim(daemon=daemon)
    sim.procs[T] = ProcStat(T, "python3", "S", 1, T, T, 900)
    sim.argv[T] = TORCHRUN
    sim.pc[T] = 0
    monkeypatch.setattr(owned, "read_stat", sim.read_stat)
    monkeypatch.setattr(owned, "read_cmdline", sim.read_cmdline)
    monkeypatch.setattr(owned, "time", SimClock(sim))
    monkeypatch.setattr(owned, "clock_ticks", lambda: 100)
    tree = OwnedTree()
    assert tree.add_leader(T, TORCHRUN, sim.now / 100) is not None
    conn = SimConn()

    def read(n: int) -> None:
        batch, sim.queue[:n] = sim.queue[:n], []
        for ev in batch:
            note(sim, tree, ev)
        tree.on_events(batch, conn, sim.now / 100)  # type: ignore[arg-type]

    for what, n, delay in moves:
        ready = sim.runnable()
        if what == "kernel" and ready:
            sim.step(ready[n % len(ready)], delay)
        elif what == "events":
            read(n)
        elif what == "scan":
            if any(s.pgid == pid != s.sid for pid, s in sim.live().items()):
                sim.seen["a scan read a worker mid-setsid"] += 1
            tree.observe(sim.live(), sim.now / 100)
        elif what == "reap":
            reap(sim, tree)
    # The run ends: every process runs to its exit, the runner reads every event and
    # scans once more (as the supervisor does before the final manifest).
    while ready := sim.runnable():
        sim.step(ready[0], 0)
    reap(sim, tree)
    read(len(sim.queue))
    tree.observe(sim.live(), sim.now / 100)
    return sim, tree


def reap(sim: Sim, tree: OwnedTree) -> None:
    for pid in sim.orphans():
        st_ = sim.procs.pop(pid)
        tree.reaped(pid, st_, (0, None), sim.now / 100)
    if sim.procs[T].zombie and tree.alive.get(T) is not None:
        tree.mark_exit(T, (0, None), sim.now / 100)


def note(sim: Sim, tree: OwnedTree, ev: ProcEvent) -> None:
    """Count the states that matter as each event is about to be read."""
    if ev.kind is Kind.FORK:
        s = sim.procs.get(ev.pid)
        if s is not None and abs(s.start_ticks - ev.ts_ns // TICK_NS) > 2:
            sim.seen["fork stat off by 3+ ticks"] += 1
        if s is None:
            sim.seen["fork read after the child was reaped"] += 1
        if any(p.pid == ev.pid for p in tree.procs.values()):
            sim.seen["scan before the fork event"] += 1
    if ev.kind in (Kind.FORK, Kind.EXEC) and ev.pid == R1:
        s = sim.procs.get(R1)
        if s is None or s.zombie:
            sim.seen["rank 1 exited before its fork or exec was read"] += 1


def ownership(tree: OwnedTree) -> Ownership:
    records = tuple(tree.records())
    return Ownership("b", 1, 1, records[0], T, T, records, (), True, 2.0, 1.0)


def check(sim: Sim, tree: OwnedTree) -> None:
    own = ownership(tree)
    calm = {(p.pid, p.start_ticks) for p in own.torchrun_escaped}
    escaped = {(p.pid, p.start_ticks) for p in own.escaped}
    in_workers = {(p.pid, p.start_ticks) for p in own.escaped if p.pid in WORKER_SESSIONS}
    # C4: every escape in a worker's session is torchrun's; nothing else is.
    assert calm == in_workers, _dump(own.owned)
    # One record per process (C3: never a second record of a process met twice).
    pids = [p.pid for p in own.owned]
    assert len(pids) == len(set(pids)), _dump(own.owned)
    # Every worker and every process in their sessions escaped on record (C3, C4).
    assert {pid for pid, _ in escaped} >= WORKER_SESSIONS, _dump(own.owned)


def _dump(records: tuple[ProcessRecord, ...]) -> str:
    return "\n".join(
        f"pid={p.pid} start={p.start_ticks} ppid={p.ppid} pgid={p.pgid} sid={p.sid} "
        f"escaped={p.escaped} from={p.start_from} argv={p.argv}"
        for p in records
    )


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(moves=st.lists(MOVES, max_size=80), daemon=st.booleans())
def test_every_interleaving_counts_worker_sessions_as_torchruns(
    moves: list[tuple[str, int, int]], daemon: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        sim, tree = run_model(moves, daemon, m)
    for state in sim.seen:
        event(state)  # how often each state is reached: --hypothesis-show-statistics
    check(sim, tree)


K, S = ("kernel", 0, 0), ("scan", 0, 0)


def test_a_preempted_fork_seen_by_the_scan_first_is_one_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rank 0's fork event carries a time 3 ticks after its start time and is read after
    the scan met it alive: its stat is its own (started before the event), never "gone",
    so there is one record, in its session (C3, C4; issue 29)."""
    sim, tree = run_model([("kernel", 0, 3), S, ("events", 1, 0), S], True, monkeypatch)
    check(sim, tree)


def test_a_preempted_fork_read_after_the_reap_is_the_scans_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scan met rank 0; its late fork event is read after it was reaped (no stat to
    match): the scan's record, born before the event, is that child's (C3)."""
    sim, tree = run_model([("kernel", 0, 3), S], False, monkeypatch)
    check(sim, tree)


def test_a_setsid_read_after_the_scan_saw_the_worker_gone_still_escapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rank 1 is scanned before its setsid, then leaves the group and exits before the
    next scan; its setsid event, read after that, still marks the escape (C4)."""
    rank1 = ("kernel", 1, 0)  # rank 1's next step (rank 0 is the first runnable)
    sim, tree = run_model([K, K, S, rank1, rank1, rank1, rank1, S], False, monkeypatch)
    check(sim, tree)


def test_a_child_of_a_worker_whose_exec_went_unread_is_not_torchruns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every event is read after the tree ended: rank 0's record keeps torchrun's argv
    (a fork copies it) with ``argv_late``; its own setsid child is not in a session
    torchrun made, and is said as an ordinary escape (C4)."""
    sim, tree = run_model([], True, monkeypatch)
    check(sim, tree)


def test_a_torn_scan_of_a_worker_is_put_right_by_its_setsid_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The intermittent realcode failure's shape (two-ranks-setsid-calm): the scan reads
    rank 0 mid-setsid (torchrun's session, its own group: escaped, in no worker session);
    its fork event, stamped 3 ticks late, is read after rank 0 was reaped. It used to make
    a second record ("event": exec'ed before its argv was read, named by taskstats) that
    took the setsid event, so the scan's record kept torchrun's session: one escape
    "left the process group". One record takes every event, and the setsid puts the
    session right (C3, C4)."""
    sim, tree = run_model([("kernel", 0, 3), ("kernel", 1, 0), S], False, monkeypatch)
    check(sim, tree)
