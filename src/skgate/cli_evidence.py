"""Command-line glue for evidence and reports: ``report``, ``lint-report``, ``check-outputs``.

Thin: parse, call the library, print, return an exit status. The library never prints.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from skgate import lint, outputs, report
from skgate.attempt import is_attempt_dir
from skgate.errors import UsageError
from skgate.ledger import DEFAULT_ROOT
from skgate.model import PackageMode, Verdict


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this area's subcommands (each sets ``handler=fn(args) -> int``)."""
    p = sub.add_parser(
        "report",
        help="render an attempt or every attempt of a root in the C7 language",
        description="Render the verdict, reasons, timeline, controls, ownership, census and "
        "verbatim [summary] lines of an attempt (or of every attempt in an evidence root, "
        "oldest first) in the contract's words (C7).",
    )
    p.add_argument("target", nargs="?", default=str(DEFAULT_ROOT), metavar="ATTEMPT|ROOT")
    p.add_argument("--lang", choices=report.LANGS, default="en")
    p.add_argument("--format", choices=report.FORMATS, default="md", dest="fmt")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically)")
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser(
        "lint-report",
        help="check a report against the contract's language (C1, C2, C7)",
        description="Print FILE:LINE: RULE message for each claim that breaks C7; "
        "exit 1 if any, 0 if clean.",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--attempt", metavar="ATTEMPT", help="the attempt the reports are about")
    p.set_defaults(handler=cmd_lint)

    p = sub.add_parser(
        "check-outputs",
        help="C8 output check, only after natural return",
        description="Upstream's sk_check_static_kernel_outputs, contract-aware: exit 0 ok, "
        "1 failure, 6 in progress (with --attempt of a live attempt).",
    )
    p.add_argument("directory", metavar="DIR")
    p.add_argument(
        "--package", choices=[m.value for m in PackageMode], default=PackageMode.OPTIONAL.value
    )
    p.add_argument("--attempt", metavar="ATTEMPT")
    p.set_defaults(handler=cmd_check_outputs)


def _attempt_verdict(target: str | None) -> Verdict | None:
    if target is None:
        return None
    path = Path(target)
    if not is_attempt_dir(path):
        raise UsageError(f"--attempt {target}: not an attempt directory (no control.json)")
    verdict = report.default_verdict_of(path)
    return verdict if verdict.attempt else verdict.with_attempt(path.name)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file and rename: never a half-written file."""
    parent = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write there ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cmd_report(args: argparse.Namespace) -> int:
    rep = report.build_report(Path(args.target))
    text = report.render(rep, args.lang, args.fmt)
    if args.output:
        write_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    verdict = _attempt_verdict(args.attempt)
    findings: list[lint.Finding] = []
    for name in args.files:
        findings.extend(lint.lint_file(Path(name), verdict))
    for f in findings:
        print(f.format())
    return 1 if findings else 0


def cmd_check_outputs(args: argparse.Namespace) -> int:
    verdict = _attempt_verdict(args.attempt)
    result = outputs.check_outputs(Path(args.directory), PackageMode(args.package), verdict)
    for message in result.messages:
        print(f"{result.directory}: {message}")
    return result.exit_code
