"""Read-only process observation: identity by (pid, start time), liveness, the table.

This module never sends a signal and never writes a file (C2.1: while an attempt is in
progress, observation is read-only). Processes are identified by their pid *and* their
start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), so a recycled pid
never matches a process that has gone.

It reads ``/proc`` directly instead of going through psutil on the runner's hot path: a
scan every second over a few hundred processes must cost well under 1 % of a core.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from skgate.model.frozen import record
from skgate.model.lazy_re import Lazy

PROC = Path("/proc")

#: Process names that look like a CANN static compiler (C4: such processes that we do
#: not own are foreign workloads: recorded, waited for, never touched).
COMPILER_NAMES: tuple[str, ...] = ("opc", "op_compiler")


@record
class ProcStat:
    """The few fields of ``/proc/<pid>/stat`` skgate needs."""

    pid: int
    name: str
    state: str
    ppid: int
    pgid: int
    sid: int
    start_ticks: int
    #: Field 20, its number of threads: with one, its only task is itself (see tree()).
    threads: int = 1

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def _read_small(path: str) -> bytes | None:
    """The whole of a ``/proc`` file, or None when it cannot be opened or read.

    Plain ``os.open``/``os.read`` (no buffered file object): the scan reads two such files
    per owned process every interval, and this halves its CPU (issue 29)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_stat(pid: int) -> ProcStat | None:
    """Return the stat record of ``pid``, or None when it does not exist (any more)."""
    raw = _read_small(f"/proc/{pid}/stat")
    return parse_stat(raw) if raw is not None else None


def parse_stat(raw: bytes) -> ProcStat | None:
    # The name is in parentheses and may itself contain ')' and spaces: split at the last.
    lpar = raw.find(b"(")
    rpar = raw.rfind(b")")
    if lpar < 0 or rpar < 0:
        return None
    try:
        pid = int(raw[:lpar])
        name = raw[lpar + 1 : rpar].decode("utf-8", "backslashreplace")
        fields = raw[rpar + 2 :].split()
        # fields[0] is field 3 (state); field N is fields[N - 3].
        return ProcStat(
            pid=pid,
            name=name,
            state=fields[0].decode("ascii", "replace"),
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            sid=int(fields[3]),
            start_ticks=int(fields[19]),
            threads=int(fields[17]),
        )
    except (ValueError, IndexError):
        return None


def read_cmdline(pid: int) -> tuple[str, ...]:
    """Its argv, () when it cannot be read (gone, or a kernel thread). Read with plain os
    calls like the stat: the events read it at every owned exec (issue 29)."""
    raw = _read_small(f"/proc/{pid}/cmdline")
    return () if raw is None else parse_cmdline(raw)


def parse_cmdline(raw: bytes) -> tuple[str, ...]:
    """The argv in the bytes of a ``/proc/<pid>/cmdline``."""
    parts = raw.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return tuple(p.decode("utf-8", "backslashreplace") for p in parts)


def boot_id() -> str:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return "unknown"


def is_alive(pid: int, start_ticks: int) -> bool:
    """True when ``pid`` still names the same, not yet dead, process."""
    st = read_stat(pid)
    return st is not None and st.start_ticks == start_ticks and not st.zombie


def this_boot(boot: str) -> bool:
    """Was a record of boot ``boot`` made in this boot (``""``: a record that names no
    boot, taken for this one)? Pids and start times of another boot name nothing now."""
    return boot in ("", boot_id())


def still_runs(pid: int, start_ticks: int, boot: str) -> bool:
    """C4: ``pid`` is still the process recorded as started at ``start_ticks`` in boot
    ``boot`` (:func:`this_boot`), and not dead."""
    return this_boot(boot) and is_alive(pid, start_ticks)


def iter_pids() -> Iterator[int]:
    try:
        entries = os.listdir(PROC)
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            yield int(entry)


