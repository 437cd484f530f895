"""``skgate start``: launch under a detached runner and return at once.

An AI agent's shell tool ends its command's process group when its own time limit runs
out; a static compile takes far longer. If the gate ran in that group, the agent would
interrupt the very compile the contract protects (C2.4). So :func:`start` detaches the
runner: it runs in its own session (not in the caller's process group, no controlling
terminal), with stdin, stdout and stderr on ``/dev/null`` and the attempt's
``runner.log`` and no other inherited descriptor, and is re-parented away from the
caller (double fork). It is still the child subreaper of its workload
(:mod:`skgate.proc.supervise`). ``start`` returns as soon as the attempt is recorded
(issue 29: its journal's ``created`` entry and the ledger's; phase ``preflight``): the
rest of preflight, a wait for foreign compilers or device leases (C4), a refusal and the
launch happen in the detached runner, never in the caller, and ``status`` / ``wait``
read them from the attempt. Bad input is still refused before anything is recorded.
Waiting and stopping are in :mod:`skgate.api.lifecycle`.

Protocol of the detached runner: ``python -m skgate.api.detach FD`` with a
:class:`~skgate.model.records.RunRequest` as JSON on stdin; it forks once more, and the
grandchild (the runner) writes one JSON line to descriptor FD once the attempt is
recorded: the :class:`Started` record, or ``{"error": MESSAGE, "exit_code": N}`` (nothing
was recorded); then it closes FD. The caller reads until end of file. (The CLI forks
directly, without a new interpreter, when it is single-threaded: that saves an
interpreter start-up on every ``skgate start``.)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skgate.model.errors import BlockedError, RootUnwritableError, SkgateError
from skgate.model.exits import EXIT_BLOCKED
from skgate.model.request import RunRequest
from skgate.preflight.request import validate

if TYPE_CHECKING:
    from skgate.model.protocol import AttemptPhase, Started
    from skgate.model.running import State

# Start latency (issues 13, 29): this module imports only what the caller needs up to
# the fork. The runner then imports what recording needs, records, answers, and only
# then begins its early preflight work (skgate.preflight.early). The caller reads the
# reply with skgate.api.reply alone: importing skgate.api.lifecycle (wait/stop, ~70
# modules) for it cost every `skgate start` tens of ms of CPU, taken from the runner on
# a 2-core host (issue 29).

RUNNER_LOG = "runner.log"


class StopRequested(KeyboardInterrupt):
    """SIGTERM to a detached runner before launch: record not_started, launch nothing."""


def start(request: RunRequest, *, fork: bool | None = None) -> Started:
    """Launch ``request`` under a detached runner; return once it is launched or refused.

    ``fork`` (default: only when this process is single-threaded, as the CLI is) forks
    this process instead of starting a new interpreter (one interpreter start-up less
    per ``skgate start``); otherwise :func:`skgate.api.lifecycle.start` starts a fresh one, so
    no lock or descriptor of a threaded caller is copied into the runner.
    Raises UsageError (bad input, nothing recorded) or BlockedError (no evidence root).
    """
    try:
        validate(request)
    except RootUnwritableError as exc:  # start's exit 3 (model.exits), as the runner's
        raise BlockedError(str(exc)) from None
    if fork is None:
        fork = threading.active_count() == 1
    if not fork:
        from skgate.api.lifecycle import start as lifecycle_start  # noqa: PLC0415 - see above

        return lifecycle_start(request)
    r, w = os.pipe2(os.O_CLOEXEC)
    try:
        _fork_runner(request, r, w)
    finally:
        os.close(w)
    from skgate.api.reply import read_started  # noqa: PLC0415 - after the fork (see above)

    return read_started(r, request)


def _fork_runner(request: RunRequest, r: int, w: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()  # or the child would write the caller's buffered output again
    pid = os.fork()
    if pid == 0:  # pragma: no cover (runs in the forked child; its effects are tested)
        code = 70
        try:
            os.close(r)
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            code = _runner_main(request, w)
        finally:
            os._exit(code)
    os.waitpid(pid, 0)  # the intermediate exits at once; the runner is re-parented


def _detach_stdio() -> None:
    """No descriptor of the caller stays open in the runner (0-2 to /dev/null; the rest
    closed), so a caller reading our output sees end of file when ``start`` returns."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _runner_main(request: RunRequest, handshake: int) -> int:
    """The detached runner (forked or ``python -m skgate.api.detach``): run and report."""
    _detach_stdio()
    os.closerange(3, handshake)
    os.closerange(handshake + 1, 1 << 16)
    os.set_inheritable(handshake, False)

    def on_early_term(_signum: int, _frame: object) -> None:
        raise StopRequested("stopped by SIGTERM before anything was recorded")

    # Until run_here records the attempt, a SIGTERM ends the runner cleanly: nothing is
    # launched.
    signal.signal(signal.SIGTERM, on_early_term)
    try:
        return _report_run(request, handshake)
    except KeyboardInterrupt as stop:  # before anything was recorded: launch nothing
        reply = {"error": f"{stop}; nothing was started", "exit_code": EXIT_BLOCKED}
        with contextlib.suppress(OSError):
            os.write(handshake, (json.dumps(reply) + "\n").encode())
        return EXIT_BLOCKED


