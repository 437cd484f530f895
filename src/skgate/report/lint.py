"""``skgate lint-report`` on files: read each report file and lint its text with
:mod:`skgate.verdict.lint` (which does no I/O)."""

from __future__ import annotations

from pathlib import Path

from skgate.evidence import regular
from skgate.model.records import Verdict
from skgate.verdict.lint import Finding, lint_text

#: The largest report linted: a report of thousands of attempts is a few MiB.
MAX_REPORT = 256 << 20


def lint_file(path: Path, verdict: Verdict | None = None) -> list[Finding]:
    """Lint one file (UTF-8; undecodable bytes are escaped, never fatal)."""
    raw = regular.read_named(path, "report", "pass report files (Markdown or text)", MAX_REPORT)
    return lint_text(raw.decode("utf-8", "backslashreplace"), str(path), verdict)
