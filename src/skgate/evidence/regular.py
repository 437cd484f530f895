"""Evidence files are read as regular files only, and never without a bound (issue 21).

An attempt directory may sit where someone else can write (a shared evidence root). A
reader that follows a symbolic link reads a forged ``verdict.json`` as the verdict; one
that opens a FIFO waits forever; one that reads ``/dev/zero`` or a 300 MB journal line
whole runs out of memory. Each of those makes skgate say something false or nothing at
all (C2: a verdict comes only from the attempt's own evidence; C3: the archive is the
record). So every evidence read goes through this module:

- :func:`open_fd` opens with ``O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`` (a link
  is refused by the kernel, a FIFO or a device opens without waiting), then ``fstat``
  refuses anything that is not ``S_ISREG``, then ``O_NONBLOCK`` is cleared;
- :func:`read_bytes` reads a whole file only up to the bound of its kind (:data:`LIMITS`);
- :func:`iter_lines` streams a JSONL file and hands over a line longer than its bound as
  a damaged record, without ever holding more than the bound and one chunk.

Nothing here follows a link in the last component of a path; the walks over attempt
directories refuse linked directories themselves (``ledger.list_attempts``, ``recover``).
"""

from __future__ import annotations

import errno
import os
import stat

from skgate.evidence import pathtext
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.frozen import record

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29), nor
# ``pathlib``: paths are ``str`` or ``Path`` here, read through ``os`` (see pathtext).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: How every evidence file is opened: a symbolic link fails with ELOOP instead of being
#: followed, and a FIFO opens at once instead of waiting for a writer (issue 21).
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

MIB = 1 << 20
#: Whole-file bounds by file name. The runner's own files stay far below these (an
#: ownership manifest keeps full records for 5,000 processes, then counts); a file over
#: its bound is damaged or hostile, and reading it whole could exhaust memory.
LIMITS: dict[str, int] = {
    "control.json": 64 * MIB,
    "verdict.json": 64 * MIB,
    "ownership.json": 256 * MIB,
    "stages.json": 256 * MIB,
    "census.json": 64 * MIB,
    "logscan.json": 64 * MIB,
    "seal.json": 64 * MIB,
    "manifest.json": 256 * MIB,
    "summary.txt": 64 * MIB,
    "regress.json": 64 * MIB,
}
#: Any other evidence file read whole (a stop request, a lease, a record).
DEFAULT_LIMIT = 64 * MIB
#: The longest line of a JSON-lines journal (``events.jsonl``, ``procs.jsonl``,
#: ``ledger.jsonl``). An argv is at most a few MiB even written with ASCII escapes; a
#: longer line is a damaged record, never read whole.
LINE_LIMIT = 16 * MIB
#: How much of a line-stream is read at a time.
CHUNK = 1 * MIB


