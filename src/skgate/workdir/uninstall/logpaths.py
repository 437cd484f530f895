"""Streaming a run log for printed ``uninstall.sh`` paths (C8): fixed-size blocks, only the lines
that contain ``uninstall.sh`` are looked at (bounded memory for a multi-GB log)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from skgate.evidence.logscan import uninstall_paths
from skgate.model.errors import UsageError
from skgate.workdir.uninstall.validate import MARKER


def iter_marker_lines(
    path: Path, marker: bytes = MARKER, max_line: int = 64 * 1024, block: int = 4 << 20
) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for each line containing ``marker``, in bounded memory.

    Only lines with the marker are materialised: the search jumps between marker hits
    with ``bytes.find``, so a multi-GB log costs about one read of the file. A line longer
    than ``max_line`` is skipped whole (it cannot be a path skgate would run).
    """
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the log ({exc.strerror})") from None
    carry = b""
    carry_at = 0
    overflow = False  # the start of the current line was dropped (too long)
    offset = 0
    with fh:
        while True:
            chunk = fh.read(block)
            if not chunk:
                break
            data = carry + chunk if carry else chunk
            base = carry_at if carry else offset
            offset += len(chunk)
            last_nl = data.rfind(b"\n")
            if last_nl < 0:
                if overflow or len(data) > max_line:
                    overflow, carry = True, b""
                else:
                    carry, carry_at = data, base
                continue
            pos = 0
            while True:
                hit = data.find(marker, pos, last_nl)
                if hit < 0:
                    break
                start = data.rfind(b"\n", 0, hit) + 1
                end = data.find(b"\n", hit)
                if not (overflow and start == 0) and end - start <= max_line:
                    yield base + start, data[start:end]
                pos = end + 1
            overflow = False
            rest = data[last_nl + 1 :]
            if len(rest) > max_line:
                overflow, carry = True, b""
            else:
                carry, carry_at = rest, base + last_nl + 1
    if carry and not overflow and marker in carry:
        yield carry_at, carry


def extract_paths(line: bytes) -> list[str]:
    """Uninstall paths a log line names, verbatim (validation decides what to run); the
    grammar is :func:`skgate.evidence.logscan.uninstall_paths`, shared with the log scan."""
    return uninstall_paths(line.decode("utf-8", "backslashreplace").rstrip("\r"))