def scan() -> dict[int, ProcStat]:
    """A snapshot of the whole process table (stat fields only)."""
    table: dict[int, ProcStat] = {}
    for pid in iter_pids():
        st = read_stat(pid)
        if st is not None:
            table[pid] = st
    return table


class _NoChildrenFiles(Exception):
    """The kernel has no ``/proc/<pid>/task/<tid>/children`` (CONFIG_PROC_CHILDREN off)."""


#: Learned on first use: None unknown, False when the kernel lacks the children files.
_children_files: bool | None = None


def _children_of(pid: int, threads: int = 0) -> list[int]:
    """The children of every task of ``pid``. ``threads == 1`` (its stat said so): its
    one task is ``pid`` itself, read without listing ``task/`` (a thread started since
    is seen by the next scan, as one started after the listing always was)."""
    kids: list[int] = []
    if threads == 1:
        tasks = [str(pid)]
    else:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return kids
    for tid in tasks:
        raw = _read_small(f"/proc/{pid}/task/{tid}/children")
        if raw is None:
            if not os.path.exists(f"/proc/{pid}/task/{tid}/children") and os.path.isdir(
                f"/proc/{pid}/task/{tid}"
            ):
                raise _NoChildrenFiles
            continue
        kids.extend(int(x) for x in raw.split())
    return kids


def tree(root: int) -> dict[int, ProcStat]:
    """Every descendant of ``root`` now (zombies included), with its stat record.

    Walks ``/proc/<pid>/task/*/children`` from ``root`` down, which costs in proportion to
    the tree, not to the machine. On a kernel without those files it builds the tree from
    one scan of the whole table (never one scan per process).
    """
    global _children_files
    if _children_files is not False:
        try:
            found: dict[int, ProcStat] = {}
            stack = _children_of(root)
            while stack:
                pid = stack.pop()
                if pid in found:
                    continue
                st = read_stat(pid)
                if st is None:
                    continue
                found[pid] = st
                if not st.zombie:
                    stack.extend(_children_of(pid, st.threads))
            _children_files = True
            return found
        except _NoChildrenFiles:
            _children_files = False
    table = scan()
    kids: dict[int, list[int]] = {}
    for st in table.values():
        kids.setdefault(st.ppid, []).append(st.pid)
    found = {}
    stack = list(kids.get(root, ()))
    while stack:
        pid = stack.pop()
        if pid in found or pid not in table:
            continue
        found[pid] = table[pid]
        stack.extend(kids.get(pid, ()))
    return found


def direct_children(pid: int) -> list[int]:
    """Children of ``pid`` (zombies included), from the children files when the kernel
    has them, else from one scan of the table."""
    global _children_files
    if _children_files is not False:
        try:
            return _children_of(pid)
        except _NoChildrenFiles:
            _children_files = False
    return [st.pid for st in scan().values() if st.ppid == pid]


#: Interpreters a compiler script may run under (``#!/usr/bin/env python3`` makes the
#: process's name and argv[0] the interpreter's; the script is the next word).
_INTERPRETERS = Lazy(r"\A(?:python[0-9.]*|sh|bash|dash|env|perl)\Z")  # compiled on first use


def program_name(argv: Sequence[str]) -> str:
    """The program an argv runs: argv[0], or the script an interpreter runs."""
    if not argv:
        return ""
    first = os.path.basename(argv[0])
    if not _INTERPRETERS.get().match(first):
        return first
    for word in argv[1:3]:
        if not word.startswith("-"):
            return os.path.basename(word)
    return first


def is_compiler(name: str, argv: Iterable[str], names: Iterable[str] = COMPILER_NAMES) -> bool:
    """Does a process look like a static compiler, by its name, its argv[0], or the script
    its interpreter runs (``python3 /…/op_compiler -p …``)?"""
    wanted = set(names)
    if name in wanted:
        return True
    words = tuple(argv)
    if not words:
        return False
    return os.path.basename(words[0]) in wanted or program_name(words) in wanted


