"""The machine's process events while the owned tree is quiet (issue 29, C3).

They are read in batches, paused between batches that hold only foreign events. A batch
whose pause ended is read in that very turn of the loop: the loop does not listen to the
fd again only to wake a second time for what already queued. A pause in which nothing
queued ends with the fd listened to, so an owned fork on a quiet host is read as it comes;
an owned event ends the pausing. The clock is driven by the test and each test runs one
turn of the real loop (``Supervisor._step``), so nothing here depends on timing.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skgate.proc.eventpace import COALESCE, EventsPace
from skgate.proc.events import Kind, ProcEvent
from skgate.proc.sources import Sources
from skgate.proc.supervise import Supervisor, SupervisorConfig
from skgate.proc.supervisor_types import Outcome


class Heard:
    """A SupervisorObserver that ignores what it is told (this test reads the tree)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class QueuedConnector:
    """A healthy events connector whose queue the test fills: ``None`` is a foreign
    event (skipped unparsed, as the real pre-filter does), a ProcEvent an owned one."""

    def __init__(self) -> None:
        self.ends = socket.socketpair()
        self.ends[0].setblocking(False)
        self.overruns = 0
        self.received = 0
        self.exit_records = None
        self.doorbell: Any = None
        self.queue: list[ProcEvent | None] = []

    def fileno(self) -> int:
        return self.ends[0].fileno()

    def take_ring(self) -> None:
        """No doorbell here (tests/proc/test_doorbell.py has one)."""

    def fill(self, *events: ProcEvent | None) -> None:
        self.queue += events
        self.ends[1].send(b"x")  # readable, as the real socket is with events queued

    def stream(self, limit: int = 4096, interest: Any = None) -> Iterator[ProcEvent]:
        with contextlib.suppress(BlockingIOError):
            self.ends[0].recv(4096)  # read: not readable any more, as the real socket
        while self.queue:
            ev = self.queue.pop(0)
            self.received += 1
            if ev is not None:
                yield ev


class Recording(selectors.DefaultSelector):
    """The loop's selector, recording which fds each of its waits woke for."""

    def __init__(self) -> None:
        super().__init__()
        self.woke: list[list[int]] = []

    def select(self, timeout: float | None = None) -> list[Any]:
        got = super().select(timeout)
        self.woke.append([key.fd for key, _ in got])
        return got


class Quiet:
    """A supervised sleeping leader, its events paused (only foreign ones came)."""

    def __init__(self, tmp: Path) -> None:
        self.now = 100.0
        self.conn = QueuedConnector()
        argv = (sys.executable, "-c", "import signal; signal.pause()")
        config = SupervisorConfig(
            argv, env={}, cwd=str(tmp), timeout=600.0, grace=1.0, clock=lambda: self.now
        )
        self.sup = Supervisor(config, Heard(), Sources(connector=self.conn))  # type: ignore[arg-type]
        self.proc = self.sup.launch()
        assert self.proc is not None
        self.sup.track_leader(0.0)
        self.out = Outcome(pid=self.proc.pid, pgid=self.proc.pid)
        self.sel = Recording()
        self.sup._sel = self.sel
        self.sup._handlers = {self.conn.fileno(): self.sup._on_events}
        self.sup._look = False  # the leader is known alive: this turn is about the events
        self.sup._pace.next_at = self.now + 1000.0  # no scan in this turn
        self.sup._events.after_batch(self.now, listen=False, owned=False)  # paused

    def turn_at_pause_end(self) -> list[int]:
        """One turn of the loop at the instant the pause ends: the fds its wait woke for."""
        resume = self.sup._events.resume_at
        assert resume is not None
        self.now = resume
        self.sup._pace.next_at = self.now + 0.05  # bounds the turn's wait (driven clock)
        assert self.sup._step(self.out) is False
        return self.sel.woke[-1]

    def listened(self) -> bool:
        return self.conn.fileno() in self.sel.get_map()

    def close(self) -> None:
        """End what this test started, by its own process group (C4), even on failure."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.sel.close()
        for end in self.conn.ends:
            end.close()


@pytest.fixture
def quiet(tmp_path: Path) -> Iterator[Quiet]:
    with contextlib.ExitStack() as held:
        q = Quiet(tmp_path)
        held.callback(q.close)
        yield q


def test_pauses_double_up_to_the_cap_and_an_owned_event_starts_them_short() -> None:
    pace, now, got = EventsPace(), 0.0, []
    for _ in range(5):
        pace.after_batch(now, listen=False, owned=False)
        assert pace.resume_at is not None
        got.append(round(pace.resume_at - now, 3))
        now = pace.resume_at
        assert pace.due(now) and not pace.due(now - 0.001)
    assert got == [0.025, 0.05, 0.1, 0.2, 0.2]
    pace.after_batch(now, listen=True, owned=True)
    assert (pace.resume_at, pace.pause) == (None, COALESCE[0])
    assert not pace.due(now + 1000)  # listened to: nothing to wait for


def test_a_paused_batch_is_read_in_the_turn_its_pause_ends_in(quiet: Quiet) -> None:
    quiet.conn.fill(None, None, None)
    before = quiet.sup._events.pause
    woke = quiet.turn_at_pause_end()
    assert (quiet.conn.queue, quiet.conn.received) == ([], 3)
    # The turn read them, then waited without listening: no second wake for them.
    assert woke == []
    assert not quiet.listened()
    assert quiet.sup._events.resume_at == quiet.now + before  # paused again, longer
    assert quiet.sup._events.pause == min(2 * before, COALESCE[1])


def test_a_pause_in_which_nothing_queued_ends_listening(quiet: Quiet) -> None:
    woke = quiet.turn_at_pause_end()
    assert woke == []
    # C3: on a quiet host the next event (an owned fork) is read as it comes.
    assert quiet.listened()
    assert quiet.sup._events.resume_at is None
    quiet.conn.fill(ProcEvent(Kind.COMM, 0, quiet.out.pid, quiet.out.pid, comm="renamed"))
    quiet.sup._pace.next_at = quiet.now + 0.05
    assert quiet.sup._step(quiet.out) is False
    assert quiet.sel.woke[-1] == [quiet.conn.fileno()]
    assert quiet.sup.owned.alive[quiet.out.pid].name == "renamed"


def test_an_owned_event_in_a_paused_batch_ends_the_pausing(quiet: Quiet) -> None:
    quiet.sup._events.after_batch(quiet.now, listen=False, owned=False)  # a longer pause
    assert quiet.sup._events.pause > COALESCE[0]
    quiet.conn.fill(None, ProcEvent(Kind.COMM, 0, quiet.out.pid, quiet.out.pid, comm="renamed"))
    quiet.turn_at_pause_end()
    assert quiet.sup.owned.alive[quiet.out.pid].name == "renamed"  # read in that turn (C3)
    assert quiet.listened()
    assert (quiet.sup._events.resume_at, quiet.sup._events.pause) == (None, COALESCE[0])
    assert quiet.sup._pace.interval == 1.0  # the owned change brings the scan back
