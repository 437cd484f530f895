"""The runner's stop signals: deferred, never lost, from allocation to the last ledger entry.

A person or a supervisor stops ``skgate run`` with SIGINT, SIGTERM or SIGHUP at any
instant. What that must mean depends on where the attempt is (issue 12):

* **before launch** (allocating, preflight, waiting for a foreign compiler or a lease):
  nothing of the workload runs yet, so the attempt ends ``not_started`` with the signal
  recorded. Python's default would kill the runner on SIGTERM/SIGHUP with no record, and
  leave a hook probe it started running on its own; here the signal is turned into
  :class:`StopRequested` at the next safe point instead;
* **while launching and supervising**: :class:`~skgate.proc.supervise.Supervisor` owns the
  dispositions; before the fork the signal refuses the launch, after it the signal goes
  to the own process group, then SIGKILL after the frozen grace (C2.4, C4; the policy is
  :mod:`skgate.proc.termination`);
* **after the tree returned**: the compile already ended on its own, so the signal is only
  recorded, and the evidence (census, verdict, seal, ledger end) is finished first. A
  second signal *of the same kind* is an explicit "now": it cuts the finishing short
  (:class:`StopRequested` again), which the runner records as far as it still can;
* **once ``verdict.json`` is written** (:attr:`StopSignals.recorded`): the attempt's result
  is on record, so no signal acts any more, however many come (issue 28: a second one
  used to cut the seal short, and ``run`` exited 5 while ``verdict.json`` and ``status``
  said succeeded). Each is noted (the journal while it is open, then the ledger's end
  entry) and said in one line; the exit status stays the recorded verdict's, also for a
  signal after the last ledger entry.

Short critical sections (a ledger append, a journal line) run :func:`deferred`: a signal
arriving inside one is acted on when it ends, never in the middle of a write.

An inherited *ignored* SIGHUP or SIGINT stays ignored: ``nohup skgate run ...`` (SIGHUP)
and a background job of a non-interactive shell (SIGINT) ask for exactly that, and the
workload inherits the ignore as it would without skgate. Nothing here sends a signal.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from skgate.model.signals import signal_name
from skgate.proc import startup_signals

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

#: The signals that ask the runner to stop (the Supervisor forwards the same set).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Stop signals whose inherited ignore is kept (nohup; background jobs of a shell).
KEEP_IGNORED = (signal.SIGHUP, signal.SIGINT)


def inherited_ignore(signum: int) -> bool:
    """Did this process inherit ``signum`` ignored, in a way skgate must keep?"""
    return signum in KEEP_IGNORED and signal.getsignal(signum) is signal.SIG_IGN


class StopRequested(BaseException):
    """A stop signal acted on at a safe point (a BaseException: no ``except Exception``
    on the way may swallow it, as with KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal_name(signum)}")
        self.signum = signum


class Phase(enum.Enum):
    """Where the attempt is, which decides what a stop signal does (see module doc)."""

    BEFORE_LAUNCH = "before_launch"
    HANDOVER = "handover"  # the Supervisor takes the signals over; only recorded here
    FINISHING = "finishing"


