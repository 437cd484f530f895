"""The anchor path of :func:`skgate.evidence.logscan_file.scan_file` for a finished log (C3).

Every line that holds a trigger literal (``logscan.GREP_TRIGGERS``) holds each of its bytes
and each of its substrings. So for a set of *needles* that covers every trigger (each
trigger contains at least one needle), the lines around the needles' occurrences are all
the candidate lines there are; everything between them is skipped at ``memchr`` speed (a
one-byte needle) or at ``memmem`` speed (a longer one). This is what GNU grep does for its
own pattern (issue 29: it ``memchr``'s for a byte every alternative shares); here it is done
for the scan's own trigger set, and the needles are chosen for each log from a sample of
it (``plan``): the rarest byte of each trigger where one is rare, the trigger itself (or a
substring two triggers share) where every byte of it is common. The plan also estimates
the cost per byte of the log; when it is dearer than the grep path's, ``scan_file`` takes
that path instead.

The log is read in windows of ``WINDOW`` bytes cut at line starts (``os.preadv`` into one
buffer: a mapping would be cheaper by a copy, but a log truncated while it is mapped kills
the reader with SIGBUS, and ``scan_file`` may read a log another process still holds).
The needles are searched in the window (in cache after the read); each candidate line
whose kept part (its first max_line bytes) holds a trigger goes through the grep path's
handler (``logscan_fast._Hits.at``: the lines of an open launcher message read by offset,
then ``LogScanner.on_line``), in file order, so the result is the one the full scan gives.
Long lines are counted in the window, the newlines by ``wc -l`` on the other core, and a
summary line's number is counted only when a problem names it (rare: a contradictory
summary). Any doubt (``wc`` missing or failing, the file changing while it is read) makes
it return None, and ``scan_file`` falls back to the grep path, then the Python scan.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from skgate.evidence import logscan_fast
from skgate.evidence.logscan import GREP_TRIGGERS, LogScanner, count_long_lines
from skgate.model.logscan import LogScan

#: Bytes read at a time (and the least a window holds: a line's kept part fits in it).
WINDOW = 1 << 20
#: The sample ``plan`` counts needles in: this many pieces of ``SAMPLE_PIECE`` bytes, spread
#: over the log from its start to its tail.
SAMPLE_PIECES = 8
SAMPLE_PIECE = 32 << 10
#: Occurrences of a needle in the sample past which its lines are not looked at one by one.
SAMPLE_CANDIDATES = 256
#: Estimated costs, nanoseconds per byte of log (one core; measured on the 2-core host of
#: issue 29 over 1 GiB compile-noise logs in the page cache, CANN-shaped and letter-poor):
#: reading a window (a copy from the page cache, 0.1-0.19), one ``memchr`` pass over it
#: (in cache), one ``memmem`` pass per byte of needle length (it skips about a needle's
#: length at a time: 8 bytes 0.15-0.16, 13-15 bytes 0.09-0.11, 22-25 bytes 0.05-0.06),
#: the Python work per candidate line that holds no trigger, and the grep path's whole
#: scan (1.5 ns/B wall on the same host, two greps on two cores plus the hits).
READ_NS = 0.15
MEMCHR_NS = 0.03
MEMMEM_NS_BYTES = 1.3
CANDIDATE_NS = 2000.0
GREP_PATH_NS = 1.2
#: Shared substrings of two triggers at least this long are needle options too (one
#: ``memmem`` for ``Starting``/``skipping static kernel compilation``).
SHARED_MIN = 8


class Plan(NamedTuple):
    """The needles of one log (together they cover every trigger) and the estimated cost
    of scanning it with them, nanoseconds per byte."""

    needles: tuple[bytes, ...]
    ns_per_byte: float

    @property
    def cheaper(self) -> bool:
        """Whether this path is estimated cheaper than the grep path."""
        return self.ns_per_byte < GREP_PATH_NS


def _shared(a: bytes, b: bytes) -> bytes:
    """The longest substring ``a`` and ``b`` share (first found on ties)."""
    best = b""
    for i in range(len(a)):
        for j in range(i + len(best) + 1, len(a) + 1):
            if a[i:j] not in b:
                break
            best = a[i:j]
    return best


@functools.cache
def _options(triggers: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """Needle options: every byte of a trigger, each trigger, and long shared substrings."""
    options = sorted({bytes([c]) for t in triggers for c in t})
    options += [t for t in triggers if t not in options]
    for k, a in enumerate(triggers):
        for b in triggers[k + 1 :]:
            common = _shared(a, b)
            if len(common) >= SHARED_MIN and common not in options:
                options.append(common)
    return tuple(options)


def _extra_lines(sample: bytes, needle: bytes, triggers: Sequence[bytes]) -> int:
    """Lines of ``sample`` that hold ``needle`` but no trigger: the candidates it would
    add (a trigger line costs the same Python work on every path). Past
    ``SAMPLE_CANDIDATES`` occurrences the needle is common and its count is the answer."""
    found = sample.count(needle)
    if found > SAMPLE_CANDIDATES:
        return found
    extra, at = 0, sample.find(needle)
    while at >= 0:
        end = sample.find(b"\n", at)
        line = sample[sample.rfind(b"\n", 0, at) + 1 : end if end >= 0 else len(sample)]
        extra += not any(t in line for t in triggers)
        at = sample.find(needle, end + 1) if end >= 0 else -1
    return extra


def plan(sample: bytes, triggers: tuple[bytes, ...] = GREP_TRIGGERS) -> Plan:
    """Needles covering every trigger, chosen greedily for the least estimated cost per
    trigger covered over ``sample`` (a few pieces of the log), then pruned of needles the
    others make redundant. Deterministic: the same sample gives the same plan."""
    size = max(len(sample), 1)
    cost: dict[bytes, float] = {}
    for option in _options(triggers):
        search = MEMCHR_NS if len(option) == 1 else MEMMEM_NS_BYTES / len(option)
        cost[option] = search + _extra_lines(sample, option, triggers) / size * CANDIDATE_NS
    uncovered = set(triggers)
    chosen: list[bytes] = []
    while uncovered:
        best = min(
            (o for o in cost if any(o in t for t in uncovered)),
            key=lambda o: (cost[o] / sum(o in t for t in uncovered), len(o), o),
        )
        chosen.append(best)
        uncovered = {t for t in uncovered if best not in t}
    for needle in reversed(chosen[:]):
        rest = [n for n in chosen if n != needle]
        if all(any(n in t for n in rest) for t in triggers):
            chosen = rest
    return Plan(tuple(chosen), READ_NS + sum(cost[n] for n in chosen))


def sample_of(fd: int, size: int) -> bytes:
    """``SAMPLE_PIECES`` pieces of the log, evenly spread from its start to its tail."""
    if size <= SAMPLE_PIECES * SAMPLE_PIECE:
        return os.pread(fd, size, 0)
    step = (size - SAMPLE_PIECE) // (SAMPLE_PIECES - 1)
    return b"".join(os.pread(fd, SAMPLE_PIECE, k * step) for k in range(SAMPLE_PIECES))


def sample_of_path(path: Path) -> bytes:
    """``sample_of`` a log by its path (a regular file, not through a link)."""
    fd = logscan_fast.open_log(path)
    try:
        return sample_of(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _finder(buf: bytearray) -> Callable[[bytes, int, int], int]:
    """``buf.find(needle, start, end)`` through glibc's ``memchr`` / ``memmem`` when they
    can be called: they run without the GIL (two ranges are searched side by side), and
    ``memmem`` is about twice as fast as CPython's search on compile noise."""
    try:
        import ctypes  # noqa: PLC0415 (only this path needs it)

        libc = ctypes.CDLL(None)
        memmem, memchr = libc.memmem, libc.memchr
    except (ImportError, OSError, AttributeError):
        return buf.find
    memmem.restype = memchr.restype = ctypes.c_void_p
    memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    memchr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    # Held by ``find``: the buffer stays exported (so it can never be resized or freed
    # under the pointer) for as long as the finder lives.
    pinned = ctypes.c_char.from_buffer(buf)
    base = ctypes.addressof(pinned)
    size = len(buf)

    def find(needle: bytes, start: int, end: int) -> int:
        end = min(end, size)  # never past the buffer, whatever a caller asks
        if start < 0 or end - start < len(needle) or pinned is None:
            return -1
        if len(needle) == 1:
            at = memchr(base + start, needle[0], end - start)
        else:
            at = memmem(base + start, end - start, needle, len(needle))
        return -1 if at is None else at - base

    return find


