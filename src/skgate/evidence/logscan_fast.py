"""The grep/wc fast path of :func:`skgate.evidence.logscan_file.scan_file` for a finished log (C3).

``scan_file`` on a finished log (no user regexes) takes a faster path with the same
result: the system ``grep -a -n -b -E`` (C locale) lists the lines that hold one of the
trigger literals (``logscan.GREP_TRIGGERS``) with their line numbers and byte offsets,
``wc -l`` counts lines, long lines are counted with a few small reads, and each candidate
line goes through the same line handler (``LogScanner.on_line``) as the streaming scan.
A log of ``PARALLEL_MIN_BYTES`` or more is cut at line starts into one byte range per
core (``PARTS``), each read by its own grep (the last from a descriptor at its offset,
the others from a pipe filled with ``sendfile``); ``wc -l`` from each range start turns
the later ranges' line numbers into the log's, and their output is drained (up to
``DRAIN_CAP``) while the first range is handled, then handed over in file order.

The lines of a launcher error message that goes on over several lines (launcher_lines)
hold no literal: they are read by offset after its hit (``Lines``), in the same order the
streaming scan hands them over (``LogScanner.on_unlisted``: a non-trigger literal among
them closes the message, as it does there), so such a log keeps the fast path (issue
29). grep's output is split in C per 1 MiB read, so a log of hundreds of thousands of
hits costs one Python step per hit. User regexes keep the pure-Python scan (Python regex
semantics over decoded text cannot be reproduced exactly by grep's ERE). Any doubt (grep
or wc missing or failing, unexpected output, the file changing while it is read) falls
back to the pure-Python scan; ``SKGATE_NO_GREP=1`` forces it. The live
``LogScanner.feed`` (the runner's use while a compile streams) is always pure Python.

What grep costs depends on its pattern more than on anything here (measured, issue 29):
GNU grep skips to a substring every alternative shares (its "must" string) with
``memchr``; the five literals of the bench's reference all hold a ``u``, which its
generated noise never does, so it reads at copy speed. The fourteen triggers share no
such substring (five hold no ``u``), and grep's DFA (``-E``) or Aho-Corasick (``-F -f``,
slower here) then visits every byte.

This module only finds candidate lines and counts; what a line means is decided by
:class:`skgate.evidence.logscan.LogScanner` alone, so both paths give the same ``LogScan``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import resource
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from skgate.evidence import regular
from skgate.evidence.logscan import GREP_TRIGGERS, LogScanner
from skgate.model.errors import EvidenceError
from skgate.model.logscan import LogScan

#: Address-space cap of the grep and wc children (see ``spawn``).
CHILD_AS_LIMIT = 256 << 20
#: Byte ranges scanned by greps side by side (at most one per core), for a log of at
#: least ``PARALLEL_MIN_BYTES`` (below it the extra processes cost more than they save).
PARTS = 2
PARALLEL_MIN_BYTES = 64 << 20
#: Output of a later range's grep held while an earlier range is handled.
DRAIN_CAP = 8 << 20
#: First read of ``Lines`` at a line of an open launcher message.
LINES_WINDOW = 64 << 10

#: ERE alternation of the trigger literals; grep finds candidate lines, the shared Python
#: line handler (``LogScanner.on_line``) decides, so grep only has to over-approximate.
_GREP_PATTERN = "|".join(re.sub(r"([][.*^$+?(){}|\\])", r"\\\1", x.decode()) for x in GREP_TRIGGERS)


class FastPathUnusable(Exception):
    """The grep path cannot give a trustworthy result; scan_file falls back to Python."""


def open_log(path: Path) -> int:
    try:
        # A regular file only: a run.log linked outside would let a forged [summary]
        # decide the verdict; a FIFO would hang the scan (issue 21, C2).
        return regular.open_fd(path)
    except FileNotFoundError:
        raise EvidenceError(f"{path}: run log missing") from None


def identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _count_long_lines(fd: int, size: int, max_line: int) -> int:
    """Lines of fd[0:size] longer than max_line bytes (newline excluded), few reads.

    Same rule as ``LogScanner._count_long``: from a line start p, a newline within the
    next max_line + 1 bytes means the line at p is short, and the last such newline is
    the next place to look. Only the tail of each window is read (4 KiB, doubling when it
    holds no newline), so a log of short lines costs about 1/16 of its size in reads.
    """
    count, p = 0, 0
    while p + max_line + 1 <= size:
        end = p + max_line + 1
        hi, tail, q = end, 4096, -1
        while hi > p:
            lo = max(p, hi - tail)
            buf = os.pread(fd, hi - lo, lo)
            if len(buf) != hi - lo:
                raise FastPathUnusable("the log shrank while it was scanned")
            r = buf.rfind(b"\n")
            if r >= 0:
                q = lo + r
                break
            hi, tail = lo, tail * 2
        if q >= 0:
            p = q + 1
            continue
        count += 1  # no newline within max_line + 1 bytes of a line start: a long line
        p = next_line(fd, end, size)
    return count


def next_line(fd: int, pos: int, size: int) -> int:
    """Offset just after the first newline at or after ``pos`` (``size`` if none), found
    in 1 MiB reads: a multi-MB line is never held whole."""
    while pos < size:
        buf = os.pread(fd, min(1 << 20, size - pos), pos)
        if not buf:
            raise FastPathUnusable("the log shrank while it was scanned")
        r = buf.find(b"\n")
        if r >= 0:
            return pos + r + 1
        pos += len(buf)
    return size


def spawn(
    argv: list[str], path: Path, inode: tuple[int, int], offset: int = 0, pipe: int | None = None
) -> subprocess.Popen[bytes]:
    # argv list, never a shell; the child's stdin is the log (opened here, read-only,
    # checked to be the file we scan, at ``offset``) or a pipe this process fills from it,
    # so no file name is ever parsed as an option and each child has its own file offset.
    # C locale: bytes, not characters.
    env = {**os.environ, "LC_ALL": "C"}
    with open(regular.open_fd(path) if pipe is None else pipe, "rb") as stdin:
        if pipe is None:
            st = os.fstat(stdin.fileno())
            if (st.st_dev, st.st_ino) != inode:
                raise FastPathUnusable("the log was replaced while it was scanned")
            os.lseek(stdin.fileno(), offset, os.SEEK_SET)
        proc = subprocess.Popen(  # fixed argv of a tool found with which()
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
    with contextlib.suppress(OSError, ValueError):
        # The child may already have ended (its exit status tells) or the limit be refused.
        # Bounded memory: grep holds a whole line in its buffer, so a log with a line of
        # hundreds of MB would make it grow; capped, grep fails ("memory exhausted") and
        # scan_file falls back to the Python scan, which keeps max_line bytes of a line.
        # Set right after the start (best effort: a line that big takes far longer to
        # read than this takes to run).
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (CHILD_AS_LIMIT, CHILD_AS_LIMIT))
    return proc


def end_child(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child we started (by its own pid) and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


class Lines:
    """Reads the lines of an open launcher message by offset (few preads, bounded).

    The grep path lists only hit lines; the lines after an ``execute op_compiler error``
    hit may belong to its message without holding a literal (launcher_lines), so they are
    read here, in order, each once, from a window that follows the hits (``LINES_WINDOW``
    bytes, or enough for a line of max_line bytes).
    """

    def __init__(self, fd: int, size: int, max_line: int) -> None:
        self._fd, self.size, self._max = fd, size, max_line
        self._buf = b""
        self._at = 0  # file offset of _buf[0]

    def _read(self, pos: int, n: int) -> bytes:
        buf = os.pread(self._fd, min(n, self.size - pos), pos)
        if len(buf) != min(n, self.size - pos):
            raise FastPathUnusable("the log shrank while it was scanned")
        return buf

    def line(self, pos: int) -> tuple[bytes, int]:
        """(kept part, offset of the next line) of the line starting at ``pos``."""
        rel = pos - self._at
        buf = self._buf
        if 0 <= rel < len(buf):
            nl = buf.find(b"\n", rel, rel + self._max + 1)
            if nl >= 0:
                return buf[rel:nl], self._at + nl + 1
        if rel < 0 or (
            pos + self._max + 1 > self._at + len(buf) and self._at + len(buf) < self.size
        ):
            # The window that decides (max_line + 1 bytes) is not all in the buffer. A
            # small read first: a message is a few short lines, and reading 256 KiB for
            # each one cost a fifth of the anchor path on compile noise (issue 29); the
            # whole window only when no newline is in it.
            rel = 0
            for want in (LINES_WINDOW, max(1 << 18, 4 * (self._max + 1))):
                self._at, self._buf = pos, self._read(pos, want)
                buf = self._buf
                nl = buf.find(b"\n", 0, self._max + 1)
                if nl >= 0:
                    return buf[:nl], pos + nl + 1
                if len(buf) > self._max or pos + len(buf) >= self.size:
                    break
        kept = buf[rel : rel + self._max]
        # A long line (or the unterminated last one): find its end, in what is read
        # already, then in 1 MiB reads, never holding it whole.
        nl = buf.find(b"\n", rel + self._max + 1)
        if nl >= 0:
            return kept, self._at + nl + 1
        return kept, next_line(self._fd, self._at + len(buf), self.size)

    def hand(self, scanner: LogScanner, pos: int, stop: int) -> None:
        """Give the lines from ``pos`` up to ``stop`` to the open message until it closes."""
        while scanner.continuing and pos < stop:
            kept, pos = self.line(pos)
            scanner.on_unlisted(kept)


def _grep_candidates(hits: Hits, chunks: Iterable[bytes], max_line: int) -> None:
    """Stream grep's ``LINENO:OFFSET:LINE`` output (in ``chunks``) through ``hits``.

    Whole output lines are split in C (``bytes.split``) from reads of 1 MiB, so a log with
    hundreds of thousands of hits costs one Python step per hit, not per header byte
    (issue 29). A line longer than what was read is carried over reads with at most
    max_line bytes (plus its header) kept, so a multi-MB line is never held whole.
    """
    hit = hits.hit
    carry = bytearray()
    carry_len = 0  # full length of the carried (partial) output line
    cap = max_line + 64  # header: two numbers and two colons
    for chunk in chunks:
        start = 0
        if carry_len:
            nl = chunk.find(b"\n")
            end = nl if nl >= 0 else len(chunk)
            if len(carry) < cap:
                carry += chunk[: min(end, cap - len(carry))]
            carry_len += end
            if nl < 0:
                continue
            hit(bytes(carry), carry_len)
            carry.clear()
            carry_len = 0
            start = nl + 1
        last = chunk.rfind(b"\n", start)
        if last >= 0:
            for line in chunk[start:last].split(b"\n"):
                hit(line, len(line))
            start = last + 1
        if start < len(chunk):
            carry += chunk[start : start + cap]
            carry_len = len(chunk) - start
    if carry_len:
        raise FastPathUnusable("grep output ended in the middle of a line")


class Hits:
    """Hands grep's hit lines, in file order, to the shared line handler.

    The lines of an open launcher message are read by offset (``Lines``), in the order
    the pure-Python scan hands them over: unlisted lines first, then the hit line itself.
    ``base_line`` and ``base_offset`` turn the numbers of a grep that read one byte range
    of the log into the log's own.
    """

    def __init__(self, scanner: LogScanner, lines: Lines, max_line: int) -> None:
        self.scanner, self._lines, self.max_line = scanner, lines, max_line
        self._launcher = scanner.launcher
        self.base_line = self.base_offset = 0
        self.handed = 0  # offset of the next line not yet handed to an open message

    def hit(self, line: bytes, total: int) -> None:
        """One ``LINENO:OFFSET:LINE`` output line (``total``: its full length, of which
        ``line`` holds at least the header and max_line bytes of the log line)."""
        number, _, rest = line.partition(b":")
        at, colon, kept = rest.partition(b":")
        if not (colon and number.isdigit() and at.isdigit()):
            raise FastPathUnusable("unexpected grep output")
        length = total - len(number) - len(at) - 2
        if length > self.max_line:
            kept = kept[: self.max_line]
        summary = self.at(int(at) + self.base_offset, kept, length)
        if summary is not None:  # the only use of the line number
            self.scanner.on_summary(
                int(number) + self.base_line, summary, None, length > self.max_line
            )

    def at(self, offset: int, kept: bytes, length: int) -> str | None:
        """The candidate line at ``offset`` (``kept``: its first max_line bytes, ``length``:
        its full length, newline excluded), after the unlisted lines before it: the
        summary text when it is a summary line, for the caller to number."""
        if offset < self.handed:  # each hit starts after the end of the one before
            raise FastPathUnusable("candidate lines out of order")
        scanner = self.scanner
        if self._launcher.message is not None:  # an open message (``continuing``)
            self._lines.hand(scanner, self.handed, offset)
            if self._launcher.message is not None:
                scanner.on_continuation(kept)
        self.handed = offset + length + 1
        return scanner.on_line(kept)


def range_starts(fd: int, size: int, parts: int) -> list[int]:
    """Start offsets of up to ``parts`` byte ranges of the log, each at a line start."""
    starts = [0]
    for i in range(1, parts):
        pos = next_line(fd, max(size * i // parts, starts[-1]), size)
        if pos >= size:
            break  # no line starts after this point: fewer ranges
        starts.append(pos)
    return starts


class Worker:
    """A thread of this scan whose failure makes the grep path unusable."""

    def __init__(self, name: str, job: Callable[[], None]) -> None:
        self.failed: BaseException | None = None
        self._job = job
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._job()
        except BaseException as exc:  # reported by the scan, in its own thread
            self.failed = exc

    def join(self) -> None:
        self._thread.join()


def _feed_range(fd: int, start: int, end: int, pipe: int) -> Callable[[], None]:
    """A job that copies log[start:end) into a grep's stdin pipe, in the kernel."""

    def job() -> None:
        try:
            with contextlib.suppress(OSError, AttributeError):
                fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, 1 << 20)  # fewer wake-ups
            pos = start
            while pos < end:
                sent = os.sendfile(pipe, fd, pos, min(1 << 22, end - pos))
                if sent == 0:
                    raise FastPathUnusable("the log shrank while it was scanned")
                pos += sent
        finally:
            os.close(pipe)

    return job


