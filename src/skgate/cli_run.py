"""Command-line glue for running and judging: ``run``, ``status``, ``classify``, ``demo``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from skgate import demo as demo_mod
from skgate.cli_args import (
    devices,
    env_item,
    jobs_value,
    positive_int,
    positive_seconds,
    seconds,
)
from skgate.errors import UsageError
from skgate.evidence import current_verdict, recompute
from skgate.ledger import DEFAULT_ROOT, latest, resolve
from skgate.model import DEFAULT_GRACE, DEFAULT_TIMEOUT, PackageMode, RunRequest, Verdict
from skgate.runner import run_here
from skgate.words import HEADLINE


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options that freeze an attempt's controls (shared by run and regress)."""
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="evidence root (default %(default)s)")
    p.add_argument("--cwd", default=None, help="working directory of the command (default: .)")
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        help="frozen top-level timeout in seconds (default %(default)s)",
    )
    p.add_argument(
        "--grace",
        type=seconds,
        default=DEFAULT_GRACE,
        help="seconds between SIGTERM and SIGKILL to the own group (default %(default)s)",
    )
    p.add_argument(
        "--jobs", type=jobs_value, default=None, help="compile concurrency: N or auto (C5)"
    )
    p.add_argument("--outputs", default=None, help="outputs dir to count (C3)")
    p.add_argument(
        "--package",
        choices=[m.value for m in PackageMode],
        default=PackageMode.OPTIONAL.value,
        help="whether a .run package is required (C8)",
    )
    p.add_argument("--summary-pattern", action="append", default=[], metavar="REGEX")
    p.add_argument("--completion-marker", default=None, metavar="REGEX")
    p.add_argument("--approve-hook", action="append", default=[], metavar="FINGERPRINT")
    p.add_argument("--hook-baseline", default=None, metavar="FILE")
    p.add_argument("--python", default=None, metavar="PATH", help="interpreter to scan (C6)")
    p.add_argument("--foreign", choices=["wait", "refuse"], default="wait")
    p.add_argument("--lease-timeout", type=seconds, default=600.0)
    p.add_argument("--devices", type=devices, default=())
    p.add_argument("--profiler-schedule", default=None, metavar="SPEC")
    p.add_argument("--vary", action="append", default=[], choices=["jobs"])
    p.add_argument("--env", action="append", type=env_item, default=[], metavar="NAME=VALUE")
    p.add_argument("--unset-env", action="append", default=[], metavar="NAME")
    p.add_argument(
        "--compiler-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a compiler process name for the foreign-compiler check (repeatable; "
        "default opc, op_compiler)",
    )
    p.add_argument(
        "--job-memory-mb",
        type=positive_int,
        default=None,
        metavar="MIB",
        help="memory budget per compile job for --jobs auto (C5)",
    )
    p.add_argument("--scan-interval", type=positive_seconds, default=1.0, help=argparse.SUPPRESS)