class StopSignals:
    """The dispositions of the stop signals for one attempt (install once, restore once)."""

    def __init__(self) -> None:
        self.phase = Phase.BEFORE_LAUNCH
        #: Every stop signal this object received, with the phase it came in.
        self.received: list[tuple[int, Phase]] = []
        self.ignored: tuple[int, ...] = ()
        #: Set once the verdict is written: from then on a signal is only noted (issue 28).
        self.recorded = False
        #: The recorded verdict's exit status, once known: a signal after the last ledger
        #: entry never ends the process with another one (see :meth:`restore`).
        self.exit_code: int | None = None
        self._recorded = 0
        self._acted = 0
        self._depth = 0
        self._old: dict[int, Any] = {}

    # -- install / restore ----------------------------------------------------------

    def install(self) -> None:
        global _active
        # The console entry's start-up handlers (startup_signals) step aside: what they
        # kept is received here, before launch; restore() gives back what they found.
        kept, original = startup_signals.handover()
        ignored = []
        # A signal that lands while the handlers go in (Python runs it inside the next
        # signal.signal call) is only recorded here: raising out of install would skip
        # the runner's handling and show a traceback. It acts at the next safe point, the
        # end of the allocation's deferred block, like the ones kept at start-up (C2.4).
        self._depth += 1
        try:
            for sig in STOP_SIGNALS:
                if inherited_ignore(sig):
                    ignored.append(int(sig))
                    continue
                old = signal.signal(sig, self._on_signal)
                self._old[sig] = original.get(sig, old)
        finally:
            self._depth -= 1
        self.ignored = tuple(ignored)
        self.received.extend((s, Phase.BEFORE_LAUNCH) for s in kept)
        _active = self

    def restore(self, *, late: Callable[[str], None] | None = None) -> None:
        """Put back the dispositions found at :meth:`install`.

        ``late``: this process exits right after the verdict (the command line). Python's
        default SIGINT would then raise KeyboardInterrupt wherever the exit happens to be
        (printing the verdict, the interpreter's teardown) and show a traceback for a
        compile that is already recorded. Instead a handler stays that only says so
        through ``late``; a second signal of the same kind is an explicit "now" and ends
        the process at once, with the recorded verdict's exit status (:attr:`exit_code`;
        128 + n only when no verdict was recorded): a signal after the record never
        changes what the record says (issue 28).
        """
        global _active
        after = None if late is None else _after_record(late, self.exit_code)
        for sig, handler in self._old.items():
            signal.signal(sig, handler if after is None else after)
        self._old.clear()
        if _active is self:
            _active = None

    # -- receiving ------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.received.append((signum, self.phase))
        if self._depth == 0:
            self._act()

    def add(self, signums: list[int]) -> None:
        """Signals another handler caught and did not act on (the Supervisor's last ones).

        Never raises: they are recorded; a later signal may still act on them.
        """
        self.received.extend((s, self.phase) for s in signums)

    def _act(self) -> None:
        """Raise StopRequested if the current phase says a received signal must act now."""
        if self.recorded:
            # The verdict is on record: a signal is noted, never acted on (issue 28).
            self._acted = len(self.received)
            return
        while self._acted < len(self.received):
            signum, phase = self.received[self._acted]
            self._acted += 1
            if phase is Phase.BEFORE_LAUNCH:
                raise StopRequested(signum)
            if phase is Phase.FINISHING:
                kind = [s for s, p in self.received[: self._acted] if p is Phase.FINISHING]
                if kind.count(signum) >= 2:
                    raise StopRequested(signum)

    def handover_stop(self) -> int | None:
        """The first stop signal received during the handover to the Supervisor, if any
        (one received earlier has already raised StopRequested)."""
        return next((s for s, p in self.received if p is Phase.HANDOVER), None)

    def unrecorded(self) -> list[tuple[int, Phase]]:
        """Signals not yet written to the journal (each is returned once)."""
        new = self.received[self._recorded :]
        self._recorded = len(self.received)
        return new

    @contextmanager
    def deferred(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        # Only after a section that completed: an error already on its way wins.
        if self._depth == 0:
            self._act()


_active: StopSignals | None = None


def after_record_line(*signums: int) -> str:
    """The one line for stop signals that came once the verdict was on record."""
    names = ", ".join(signal_name(s) for s in signums)
    return (
        f"skgate: {names} received after the attempt was recorded; "
        "its verdict and exit status stand"
    )


@contextmanager
def deferred() -> Iterator[None]:
    """Run a short critical section with stop signals deferred to its end.

    A no-op when no :class:`StopSignals` is installed (a library caller's process).
    """
    active = _active
    if active is None:
        yield
        return
    with active.deferred():
        yield


def _after_record(late: Callable[[str], None], code: int | None) -> Callable[[int, object], None]:
    """The handler :meth:`StopSignals.restore` leaves for a process about to exit."""
    seen: set[int] = set()

    def on_late(signum: int, _frame: object) -> None:
        if signum in seen:
            os._exit(128 + signum if code is None else code)
        seen.add(signum)
        late(after_record_line(signum))

    return on_late


def exit_now(code: int) -> NoReturn:
    """End this process at once with ``code``, losing no stop signal to the teardown.

    For a command whose work is recorded in full (every file written, fsynced, renamed).
    Python runs a signal's handler only between two bytecodes, so a signal that comes
    during the interpreter's teardown would be taken and then never acted on. Instead
    the stop signals are blocked after the output is flushed, and each one pending then
    is handled here as its disposition says: the handler
    :meth:`StopSignals.restore` left (``skgate run``: "received after the attempt was
    recorded"), or, under the default, the exit status it would have ended with (128 +
    n). One that comes after the block is after this process's last act.
    """
    import sys  # noqa: PLC0415 - loaded already; kept out of the module's import cost

    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: the descriptor was closed when Python started
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    for signum in sorted(signal.sigpending() & set(STOP_SIGNALS)):
        handler = signal.getsignal(signum)
        if handler is signal.SIG_IGN:
            continue
        if callable(handler) and handler is not signal.default_int_handler:
            with contextlib.suppress(Exception):
                handler(signum, None)
        else:
            code = 128 + signum
    os._exit(code)
