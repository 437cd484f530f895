"""Command-line glue for runs that outlive their caller: ``start``, ``wait``, ``stop``, ``mcp``.

Thin: parse, call :mod:`skgate.detach` and :mod:`skgate.lifecycle` (or the MCP server),
print, return an exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from skgate.cli.args import add_run_options, command_after_dashes, request_from_args, seconds
from skgate.evidence.files import DEFAULT_ROOT

if TYPE_CHECKING:
    from skgate.model.events import Event

RAW = argparse.RawDescriptionHelpFormatter


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "start",
        help="run a command under a detached runner and return at once: skgate start "
        "[options] -- COMMAND...",
        description="Everything 'skgate run' does, but the runner detaches (own session, "
        "no terminal, not in the caller's process group) and this returns as soon as the "
        "attempt is recorded and the command launched, refused, or waiting for a foreign "
        "compiler or lease (the runner waits, never the caller). Prints the attempt "
        "directory.",
        formatter_class=RAW,
    )
    add_run_options(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print {attempt, state, phase, runner_pid, waiting_for} as JSON",
    )
    p.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_start, exit_at_once=True)

    p = sub.add_parser(
        "wait",
        help="wait read-only for an attempt's verdict, at most --max seconds",
        description="Wait for the final verdict of an attempt (or of the newest attempt of "
        "a root), woken by the kernel (inotify, pidfd), never signalling anything. Progress "
        "goes to stderr; error-named file counts are provisional (C1).",
        formatter_class=RAW,
    )
    p.add_argument(
        "target",
        nargs="?",
        default=str(DEFAULT_ROOT),
        metavar="ATTEMPT|ROOT",
        help="attempt directory, or evidence root for its newest attempt (default %(default)s)",
    )
    p.add_argument(
        "--max",
        type=seconds,
        default=None,
        metavar="S",
        help="return after S seconds with exit 6 if still in progress (default: no bound)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the wait result (state, progress, verdict)"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="write every journal event (from the first) to stdout as JSON lines while "
        "waiting, then a final 'verdict' line",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr while waiting")
    p.add_argument(
        "--progress-every",
        type=seconds,
        default=5.0,
        metavar="S",
        help="seconds between progress lines (default %(default)s)",
    )
    p.set_defaults(handler=cmd_wait, exit_at_once=True)

    p = sub.add_parser(
        "stop",
        help="ask an attempt's runner to interrupt it (the one sanctioned way to stop)",
        description="Ask the runner of ATTEMPT to end its own process group as on an "
        "external interruption (SIGTERM, grace, SIGKILL to that group only; C4), recorded "
        "with the reason: the verdict is interrupted/external. Signals the runner only, "
        "never the workload, and nothing when the runner is gone.",
        formatter_class=RAW,
    )
    p.add_argument("target", metavar="ATTEMPT", help="the attempt directory to stop")
    p.add_argument("--reason", default="", metavar="TEXT", help="why, recorded in the evidence")
    p.add_argument("--json", action="store_true", help="print the stop result as JSON")
    p.set_defaults(handler=cmd_stop, exit_at_once=True)

    p = sub.add_parser(
        "mcp",
        help="serve skgate's tools to an AI agent over MCP (stdio)",
        description="A Model Context Protocol server on stdin/stdout with the tools start, "
        "status, wait, stop, report, check_outputs and preflight; each returns the JSON "
        "of the matching CLI command's --json. Needs the optional extra: "
        "pip install 'skgate[mcp]'.",
        formatter_class=RAW,
    )
    p.add_argument(
        "--max-wait",
        type=seconds,
        default=None,
        metavar="S",
        help="upper bound on the wait tool's max_seconds (default 240, under an agent's "
        "tool time limit)",
    )
    p.set_defaults(handler=cmd_mcp)


def cmd_start(args: argparse.Namespace) -> int:
    from skgate import detach  # noqa: PLC0415
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
    from skgate import lifecycle  # noqa: PLC0415
    from skgate.cli.show import print_verdict  # noqa: PLC0415

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
    from skgate import lifecycle  # noqa: PLC0415

    result = lifecycle.stop(args.target, args.reason)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(f"{result.attempt}: {result.action}: {result.message}")
    return result.exit_code


def cmd_mcp(args: argparse.Namespace) -> int:
    from skgate import mcp_server  # noqa: PLC0415

    code: int = mcp_server.serve(max_wait=args.max_wait)
    return code