def request_from_args(args: argparse.Namespace, command: list[str]) -> RunRequest:
    return RunRequest(
        argv=tuple(command),
        cwd=str(Path(args.cwd or os.getcwd()).absolute()),
        root=str(Path(args.root).absolute()),
        timeout=args.timeout,
        grace=args.grace,
        outputs=args.outputs,
        package_mode=PackageMode(args.package),
        summary_patterns=tuple(args.summary_pattern),
        completion_marker=args.completion_marker,
        jobs=args.jobs,
        env=dict(args.env),
        unset_env=tuple(args.unset_env),
        python=args.python,
        approved_hooks=tuple(args.approve_hook),
        hook_baseline=args.hook_baseline,
        foreign_policy=args.foreign,
        lease_timeout=args.lease_timeout,
        devices=tuple(args.devices),
        profiler_schedule=args.profiler_schedule,
        vary=tuple(args.vary),
        quiet=bool(getattr(args, "quiet", False)),
        scan_interval=args.scan_interval,
        compiler_names=tuple(args.compiler_name),
        job_memory_mb=args.job_memory_mb,
    )


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "run",
        help="run a command under the gate: skgate run [options] -- COMMAND...",
        description="Run COMMAND in its own session under the gate and print its verdict.",
    )
    add_run_options(p)
    p.add_argument("--quiet", action="store_true", help="do not echo the command's output")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    # Catches a command given without '--', to say exactly that instead of a vague error.
    p.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("status", help="read-only state of an attempt or the latest of a root")
    p.add_argument("target", nargs="?", default=str(DEFAULT_ROOT), metavar="ATTEMPT|ROOT")
    p.add_argument("--all", action="store_true", help="every attempt of a root")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--watch",
        action="store_true",
        help="live read-only view until the attempt is no longer in progress",
    )
    p.add_argument("--interval", type=positive_seconds, default=2.0, help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("classify", help="recompute a verdict from the archived evidence alone")
    p.add_argument("target", metavar="ATTEMPT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_classify)

    p = sub.add_parser("demo", help="run the CANN simulator under the gate")
    p.add_argument(
        "--scenario",
        choices=demo_mod.scenario_names(),
        default="success",
        help="what to show (default %(default)s)",
    )
    p.add_argument("--workdir", default=None, help="where to run (default: a new temp dir)")
    p.add_argument("--lang", choices=["en", "zh"], default="en")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_demo)


def command_after_dashes(args: argparse.Namespace, verb: str) -> list[str]:
    command: list[str] | None = getattr(args, "command_argv", None)
    if command is None or getattr(args, "stray", None):
        raise UsageError(f"missing '--' before the command: skgate {verb} [options] -- COMMAND...")
    if not command:
        raise UsageError(f"no command after '--': skgate {verb} [options] -- COMMAND...")
    return command


def print_verdict(verdict: Verdict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(verdict.to_dict(), ensure_ascii=False, indent=2))
        return
    print(HEADLINE[verdict.state] + (f" (cause: {verdict.cause.value})" if verdict.cause else ""))
    for reason in verdict.reasons:
        print(f"  - {reason}")
    if verdict.missing:
        print("  missing evidence: " + "; ".join(verdict.missing))
    if verdict.attempt:
        print(f"  evidence: {verdict.attempt}")


def cmd_run(args: argparse.Namespace) -> int:
    command = command_after_dashes(args, "run")
    request = request_from_args(args, command)
    out = sys.stderr if args.json else sys.stdout

    def echo(data: bytes) -> None:
        out.buffer.write(data)
        out.buffer.flush()

    verdict = run_here(request, None if args.quiet else echo)
    print_verdict(verdict, args.json)
    return verdict.exit_code


def cmd_status(args: argparse.Namespace) -> int:
    target = Path(args.target)
    if args.all:
        verdicts = [current_verdict(a) for a in resolve(target)]
        if args.json:
            print(json.dumps([v.to_dict() for v in verdicts], ensure_ascii=False, indent=2))
        else:
            for v in verdicts:
                print(f"{v.attempt}: {HEADLINE[v.state]}")
        return verdicts[-1].exit_code if verdicts else 0
    attempt = target if (target / "control.json").is_file() else latest(target)
    if args.watch:
        if args.json:
            raise UsageError("--watch is a view for people; use --json without --watch to poll")
        # Imported here: rich and psutil are only needed for the live view.
        from skgate.watch import watch  # noqa: PLC0415

        return watch(attempt, interval=args.interval).exit_code
    verdict = current_verdict(attempt)
    print_verdict(verdict, args.json)
    return verdict.exit_code


def cmd_classify(args: argparse.Namespace) -> int:
    target = Path(args.target)
    attempts = resolve(target)
    if len(attempts) != 1:
        raise UsageError(f"{target}: classify takes one attempt directory, not a root")
    verdict = recompute(attempts[0])
    print_verdict(verdict, args.json)
    return verdict.exit_code


def cmd_demo(args: argparse.Namespace) -> int:
    return demo_mod.run_demo(
        args.scenario, workdir=args.workdir, lang=args.lang, as_json=args.json, show=print_verdict
    )
