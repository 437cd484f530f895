"""Command-line glue for evidence and reports: ``report``, ``lint-report``, ``check-outputs``.

Thin: parse, call the library, print, return an exit status. The library never prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from skgate.evidence.files import DEFAULT_ROOT, is_attempt_dir
from skgate.liveness import current_verdict
from skgate.model.errors import UsageError
from skgate.model.outcomes import PackageMode
from skgate.model.phrases import LANGS
from skgate.model.records import Verdict
from skgate.report import facts, load
from skgate.report import markdown as report
from skgate.report.lint import lint_file
from skgate.report.output import write_report_file
from skgate.verdict import lint
from skgate.workdir import outputs_check as outputs


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this area's subcommands (each sets ``handler=fn(args) -> int``)."""
    p = sub.add_parser(
        "report",
        help="render an attempt or every attempt of a root in the C7 language",
        description="Render the verdict, reasons, timeline, controls, ownership, census and "
        "verbatim [summary] lines of an attempt (or of every attempt in an evidence root, "
        "oldest first) in the contract's words (C7).",
    )
    p.add_argument(
        "target",
        nargs="?",
        default=str(DEFAULT_ROOT),
        metavar="ATTEMPT|ROOT",
        help="an attempt directory, an evidence root (every attempt), or a regress session "
        "(default %(default)s)",
    )
    p.add_argument(
        "--lang", choices=LANGS, default="en", help="report language (default %(default)s)"
    )
    p.add_argument(
        "--format",
        choices=facts.FORMATS,
        default="md",
        dest="fmt",
        help="md (Markdown), json (schema skgate.report/1, for controllers) or html (one "
        "self-contained page with a timeline; write it with -o) (default %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report to FILE (atomically: temp file, fsync, rename); refuses an "
        "existing FILE unless --force, and never writes inside an attempt directory or an "
        "evidence root's attempts/ (evidence is append-only)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with -o: replace FILE if it exists (never evidence: attempt directories and "
        "attempts/ stay refused)",
    )
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser(
        "lint-report",
        help="check a report against the contract's language (C1, C2, C7)",
        description="Print FILE:LINE: RULE message for each claim that breaks C7 (for "
        "example 'compile failed' from error-named files alone).",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="report files to check")
    p.add_argument("--attempt", metavar="ATTEMPT", help="the attempt the reports are about")
    p.set_defaults(handler=cmd_lint)

    p = sub.add_parser(
        "check-outputs",
        help="C8 output check, only after natural return",
        description="Upstream's sk_check_static_kernel_outputs, contract-aware (C8): *.run "
        "is the success artifact, an error log with no .run after natural return a failure. "
        "Without --attempt the judgement rests on file names alone and says so: natural "
        "return is not verified.",
    )
    p.add_argument("directory", metavar="DIR", help="the outputs directory to check")
    p.add_argument(
        "--package",
        choices=[m.value for m in PackageMode],
        default=PackageMode.OPTIONAL.value,
        help="required: no .run is a failure; optional: it is not (C8; default %(default)s)",
    )
    p.add_argument(
        "--attempt",
        metavar="ATTEMPT",
        help="the attempt that produced DIR: judge only after its natural return",
    )
    p.add_argument(
        "--opp",
        metavar="DIR",
        default=None,
        help="the OPP directory whose installed manifests (static_kernel/ai_core/<package>/"
        "config/<soc>/binary_info_config.json) are checked (default: $ASCEND_OPP_PATH) (C8)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_check_outputs)


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
        print(f"{result.directory}: {message}")
    return result.exit_code