class _Numbers:
    """1-based line numbers of offsets asked for in increasing order, counted in
    ``WINDOW`` reads from the last one asked (once over the log at most)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pos = self._newlines = 0

    def at(self, offset: int) -> int:
        if offset < self._pos:
            self._pos = self._newlines = 0
        while self._pos < offset:
            buf = os.pread(self._fd, min(WINDOW, offset - self._pos), self._pos)
            if not buf:
                raise logscan_fast.FastPathUnusable("the log shrank while it was scanned")
            self._newlines += buf.count(b"\n")
            self._pos += len(buf)
        return self._newlines + 1


def _candidates(
    find: Callable[[bytes, int, int], int], buf: bytearray, needles: tuple[bytes, ...], stop: int
) -> list[int]:
    """Start offsets (in ``buf``) of the lines of buf[:stop] holding a needle, in order."""
    starts: set[int] = set()
    for needle in needles:
        at = find(needle, 0, stop)
        while at >= 0:
            starts.add(buf.rfind(b"\n", 0, at) + 1)
            end = buf.find(b"\n", at, stop)
            if end < 0:
                break
            at = find(needle, end + 1, stop)
    return sorted(starts)


#: A candidate line: (offset in the log, kept part, full length without the newline).
Candidate = tuple[int, bytes, int]


def _range(
    fd: int, span: tuple[int, int, int], needles: tuple[bytes, ...], max_line: int, long: list[int]
) -> Iterator[Candidate]:
    """The candidate lines of log[start:end) (``span``: start and end at line starts or
    the log's end, and the log's size) that hold a trigger in their kept part, in order:
    the lines grep would list. Lines longer than max_line are counted in ``long[0]``."""
    start, end, size = span
    buf = bytearray(max(WINDOW, 4 * (max_line + 1)))
    view = memoryview(buf)
    find = _finder(buf)
    pos = start
    while pos < end:
        want = min(len(buf), end - pos)
        if os.preadv(fd, [view[:want]], pos) != want:
            raise logscan_fast.FastPathUnusable("the log shrank while it was scanned")
        whole = buf.rfind(b"\n", 0, want) + 1  # the window's whole lines end here
        final = pos + want == end
        if not whole and not final:
            # One line longer than the window: only its kept part (its start) counts.
            after = logscan_fast.next_line(fd, pos + want, size)
            long[0] += 1
            kept = bytes(buf[:max_line])
            if any(t in kept for t in GREP_TRIGGERS):
                yield pos, kept, after - pos - (os.pread(fd, 1, after - 1) == b"\n")
            pos = after
            continue
        stop = want if final else whole  # at the end, an unterminated last line too
        long[0] += count_long_lines(buf, 0, whole, max_line) + (stop - whole > max_line)
        for first in _candidates(find, buf, needles, stop):
            nl = buf.find(b"\n", first, stop)
            length = (nl if nl >= 0 else stop) - first
            kept = bytes(buf[first : first + min(length, max_line)])
            if any(t in kept for t in GREP_TRIGGERS):  # what grep would list
                yield pos + first, kept, length
        pos += stop


def _collect(
    lines: Iterator[Candidate], into: list[Candidate], stop: list[bool]
) -> Callable[[], None]:
    """A job that takes candidates from ``lines`` until ``DRAIN_CAP`` bytes are held (or
    ``stop`` is set); the rest is taken by whoever resumes ``lines`` (bounded memory on a
    dense log)."""

    def job() -> None:
        held = 0
        for candidate in lines:
            into.append(candidate)
            held += len(candidate[1]) + 64
            if held >= logscan_fast.DRAIN_CAP or stop:
                break

    return job


def _scan(
    fd: int, size: int, needles: tuple[bytes, ...], hits: logscan_fast.Hits, parts: int | None
) -> int:
    """Hand every candidate line of fd[0:size] to ``hits`` in file order; returns the
    number of lines longer than max_line bytes.

    A big log is cut at a line start into one range per core (two at most): the second
    is searched by a thread (its reads and searches run without the GIL) that holds its
    candidates while the first range's are handed here."""
    scanner, max_line = hits.scanner, hits.max_line
    numbers = _Numbers(fd)
    count = logscan_fast.parts_for(size) if parts is None else parts
    starts = logscan_fast.range_starts(fd, size, min(count, 2))
    ends = [*starts[1:], size]
    counts = [[0] for _ in starts]
    ranges = [
        _range(fd, (a, b, size), needles, max_line, long)
        for a, b, long in zip(starts, ends, counts, strict=True)
    ]
    held: list[Candidate] = []
    stop: list[bool] = []
    worker = (
        logscan_fast.Worker("skgate-anchor", _collect(ranges[1], held, stop))
        if len(ranges) > 1
        else None
    )
    try:
        for k, lines in enumerate(ranges):
            source: Iterator[Candidate] = lines
            if k and worker is not None:
                worker.join()
                if worker.failed is not None:
                    raise logscan_fast.FastPathUnusable("the range search failed")
                source = itertools.chain(held, lines)
            for offset, kept, length in source:
                summary = hits.at(offset, kept, length)
                if summary is not None:
                    scanner.on_summary(
                        functools.partial(numbers.at, offset), summary, None, length > max_line
                    )
    finally:
        stop.append(True)
        if worker is not None:
            worker.join()  # on a failure here, it stops at its next candidate
    return sum(long[0] for long in counts)


