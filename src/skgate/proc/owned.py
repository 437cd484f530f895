"""The owned tree, as every source reports it: process events, the cgroup, the scan.

One :class:`OwnedTree` holds what the runner knows of each owned process, identified by
(pid, start time in boot clock ticks). Three sources feed it:

* **events** (:mod:`skgate.proc.events`): descent from the leader by the fork events,
  argv read at exec, exit status at exit, ``setsid`` as it happens. Exact, when the
  kernel dropped nothing (``overruns == 0``);
* **scan** (the walk of ``/proc/<pid>/task/*/children``): the fallback and the
  cross-check; it samples, so a process shorter than the scan interval may be missing;
* **reap** (the runner as subreaper reaping a re-parented zombie): identity read from
  the zombie's stat record just before reaping.

The escape test (C4) is applied to *every* observation, whatever else changed: a
process whose process group is no longer the leader's has escaped the group signal,
and that is on record even when it also exec'ed or was re-parented in between.

Memory is bounded (a tree of 100,000 short-lived processes must not grow the runner):
the first :data:`FULL_RECORDS` processes keep a full record; beyond that, a process keeps
its record while it lives (liveness needs it), and on exit it is folded into counts by
name, unless it escaped or is the leader (those always stay). The manifest says how many
were folded. Every fork, exec and exit also goes to an append-only journal as it is
learnt (``journal_lines``), so a reader can tell which owned processes were last known
alive after the runner itself died.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable

from skgate.model.frozen import field, mutable
from skgate.model.installs import MAX_RUNS, package_action
from skgate.model.running import ProcessRecord
from skgate.proc.events import Connector, Kind, ProcEvent
from skgate.proc.observe import ProcStat, clock_ticks, read_cmdline, read_stat
from skgate.proc.taskstats import ExitRecord

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Processes that keep a full record whatever happens (see the module doc).
FULL_RECORDS = 5_000
#: Names counted separately among folded records; the rest are counted as "(other)".
FOLD_NAMES = 256
#: Processes seen gone by another source than their exit event (the scan, the leader's
#: waitid, the reaper), kept for their late events (see OwnedTree._gone).
GONE_KEPT = 4096
#: argv kept per process, in characters (an op_compiler argv is far below this).
ARGV_CHARS = 16_384

SEEN_EVENTS = "events"
SEEN_SCAN = "scan"
SEEN_REAP = "reap"
SEEN_LAUNCH = "launch"


class Proc:
    """What the runner knows of one owned process (mutable; ``__slots__`` for memory)."""

    __slots__ = (
        "alive",
        "argv",
        "argv_late",
        "argv_read_ns",
        "escaped",
        "execs",
        "exit_signal",
        "exit_status",
        "first_seen",
        "last_seen",
        "name",
        "pgid",
        "pid",
        "ppid",
        "seen_by",
        "sid",
        "start_from",
        "start_ticks",
    )

    def __init__(
        self,
        st: ProcStat,
        argv: tuple[str, ...],
        wall: float,
        seen_by: str,
        start_from: str = "proc",
    ) -> None:
        self.pid = st.pid
        self.start_ticks = st.start_ticks
        self.ppid = st.ppid
        self.pgid = st.pgid
        self.sid = st.sid
        self.name = st.name
        self.argv = _clip(argv)
        self.first_seen = wall
        self.last_seen = wall
        self.alive = True
        self.exit_status: int | None = None
        self.exit_signal: int | None = None
        self.escaped = False
        self.seen_by: set[str] = {seen_by}
        self.start_from = start_from
        self.argv_late = False
        #: CLOCK_MONOTONIC ns of the last successful read of its own cmdline (0: never).
        self.argv_read_ns = 0
        self.execs = 0

    def record(self) -> ProcessRecord:
        return ProcessRecord(
            pid=self.pid,
            start_ticks=self.start_ticks,
            ppid=self.ppid,
            pgid=self.pgid,
            sid=self.sid,
            argv=self.argv,
            name=self.name,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
            exit_status=self.exit_status,
            exit_signal=self.exit_signal,
            escaped=self.escaped,
            seen_by=tuple(sorted(self.seen_by)),
            start_from=self.start_from,
            argv_late=self.argv_late,
            execs=self.execs,
        )


def _clip(argv: tuple[str, ...]) -> tuple[str, ...]:
    if sum(len(a) for a in argv) <= ARGV_CHARS:
        return argv
    kept: list[str] = []
    room = ARGV_CHARS
    for a in argv:
        if room <= 0:
            break
        kept.append(a[:room])
        room -= len(a)
    return (*kept, f"[skgate: argv clipped to {ARGV_CHARS} characters]")


def decode_exit_code(code: int) -> tuple[int | None, int | None]:
    """(exit status, signal) from a kernel exit code (the ``wait`` status format)."""
    sig = code & 0x7F
    if sig:
        return None, sig
    return (code >> 8) & 0xFF, None


@mutable
class Folded:
    """Exited processes beyond :data:`FULL_RECORDS`, counted instead of listed."""

    processes: int = 0
    by_name: dict[str, int] = field(default_factory=dict)
    nonzero_exits: int = 0
    signalled: int = 0

    def add(self, p: Proc) -> None:
        self.processes += 1
        key = p.name if p.name in self.by_name or len(self.by_name) < FOLD_NAMES else "(other)"
        self.by_name[key] = self.by_name.get(key, 0) + 1
        if p.exit_signal is not None:
            self.signalled += 1
        elif p.exit_status:
            self.nonzero_exits += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "by_name": dict(sorted(self.by_name.items())),
            "nonzero_exits": self.nonzero_exits,
            "signalled": self.signalled,
            "full_records_limit": FULL_RECORDS,
        }


#: Called with a process when it is first recorded and after each exec (argv read, or
#: argv_late): the stage hooks of the runner (op_compiler invocations, opc workers).
ProcessHook = Callable[[Proc], None]


class OwnedTree:
    """Every owned process the sources reported (see the module doc)."""

    def __init__(self, leader_pgid: int = 0, full_records: int = FULL_RECORDS) -> None:
        self.leader = leader_pgid
        self.full_records = full_records
        self.procs: dict[tuple[int, int], Proc] = {}
        self.alive: dict[int, Proc] = {}  # live owned processes by pid
        #: Seen gone by the scan before their exit event was read (the event then still
        #: brings the exit status). Bounded: the oldest are forgotten first.
        #: Seen gone by another source before their events were read: an event older than
        #: that moment (its exit, the fork of a child) still counts; a later one is a
        #: reused pid's. Bounded: the oldest are forgotten first.
        self._gone: dict[int, tuple[Proc, int]] = {}
        self.folded = Folded()
        self.packages_kept = 0
        self.on_process: ProcessHook | None = None
        self._journal: list[str] = []
        self._hz = clock_ticks()
        #: Exec'ed and gone before stat could be read: the name is the parent's until the
        #: kernel's exit record names it (skgate.proc.taskstats, issue 28 s7).
        self.unnamed: dict[int, Proc] = {}
        self._records: dict[int, ExitRecord] = {}  # exit records not matched yet (bounded)
        self.named_at_exit = 0
        self.boot_wall = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)

    # -- the journal ----------------------------------------------------------------

    def journal_lines(self) -> bytes:
        """What was learnt since the last call, as JSON lines (then forgotten here)."""
        if not self._journal:
            return b""
        out = ("\n".join(self._journal) + "\n").encode("utf-8", "backslashreplace")
        self._journal.clear()
        return out

    def _note(self, event: str, p: Proc, **extra: Any) -> None:
        line = {"e": event, "pid": p.pid, "start": p.start_ticks, "t": round(time.time(), 4)}
        line.update(extra)
        self._journal.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))

    # -- adding ---------------------------------------------------------------------

    def _add(self, p: Proc, journal_event: str, **extra: Any) -> Proc:
        p.escaped = p.pgid != self.leader
        self.procs[(p.pid, p.start_ticks)] = p
        self.alive[p.pid] = p
        self._note(journal_event, p, ppid=p.ppid, pgid=p.pgid, name=p.name, **extra)
        if self.on_process is not None:
            self.on_process(p)
        return p

    def add_leader(self, pid: int, argv: tuple[str, ...], wall: float) -> Proc | None:
        st = read_stat(pid)
        if st is None:
            return None
        self.leader = pid
        return self._add(Proc(st, argv, wall, SEEN_LAUNCH), "fork")

    def alive_keys(self) -> list[tuple[int, int]]:
        """(pid, start time) of every owned process alive now (as the sources know)."""
        return [(p.pid, p.start_ticks) for p in self.alive.values()]

    def __contains__(self, pid: object) -> bool:
        """Is an event about ``pid`` of interest (a live owned process, or one the scan saw
        gone whose exit event is still to come)? The connector's pre-filter."""
        return pid in self.alive or pid in self._gone

    def get(self, pid: int, start_ticks: int) -> Proc | None:
        return self.procs.get((pid, start_ticks))

    def live_count(self, names: Iterable[str] | None = None) -> int:
        if names is None:
            return len(self.alive)
        wanted = set(names)
        return sum(1 for p in self.alive.values() if p.name in wanted)

    # -- the event source -----------------------------------------------------------

    def on_events(self, events: Iterable[ProcEvent], conn: Connector, wall: float) -> bool:
        """Apply connector events; True when the record changed."""
        changed = False
        alive = self.alive
        for ev in events:
            if ev.is_thread:
                continue
            kind = ev.kind
            if kind is Kind.FORK:
                parent = alive.get(ev.parent_tgid) or self._late(ev.parent_tgid, ev)
                if parent is None:
                    continue
                self._on_fork(ev, parent, conn, wall)
            else:
                p = alive.get(ev.pid)
                if p is None:
                    # Seen gone by another source before this event was read: an event
                    # older than that still counts. A setsid or an exec too: a worker that
                    # left the group and exited between two scans escaped all the same
                    # (C4), and ran another program than its parent's (C3).
                    p = self._late(ev.pid, ev) if kind in _LATE_KINDS else None
                    if p is None:
                        continue
                    if kind is Kind.EXIT:
                        if p.exit_status is None and p.exit_signal is None:
                            p.exit_status, p.exit_signal = decode_exit_code(ev.exit_code)
                            self._note("exit", p, status=p.exit_status, signal=p.exit_signal)
                            changed = True
                        continue
                if kind is Kind.EXEC:
                    self._on_exec(p, wall, ev.ts_ns)
                elif kind is Kind.EXIT:
                    self._on_exit(p, *decode_exit_code(ev.exit_code), wall=wall)
                elif kind is Kind.SID:
                    p.sid = p.pgid = p.pid  # setsid: a new session and a new group
                    p.escaped = p.escaped or p.pgid != self.leader
                    p.last_seen = wall
                    self._note("sid", p, pgid=p.pgid, escaped=p.escaped)
                elif kind is Kind.COMM:
                    p.name = ev.comm
                    p.last_seen = wall
                else:
                    continue
            changed = True
        return changed

    def drain(self, conn: Connector) -> bool:
        """Apply every event queued on ``conn`` now; True when the record changed.

        The connector's pre-filter asks this tree (``in``) as it grows, so a child forked
        in the batch also brings its exec and exit. The doorbell, where there is one, is
        then told the live owned processes."""
        changed = False
        bell = conn.doorbell
        while True:
            before = conn.received
            changed = self.on_events(conn.stream(interest=self), conn, time.time()) or changed
            # The doorbell follows the tree; what its old filter let pass unrung is queued
            # on this socket already, and read by the next pass (skgate.proc.events).
            if conn.received == before and (bell is None or not bell.ring_for(self.alive)):
                break
        if conn.exit_records is not None:
            records = conn.exit_records.drain(interest=_ExitInterest(self))
            changed = self.exit_names(records) or changed
        return changed

    def exit_names(self, records: Iterable[ExitRecord]) -> bool:
        """Name the processes gone before they could be read, from the kernel's exit
        records (by pid and start second, C4: never a pid alone); True when one was."""
        for rec in records:
            if rec.pid in self.unnamed or rec.pid in self.alive or rec.pid in self._gone:
                self._records[rec.pid] = rec
        while len(self._records) > GONE_KEPT:
            self._records.pop(next(iter(self._records)))
        named = False
        for pid in [pid for pid in self.unnamed if pid in self._records]:
            p, rec = self.unnamed[pid], self._records.pop(pid)
            born = self.boot_wall + p.start_ticks / self._hz
            if abs(rec.btime - born) > 2 or not rec.comm:
                continue  # another process of that pid
            del self.unnamed[pid]
            p.name = rec.comm
            self.named_at_exit += 1
            self._note("name", p, name=p.name, source="taskstats")
            named = True
        return named

    def _on_fork(self, ev: ProcEvent, parent: Proc, conn: Connector, wall: float) -> None:
        pid = ev.tgid
        ticks = conn.start_ticks(ev, self._hz)
        st = read_stat(pid)
        # The pid may already be dead and reused: the stat is this child's unless it
        # started after the fork's event (beyond the rounding of the two clocks). The
        # kernel sets the child's start time before it sends the event, and the child
        # holds the pid from before that until it is reaped: a stat that started earlier
        # is this child's, however long the fork was preempted in between (a loaded VM);
        # taking it as gone made a second record of one process (issue 29, C3, C4).
        if st is not None and st.start_ticks - ticks <= 2:
            p = Proc(st, (), wall, SEEN_EVENTS)
        else:
            # Gone already: keep what the events give (a fork copies group, session, name).
            gone = ProcStat(pid, parent.name, "X", parent.pid, parent.pgid, parent.sid, ticks)
            p = Proc(gone, (), wall, SEEN_EVENTS, "event")
        p.ppid = parent.pid  # the forking parent, even if it has died since
        p.argv = parent.argv  # until it execs, a forked child runs its parent's program
        # Gone, with no stat to match: the scan or the reaper may have met it, born before
        # this event however late the event was sent (see above), not after.
        known = self._born_by(pid, ticks) if st is None else self._known(pid, p.start_ticks)
        if known is not None:
            known.seen_by.add(SEEN_EVENTS)  # the scan or the reaper saw it first
            known.ppid = parent.pid  # they saw its parent of now; the fork names its own
            return
        self._add(p, "fork")

    def _known(self, pid: int, ticks: int) -> Proc | None:
        """The record of ``pid`` born at ``ticks``, within the rounding of the two clocks
        (C3: a process the scan met first is the same process, never a second record)."""
        for t in (ticks, ticks - 1, ticks + 1, ticks - 2, ticks + 2):
            known = self.procs.get((pid, t))
            if known is not None:
                return known
        return None

    def _born_by(self, pid: int, ticks: int) -> Proc | None:
        """The last-born record of ``pid`` started at most one second before ``ticks`` (a
        fork's event, sent late) and not after it (clock rounding aside). An older
        process of that pid would have had to live, die and have its pid handed round
        every other pid within that second (C3: one process, one record)."""
        for t in range(ticks + 2, ticks - self._hz - 1, -1):
            known = self.procs.get((pid, t))
            if known is not None:
                return known
        return None

    def _on_exec(self, p: Proc, wall: float, ts_ns: int = 0) -> None:
        p.execs += 1
        p.last_seen = wall
        p.seen_by.add(SEEN_EVENTS)
        st = read_stat(p.pid)
        argv = read_cmdline(p.pid)
        if st is not None and st.start_ticks == p.start_ticks and argv:
            p.argv = _clip(argv)
            p.argv_read_ns = time.monotonic_ns()
            p.name = st.name
            self._regroup(p, st)
            p.argv_late = False
        else:
            # It exec'ed and was gone before its argv could be read; unless the scan read
            # it after this exec (its argv is then this image's).
            p.argv_late = p.argv_read_ns <= ts_ns
            if st is not None and st.start_ticks == p.start_ticks:
                # A zombie keeps the new image's name in its stat (C3: an op_compiler
                # that ended this soon is still known as one by name).
                p.name = st.name
            elif p.argv_late:
                self.unnamed[p.pid] = p  # its exit record may name it (exit_names)
                if len(self.unnamed) > GONE_KEPT:
                    self.unnamed.pop(next(iter(self.unnamed)))
        self._note("exec", p, name=p.name, argv0=p.argv[0] if p.argv else "")
        if self.on_process is not None:
            self.on_process(p)

    def _on_exit(self, p: Proc, status: int | None, sig: int | None, *, wall: float) -> None:
        p.alive = False
        p.last_seen = wall
        if p.exit_status is None and p.exit_signal is None:
            p.exit_status, p.exit_signal = status, sig
        self.alive.pop(p.pid, None)
        self._note("exit", p, status=p.exit_status, signal=p.exit_signal)
        self._maybe_fold(p)

    def _maybe_fold(self, p: Proc) -> None:
        if len(self.procs) <= self.full_records or p.escaped or p.pid == self.leader:
            return
        if self.packages_kept < MAX_RUNS and package_action(p.argv) is not None:
            # C8: a package install or uninstall keeps its record (installs.json is built
            # from the final records), however many compiler processes came before it.
            self.packages_kept += 1
            return
        self.procs.pop((p.pid, p.start_ticks), None)
        self.folded.add(p)

    def _regroup(self, p: Proc, st: ProcStat) -> None:
        """The escape test (C4), applied to every observation whatever else changed.

        ``ppid`` stays the parent that forked it (C3): a child whose parent died is
        re-parented to the runner (the subreaper), and is still that parent's fork."""
        p.pgid, p.sid = st.pgid, st.sid
        if st.pgid != self.leader and not p.escaped:
            p.escaped = True
            self._note("escaped", p, pgid=st.pgid, sid=st.sid)

    # -- the scan and the reaper ----------------------------------------------------

    def observe(self, live: dict[int, ProcStat], wall: float) -> bool:
        """One scan of the owned tree (non-zombies); True when the record changed."""
        changed = False
        for pid, st in live.items():
            p = self.procs.get((pid, st.start_ticks))
            if p is None:
                p = Proc(st, read_cmdline(pid), wall, SEEN_SCAN)
                p.argv_read_ns = time.monotonic_ns() if p.argv else 0
                self._add(p, "seen")
                changed = True
                continue
            p.last_seen = wall
            p.seen_by.add(SEEN_SCAN)
            if st.name != p.name or p.argv_late:
                # An exec (python -> opc) or a PR_SET_NAME: keep what it became.
                argv = read_cmdline(pid)
                if argv:
                    p.argv = _clip(argv)
                    p.argv_read_ns = time.monotonic_ns()
                    p.argv_late = False  # read after all, by the scan
                p.name = st.name
                if self.on_process is not None:
                    self.on_process(p)
                changed = True
            if (st.pgid, st.sid) != (p.pgid, p.sid) or (st.pgid != self.leader and not p.escaped):
                self._regroup(p, st)
                changed = True
        for pid, p in list(self.alive.items()):
            current = live.get(pid)
            if current is None or current.start_ticks != p.start_ticks:
                # Gone without an event (events off, or dropped): exit status unknown
                # unless the reaper has it. A zombie not yet reaped is excluded from
                # ``live`` too, and its exit comes from the reaper.
                p.alive = False
                self.alive.pop(pid, None)
                self._note("gone", p)
                self._keep_gone(p)
                changed = True
        return changed

    def reaped(
        self, pid: int, st: ProcStat | None, status: tuple[int | None, int | None], wall: float
    ) -> None:
        """The runner reaped ``pid`` (a re-parented zombie); ``st`` was read just before."""
        p = self.alive.get(pid)
        if p is None and st is not None:
            p = self.procs.get((pid, st.start_ticks))
        if p is None and st is not None:
            p = self._add(Proc(st, (), wall, SEEN_REAP), "seen")
        if p is None:
            return
        p.seen_by.add(SEEN_REAP)
        if st is not None and st.start_ticks == p.start_ticks:
            self._regroup(p, st)
        p.exit_status, p.exit_signal = status
        if p.alive:
            self._on_exit(p, *status, wall=wall)
            self._keep_gone(p)  # its last forks' events may still be queued
        else:
            self._note("exit", p, status=p.exit_status, signal=p.exit_signal)

    def _keep_gone(self, p: Proc) -> None:
        self._gone[p.pid] = (p, time.monotonic_ns())
        if len(self._gone) > GONE_KEPT:
            self._gone.pop(next(iter(self._gone)))

    def _late(self, pid: int, ev: ProcEvent) -> Proc | None:
        """``pid`` seen gone already, if ``ev`` happened before that (not a reused pid)."""
        got = self._gone.get(pid)
        if got is None or ev.ts_ns > got[1]:
            return None
        return got[0]

    def mark_exit(self, pid: int, status: tuple[int | None, int | None], wall: float) -> None:
        """The leader's exit, seen by waitid without reaping it (its last forks' events
        may still be queued: it stays known for them)."""
        p = self.alive.get(pid)
        if p is not None:
            p.exit_status, p.exit_signal = status
            self._on_exit(p, *status, wall=wall)
            self._keep_gone(p)
            return
        for q in self.procs.values():
            if q.pid == pid and q.exit_status is None and q.exit_signal is None:
                q.exit_status, q.exit_signal = status

    # -- output ---------------------------------------------------------------------

    def records(self) -> list[ProcessRecord]:
        return [p.record() for p in sorted(self.procs.values(), key=lambda p: p.first_seen)]

    def argv_late_count(self) -> int:
        return sum(1 for p in self.procs.values() if p.argv_late)

    def missed_by_events(self) -> int:
        """Processes another source found and no event reported (the cross-check)."""
        return sum(
            1 for p in self.procs.values() if SEEN_EVENTS not in p.seen_by and p.pid != self.leader
        )