def compiler_processes(
    names: Iterable[str] = COMPILER_NAMES, exclude: Iterable[int] = ()
) -> list[tuple[ProcStat, tuple[str, ...]]]:
    """Compiler-looking processes now alive, except ``exclude`` (read-only, C4): those
    :func:`is_compiler` finds by name, argv[0] or script, zombies left out.

    Every launch pays for this scan of the whole host (issue 29), so a process is first
    judged on raw bytes: its name (the stat line's parenthesised field) and the first
    three words of its argv (all :func:`is_compiler` reads; a long argv's tail is not read).
    Only a process whose name is one of ``names`` or whose argv holds one of them as a
    byte string is read again and judged by the rule itself. The byte test never drops a
    process the rule finds (see :func:`_needles`)."""
    skip = set(exclude)
    wanted = tuple(names)
    needles = _needles(wanted)
    root = _PROC_ROOT
    try:
        entries = os.listdir(root)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in skip:
            continue
        if needles is not None and not _may_be_compiler(f"{root}/{entry}", needles):
            continue
        raw = _read_small(f"{root}/{entry}/stat")
        st = parse_stat(raw) if raw is not None else None
        if st is None or st.zombie:
            continue
        raw = _read_small(f"{root}/{entry}/cmdline")
        argv = () if raw is None else parse_cmdline(raw)
        if is_compiler(st.name, argv, wanted):
            found.append((st, argv))
    return found


#: The process table :func:`compiler_processes` reads (a test points it at a fake one).
_PROC_ROOT = "/proc"
#: One read's size for an argv's first words: most fit.
_HEAD = 4096


def _needles(wanted: Sequence[str]) -> frozenset[bytes] | None:
    """The names as UTF-8 bytes for the byte test, or None (no byte test) when one of
    them could match without its bytes being there.

    Why the test is exact: every text :func:`is_compiler` compares with a name (the
    process name, an argv word's base name) starts at the start of a decoded field or
    right after a ``/`` byte, so at a character boundary. Decoding with
    ``backslashreplace`` turns each byte that is not valid UTF-8 into ``\\xNN``, which
    holds a backslash; a text equal to a name without a backslash therefore decoded
    from valid UTF-8 alone, and is the name's own UTF-8 bytes. A name with a backslash,
    or one that is no valid UTF-8 (a ``surrogateescape``'d environment value), gets no
    byte test."""
    try:
        needles = frozenset(name.encode() for name in wanted)
    except UnicodeEncodeError:
        return None
    return None if any(b"\\" in n for n in needles) else needles


def _may_be_compiler(pid_dir: str, needles: frozenset[bytes]) -> bool:
    """False only when neither its name nor its argv's first three words can be one of
    the names (see :func:`_needles`); True when it is gone or unreadable (the rule
    itself then decides, as before)."""
    stat_line = _read_small(f"{pid_dir}/stat")
    if stat_line is None:
        return True
    lpar, rpar = stat_line.find(b"("), stat_line.rfind(b")")
    if lpar < 0 or rpar < 0 or stat_line[lpar + 1 : rpar] in needles:
        return True
    argv_head = _read_words(f"{pid_dir}/cmdline", 3)
    return argv_head is None or any(n in argv_head for n in needles)


def _read_words(path: str, words: int) -> bytes | None:
    """A ``/proc/<pid>/cmdline`` up to its ``words``-th NUL byte or its end (more may
    follow), or None when it cannot be read: the first ``words`` words of the argv whole,
    in one read for most processes, without reading a long argv's tail."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks, nuls = [], 0
        while nuls < words and (got := os.read(fd, _HEAD)):
            chunks.append(got)
            nuls += got.count(b"\0")
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def self_stat() -> ProcStat:
    st = read_stat(os.getpid())
    if st is None:  # pragma: no cover - /proc is required on Linux
        raise RuntimeError("/proc/self/stat is unreadable; skgate needs Linux /proc")
    return st
