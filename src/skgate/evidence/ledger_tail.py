"""The ledger's last line: read back from the end, whole or torn, and cut back when torn.

A torn last line is the beginning of an entry that an append stopped before its line end
(a full disk, a kill mid-write): no entry depends on it, so the next append or ``skgate
recover`` cuts it back to the last whole line (issue 29's leftover; C4: every whole line
stays as written). Apart from ``ledger.py`` to keep modules short; ``ledger`` re-exports
the names its callers use.
"""

from __future__ import annotations

import os

from skgate.evidence import regular
from skgate.evidence.digest import new_sha256, sha256_bytes
from skgate.model import jsonread
from skgate.model.errors import EvidenceError

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

SCHEMA_LEDGER = "skgate.ledger/1"


#: The longest ledger line read back whole: entries are a few hundred bytes; a longer
#: line is damaged and is hashed in blocks, never held (issue 21).
LINE_LIMIT = 1 << 20


def last_line(fd: int) -> tuple[bytes | None, str | None, int]:
    """The last line (without its newline), its sha256 and where it starts, reading back
    from the end.

    ``(None, None, 0)`` for an empty ledger. A last line over :data:`LINE_LIMIT` is not
    held: ``(None, its sha256, start)``, hashed in blocks, so the chain still covers it and
    memory stays bounded whatever was appended by hand (issue 21).
    """
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


def cut_torn_tail(fd: int) -> dict[str, Any] | None:
    """Cut a torn last line (:func:`is_torn`) back to the last whole one (the caller holds
    the lock); what was cut (size, sha256), or None when the ledger ends otherwise.

    Only a line of at most :data:`LINE_LIMIT` bytes is cut: a longer one is no append of
    skgate's, and stays for ``verify`` to name (issue 21)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    raw, digest, start = last_line(fd)
    if raw is None or not is_torn(raw):
        return None
    os.ftruncate(fd, start)
    os.fsync(fd)
    return {"bytes": len(raw), "sha256": digest}


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
