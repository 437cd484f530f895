"""Runs that outlive their caller, the caller's side: ``start``, ``wait`` and ``stop``.

* :func:`start` starts the detached runner (:mod:`skgate.api.detach`, the runner's side) as
  a fresh interpreter and returns once the command is launched, refused, or waiting
  for a blocker.

* :func:`wait` is read-only and never signals: woken by inotify on the attempt
  directory and by the runner's pidfd (:mod:`skgate.evidence.follow`), it returns on
  the final verdict, when its bound runs out (the attempt is still in progress), or at
  once when the runner died without a verdict.
* :func:`stop` is the one sanctioned way to interrupt: it leaves a request for the
  attempt's runner (``<root>/stop-requests/<attempt>.stop.json``: never inside the attempt,
  which is sealed evidence) and sends SIGTERM to the runner only, identified by pid and
  start time through a pidfd. The runner records the request with its reason and ends
  its own process group as the frozen timeout would (SIGTERM, grace, SIGKILL; C4): the
  verdict is ``interrupted`` / ``external``. The workload is never signalled from here,
  and nothing at all is signalled when the runner is gone. The runner's side of that
  request is :func:`skgate.evidence.stops.stop_pending`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.api.reply import read_started
from skgate.evidence import files
from skgate.evidence.files import DEFAULT_ROOT
from skgate.evidence.follow import (
    FALLBACK_POLL,
    DirWatch,
    Progress,
    verdict_record,
    wait_readable,
)
from skgate.evidence.journal import JournalFollower, iter_journal
from skgate.evidence.ledger_seals import ended_after_removal, root_of, started_by
from skgate.evidence.lookup import ATTEMPTS, is_removed, latest
from skgate.evidence.stops import SCHEMA_STOP_REQUEST, stop_request_path
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.events import Blocked, Event, Finished, SignalReceived, VerdictLine
from skgate.model.oneline import one_line
from skgate.model.protocol import AttemptPhase, Started
from skgate.model.records import EXIT_CODES, State, Verdict
from skgate.model.request import RunRequest
from skgate.proc.handle import ProcessHandle
from skgate.read.liveness import RunnerRef, current_verdict, runner_ref

SCHEMA_WAIT = "skgate.wait/1"
SCHEMA_STOP = "skgate.stop/1"
#: Exit status of ``wait`` when a live runner had no verdict yet (as ``status``).
EXIT_IN_PROGRESS = EXIT_CODES[State.IN_PROGRESS]
#: Exit status of ``wait`` / ``stop`` when the runner died without a verdict.
EXIT_RUNNER_GONE = EXIT_CODES[State.UNKNOWN]
#: How long ``wait`` gives a runner that journalled ``finished`` to seal and exit.
SEAL_GRACE = 5.0
#: How long ``stop`` waits for the runner to acknowledge its request.
STOP_ACK_TIMEOUT = 10.0


# --------------------------------------------------------------------------- start


def start(request: RunRequest) -> Started:
    """Launch ``request`` under a detached runner started as a fresh interpreter
    (``python -m skgate.api.detach``), and return once it is launched or refused.

    Nothing of the calling process (its threads, locks, descriptors) reaches the runner,
    so a library caller or a server can use it. Raises UsageError (bad input: the runner
    refuses before recording anything) or BlockedError (no writable evidence root).
    """
    r, w = os.pipe2(os.O_CLOEXEC)
    try:
        _spawn_runner(request, w)
    finally:
        os.close(w)
    return read_started(r, request)


def _spawn_runner(request: RunRequest, w: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "skgate.api.detach", str(w)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(w,),
        close_fds=True,
        start_new_session=True,
    )
    assert proc.stdin is not None
    with proc.stdin:
        proc.stdin.write(json.dumps(request.to_dict()).encode())
    proc.wait()


# --------------------------------------------------------------------------- attempts


def find_attempt(target: str | os.PathLike[str] = DEFAULT_ROOT) -> Path:
    """An attempt directory, or the newest attempt of a root (one still in preflight
    included). Raises UsageError when ``target`` is neither."""
    path = Path(target)
    # A removed attempt is itself: its removal is the answer (C2.5, issue 28).
    if (path / files.EVENTS).is_file() or files.is_attempt_dir(path) or is_removed(path):
        return path
    if (path / ATTEMPTS).is_dir():
        # The one lookup of status: the newest the ledger indexed, never an older one.
        with contextlib.suppress(EvidenceError):  # no attempts yet: said below
            return latest(path)
    if not path.exists():
        raise UsageError(f"{path}: no such attempt directory or evidence root")
    raise UsageError(f"{path}: not an attempt directory nor an evidence root with attempts")


def _runner_handle(attempt: Path) -> ProcessHandle | None:
    try:
        ref = runner_ref(attempt)
    except EvidenceError:
        return None
    return _open_runner(ref)


def _removed_runner(attempt: Path) -> ProcessHandle | None:
    """The runner of a removed attempt (the caller found it removed) while it still runs
    (its directory removed under it), named by the root's ledger, whose ``start`` entry
    records who runs each attempt (:func:`skgate.evidence.ledger_seals.started_by`)."""
    at = root_of(str(attempt))
    found = None if at is None else started_by(*at)
    return None if found is None else _open_runner(RunnerRef(*found))


def _open_runner(ref: RunnerRef | None) -> ProcessHandle | None:
    """A handle on the runner ``ref`` names, only while its boot and start time match
    (C4: a recycled pid is never taken for it); None otherwise."""
    if ref is None or not ref.alive():
        return None
    return ProcessHandle.open(ref.pid, ref.start_ticks)


def _wait_removed(
    attempt: Path,
    handle: ProcessHandle,
    end: float | None,
    on_progress: Callable[[str], None] | None,
    progress_every: float,
) -> str:
    """Wait for the runner of a removed attempt to end (``final``), or for ``end``
    (``in_progress``): nothing of the attempt is left to follow, but while its runner
    runs, its command may still run, and an answer now would be taken for its end."""
    line = (
        f"{attempt}: the attempt's directory was removed, but its runner (pid {handle.pid}, "
        "named by the root's ledger) still runs, and its command may too: waiting for it to "
        "end; kill nothing (C1)"
    )
    next_line = time.monotonic()
    while handle.alive():
        now = time.monotonic()
        if end is not None and now >= end:
            return "in_progress"
        if on_progress is not None and now >= next_line:
            on_progress(line)
            next_line = now + progress_every
        due = [t for t in (end, next_line if on_progress is not None else None) if t]
        if handle.fileno() < 0:  # no pidfd (Linux < 5.3): looked at again and again
            due.append(now + FALLBACK_POLL)
        wait_readable([handle.fileno()], max(0.0, min(due) - now) if due else None)
    return "final"


# --------------------------------------------------------------------------- wait


@dataclass(frozen=True)
class WaitResult:
    """What ``skgate wait --json`` prints."""

    attempt: str
    outcome: str  # final | in_progress | runner_gone
    verdict: Verdict
    progress: dict[str, Any]
    waited_s: float

    @property
    def exit_code(self) -> int:
        if self.outcome == "final":
            return self.verdict.exit_code
        return EXIT_IN_PROGRESS if self.outcome == "in_progress" else EXIT_RUNNER_GONE

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_WAIT,
            "attempt": self.attempt,
            "outcome": self.outcome,
            "state": self.verdict.state.value,
            "exit_code": self.exit_code,
            "waited_s": round(self.waited_s, 3),
            "deadline_remaining_s": self.progress.get("deadline_remaining_s"),
            "progress": self.progress,
            "verdict": self.verdict.to_dict(),
        }


def wait(
    target: str | os.PathLike[str] = DEFAULT_ROOT,
    *,
    max_seconds: float | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
    progress_every: float = 5.0,
) -> WaitResult:
    """Wait read-only for an attempt's final verdict (see the module doc). Never signals.

    ``on_event`` receives every journal record, from the first, as it appears;
    ``on_progress`` a progress line now and every ``progress_every`` seconds.
    """
    if max_seconds is not None and not max_seconds >= 0:
        raise UsageError("--max must be a number of seconds >= 0")
    attempt = find_attempt(target)
    began = time.monotonic()
    end = None if max_seconds is None else began + max_seconds
    if is_removed(attempt):  # nothing of it is left to follow: its removal is the answer,
        outcome = "final"  # once the runner it had, if it still runs, has ended
        handle = _removed_runner(attempt)
        if handle is not None:
            with handle:
                outcome = _wait_removed(attempt, handle, end, on_progress, progress_every)
        blank = Progress().to_dict(time.time())
        verdict = current_verdict(attempt)
        return WaitResult(str(attempt), outcome, verdict, blank, time.monotonic() - began)
    watch = DirWatch(attempt)  # before the first read, so no change can be missed
    follower = JournalFollower(attempt / files.EVENTS)
    progress = Progress()
    handle = _runner_handle(attempt)
    finished_at: float | None = None
    next_line = began
    outcome = "in_progress"

    def absorb() -> None:
        for ev in follower.poll():
            progress.update(ev)
            if on_event is not None:
                on_event(ev)

    try:
        while True:
            watch.drain()
            absorb()
            now = time.monotonic()
            if progress.phase is AttemptPhase.FINAL:
                finished_at = finished_at or now
                # Return once the runner has sealed and gone, so the evidence is complete.
                if handle is None or not handle.alive() or now - finished_at > SEAL_GRACE:
                    outcome = "final"
                    break
            elif handle is None or not handle.alive():
                if handle is None:
                    handle = _runner_handle(attempt)
                    if handle is not None:
                        continue  # a runner that only now recorded who it is
                absorb()  # gone: one more read, the verdict may have been its last act
                if progress.finished_state is None:  # (phase FINAL: absorb() may change it)
                    outcome = "runner_gone"
                    break
                continue
            if end is not None and now >= end:
                break
            if on_progress is not None and now >= next_line:
                on_progress(progress.line(time.time()))
                next_line = now + progress_every
            horizon = [next_line if on_progress is not None else None, end]
            if finished_at is not None:
                horizon.append(finished_at + SEAL_GRACE)
            if not watch.active or (handle is not None and handle.fileno() < 0):
                horizon.append(now + FALLBACK_POLL)
            due = [h for h in horizon if h is not None]
            timeout = max(0.0, min(due) - now) if due else None
            wait_readable([watch.fd, handle.fileno() if handle else -1], timeout)
    finally:
        watch.close()
        if handle is not None:
            handle.close()
    verdict = current_verdict(attempt)
    # Sealed evidence that changed is shown by that alone (issue 28): not the progress
    # the journal's (possibly changed) records would give.
    shown = Progress() if verdict.breach is not None else progress
    return WaitResult(
        str(attempt), outcome, verdict, shown.to_dict(time.time()), time.monotonic() - began
    )


def verdict_event(result: WaitResult) -> VerdictLine:
    """The last line of ``wait --follow`` (see :func:`~skgate.evidence.follow.verdict_record`)."""
    return verdict_record(result.verdict, result.outcome, result.exit_code)


# --------------------------------------------------------------------------- stop


@dataclass(frozen=True)
class StopResult:
    """What ``skgate stop --json`` prints."""

    attempt: str
    action: str  # requested | already_final | runner_gone
    message: str
    state: str
    reason: str

    @property
    def exit_code(self) -> int:
        return EXIT_RUNNER_GONE if self.action == "runner_gone" else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_STOP,
            "attempt": self.attempt,
            "action": self.action,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "exit_code": self.exit_code,
        }


def _final_state(attempt: Path) -> str | None:
    """The recorded final state, or None while the attempt has none."""
    if not (attempt / files.VERDICT).exists():
        for ev in iter_journal(attempt / files.EVENTS):
            if isinstance(ev, Finished):
                return (ev.state or State.UNKNOWN).value
        return None
    # A verdict.json its runner, still alive, has not sealed yet is not final: one another
    # process wrote while the run ran reads in progress, and the stop goes on (C2.4).
    state = current_verdict(attempt).state
    return None if state is State.IN_PROGRESS else state.value


def _leave_request(attempt: Path, reason: str) -> None:
    """The stop request the runner reads when the SIGTERM comes (beside the attempt, in
    its root: a removed attempt's runner finds it too)."""
    path = stop_request_path(attempt)
    path.parent.mkdir(exist_ok=True)
    files.replace_json(
        path,
        {
            "schema": SCHEMA_STOP_REQUEST,
            "attempt": str(attempt),
            "reason": reason,
            "requested_by_pid": os.getpid(),
            "requested_at": time.time(),
        },
    )


def _stop_removed(
    attempt: Path, handle: ProcessHandle, reason: str, ack_timeout: float
) -> StopResult:
    """Stop a removed attempt whose runner still runs (:func:`_removed_runner`): the
    request left as for any attempt, then SIGTERM to that runner alone, by its handle. It
    ends its own process group as for any stop (SIGTERM, grace, SIGKILL; C2.4, C4), and
    records its end in the root's ledger alone; the answer stays ``unknown``. Its journal
    went with the directory, so the acknowledgement awaited (up to ``ack_timeout``) is
    the runner's own end, and what it recorded of it is quoted."""
    _leave_request(attempt, reason)
    if not handle.send_signal(signal.SIGTERM):
        with contextlib.suppress(OSError):
            stop_request_path(attempt).unlink()  # not taken: void
        return StopResult(
            str(attempt),
            "runner_gone",
            "the attempt's directory was removed, and its runner ended before the request "
            "reached it; nothing was signalled",
            State.UNKNOWN.value,
            reason,
        )
    asked = (
        f"the attempt's directory was removed, but its runner (pid {handle.pid}, named by "
        "the root's ledger, its start time checked) still ran: it was asked to stop"
    )
    end = time.monotonic() + ack_timeout
    if _wait_removed(attempt, handle, end, None, ack_timeout) == "final":
        at = root_of(str(attempt))
        how = None if at is None else ended_after_removal(*at)
        said = (
            f"it recorded in the root's ledger how it ended: {how}"
            if how is not None
            else "the root's ledger holds no record of how its command ended"
        )
        message = f"{asked}, and it has ended; {said}"
    else:
        message = (
            f"{asked} and ends its own process group (SIGTERM, SIGKILL after its grace), "
            f"still under way after {ack_timeout:g} s; it records its end in the root's "
            "ledger alone (its directory is gone): `skgate wait` returns once it has ended"
        )
    return StopResult(str(attempt), "requested", message, State.UNKNOWN.value, reason)


def stop(
    target: str | os.PathLike[str], reason: str = "", *, ack_timeout: float = STOP_ACK_TIMEOUT
) -> StopResult:
    """Ask an attempt's runner to interrupt it (see the module doc).

    Returns after the runner has recorded the request (or the attempt turned out to be
    final already, or its runner gone; for a removed attempt, once its runner has ended,
    up to ``ack_timeout``). Never signals the workload; never anything when the runner is
    gone.
    """
    reason = reason.strip() or "no reason given"
    if (shown := one_line(reason)) != reason:
        raise UsageError(
            f"the stop reason '{shown}' holds a line break or another control character; "
            "give it on one line"
        )
    attempt = find_attempt(target)
    if is_removed(attempt):
        handle = _removed_runner(attempt)
        if handle is not None:
            with handle:
                return _stop_removed(attempt, handle, reason, ack_timeout)
        # Its control.json went with it, and the ledger names no runner alive now.
        return StopResult(
            str(attempt),
            "runner_gone",
            "the attempt's directory was removed after the root's ledger indexed it, and no "
            "runner of it runs now (none that the ledger names), so nothing was signalled; "
            "never kill its processes by name or age (C4)",
            State.UNKNOWN.value,
            reason,
        )
    final = _final_state(attempt)
    if final is not None:
        return StopResult(
            str(attempt),
            "already_final",
            "the attempt is final; nothing was changed",
            final,
            reason,
        )
    handle = _runner_handle(attempt)
    if handle is None:
        return StopResult(
            str(attempt),
            "runner_gone",
            "the runner of this attempt is gone, so nothing was signalled: nobody can record "
            "a stop; never kill its processes by name or age (C4)",
            current_verdict(attempt).state.value,
            reason,
        )
    path = stop_request_path(attempt)
    follower = JournalFollower(attempt / files.EVENTS)
    seen = Progress()
    for ev in follower.poll():
        seen.update(ev)
    if seen.tree_ended:
        handle.close()
        return StopResult(
            str(attempt),
            "already_final",
            "the command has already returned; "
            "the runner is writing the verdict, nothing was changed",
            "in_progress",
            reason,
        )
    watch = DirWatch(attempt)
    try:
        _leave_request(attempt, reason)
        # The runner only, by pidfd: its handler reads the request and ends its own group.
        delivered = handle.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + ack_timeout
        acked = blocked = False
        while delivered and time.monotonic() < deadline:
            watch.drain()
            for ev in follower.poll():
                seen.update(ev)
                asked = isinstance(ev, SignalReceived) and bool(ev.stop_request)
                blocked = blocked or isinstance(ev, Blocked)
                acked = acked or asked or blocked
            if acked or seen.finished_state is not None or not handle.alive():
                break
            fds = [watch.fd, handle.fileno()]
            poll = FALLBACK_POLL if not watch.active or handle.fileno() < 0 else None
            wait_readable(fds, min(poll or 1.0, max(0.0, deadline - time.monotonic())))
    finally:
        watch.close()
        handle.close()
    if not delivered:
        return StopResult(
            str(attempt),
            "runner_gone",
            "the runner ended before the request reached it; nothing was signalled",
            _final_state(attempt) or "unknown",
            reason,
        )
    if not acked and seen.finished_state is not None:
        with contextlib.suppress(OSError):
            path.unlink()  # not taken: the attempt finished first, the request is void
        return StopResult(
            str(attempt),
            "already_final",
            "the attempt finished before the request arrived; nothing was changed",
            seen.finished_state.value,
            reason,
        )
    if blocked or (acked and seen.launched_t is None):
        # Issue 30: stopped in preflight (waiting for a foreign compiler): nothing was
        # launched, so nothing is interrupted; the runner ends not started.
        return StopResult(
            str(attempt),
            "requested",
            "the runner was waiting before launch and ends the attempt not started: nothing "
            "ran, nothing is signalled (its blockers never are, C4). Use skgate wait to see it",
            "not_started" if blocked else "in_progress",
            reason,
        )
    return StopResult(
        str(attempt),
        "requested",
        "the runner recorded the request and ends its own process group: SIGTERM, then "
        "SIGKILL after its grace (C4); the verdict will be interrupted/external. "
        "Use skgate wait to see it"
        if acked
        else f"SIGTERM sent to the runner; it has not recorded the request within "
        f"{ack_timeout:g} s (see skgate status)",
        "in_progress",
        reason,
    )
