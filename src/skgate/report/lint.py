"""``skgate lint-report`` on files: read each report file and lint its text with
:mod:`skgate.verdict.lint` (which does no I/O)."""

from __future__ import annotations

from pathlib import Path

from skgate.model.errors import UsageError
from skgate.model.records import Verdict
from skgate.verdict.lint import Finding, lint_text


def lint_file(path: Path, verdict: Verdict | None = None) -> list[Finding]:
    """Lint one file (UTF-8; undecodable bytes are escaped, never fatal)."""
    try:
        text = path.read_text(encoding="utf-8", errors="backslashreplace")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file to lint") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; pass report files") from None
    except OSError as exc:
        raise UsageError(f"{path}: unreadable ({exc.strerror})") from None
    return lint_text(text, str(path), verdict)
