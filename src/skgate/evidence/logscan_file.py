"""A finished (or still growing) run log scanned from start to end (C3).

The anchor path (:mod:`skgate.evidence.logscan_anchor`), the grep/wc path
(:mod:`skgate.evidence.logscan_fast`) and the pure-Python scan
(:class:`skgate.evidence.logscan.LogScanner`) give the same ``LogScan``; this module picks
one. All stand on :mod:`skgate.evidence.logscan`, the shared lower module, so none
imports this one (no import cycle, issue 22 s6).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from skgate.evidence import logscan_anchor, logscan_fast, regular
from skgate.evidence.logscan import LogScanner
from skgate.model.errors import EvidenceError
from skgate.model.logscan import LogScan
from skgate.model.request import validate_patterns

#: Files at least this big take the grep path by default (below it, starting two
#: processes costs more than the pure-Python scan).
GREP_MIN_BYTES = 4 << 20
#: Set to ``1`` to never use the grep path (e.g. to compare both paths).
NO_GREP_ENV = "SKGATE_NO_GREP"


def scan_file(
    path: Path,
    summary_patterns: Sequence[str] = (),
    completion_marker: str | None = None,
    chunk: int = 1 << 20,
    *,
    max_line: int = 64 * 1024,
    use_grep: bool | None = None,
) -> LogScan:
    """Scan a run log from start to its current end (it may still be growing).

    ``use_grep`` None (default): a fast path for a log of at least ``GREP_MIN_BYTES`` (the
    anchor path when its plan for this log is estimated cheaper than the grep path, else
    ``scan_file_fast``); True: whatever the size; False: never. The fast paths are also
    skipped when ``SKGATE_NO_GREP=1`` or when user regexes are given (summary patterns,
    completion marker): those are Python regexes, which grep's ERE cannot reproduce
    exactly (backslashreplace decoding, Unicode classes, lookarounds), so they keep the
    pure-Python scan. When a fast path fails for any reason the result comes from the
    next one, then the pure-Python scan, so the answer never depends on the path (C3).
    """
    validate_patterns(summary_patterns, completion_marker)
    if (
        use_grep is not False
        and not summary_patterns
        and completion_marker is None
        and os.environ.get(NO_GREP_ENV) != "1"
    ):
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # the Python path below reports a missing or unreadable log
        if use_grep or size >= GREP_MIN_BYTES:
            # The anchor path when its plan for this log is the cheaper one, else grep.
            fast = logscan_anchor.scan_file_anchored(path, max_line)
            if fast is None:
                fast = logscan_fast.scan_file_fast(path, max_line)
            if fast is not None:
                return fast
    scanner = LogScanner(summary_patterns, completion_marker, max_line)
    _feed_file(scanner, path, chunk)
    return scanner.finish()


def scan_files(
    paths: Sequence[Path],
    summary_patterns: Sequence[str] = (),
    completion_marker: str | None = None,
    chunk: int = 1 << 20,
    *,
    max_line: int = 64 * 1024,
) -> LogScan:
    """Scan several logs as one stream, in order (the pure-Python scan).

    For a run whose runner died: ``run.log`` holds the output up to the death, the pipe
    keeper's ``run.kept.log`` what the compile printed after it (issue 21 s2).
    """
    scanner = LogScanner(summary_patterns, completion_marker, max_line)
    for path in paths:
        _feed_file(scanner, path, chunk)
    return scanner.finish()


def _feed_file(scanner: LogScanner, path: Path, chunk: int) -> None:
    try:
        # A regular file only, never through a link (issue 21: a run.log linked to an
        # outside file would put a [summary] the compile never printed in the verdict).
        fd = regular.open_fd(path)
    except FileNotFoundError:
        raise EvidenceError(f"{path}: run log missing") from None
    with open(fd, "rb") as fh:
        while True:
            try:
                data = fh.read(chunk)
            except OSError as exc:
                raise EvidenceError(f"{path}: run log unreadable ({exc.strerror})") from None
            if not data:
                break
            scanner.feed(data)