def _drain(stdout: int, kept: list[bytes]) -> Callable[[], None]:
    """A job that reads up to ``DRAIN_CAP`` bytes of a later range's grep output while
    the earlier ranges are handled, so that grep does not wait on a full pipe; past the
    cap grep waits, and the rest is read when its turn comes (bounded memory)."""

    def job() -> None:
        held = 0
        while held < DRAIN_CAP:
            chunk = os.read(stdout, 1 << 20)
            if not chunk:
                break
            kept.append(chunk)
            held += len(chunk)

    return job


def _chunks(stdout: int, first: list[bytes]) -> Iterator[bytes]:
    """What a drain kept, then the rest of the pipe."""
    while first:
        yield first.pop(0)
    while chunk := os.read(stdout, 1 << 20):
        yield chunk


def read_count(proc: subprocess.Popen[bytes]) -> int:
    """The number ``wc -l`` printed."""
    assert proc.stdout is not None
    out = proc.stdout.read(64)
    if proc.wait() != 0:
        raise FastPathUnusable("wc failed")
    try:
        return int(out.split()[0])
    except (ValueError, IndexError):
        raise FastPathUnusable("unexpected wc output") from None


def parts_for(size: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(PARTS, cpus)) if size >= PARALLEL_MIN_BYTES else 1