class NotRegularError(EvidenceError):
    """An evidence path is a symbolic link, a FIFO, a device, a socket or a directory."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def open_fd(path: Path | str, *, follow_link: bool = False) -> int:
    """Open an evidence file for reading, as a regular file only (see the module doc).

    ``FileNotFoundError`` passes through (a missing file is for the caller to judge);
    a link or a non-regular file is a :class:`NotRegularError`; any other failure an
    :class:`EvidenceError`. The descriptor is blocking again when this returns.

    ``follow_link``: a file a person named (a hook baseline, a report to lint, a matrix,
    a program's first bytes) is read through a link as they gave it, and still only as a
    regular file: a FIFO there made ``skgate run --hook-baseline FIFO`` wait for ever.
    """
    try:
        fd = os.open(path, OPEN_FLAGS & ~os.O_NOFOLLOW if follow_link else OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularError(
                f"{path}: is a symbolic link; evidence is never read through a link"
            ) from None
        hint = (
            "; check its permissions, or run as the user who owns the evidence"
            if exc.errno in (errno.EACCES, errno.EPERM)
            else ""
        )
        raise EvidenceError(f"{path}: unreadable ({exc.strerror}){hint}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularError(
                f"{path}: is {_kind(mode)}, not a regular file; evidence is only read "
                "from regular files"
            )
        # F_GETFL, then F_SETFL without O_NONBLOCK if it was set (``os.set_blocking``:
        # the same two calls, without loading ``fcntl`` for them, issue 29).
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: Path | str, *, read: bool = False) -> int:
    """Open (creating) an append-only evidence file, as a regular file only.

    ``O_NOFOLLOW | O_NONBLOCK``: a journal or a ledger replaced by a link is never
    appended through, and a FIFO in its place neither blocks the writer nor receives the
    record (issue 21). A link or a non-regular file is a :class:`NotRegularError`; any
    other failure raises ``OSError`` as the caller expects of a write.
    """
    access = os.O_RDWR if read else os.O_WRONLY
    flags = access | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularError(
                f"{path}: is a symbolic link; evidence is never written through a link"
            ) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader
            raise NotRegularError(f"{path}: is a FIFO, not a regular file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularError(f"{path}: is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def limit_for(path: Path | str) -> int:
    """The whole-file bound of an evidence file, by its name."""
    return LIMITS.get(pathtext.name(path), DEFAULT_LIMIT)


def _over(path: Path | str, limit: int) -> EvidenceError:
    return EvidenceError(
        f"{path}: larger than the {limit}-byte bound for this file; damaged or hostile, not read"
    )


def read_bytes(path: Path | str, limit: int | None = None, *, follow_link: bool = False) -> bytes:
    """The bytes of a regular evidence file, refused beyond its bound (never read whole).

    Raises as :func:`open_fd` does (``follow_link`` as there), and :class:`EvidenceError`
    for a file over the bound (also one that grows past it while it is read).
    """
    bound = limit_for(path) if limit is None else limit
    fd = open_fd(path, follow_link=follow_link)
    try:
        if os.fstat(fd).st_size > bound:
            raise _over(path, bound)
        parts: list[bytes] = []
        total = 0
        while True:
            data = os.read(fd, min(CHUNK, bound + 1 - total))
            if not data:
                break
            parts.append(data)
            total += len(data)
            if total > bound:
                raise _over(path, bound)
        return b"".join(parts)
    except OSError as exc:
        raise EvidenceError(f"{path}: unreadable ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_named(path: Path | str, what: str, hint: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """The bytes of a file a person named on the command line (``what``: a hook
    baseline, a report, a matrix file), through a link as they gave it, as a regular file
    only and at most ``limit`` bytes: never a wait on a FIFO, never a device read without
    end. Anything else is a one-line :class:`UsageError`, "WHAT PATH: what is wrong;
    HINT", raised before anything is recorded."""
    try:
        return read_bytes(path, limit, follow_link=True)
    except FileNotFoundError:
        why = "does not exist"
    except NotRegularError:
        try:
            why = f"is {_kind(os.stat(path).st_mode)}, not a regular file"
        except OSError:
            why = "is not a regular file"
    except EvidenceError as exc:
        why = str(exc).removeprefix(f"{path}: ")  # unreadable (...), or over the bound
    raise UsageError(f"{what} {path}: {why}; {hint}")


def read_head(path: Path | str, size: int) -> bytes | None:
    """The first ``size`` bytes of a regular file a person named (a program: its ``#!`` or
    ELF magic), through a link; None for anything else, which is never waited on."""
    try:
        fd = open_fd(path, follow_link=True)
    except (OSError, EvidenceError):
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: Path | str, limit: int | None = None, errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a decoding error is an EvidenceError)."""
    try:
        return read_bytes(path, limit).decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"{path}: unreadable ({exc.reason} at byte {exc.start})") from None


@record
class Line:
    """One line of a JSON-lines file as read back, without its newline.

    ``too_long``: the line is over the bound; ``raw`` is then empty (it was never held
    whole). ``complete``: it ended with a newline (the last line of a file a writer was
    killed in the middle of does not).
    """

    number: int
    raw: bytes
    too_long: bool = False
    complete: bool = True


def iter_fd_lines(fd: int, max_line: int = LINE_LIMIT, chunk: int = CHUNK) -> Iterator[Line]:
    """Lines of an open file, each at most ``max_line`` bytes held (bounded memory)."""
    number = 0
    buf = b""
    skipping = False  # inside a line already over the bound: drop bytes to its end
    while True:
        data = os.read(fd, chunk)
        if not data:
            break
        start = 0
        while True:
            cut = data.find(b"\n", start)
            if cut < 0:
                break
            number += 1
            if skipping:
                yield Line(number, b"", too_long=True)
                skipping = False
            else:
                piece = buf + data[start:cut]
                buf = b""
                if len(piece) > max_line:
                    yield Line(number, b"", too_long=True)
                else:
                    yield Line(number, piece)
            start = cut + 1
        if not skipping:
            buf += data[start:]
            if len(buf) > max_line:
                buf = b""
                skipping = True
    if skipping:
        yield Line(number + 1, b"", too_long=True, complete=False)
    elif buf:
        yield Line(number + 1, buf, complete=False)


def lines_containing(
    fd: int, needle: bytes, max_line: int = LINE_LIMIT, chunk: int = CHUNK
) -> Iterator[bytes]:
    """The whole lines (without their newline) of an open file that hold ``needle``,
    each once, found by ``bytes.find`` block by block: a large file is searched at memory
    speed, never split line by line in Python. A line over ``max_line`` is neither held
    nor yielded, and nor is a last line without its newline (torn, or being written)."""
    carry = b""
    skipping = False  # inside a line already over the bound: drop bytes to its end
    while data := os.read(fd, chunk):
        if skipping:
            cut = data.find(b"\n")
            if cut < 0:
                continue
            data, skipping = data[cut + 1 :], False
        buf = carry + data if carry else data
        end = buf.rfind(b"\n")  # the whole lines are buf[:end]
        at = buf.find(needle, 0, end) if end >= 0 else -1
        while at >= 0:
            lo = buf.rfind(b"\n", 0, at) + 1
            hi = buf.find(b"\n", at)  # at most end: the needle lies before it
            if hi - lo <= max_line:
                yield buf[lo:hi]
            at = buf.find(needle, hi + 1, end)
        carry = buf[end + 1 :]
        if len(carry) > max_line:
            carry, skipping = b"", True


class _Opened:
    """``with opened(path) as fd``: a plain class, not ``contextlib.contextmanager``
    (``contextlib`` is an import ``skgate status`` does without, issue 29)."""

    __slots__ = ("fd", "path")

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> int:
        self.fd = open_fd(self.path)
        return self.fd

    def __exit__(self, *_exc: object) -> None:
        os.close(self.fd)


def opened(path: Path | str) -> _Opened:
    """:func:`open_fd` as a context manager (the descriptor is closed on exit)."""
    return _Opened(path)


def iter_lines(path: Path | str, max_line: int = LINE_LIMIT) -> Iterator[Line]:
    """Lines of a regular evidence file (see :func:`iter_fd_lines`); raises as
    :func:`open_fd` does (``FileNotFoundError`` for a missing file)."""
    with opened(path) as fd:
        try:
            yield from iter_fd_lines(fd, max_line)
        except OSError as exc:
            raise EvidenceError(f"{path}: unreadable ({exc.strerror})") from None
