"""Command-line glue for ``skgate preflight`` (C4, C5, C6): check, print, exit.

``skgate preflight [options] [-- COMMAND...]`` runs the same checks as ``skgate run``
before launch, but launches nothing, waits for nothing and takes no lease. It prints
the start-up hook findings with their fingerprints and what to do, and exits 0 when a
run would start, 3 when it would be blocked, 2 on bad input.

``--freeze-baseline FILE`` writes every current finding into a ``skgate.hook-baseline/1``
file, once (an existing file is never overwritten); runs then approve them with
``--hook-baseline FILE``. Each approval stays bound to the content of the hook: a change
to the file changes its fingerprint and blocks again.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from skgate import hooks, jobs
from skgate.cli_args import devices, env_item
from skgate.errors import UsageError
from skgate.ledger import DEFAULT_ROOT
from skgate.model import EXIT_BLOCKED, RunRequest
from skgate.preflight import prepare, render_lines

SCHEMA_PREFLIGHT = "skgate.preflight/1"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``preflight`` (handler returns the exit status)."""
    p = sub.add_parser(
        "preflight",
        help="check start-up hooks, jobs, foreign compilers and leases: skgate preflight "
        "[options] [-- COMMAND...]",
        description=(
            "Run the pre-launch checks of 'skgate run' without launching anything. "
            "Exit 0: a run would start; 3: it would be blocked; 2: bad input."
        ),
    )
    p.add_argument("--python", default=None, metavar="PATH", help="interpreter to scan (C6)")
    p.add_argument(
        "--freeze-baseline",
        default=None,
        metavar="FILE",
        help="write every current finding to FILE as an approval baseline (once, never "
        "overwritten)",
    )
    p.add_argument("--hook-baseline", default=None, metavar="FILE", help="approvals file")
    p.add_argument("--approve-hook", action="append", default=[], metavar="FINGERPRINT")
    p.add_argument("--jobs", default=None, help="compile concurrency: N or auto (C5)")
    p.add_argument("--vary", action="append", default=[], choices=["jobs"])
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="evidence root to compare jobs with")
    p.add_argument("--profiler-schedule", default=None, metavar="SPEC")
    p.add_argument("--devices", type=devices, default=(), help="device ids to check, e.g. 0,1")
    p.add_argument("--foreign", choices=["wait", "refuse"], default="wait")
    p.add_argument("--env", action="append", type=env_item, default=[], metavar="NAME=VALUE")
    p.add_argument("--unset-env", action="append", default=[], metavar="NAME")
    p.add_argument("--cwd", default=None, help="working directory of the command")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_preflight)


def request_from_args(args: argparse.Namespace) -> RunRequest:
    command = list(getattr(args, "command_argv", None) or [])
    jobs.parse_jobs(args.jobs)  # bad --jobs: one line, exit 2, before any probe runs
    return RunRequest(
        argv=tuple(command),
        cwd=str(Path(args.cwd or os.getcwd()).absolute()),
        root=str(Path(args.root).absolute()),
        jobs=args.jobs,
        env=dict(args.env),
        unset_env=tuple(args.unset_env),
        python=args.python,
        approved_hooks=tuple(args.approve_hook),
        hook_baseline=args.hook_baseline,
        foreign_policy=args.foreign,
        devices=tuple(args.devices),
        profiler_schedule=args.profiler_schedule,
        vary=tuple(args.vary),
    )


def cmd_preflight(args: argparse.Namespace) -> int:
    request = request_from_args(args)
    if args.freeze_baseline and Path(args.freeze_baseline).exists():
        raise UsageError(
            f"baseline {args.freeze_baseline} already exists; a baseline is frozen once: "
            "pick a new file name"
        )
    plan = prepare(request, Path(request.root), None, take_leases=False)
    hooks_record = plan.controls.get("hooks", {})
    blocked = list(plan.blocked)
    baseline: dict[str, Any] | None = None
    if args.freeze_baseline:
        if hooks_record.get("problems") or hooks_record.get("skipped"):
            raise UsageError(
                "the start-up hook scan did not complete, so no baseline was written; "
                "fix the problems shown by 'skgate preflight' first"
            )
        findings = hooks_record.get("findings", [])
        baseline = hooks.write_baseline(
            Path(args.freeze_baseline), findings, hooks_record.get("interpreter", {})
        )
        # The findings are approved from now on: only other reasons still block.
        blocked = [r for r in blocked if "unapproved start-up hook" not in r]
    if args.json:
        out = {
            "schema": SCHEMA_PREFLIGHT,
            "would_block": bool(blocked),
            "blocked": blocked,
            "controls": plan.controls,
            "baseline": args.freeze_baseline if baseline is not None else None,
        }
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        for line in render_lines(plan):
            print(line)
        if baseline is not None:
            print(
                f"baseline written: {args.freeze_baseline} approves "
                f"{len(baseline['fingerprints'])} finding(s); run with "
                f"--hook-baseline {args.freeze_baseline}"
            )
            if not blocked:
                print("with this baseline, the run may launch")
    return EXIT_BLOCKED if blocked else 0
