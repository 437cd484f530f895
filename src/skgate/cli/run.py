"""Command-line glue for running and judging: ``run``, ``status``, ``classify``."""

from __future__ import annotations

import os
import sys

from skgate.cli.show import print_verdict
from skgate.evidence import files, pathtext
from skgate.evidence.lookup import is_prelaunch_dir, latest, resolve
from skgate.evidence.recorded import guarded, recorded_verdict
from skgate.model.errors import SkgateError, UsageError
from skgate.model.exits import EXIT_USAGE
from skgate.model.records import Verdict
from skgate.proc import startup_signals
from skgate.verdict.words import headline

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29), nor
# ``pathlib`` (an attempt is text on its way, see skgate.evidence.pathtext).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from skgate.model.events import Event


def cmd_run(args: argparse.Namespace) -> int:
    # Not at the top: cli/args.py imports argparse, which status does without (issue 29).
    from skgate.cli.args import command_after_dashes, request_from_args  # noqa: PLC0415

    command = command_after_dashes(args, "run")
    request = request_from_args(args, command)
    out = sys.stderr if args.json or args.events else sys.stdout

    def echo(data: bytes) -> None:
        out.buffer.write(data)
        out.buffer.flush()

    def notify(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def late(message: str) -> None:
        # From a signal handler: one write(2), never print() (a handler that interrupts a
        # print to stderr would make the buffered writer raise "reentrant call").
        try:  # noqa: SIM105 - contextlib is an import status does without (issue 29)
            os.write(2, (message + "\n").encode(errors="backslashreplace"))
        except OSError:
            pass

    import json  # noqa: PLC0415 - not at the top: status's text loads no json (issue 29)

    def stream(event: Event) -> None:
        record = event.to_dict()
        sys.stdout.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    # Waits (foreign compilers, leases) report progress every few seconds to a person
    # at a terminal, every 30 s into a log.
    every = 5.0 if sys.stderr.isatty() else 30.0
    # The hook scan and the cgroup leaf start before the runner is imported, and run
    # while it loads (start-up latency; see skgate.preflight.early).
    from skgate.preflight.early import EarlyWork  # noqa: PLC0415
    from skgate.preflight.request import validate  # noqa: PLC0415

    validate(request)
    # From here children may exist: a stop signal is kept for the runner, which records
    # it (the attempt ends not started), instead of ending this process at once.
    startup_signals.hold()
    early = EarlyWork.begin(request)
    try:
        from skgate.evidence.stops import stop_pending  # noqa: PLC0415
        from skgate.runner.run import run_here  # noqa: PLC0415

        verdict = run_here(
            request,
            None if args.quiet else echo,
            notify,
            progress_every=every,
            on_event=stream if args.events else None,
            # ``skgate stop`` from another terminal reaches this runner too (C2.4): its
            # SIGTERM carries the request's reason into the verdict, as for a detached one.
            stop_request=stop_pending,
            early=early,
            late=late,
        )
    finally:
        if early is not None:
            early.close()  # idempotent: run_here closes it, unless the import failed
    if args.events:
        # Imported here: the live journal's code is only for --events (status start-up).
        from skgate.evidence.follow import verdict_record  # noqa: PLC0415

        stream(verdict_record(verdict, "final", verdict.exit_code))
    else:
        print_verdict(verdict, args.json)
    return verdict.exit_code


def verdict_now(attempt: str) -> Verdict:
    """The recorded verdict, else the read-only look of :mod:`skgate.evidence.load`,
    imported only then: a finished attempt's status needs no classifier (issue 22 s5).
    Both through the one guard of what is read against the seal (issue 28)."""
    return guarded(attempt, _verdict_now)


def _verdict_now(attempt: str) -> Verdict:
    recorded = recorded_verdict(attempt)
    if recorded is not None:
        return recorded
    from pathlib import Path  # noqa: PLC0415 - the live look's API (pathlib loads with it)

    from skgate.read.liveness import current_verdict  # noqa: PLC0415

    return current_verdict(Path(attempt))


def cmd_status(args: argparse.Namespace) -> int:
    # Spelled as ``Path`` spells it, so printed paths read as they always did (issue 29).
    target = pathtext.plain(args.target)
    if args.all:
        # One damaged attempt must not hide the others: each is read on its own.
        rows: list[tuple[str, Verdict | None, str | None]] = []
        # Waiting ones too (issue 30), and removed ones the ledger indexed (issue 28).
        for attempt in resolve(target, prelaunch=True, removed=True):
            try:
                rows.append((attempt, verdict_now(attempt), None))
            except SkgateError as exc:
                rows.append((attempt, None, str(exc)))
        if args.json:
            import json  # noqa: PLC0415 - see cmd_run

            print(
                json.dumps(
                    [v.to_dict() if v else {"attempt": str(a), "error": err} for a, v, err in rows],
                    ensure_ascii=False,
                    indent=2,
                )
            )
        else:
            for a, v, err in rows:
                print(f"{a}: {headline(v)}" if v else f"{a}: damaged evidence: {err}")
        if any(err for _, _, err in rows):
            return EXIT_USAGE
        last = rows[-1][1] if rows else None
        return last.exit_code if last else 0
    # An attempt still in preflight (waiting for a blocker) has a journal, no controls yet.
    is_attempt = any(
        pathtext.is_file(pathtext.join(target, name)) for name in (files.CONTROL, files.EVENTS)
    )
    attempt = target if is_attempt else latest(target)
    if args.watch:
        if args.json:
            raise UsageError("--watch is a view for people; use --json without --watch to poll")
        # Imported here: rich and psutil are only needed for the live view.
        from pathlib import Path  # noqa: PLC0415

        from skgate.cli.watch import watch  # noqa: PLC0415

        return watch(Path(attempt), interval=args.interval).exit_code
    verdict = verdict_now(attempt)
    print_verdict(verdict, args.json)
    return verdict.exit_code


def cmd_classify(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415 - not at the top: status loads no pathlib

    target = Path(args.target)
    # A removed one reads unknown (issue 28), and so does one whose control.json is gone
    # (sealed: a change, C2.5; never sealed: a runner that died in preflight).
    attempts = resolve(target, prelaunch=True, removed=True)
    if len(attempts) != 1:
        raise UsageError(f"{target}: classify takes one attempt directory, not a root")
    from skgate.read.liveness import recompute  # noqa: PLC0415

    if is_prelaunch_dir(attempts[0]) and not files.present(attempts[0] / files.SEAL):
        # Never launched (still in preflight, or its runner died there): nothing to
        # recompute, and its answer is what status says (in progress, or unknown).
        verdict = verdict_now(str(attempts[0]))
    else:
        verdict = recompute(attempts[0])
    print_verdict(verdict, args.json)
    return verdict.exit_code
