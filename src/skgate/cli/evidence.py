"""Command-line glue for evidence and reports: ``report``, ``lint-report``, ``check-outputs``.

Thin: call the library, print, return an exit status (the parsers are in
:mod:`skgate.cli.specs`). The library never prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from skgate.evidence.files import is_attempt_dir
from skgate.model.errors import UsageError
from skgate.model.oneline import one_line
from skgate.model.outcomes import PackageMode
from skgate.model.records import Verdict
from skgate.read.liveness import current_verdict
from skgate.report import facts, load
from skgate.report import markdown as report
from skgate.report.lint import lint_file
from skgate.report.output import write_report_file
from skgate.verdict import lint
from skgate.workdir import outputs_check as outputs


def _attempt_verdict(target: str | None) -> Verdict | None:
    if target is None:
        return None
    path = Path(target)
    if not is_attempt_dir(path):
        raise UsageError(f"--attempt {target}: not an attempt directory (no control.json)")
    verdict = current_verdict(path)
    return verdict if verdict.attempt else verdict.with_attempt(path.name)


def cmd_report(args: argparse.Namespace) -> int:
    # The CLI may look at live processes: an attempt in progress reads in_progress, not
    # "runner died" (the report itself reads archives only, issue 22 s3).
    rep = load.build_report(Path(args.target), current_verdict)
    text = report.render(rep, facts.parse_lang(args.lang), args.fmt)
    if args.output:
        write_report_file(Path(args.output), text, force=args.force)
    else:
        sys.stdout.write(text)
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    verdict = _attempt_verdict(args.attempt)
    findings: list[lint.Finding] = []
    for name in args.files:
        findings.extend(lint_file(Path(name), verdict))
    for f in findings:
        print(f.format())
    return 1 if findings else 0


def cmd_check_outputs(args: argparse.Namespace) -> int:
    verdict = _attempt_verdict(args.attempt)
    opp = outputs.opp_dir(args.opp, os.environ)  # --opp overrides $ASCEND_OPP_PATH (C8)
    result = outputs.check_outputs(Path(args.directory), PackageMode(args.package), verdict, opp)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return result.exit_code
    for message in result.messages:
        # A file name holding a line break stays on its message's line.
        print(one_line(f"{result.directory}: {message}"))
    return result.exit_code
