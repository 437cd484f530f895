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
from pathlib import Path
from typing import Any

from skgate.cli.args import request_from_args
from skgate.model.errors import UsageError
from skgate.model.exits import EXIT_BLOCKED
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.inputs import check_inputs
from skgate.preflight.prepare import prepare
from skgate.preflight.render import preflight_record, render_lines
from skgate.preflight.request import validate


def cmd_preflight(args: argparse.Namespace) -> int:
    request = request_from_args(args, list(getattr(args, "command_argv", None) or []))
    # The input run would refuse (exit 2) is refused here too, never "a run would start".
    validate(request, command=bool(request.argv))
    check_inputs(request)
    if args.freeze_baseline and Path(args.freeze_baseline).exists():
        raise UsageError(
            f"baseline {args.freeze_baseline} already exists; a baseline is frozen once: "
            "pick a new file name"
        )
    # Freezing approves every finding, so the start-up probe may run and its findings
    # (modules the hooks import) are frozen too (C6).
    plan = prepare(
        request,
        Path(request.root),
        None,
        take_leases=False,
        approve_all_hooks=bool(args.freeze_baseline),
    )
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
        out = preflight_record(
            plan, blocked, args.freeze_baseline if baseline is not None else None
        )
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
