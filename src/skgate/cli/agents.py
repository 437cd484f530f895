"""Command-line glue for runs that outlive their caller: ``start``, ``wait``, ``stop``, ``mcp``.

Thin: call :mod:`skgate.api.detach` and :mod:`skgate.api.lifecycle` (or the MCP server), print,
return an exit status. The parsers are in :mod:`skgate.cli.specs`.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from skgate.cli.args import command_after_dashes, request_from_args

if TYPE_CHECKING:
    import argparse  # a start line of the common shape never loads it (cli/quick_run.py)

    from skgate.model.events import Event


def cmd_start(args: argparse.Namespace) -> int:
    from skgate.api import detach  # noqa: PLC0415
    from skgate.model.protocol import AttemptPhase  # noqa: PLC0415
    from skgate.model.running import State  # noqa: PLC0415

    request = request_from_args(args, command_after_dashes(args, "start"))
    started = detach.start(request)
    if args.json:
        print(json.dumps(started.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(started.attempt)
        if started.phase is AttemptPhase.WAITING_FOR_BLOCKERS:
            print(
                "skgate: the detached runner waits for: " + "; ".join(started.waiting_for),
                file=sys.stderr,
            )
        elif started.state is State.NOT_STARTED:
            print(f"skgate: not started; see skgate status {started.attempt}", file=sys.stderr)
    return started.exit_code


def _stream(ev: Event) -> None:
    record = ev.to_dict()
    sys.stdout.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def cmd_wait(args: argparse.Namespace) -> int:
    from skgate.api import lifecycle  # noqa: PLC0415
    from skgate.cli.show import print_verdict  # noqa: PLC0415
    from skgate.verdict.words import headline  # noqa: PLC0415

    def progress(line: str) -> None:
        print(f"skgate wait: {line}", file=sys.stderr, flush=True)

    result = lifecycle.wait(
        args.target,
        max_seconds=args.max,
        on_event=_stream if args.follow else None,
        on_progress=None if args.quiet else progress,
        progress_every=args.progress_every,
    )
    if args.follow:
        _stream(lifecycle.verdict_event(result))
    elif args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    elif result.outcome == "final":
        print_verdict(result.verdict, False)
    elif result.outcome == "in_progress":
        left = result.progress.get("deadline_remaining_s")
        if result.verdict.waiting is not None:  # issue 30: nothing launched yet
            print(headline(result.verdict))
        print(
            f"in progress after {result.waited_s:.1f} s of waiting"
            + (f"; frozen deadline in {left:.0f} s" if isinstance(left, (int, float)) else "")
            + f"; wait again: skgate wait {result.attempt}"
        )
    else:
        print(
            "the runner of this attempt died without a verdict; nobody will record its end. "
            "Never kill its processes by name or age (C4)"
        )
        print_verdict(result.verdict, False)
    return result.exit_code


def cmd_stop(args: argparse.Namespace) -> int:
    from skgate.api import lifecycle  # noqa: PLC0415

    result = lifecycle.stop(args.target, args.reason)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(f"{result.attempt}: {result.action}: {result.message}")
    return result.exit_code


def cmd_mcp(args: argparse.Namespace) -> int:
    from skgate.agents import mcp_server  # noqa: PLC0415

    code: int = mcp_server.serve(max_wait=args.max_wait)
    return code