def scan_file_anchored(
    path: Path,
    max_line: int = 64 * 1024,
    *,
    force: bool = False,
    needles: tuple[bytes, ...] | None = None,
    parts: int | None = None,
) -> LogScan | None:
    """The anchor path of ``scan_file`` for a finished log without user regexes.

    None when the plan for this log is estimated dearer than the grep path (unless
    ``force``) or when the result cannot be trusted (``wc`` missing or failing, the file
    changed while it was read): the caller then takes the grep path or the Python scan.
    ``needles`` replaces the plan's (tests: any cover of the triggers gives the same
    result); a set that misses a trigger is refused. ``parts`` (1 or 2) replaces the
    number of ranges searched side by side (default: 2 for a log of at least
    ``logscan_fast.PARALLEL_MIN_BYTES`` on two cores or more).
    """
    if needles is not None and not all(any(n in t for n in needles) for t in GREP_TRIGGERS):
        raise ValueError("the needles must cover every trigger literal")
    wc = shutil.which("wc")
    if wc is None:
        return None
    fd = logscan_fast.open_log(path)
    counter = None
    try:
        before = os.fstat(fd)
        size = before.st_size
        chosen = plan(sample_of(fd, size)) if needles is None else Plan(needles, 0.0)
        if not (force or chosen.cheaper):
            return None
        # The newlines are counted by wc on the other core while this one scans.
        counter = logscan_fast.spawn([wc, "-l"], path, (before.st_dev, before.st_ino))
        scanner = LogScanner(max_line=max_line)
        lines = logscan_fast.Lines(fd, size, max_line)
        hits = logscan_fast.Hits(scanner, lines, max_line)
        long_lines = _scan(fd, size, chosen.needles, hits, parts)
        lines.hand(scanner, hits.handed, size)
        newlines = logscan_fast.read_count(counter)
        after = os.fstat(fd)
        same = path.stat()
        identity = logscan_fast.identity
        if identity(before) != identity(after) or identity(after) != identity(same):
            return None  # written to or replaced while it was read: not a finished log
        last = os.pread(fd, 1, size - 1) if size else b"\n"
        scanner.set_counts(newlines + (last != b"\n"), size, long_lines)
        return scanner.finish()
    except (logscan_fast.FastPathUnusable, OSError):
        return None
    finally:
        if counter is not None:
            logscan_fast.end_child(counter)
        os.close(fd)