#: Events still applied to a process seen gone before they were read (OwnedTree._late).
_LATE_KINDS = frozenset((Kind.EXIT, Kind.SID, Kind.EXEC))


class _ExitInterest:
    """The pids whose exit records :meth:`OwnedTree.exit_names` keeps: the taskstats
    pre-filter (the listener hears every exit of the machine; issue 29)."""

    __slots__ = ("_tree",)

    def __init__(self, tree: OwnedTree) -> None:
        self._tree = tree

    def __contains__(self, pid: object) -> bool:
        t = self._tree
        return pid in t.unnamed or pid in t.alive or pid in t._gone


def journal_alive(lines: Iterable[bytes | str]) -> dict[tuple[int, int], dict[str, Any]]:
    """Owned processes a journal last knew alive: (pid, start) -> their first line.

    A damaged line (a runner killed mid-write) is skipped: the rest still counts.
    """
    alive: dict[tuple[int, int], dict[str, Any]] = {}
    for raw in lines:
        try:
            ev = json.loads(raw)
            key = (int(ev["pid"]), int(ev["start"]))
        except (ValueError, KeyError, TypeError):
            continue
        kind = ev.get("e")
        if kind in ("fork", "seen"):
            alive.setdefault(key, ev)
        elif kind in ("exit", "gone"):
            alive.pop(key, None)
    return alive