def _report_run(request: RunRequest, handshake: int) -> int:
    """Run the attempt; tell the caller once it is recorded (or refused before that)."""
    from skgate.evidence.stops import stop_pending  # noqa: PLC0415 - see the module top
    from skgate.model.events import Created, Event, Launched  # noqa: PLC0415
    from skgate.model.protocol import AttemptPhase  # noqa: PLC0415
    from skgate.model.running import State  # noqa: PLC0415
    from skgate.runner.run import run_here  # noqa: PLC0415

    reply: list[int] = [handshake]
    launched = [False]
    attempt: list[str] = [""]

    def tell(payload: dict[str, Any]) -> None:
        if reply[0] < 0:
            return
        with contextlib.suppress(OSError):
            os.write(reply[0], (json.dumps(payload) + "\n").encode())
        with contextlib.suppress(OSError):
            os.close(reply[0])
        reply[0] = -1

    def on_event(ev: Event) -> None:
        if isinstance(ev, Created):
            attempt[0] = str(ev.attempt)
            # The runner's own tracebacks and notes land in the attempt, not nowhere.
            with contextlib.suppress(OSError):
                log = os.open(
                    Path(attempt[0]) / RUNNER_LOG,
                    os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                    0o644,
                )
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.close(log)
        elif isinstance(ev, Launched):
            launched[0] = True

    def on_term(_signum: int, _frame: object) -> None:
        # Before launch a stop (or any SIGTERM) ends the attempt as not started; after
        # launch the supervisor's own handler is in place and forwards it (C2.4).
        if not launched[0]:
            why = stop_pending(Path(attempt[0])) if attempt[0] else None
            reason = (why or {}).get("reason")
            raise StopRequested(
                "stopped before launch"
                + (f" through skgate stop: {reason}" if why else " by SIGTERM")
                + "; nothing was started"
            )

    signal.signal(signal.SIGTERM, on_term)

    def notify(message: str) -> None:
        with contextlib.suppress(OSError):
            os.write(2, (message + "\n").encode())

    def recorded(attempt_dir: Path) -> None:
        # Issue 29: the caller is answered as soon as the attempt is recorded (journal
        # and ledger); the rest is the detached runner's, and the record says how it went.
        tell(_started(str(attempt_dir), State.IN_PROGRESS, AttemptPhase.PREFLIGHT, ()))

    code = 0
    try:
        verdict = run_here(
            request,
            None,
            notify,
            on_event=on_event,
            stop_request=stop_pending,
            # The caller waits for the record alone: the early work (the hook-cache
            # lookup or probes, the cgroup leaf) begins after it (issue 29).
            early_after_record=True,
            recorded=recorded,
        )
        code = verdict.exit_code
        if reply[0] >= 0:  # finished without being recorded (not expected)
            tell(_started(attempt[0], verdict.state, AttemptPhase.NOT_STARTED, ()))
    except SkgateError as exc:
        # start's own list (model.exits): a root that cannot be written is exit 3 there.
        code = EXIT_BLOCKED if isinstance(exc, RootUnwritableError) else exc.exit_code
        tell({"error": str(exc), "exit_code": code})
    except KeyboardInterrupt:
        tell(_started(attempt[0], State.NOT_STARTED, AttemptPhase.NOT_STARTED, ()))
        code = EXIT_BLOCKED
    return code


def _started(
    attempt: str, state: State, phase: AttemptPhase, waiting: Any, reasons: Any = ()
) -> dict[str, Any]:
    from skgate.model.protocol import Started  # noqa: PLC0415 - see the module top

    return Started(attempt, state, os.getpid(), phase, tuple(waiting), tuple(reasons)).to_dict()


# --------------------------------------------------------------------------- entry


def _child_main(argv: list[str]) -> int:  # pragma: no cover (a separate process)
    try:
        handshake = int(argv[1])
        request = RunRequest.from_dict(json.loads(sys.stdin.buffer.read()))
    except (IndexError, ValueError, SkgateError) as exc:
        print(f"skgate.api.detach: bad invocation: {exc}", file=sys.stderr)
        return 2
    if os.fork() != 0:
        os._exit(0)  # the runner is re-parented away from the caller
    os._exit(_runner_main(request, handshake))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_child_main(sys.argv))
