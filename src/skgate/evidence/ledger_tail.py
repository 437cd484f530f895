"""The ledger's last line: read back from the end, whole or torn, and cut back when torn.

A torn last line is the beginning of an entry that an append stopped before its line end
(a full disk, a kill mid-write): no entry depends on it, so the next append or ``skgate
recover`` writes its entry in its place, recording the cut in that entry
(:func:`replace_torn`; issue 29's leftover; C4: every whole line stays as written).
Apart from ``ledger.py`` to keep modules short; ``ledger`` re-exports the names its
callers use.
"""

from __future__ import annotations

import os

from skgate.evidence import regular
from skgate.evidence.digest import new_sha256, sha256_bytes
from skgate.evidence.ledger_seals import LINE_LIMIT
from skgate.model import jsonread
from skgate.model.errors import EvidenceError
from skgate.model.frozen import record

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

SCHEMA_LEDGER = "skgate.ledger/1"


def last_line(fd: int, size: int | None = None) -> tuple[bytes | None, str | None, int]:
    """The last line (without its newline), its sha256 and where it starts, reading back
    from the end (of the file, or the first ``size`` bytes of it).

    ``(None, None, 0)`` for an empty ledger. A last line over :data:`LINE_LIMIT` is not
    held: ``(None, its sha256, start)``, hashed in blocks, so the chain still covers it and
    memory stays bounded whatever was appended by hand (issue 21).
    """
    if size is None:
        size = os.fstat(fd).st_size
    if size == 0:
        return None, None, 0
    end = size - 1 if os.pread(fd, 1, size - 1) == b"\n" else size
    chunk = 8192
    pos = end
    start = 0
    while pos > 0:
        lo = max(0, pos - chunk)
        cut = os.pread(fd, pos - lo, lo).rfind(b"\n")
        if cut >= 0:
            start = lo + cut + 1
            break
        pos = lo
        chunk = min(chunk * 2, 1 << 20)
    if end - start <= LINE_LIMIT:
        raw = os.pread(fd, end - start, start)
        return raw, sha256_bytes(raw), start
    digest = new_sha256()
    at = start
    while at < end:
        block = os.pread(fd, min(1 << 20, end - at), at)
        if not block:
            break
        digest.update(block)
        at += len(block)
    return None, digest.hexdigest(), start


#: How every entry's line begins: ``json_text`` keeps the keys in the order written
#: (``schema``, then ``seq``) with no spaces (held by tests/evidence/test_ledger.py).
ENTRY_HEAD = b'{"schema":"' + SCHEMA_LEDGER.encode() + b'","seq":'


def is_torn(raw: bytes) -> bool:
    """Is a last line without its line end an append cut short (a full disk, a kill)?

    It is when it begins as every entry begins and stops before its end (it does not
    parse). A line that parses lost only its line end; one that begins otherwise was
    written by someone else: a change, never cut back (C4)."""
    if not (raw.startswith(ENTRY_HEAD) or ENTRY_HEAD.startswith(raw)):
        return False
    try:
        jsonread.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return True
    return False


def parsed(raw: bytes) -> object:
    try:
        return jsonread.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


@record
class TornTail:
    """A torn last line (:func:`is_torn`): where it starts, its bytes and their sha256
    (as :func:`last_line` hashed them)."""

    start: int
    raw: bytes
    sha256: str

    @property
    def cut(self) -> dict[str, Any]:
        """The entry field ``torn_cut`` that records it: size and sha256."""
        return {"bytes": len(self.raw), "sha256": self.sha256}


def torn_tail(fd: int) -> TornTail | None:
    """The ledger's torn last line, or None when it ends otherwise (the caller holds the
    lock). Only a line of at most :data:`LINE_LIMIT` bytes counts: a longer one is no
    append of skgate's, and stays for ``verify`` to name (issue 21)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    raw, digest, start = last_line(fd)
    if raw is None or digest is None or not is_torn(raw):
        return None
    return TornTail(start, raw, digest)


def replace_torn(fd: int, torn: TornTail, data: bytes) -> None:
    """Write ``data`` (an entry that records ``torn.cut``, and its line end) where the torn
    line starts, in its place: the cut and its record are one act (C4, C7).

    Why not cut first and then append (the way before): an append that then fails (the
    disk still full) took its own bytes back, and the torn bytes were gone with no
    ``torn_cut`` anywhere. Why not keep the cut's size and sha256 elsewhere until an
    append succeeds: a second file to write on a full disk, and one more to lose in a
    crash. Here the room the entry needs past the file's end is reserved first
    (``posix_fallocate``): when there is none, nothing was changed and the torn line
    stays for the next append or ``recover``. Then the entry is written over the torn
    bytes (a torn line longer than the entry cut to the entry's length first) and synced;
    should that write fail, the torn bytes are written back and the file is its old size
    again. A crash part-way leaves one last line without a line end that begins as every
    entry does (the torn bytes with the reserved zeros after them, their beginning, or the
    entry's beginning over them): torn again, so the next append or ``recover`` writes
    over it and records what it found; every whole line before it is as it was (C7:
    append-only, crash consistent). The descriptor is opened ``O_APPEND`` (every
    write goes to the end): that flag is off for the write over and back on after."""
    import fcntl  # noqa: PLC0415 - writers only; a read (status) never loads it

    size = os.fstat(fd).st_size
    end = torn.start + len(data)
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_APPEND)
    try:
        if end > size:
            try:
                os.posix_fallocate(fd, size, end - size)
            except BaseException:
                _back(fd, torn, size)
                raise
        try:
            if end < size:
                # The entry is shorter than the torn line: its tail goes first, so a crash
                # in between leaves the torn line's beginning (torn still), never a stray
                # piece of it after the entry's line end (a change, for ever).
                os.ftruncate(fd, end)
            _write_at(fd, data, torn.start)
            os.fsync(fd)
        except BaseException:
            _back(fd, torn, size)
            raise
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)


def _write_at(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, at)
        view, at = view[n:], at + n


def _back(fd: int, torn: TornTail, size: int) -> None:
    """The torn bytes where they were and the file its old size (blocks it already has:
    no new room needed), as far as the file system lets."""
    try:
        _write_at(fd, torn.raw, torn.start)
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        pass  # the next append, or recover, finds a torn last line and records it


def ends_torn(path: Path) -> bool:
    """Does the ledger (a regular file, never through a link) end with a torn line? Any
    error is "no": the lookup under the lock, or the command's own reads, say it."""
    try:
        fd = regular.open_fd(path)
    except (OSError, EvidenceError):
        return False
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return False
        raw, _, _ = last_line(fd)
        return raw is not None and is_torn(raw)
    except OSError:
        return False
    finally:
        os.close(fd)