def scan_file_fast(
    path: Path, max_line: int = 64 * 1024, parts: int | None = None
) -> LogScan | None:
    """The grep path of ``scan_file`` for a finished log without user regexes.

    The log is cut into ``parts`` byte ranges at line starts (default: 2 on a machine
    with two cores or more, for a log of ``PARALLEL_MIN_BYTES`` or more; else 1), each
    read by its own ``grep -a -n -b -E`` (the system grep, C locale): the last one reads
    the log from its range's start, the others a pipe this process fills with
    ``sendfile`` (no copy through Python). ``wc -l`` from each range's start gives the
    line numbers the later ranges' greps count from; this process counts long lines
    with a few small reads. Each candidate line goes through the same handler as the
    pure-Python scan, in file order, so the result is identical. Returns None when this
    path cannot be trusted (grep or wc missing or failing, unexpected output, the file
    changed while it was read): the caller then scans in Python.
    """
    scanner = LogScanner(max_line=max_line)
    grep, wc = shutil.which("grep"), shutil.which("wc")
    if grep is None or wc is None:
        return None
    fd = open_log(path)
    procs: list[subprocess.Popen[bytes]] = []
    workers: list[Worker] = []
    try:
        before = os.fstat(fd)
        size = before.st_size
        inode = (before.st_dev, before.st_ino)
        starts = range_starts(fd, size, parts_for(size) if parts is None else parts)
        ends = [*starts[1:], size]
        greps: list[subprocess.Popen[bytes]] = []
        counts: list[subprocess.Popen[bytes]] = []
        argv = [grep, "-a", "-n", "-b", "-E", "-e", _GREP_PATTERN]
        try:
            for start, end in zip(starts, ends, strict=True):
                if end == size:
                    greps.append(spawn(argv, path, inode, offset=start))
                else:
                    r, w = os.pipe()
                    try:
                        greps.append(spawn(argv, path, inode, pipe=r))
                    except BaseException:
                        os.close(w)
                        raise
                    workers.append(Worker("skgate-range", _feed_range(fd, start, end, w)))
                procs.append(greps[-1])
                counts.append(spawn([wc, "-l"], path, inode, offset=start))
                procs.append(counts[-1])
        except OSError:
            return None
        outputs = [proc.stdout.fileno() for proc in greps if proc.stdout is not None]
        kept: list[list[bytes]] = [[] for _ in greps]
        # Later ranges' output is drained while the first is handled, up to a cap.
        drains = {
            k: Worker("skgate-drain", _drain(outputs[k], kept[k])) for k in range(1, len(greps))
        }
        workers += drains.values()
        counted: list[int] = []

        def long_lines() -> None:
            counted.append(_count_long_lines(fd, size, max_line))

        workers.append(Worker("skgate-long-lines", long_lines))
        lines = Lines(fd, size, max_line)
        hits = Hits(scanner, lines, max_line)
        total = 0
        for k, start in enumerate(starts):
            if k:
                total = total or read_count(counts[0])
                hits.base_line, hits.base_offset = total - read_count(counts[k]), start
                drains[k].join()  # it stopped at its cap or at the end of grep's output
            _grep_candidates(hits, _chunks(outputs[k], kept[k]), max_line)
        lines.hand(scanner, hits.handed, size)
        for worker in workers:
            worker.join()
        if any(proc.wait() not in (0, 1) for proc in greps) or any(w.failed for w in workers):
            return None  # grep exits 1 when no line matches; 2 is an error
        newlines = total or read_count(counts[0])
        after = os.fstat(fd)
        same = path.stat()
        if identity(before) != identity(after) or identity(after) != identity(same):
            return None  # written to or replaced while grep read it: not a finished log
        last = os.pread(fd, 1, size - 1) if size else b"\n"
        # An unterminated last line counts as a line.
        scanner.set_counts(newlines + (last != b"\n"), size, counted[0])
        return scanner.finish()
    except (FastPathUnusable, OSError):
        return None
    finally:
        for proc in procs:
            end_child(proc)
        for worker in workers:
            worker.join()  # feeders end on a broken pipe, drains at EOF
        os.close(fd)
