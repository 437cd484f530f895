"""The events doorbell: the loop wakes for the owned tree's events only (issue 29, C3).

The full connector socket hears every process of the host and is never narrowed (the
record, C3); a second subscription, the doorbell, is filtered in the kernel to the owned
processes' events and only wakes the loop. The filter's program is checked here by
running it (a small classic-BPF interpreter of the few instructions it uses) and on the
real kernel; the loop's side with a driven clock, one real turn at a time.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
from test_eventpace import Quiet, Recording
from test_events import THREADS_THEN_CHILD, packet

from skgate.proc import events
from skgate.proc.eventpace import FULL_READ_EVERY, QUIET_READ
from skgate.proc.events import Kind, ProcEvent, parse

# -- the program, run -----------------------------------------------------------------


def run_filter(program: bytes, buf: bytes) -> bool:
    """Run a classic BPF program over a datagram: True when the socket would keep it."""
    insns = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    a = x = pc = 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == 0x20:  # ld [k]: a 32-bit load in network order
            a = int.from_bytes(buf[k : k + 4], "big")
        elif code == 0x07:  # tax
            x = a
        elif code in (0x15, 0x1D):  # jeq #k / jeq x
            pc += jt if a == (k if code == 0x15 else x) else jf
        elif code == 0x06:  # ret #k
            return bool(k)
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


def fork(parent: int, child: int, child_tgid: int | None = None) -> bytes:
    tgid = child if child_tgid is None else child_tgid
    return packet(Kind.FORK, struct.pack("=IIII", parent, parent, child, tgid))


def about(kind: Kind, pid: int, tgid: int | None = None) -> bytes:
    data = struct.pack("=II", pid, pid if tgid is None else tgid)
    if kind is Kind.EXIT:
        data += struct.pack("=II", 0, 17)
    elif kind is Kind.COMM:
        data += b"opc".ljust(16, b"\0")
    return packet(kind, data)


@pytest.mark.parametrize("owned", [{500}, {7, 500, 65000}, set(range(1000, 2400)) | {500}])
def test_the_filter_keeps_the_owned_subjects_events_only(owned: set[int]) -> None:
    prog = events.subject_filter(owned)
    assert run_filter(prog, about(Kind.EXEC, 500))  # its argv is read while it runs
    assert not run_filter(prog, about(Kind.EXEC, 501))  # a stranger's
    assert not run_filter(prog, about(Kind.EXEC, 900, tgid=500))  # an owned thread's
    # The rest carries what is recorded of it, and is read at the next read of the full
    # socket; the tree's end wakes the loop by SIGCHLD, the pidfd and the cgroup.
    for kind in (Kind.EXIT, Kind.SID, Kind.COMM):
        assert not run_filter(prog, about(kind, 500)), kind
    assert run_filter(prog, fork(500, 9999))  # an owned process's child: its fork rings
    assert not run_filter(prog, fork(501, 9999))
    assert not run_filter(prog, fork(500, 9999, child_tgid=500))  # a new thread
    biggest = max(owned)
    assert run_filter(prog, about(Kind.EXEC, biggest))  # the last of a long list, too


def test_a_tree_too_large_for_a_program_rings_for_every_fork_and_exec() -> None:
    prog = events.subject_filter(set(range(1, events.DOORBELL_MAX + 2)))
    assert run_filter(prog, about(Kind.EXEC, 10**6))
    assert run_filter(prog, fork(10**6, 10**6 + 5))
    assert not run_filter(prog, about(Kind.EXIT, 10**6))
    assert not run_filter(prog, about(Kind.EXEC, 10**6 + 1, tgid=10**6))


def test_a_refused_program_changes_nothing_and_ends_the_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OwnedTree.drain reads once more while the filter changes: a refusal must not look
    like a change, or it would read forever."""
    bell = events.Doorbell(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
    try:
        assert bell.ring_for({5})
        monkeypatch.setattr(events, "_attach", lambda sock, program: False)
        assert not bell.ring_for({5, 6})
        assert not bell.ring_for({5, 6})
        assert bell._tgids == frozenset({5})
    finally:
        bell.close()


# -- the kernel --------------------------------------------------------------------------


def bell_connector() -> events.Connector:
    try:
        conn = events.open_connector(doorbell=True)
    except events.EventsUnavailable as exc:
        pytest.skip(f"no process-events connector here: {exc}")
    if conn.doorbell is None:
        conn.close()
        pytest.skip("the kernel refused a second subscription")
    return conn


def rang(conn: events.Connector) -> list[ProcEvent]:
    """What the doorbell let through (a test may parse it; the runner never does)."""
    bell = conn.doorbell
    assert bell is not None
    got = []
    with contextlib.suppress(BlockingIOError):
        while True:
            ev = parse(bell._sock.recv(256))
            if ev is not None:
                got.append(ev)
    return got


def subject(ev: ProcEvent) -> int:
    return ev.parent_tgid if ev.kind is Kind.FORK else ev.tgid


def until_exit(conn: events.Connector, pid: int) -> list[ProcEvent]:
    """The full socket's events until ``pid`` exits (the record: never filtered)."""
    seen: list[ProcEvent] = []
    deadline = time.monotonic() + 20
    while not any(e.kind is Kind.EXIT and e.pid == pid for e in seen):
        assert time.monotonic() < deadline, "no exit event"
        seen += conn.read()
    return seen


def test_the_doorbell_rings_for_its_subjects_and_the_full_socket_keeps_all() -> None:
    conn = bell_connector()
    try:
        assert conn.doorbell is not None
        assert conn.doorbell.ring_for({os.getpid()})
        assert not conn.doorbell.ring_for({os.getpid()})  # unchanged: nothing attached
        rang(conn)
        # sh forks `env` (a grandchild of this test): only the fork of sh is ours.
        proc = subprocess.Popen(["sh", "-c", "env true; exit 0"])
        assert proc.wait() == 0
        # Every event of a reaped child was sent before its parent's wait returned; the
        # doorbell is read first (a read of the full socket takes what rang).
        got = rang(conn)
        full = [e for e in until_exit(conn, proc.pid) if proc.pid in (e.tgid, e.parent_tgid)]
        assert any(e.kind is Kind.FORK and e.pid == proc.pid for e in got)
        assert {subject(e) for e in got} <= {os.getpid()}, got  # no stranger, not sh
        # The full socket still holds sh's exec, its child's fork and its exit (C3).
        kinds = {e.kind for e in full if e.tgid == proc.pid}
        assert {Kind.FORK, Kind.EXEC, Kind.EXIT} <= kinds
        assert any(e.kind is Kind.FORK and e.parent_tgid == proc.pid for e in full)
    finally:
        conn.close()


def test_an_owned_process_threads_never_ring_its_children_do() -> None:
    conn = bell_connector()
    try:
        assert conn.doorbell is not None
        proc = subprocess.Popen(
            [sys.executable, "-c", "input()\n" + THREADS_THEN_CHILD], stdin=subprocess.PIPE
        )
        try:
            conn.doorbell.ring_for({proc.pid})
            rang(conn)
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.close()
            assert proc.wait() == 0
            got = rang(conn)
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()
        assert not [e for e in got if e.is_thread], got  # 20 threads: none rang
        assert any(e.kind is Kind.FORK and e.parent_tgid == proc.pid for e in got)  # `true`
        # No exit rings; `true`'s exec does not either (it is no subject yet). The child's
        # own exec may ring: Popen returns once exec closed its pipe, before the event.
        assert {e.kind for e in got} <= {Kind.FORK, Kind.EXEC}, got
        assert not [e for e in got if e.kind is Kind.EXEC and e.pid != proc.pid], got
    finally:
        conn.close()


def test_the_kernel_takes_the_longest_program() -> None:
    conn = bell_connector()
    try:
        bell = conn.doorbell
        assert bell is not None
        wanted = set(range(10**6, 10**6 + events.DOORBELL_MAX - 1)) | {os.getpid()}
        assert bell.ring_for(wanted)
        assert bell._tgids == frozenset(wanted)  # attached, not refused
        rang(conn)
        proc = subprocess.Popen(["true"])
        proc.wait()
        assert any(e.kind is Kind.FORK and e.pid == proc.pid for e in rang(conn))
    finally:
        conn.close()


# -- the loop, with a driven clock ------------------------------------------------------

#: Above the kernel's PID_MAX_LIMIT (4194304): no process of this host has it.
NO_PID = 4_194_400


class FakeBell:
    """A doorbell the test rings; ``on_change`` runs when the filter changes, as the
    kernel would queue an event that raced the change on the full socket."""

    def __init__(self) -> None:
        self.ends = socket.socketpair()
        self.ends[0].setblocking(False)
        self.told: list[frozenset[int]] = []
        self.on_change: list[ProcEvent] = []
        self.queue_to: Quiet | None = None

    def fileno(self) -> int:
        return self.ends[0].fileno()

    def ring(self) -> None:
        self.ends[1].send(b"x")

    def ring_for(self, tgids: Collection[int]) -> bool:
        wanted = frozenset(tgids)
        if self.told and self.told[-1] == wanted:
            return False
        self.told.append(wanted)
        if self.queue_to is not None and self.on_change:
            self.queue_to.conn.queue += self.on_change
            self.on_change = []
        return True

    def clear(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self.ends[0].recv(4096)

    def close(self) -> None:
        for end in self.ends:
            end.close()


@pytest.fixture
def belled(tmp_path: Path) -> Iterator[tuple[Quiet, FakeBell]]:
    with contextlib.ExitStack() as held:
        q = Quiet(tmp_path)
        held.callback(q.close)
        bell = FakeBell()
        held.callback(bell.close)
        bell.queue_to = q
        q.conn.doorbell = bell
        q.conn.take_ring = bell.clear  # type: ignore[method-assign]
        q.sup._handlers = {bell.fileno(): q.sup._on_events}
        q.sel.register(bell.fileno(), selectors.EVENT_READ)  # as Supervisor._watching
        q.sup._events.start(q.now, bell=True)
        # The clock is driven: a turn's wait looks at the fds and returns at once.
        sel = q.sel
        sel.select = lambda timeout=None: Recording.select(sel, 0)  # type: ignore[method-assign]
        yield q, bell


def paced_reads(q: Quiet, seconds: float, per_read: int) -> list[float]:
    """Run the loop over ``seconds`` of a driven clock, ``per_read`` foreign events queued
    before each paced read; when each read came (relative to the start)."""
    start, reads = q.now, list[float]()
    q.sup._pace.next_at = start + 1000.0  # no scan in this window
    while True:
        resume = q.sup._events.resume_at
        assert resume is not None  # always a paced read ahead: the full fd is not listened to
        if resume > start + seconds:
            return reads
        q.now = resume
        q.conn.fill(*[None] * per_read)  # the host's events kept coming meanwhile
        assert q.sup._step(q.out) is False
        assert q.conn.queue == []  # read in the turn its time came
        reads.append(q.now - start)
        assert q.conn.fileno() not in q.sel.get_map()
        assert q.sel.woke[-1] == []  # none of them a wake of its own


def test_an_idle_tree_on_a_busy_host_wakes_once_a_second(belled: tuple[Quiet, FakeBell]) -> None:
    q, _bell = belled
    reads = paced_reads(q, 10.0, QUIET_READ + 1)
    assert reads == [float(n) for n in range(1, 11)]  # FULL_READ_EVERY[0]


def test_on_a_quiet_host_the_reads_back_off_and_an_owned_fork_resets_them(
    belled: tuple[Quiet, FakeBell],
) -> None:
    q, bell = belled
    assert paced_reads(q, 12.0, 3) == [1.0, 3.0, 7.0, 11.0]  # up to FULL_READ_EVERY[1]
    q.sup._pace.next_at = q.now + 1000.0
    kid = ProcEvent(Kind.FORK, 0, NO_PID, NO_PID, parent_tgid=q.out.pid)
    q.conn.start_ticks = lambda ev, hz: 0  # type: ignore[attr-defined]
    q.conn.queue.append(kid)
    bell.ring()
    assert q.sup._step(q.out) is False
    assert q.sup._events.resume_at == q.now + FULL_READ_EVERY[0]


def test_a_ring_reads_the_owned_event_and_rereads_after_the_filter_follows(
    belled: tuple[Quiet, FakeBell],
) -> None:
    q, bell = belled
    leader = q.out.pid
    q.conn.start_ticks = lambda ev, hz: 0  # type: ignore[attr-defined]
    q.sup._pace.next_at = q.now + 1000.0
    child = ProcEvent(Kind.FORK, 0, NO_PID, NO_PID, parent_tgid=leader)
    # The child's exec raced the filter's change: the kernel queued it on the full socket
    # before the doorbell could ring for it.
    bell.on_change = [ProcEvent(Kind.COMM, 0, NO_PID, NO_PID, comm="raced")]
    q.conn.queue.append(child)
    bell.ring()
    q.now += 0.001
    assert q.sup._step(q.out) is False
    assert q.sel.woke[-1] == [bell.fileno()]
    assert bell.told and {NO_PID, leader} <= bell.told[-1]  # the filter follows the tree
    kid = q.sup.owned.alive.get(NO_PID)
    assert kid is not None and kid.name == "raced"  # read in that same turn (C3)
    assert q.sup._events.resume_at == q.now + FULL_READ_EVERY[0]


def test_a_gone_process_leaves_the_program_only_once_half_the_tree_is_gone() -> None:
    """Attaching costs kernel time: exits do not re-attach one by one (a stale pid only
    rings once too often), a new process always does (its exec must ring, C3)."""
    conn = bell_connector()
    try:
        bell = conn.doorbell
        assert bell is not None
        tree = set(range(10**6, 10**6 + 40))
        assert bell.ring_for(tree)
        assert not bell.ring_for(tree - {10**6, 10**6 + 1})  # two exits: kept as it was
        assert bell._tgids == frozenset(tree)
        assert bell.ring_for(tree | {7})  # a new child: attached at once
        assert bell.ring_for({10**6 + 39})  # most of the tree gone: the program shrinks
        assert bell._tgids == frozenset({10**6 + 39})
    finally:
        conn.close()
