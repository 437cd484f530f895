"""sha256, the one hash of skgate's evidence (ledger chain, seals, scenes, hook findings):
of bytes, of an open file in fixed blocks (bounded memory), of a file by path."""

from __future__ import annotations

import os
import sys

from skgate.evidence import regular
from skgate.model.errors import EvidenceError

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import hashlib
    from pathlib import Path


def new_sha256() -> hashlib._Hash:
    """A sha256 object. ``hashlib`` (OpenSSL) loads on the first hash, so a command that
    hashes nothing (``skgate status``) does not pay for it (start-up cost, issue 22 s5)."""
    import hashlib  # noqa: PLC0415

    return hashlib.sha256()


#: The interpreter's own sha256 (no OpenSSL), by module name across versions: ``_sha2``
#: since 3.12, ``_sha256`` before; this version's name first (a failed import is a path
#: search on every status).
_BUILTIN_SHA256 = ("_sha2", "_sha256") if sys.version_info >= (3, 12) else ("_sha256", "_sha2")


#: Below this many bytes a hash is the interpreter's own sha256 (:func:`small_sha256`).
SMALL = 1 << 20


def small_sha256() -> hashlib._Hash:
    """A sha256 object for a small input, without loading OpenSSL when the interpreter
    has its own sha256: ``_hashlib`` costs ``skgate status`` a tenth of its start-up and
    a ``run`` about 2 ms, the built-in module a fraction of that (issues 28, 29). The
    digest is the same; OpenSSL's is faster only on large inputs (:data:`SMALL`)."""
    for name in _BUILTIN_SHA256:
        try:
            # ``__import__``, not ``importlib.import_module``: no ``importlib`` package
            # for one built-in module (status start-up, issue 29).
            module = __import__(name)
        except ImportError:
            continue
        return module.sha256()  # type: ignore[no-any-return]
    return new_sha256()


def sha256_bytes(data: bytes) -> str:
    """sha256 of a buffer: the interpreter's own below :data:`SMALL`, OpenSSL's above."""
    digest = small_sha256() if len(data) < SMALL else new_sha256()
    digest.update(data)
    return digest.hexdigest()


#: sha256 of a small buffer (an evidence file checked against its seal on read): the same
#: function, which hashes one below :data:`SMALL` without OpenSSL; a buffer above it (a
#: rare large evidence file) is hashed faster by OpenSSL.
sha256_small = sha256_bytes


def hash_fd(fd: int, block: int = 1 << 20) -> tuple[str, int]:
    """sha256 and byte count of an open file, read in fixed blocks (bounded memory).

    ``hashlib`` releases the GIL on large updates, so several of these run in parallel
    threads (the seal uses that to keep up with ``sha256sum``); a file smaller than one
    block is hashed by :func:`small_sha256`, without loading OpenSSL for it.
    """
    size = os.fstat(fd).st_size
    digest = small_sha256() if size < block else new_sha256()
    # No 1 MiB buffer to zero for each small evidence file a seal hashes.
    buf = bytearray(min(block, max(size + 1, 1 << 16)))
    view = memoryview(buf)
    done = 0
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            break
        digest.update(view[:n])
        done += n
    return digest.hexdigest(), done


def sha256_file(path: Path | str) -> str | None:
    """sha256 of a regular file's bytes (not following a symlink), or None if unreadable.

    A link, a FIFO or a device is unreadable here: opened as evidence is (issue 21), so a
    FIFO in place of a seal never blocks ``verify``.
    """
    try:
        fd = regular.open_fd(path)
    except (OSError, EvidenceError):
        return None
    try:
        return hash_fd(fd)[0]
    except OSError:
        return None
    finally:
        os.close(fd)
