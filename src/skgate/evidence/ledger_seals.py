"""The seal hashes the root's ledger holds for one attempt, for the one reader (issue 28).

``skgate verify`` checks every ``end`` and ``seal`` entry's ``seal_sha256`` against the
attempt's ``seal.json`` (:mod:`skgate.evidence.seal`): a ``seal.json`` re-made to match
edited evidence passes the seal check but no longer matches what the ledger chained.
Every other reader (``status``, ``wait``, ``classify``, ``report``, MCP) goes through
:mod:`skgate.evidence.sealed`, which asks here for the same hashes, so none of them shows
such an attempt as its rewritten files say (C2.5).

Kept apart from ``ledger.py`` so that ``status`` does not load the ledger's writers
(issue 29): the ledger is read with one ``bytes.find`` per block for the attempt's
quoted name, and only the lines that hold it are parsed.
"""

from __future__ import annotations

import enum
import os
import stat

from skgate.evidence import pathtext, regular
from skgate.model import jsonread
from skgate.model.errors import EvidenceError
from skgate.model.running import (
    LEDGER_GONE,
    LEDGER_LINK,
    LEDGER_NOT_REGULAR,
    LEDGER_SILENT,
    how_ended,
)

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

#: The root's hash-chained ledger (``<root>/ledger.jsonl``), and where its attempts are.
LEDGER = "ledger.jsonl"
ATTEMPTS = "attempts"
#: An attempt's journal (made before the ledger indexes it), its frozen controls and its
#: seal (named here, the lowest of the evidence modules; ``files`` re-exports them). An
#: indexed attempt's path holding none of them is not that attempt (:func:`removed`).
EVENTS = "events.jsonl"
CONTROL = "control.json"
SEAL = "seal.json"
#: The longest ledger line read back whole: entries are a few hundred bytes; a longer
#: line is damaged and is hashed in blocks, never held (issue 21; ``ledger_tail``).
LINE_LIMIT = 1 << 20


class LedgerEvent(str, enum.Enum):
    """Entry kinds of ``ledger.jsonl`` (not the journal's events: a file of its own)."""

    START = "start"
    END = "end"
    SEAL = "seal"
    SCENE = "scene"
    #: ``skgate recover`` cut back a torn last line (the entry's ``torn_cut`` says what).
    REPAIR = "repair"


#: The entries that chain an attempt's seal hash (``ledger.record_end``, ``record_seal``).
_SEALING = (LedgerEvent.END, LedgerEvent.SEAL)


def entry_kind(entry: Mapping[str, Any]) -> LedgerEvent | None:
    """The kind of one ledger entry (None: a kind this version does not know). This and
    the ledger's writer are the only places that read a ledger entry's ``event`` string."""
    try:
        return LedgerEvent(entry.get("event"))
    except ValueError:
        return None


#: :func:`root_of` by the working directory and the spelling asked for: a report asks
#: for each file of each attempt, and ``abspath`` was most of what that cost.
_ROOTS: dict[tuple[str, str], tuple[str, str] | None] = {}


def root_of(attempt: str) -> tuple[str, str] | None:
    """(the evidence root, the attempt's name) of an attempt directory
    ``<root>/attempts/<name>`` however it is spelled (``.``, a trailing slash), else None."""
    asked = (os.getcwd() if not attempt.startswith("/") else "", attempt)
    try:
        return _ROOTS[asked]
    except KeyError:
        pass
    parent, name = os.path.split(os.path.abspath(attempt))
    found = (os.path.dirname(parent), name) if os.path.basename(parent) == ATTEMPTS else None
    _ROOTS[asked] = found
    return found


def ledger_key(root: str) -> tuple[int, int, int, int] | None:
    """What changes when the ledger does (inode, size, mtime, mode; None: none there), so
    that a long-lived reader (MCP, ``wait``) reads it again after an append or an edit."""
    try:
        st = os.lstat(pathtext.join(root, LEDGER))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


#: Per root and kind of answer (seal hashes, runners): the ledger's key (:func:`ledger_key`)
#: and how many attempts were asked for under it, then, from the third on, every attempt's
#: answer read at once (:func:`_asked`). One ``status`` asks for one attempt (a search for
#: its name is the cheapest); a report asks for each attempt of its root, and one search per
#: attempt over the whole ledger would grow with the square of the root's size.
_ASKED: dict[tuple[str, str], tuple[object, int]] = {}
_INDEX: dict[tuple[str, str], tuple[object, dict[str, Any]]] = {}
#: Per root and kind: the last attempt searched for, under which ledger key, and the answer.
_LAST: dict[tuple[str, str], tuple[object, str, dict[str, Any]]] = {}
#: Attempts asked for under one state of the ledger before it is read whole.
_SEARCHES = 2


def recorded_seals(root: str, name: str) -> tuple[str, ...]:
    """Every ``seal_sha256`` the ledger of ``root`` chained for its attempt ``name`` (its
    ``end`` and ``seal`` entries, in order); empty when the root has no ledger, the
    attempt no such entry, or the ledger cannot be read as a regular file (what a sealed
    attempt of such a root reads as is :func:`anchor`'s answer).

    An entry is the attempt's when it names it and its path (``attempts/<name>``), as
    ``ledger.record_end`` writes them; a line over :data:`LINE_LIMIT` or a torn last
    line is not read (``verify`` reports both).
    """
    return _indexed_seals(root, name).get(name, ())


def _indexed_seals(root: str, name: str) -> dict[str, tuple[str, ...]]:
    # Read whole: every entry names its attempt (``"attempt"``), however its JSON is
    # spaced; one read answers both the seal hashes and whether the attempt is indexed.
    found: dict[str, tuple[str, ...]] = _asked(root, name, b'"attempt"', _read)
    return found


class Anchor(enum.Enum):
    """What the root's ledger is for one of its sealed attempts (C2.5, C4).

    Every attempt is indexed in its root's ledger before it runs (C4: never run
    unrecorded), and its seal's hash is chained there when it ends: the ledger is what
    a ``seal.json`` re-made to match edited files is caught by (:func:`recorded_seals`).
    A sealed attempt of a root whose ledger is gone, a link, not a regular file, or names
    the attempt nowhere has lost that anchor: ``verify`` calls each a change, and no
    reader shows the attempt as its files say either (``skgate.evidence.sealed``). The
    values are :attr:`~skgate.model.records.SealBreach.now` of that breach."""

    #: It indexes the attempt: its seal hashes are compared (:func:`recorded_seals`).
    HELD = "held"
    #: It is there but cannot be read (permissions): nothing is known either way, and the
    #: seal alone is checked, as in a directory outside any root.
    UNREAD = "unread"
    GONE = LEDGER_GONE
    LINK = LEDGER_LINK
    NOT_REGULAR = LEDGER_NOT_REGULAR
    SILENT = LEDGER_SILENT


def anchor(root: str, name: str) -> Anchor:
    """What the ledger of ``root`` is for its sealed attempt ``name`` (:class:`Anchor`):
    one ``lstat``, and the read :func:`recorded_seals` makes anyway."""
    path = pathtext.join(root, LEDGER)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return Anchor.GONE
    except OSError:
        return Anchor.UNREAD
    if stat.S_ISLNK(mode):
        return Anchor.LINK
    if not stat.S_ISREG(mode):
        return Anchor.NOT_REGULAR
    if name in _indexed_seals(root, name):
        return Anchor.HELD
    try:  # found nowhere: in a ledger that could be read (else nothing is known)
        os.close(regular.open_fd(path))
    except (OSError, EvidenceError):
        return Anchor.UNREAD
    return Anchor.SILENT


def _asked(
    root: str, name: str, every: bytes, read: Callable[[str, bytes], dict[str, Any]]
) -> dict[str, Any]:
    """``read(root, needle)``, by attempt name: for the first :data:`_SEARCHES` attempts
    asked for under one state of the ledger, of the lines that name attempt ``name``;
    from then on, of the lines that hold ``every``, read once and kept until the ledger
    changes (a report asks about every attempt of its root)."""
    key, kind = ledger_key(root), (root, every.decode())
    index = _INDEX.get(kind)
    if index is not None and index[0] == key:
        return index[1]
    last = _LAST.get(kind)
    if last is not None and last[0] == key and last[1] == name:
        return last[2]  # the same attempt again (its seal hashes, then its anchor)
    asked = _ASKED.get(kind)
    count = asked[1] + 1 if asked is not None and asked[0] == key else 1
    _ASKED[kind] = (key, count)
    if count <= _SEARCHES:
        found = read(root, b'"' + name.encode() + b'"')
        _LAST[kind] = (key, name, found)
        return found
    _INDEX[kind] = (key, read(root, every))
    return _INDEX[kind][1]


def _read(root: str, needle: bytes) -> dict[str, tuple[str, ...]]:
    """The seal hashes of the ``end`` and ``seal`` entries among the ledger's lines that
    hold ``needle``, by attempt name, for every attempt an entry of them indexes (none
    chained yet: an empty tuple; see :func:`recorded_seals` and :func:`anchor`)."""
    found: dict[str, list[str]] = {}
    for kind, name, entry in _entries(root, needle):
        if kind not in _INDEXING:
            continue
        shas = found.setdefault(name, [])
        sha = entry.get("seal_sha256")
        if kind in _SEALING and isinstance(sha, str):
            shas.append(sha)
    return {name: tuple(shas) for name, shas in found.items()}


#: The entries that name one attempt of the root (``repair`` names none).
_INDEXING = (LedgerEvent.START, LedgerEvent.END, LedgerEvent.SEAL, LedgerEvent.SCENE)


def _entries(root: str, needle: bytes) -> list[tuple[LedgerEvent, str, dict[str, Any]]]:
    """(kind, attempt name, entry) of every whole ledger line that holds ``needle`` and
    is an entry about one attempt of the root: it names the attempt and its path
    (``attempts/<name>``), as the ledger's writer does. Empty when the root has no
    ledger, a linked one, or one that cannot be read (``verify`` says which)."""
    try:
        fd = regular.open_fd(pathtext.join(root, LEDGER))
    except (OSError, EvidenceError):
        return []  # none there, a link, or unreadable (verify says which)
    found: list[tuple[LedgerEvent, str, dict[str, Any]]] = []
    try:
        for raw in regular.lines_containing(fd, needle, LINE_LIMIT):
            try:
                entry = jsonread.loads(raw)
            except (ValueError, RecursionError):
                continue  # a damaged line: verify names it
            if not isinstance(entry, dict):
                continue
            kind, name = entry_kind(entry), entry.get("attempt")
            if (
                kind is not None
                and isinstance(name, str)
                and entry.get("path") == f"{ATTEMPTS}/{name}"
            ):
                found.append((kind, name, entry))
    except OSError:
        return []
    finally:
        os.close(fd)
    return found


def indexed(root: str, name: str) -> bool:
    """Did the ledger of ``root`` index its attempt ``name`` (C4: every attempt is, before
    it runs)? Its directory may be gone since: a removed attempt is never read as though
    it had not run, and its id is never given out again (issue 28)."""
    return any(
        kind in _INDEXING and n == name
        for kind, n, _ in _entries(root, b'"' + name.encode() + b'"')
    )


def holds_attempt(attempt: str) -> bool:
    """Does the directory at ``attempt`` hold any of an attempt's first files (its journal,
    controls or seal)? Gone, or another directory put in its place, it does not."""
    return any(os.path.lexists(pathtext.join(attempt, n)) for n in (EVENTS, CONTROL, SEAL))


def removed(attempt: str) -> tuple[str, str] | None:
    """(root, name) of an attempt path ``<root>/attempts/<name>`` whose directory is no
    longer the attempt the root's ledger indexed there (issue 28): gone; holding none of
    the attempt's first files (another directory put in its place: ``rm -rf`` then
    ``mkdir``); or holding another attempt's evidence (:func:`holds_another`: copied in
    from another root). None for anything else."""
    at = root_of(attempt)
    if holds_attempt(attempt):
        return at if at is not None and holds_another(attempt, *at) else None
    return at if at is not None and indexed(*at) else None


#: A runner as the ledger's ``start`` entry and the attempt's journal name it: (pid, start
#: time in clock ticks, boot id).
Runner = tuple[int, int, str]


def _runner(runner: object, boot: object) -> Runner | None:
    """A runner's three facts, each of the type its writer writes, else None."""
    if not isinstance(runner, dict):
        return None
    pid, ticks = runner.get("pid"), runner.get("start_ticks")
    if type(pid) is int and pid > 0 and type(ticks) is int and ticks >= 0:  # not bools
        return (pid, ticks, boot) if isinstance(boot, str) else None
    return None


def started_by(root: str, name: str) -> Runner | None:
    """(pid, start time in clock ticks, boot id) of the runner that the ledger's ``start``
    entry of attempt ``name`` names (:func:`skgate.evidence.ledger.record_start`): who ran
    an attempt whose directory, and its ``control.json`` with it, is gone. None when no
    entry names one (an attempt brought home from another node, one that ``skgate
    recover`` indexed, a ledger written before runners were named there) or its fields
    are not what the writer writes."""
    found: Runner | None = _asked(root, name, b'"runner"', _runners).get(name)
    return found


def _runners(root: str, needle: bytes) -> dict[str, Runner]:
    """The runner each ``start`` entry among the lines holding ``needle`` names (the
    first one of an attempt), by attempt name (see :func:`started_by`)."""
    found: dict[str, Runner] = {}
    for kind, name, entry in _entries(root, needle):
        runner = entry.get("runner")
        named = _runner(runner, runner.get("boot_id") if isinstance(runner, dict) else None)
        if kind is LedgerEvent.START and named is not None:
            found.setdefault(name, named)
    return found


#: The longest first journal line read (its ``created`` event: argv, cwd and the runner);
#: a longer one is not read, and the attempt is not told apart by its runner.
FIRST_LINE_LIMIT = 256 << 10
FIRST_READ = 8 << 10


def journal_runner(attempt: str) -> Runner | None:
    """The runner the attempt's journal names in its first entry (``created``, written
    before the ledger indexes the attempt; ``boot_id`` beside it), read as a regular file
    and bounded; None when it cannot be read or names none."""
    try:
        fd = regular.open_fd(pathtext.join(attempt, EVENTS))
    except (OSError, EvidenceError):
        return None
    try:
        # Small reads: the journal may be large, and only its first line is wanted.
        line = next(regular.iter_fd_lines(fd, FIRST_LINE_LIMIT, FIRST_READ), None)
    except OSError:
        return None
    finally:
        os.close(fd)
    if line is None or line.too_long or not line.complete:
        return None
    try:
        entry = jsonread.loads(line.raw)
    except (ValueError, RecursionError):
        return None
    # The first entry is the one the runner writes as it creates the attempt, the only
    # one that names it: its kind need not be compared.
    return _runner(entry.get("runner"), entry.get("boot_id")) if isinstance(entry, dict) else None


def attempt_runner(attempt: str) -> Runner | None:
    """The runner that owns an attempt: the one its journal's first entry names, else the
    one its ``control.json`` names (a journal removed, or one whose first entry names
    none), read as regular files and bounded; None when neither does. A reader that took
    the journal alone would take an attempt whose journal was removed for one nobody
    owns (C2.5: ``rm events.jsonl`` must not make a written verdict read as recorded)."""
    found = journal_runner(attempt)
    if found is not None:
        return found
    try:
        control = jsonread.loads(regular.read_bytes(pathtext.join(attempt, CONTROL)))
    except (OSError, EvidenceError, ValueError, RecursionError):
        return None
    runner = control.get("runner") if isinstance(control, dict) else None
    return _runner(runner, runner.get("boot_id")) if isinstance(runner, dict) else None


def holds_another(attempt: str, root: str, name: str) -> bool:
    """Does the directory at ``attempt`` (attempt ``name`` of ``root``) hold another
    attempt's evidence? Its journal names a runner, and the ledger's ``start`` entry of
    ``name`` another one (pid, start time or boot): a directory copied in from another
    root (``rm -rf`` then ``cp -r``), never read as the attempt this root ran there, nor
    its runner as gone (C2.5). An attempt brought home from another node, or indexed by
    ``skgate recover``, has no runner in its entry and is read as it is."""
    try:
        st = os.lstat(pathtext.join(attempt, EVENTS))
    except OSError:
        return False  # no journal: nothing names a runner
    # Asked twice by one status (its removal first, then its seal): answered once for
    # one state of the ledger and of the journal.
    key = (ledger_key(root), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    known = _HOLDS.get(attempt)
    if known is not None and known[0] == key:
        return known[1]
    indexed_by = started_by(root, name)
    own = journal_runner(attempt) if indexed_by is not None else None
    found = own is not None and own != indexed_by
    _HOLDS[attempt] = (key, found)
    return found


#: :func:`holds_another`'s answers, by attempt path, with the state they were read at.
_HOLDS: dict[str, tuple[object, bool]] = {}


def ended_after_removal(root: str, name: str) -> str | None:
    """How the command of attempt ``name`` ended (:func:`skgate.model.running.how_ended`),
    as the runner that supervised it to its end after its directory was removed recorded
    in its ``end`` entry (``ended``: ``runner.watch.finish_removed``). None when no entry
    says so, or its fields are not what that writer writes."""
    for kind, n, entry in _entries(root, b'"' + name.encode() + b'"'):
        end = entry.get("ended")
        if kind is not LedgerEvent.END or n != name or not isinstance(end, dict):
            continue
        fired, status, sig = (
            end.get("timeout_fired"),
            end.get("exit_status"),
            end.get("exit_signal"),
        )
        if type(fired) is not bool:
            continue
        if sig is not None and not (type(sig) is int and 0 < sig < 128):
            continue
        if status is not None and not (type(status) is int and 0 <= status <= 255):
            continue
        if fired or sig is not None or status is not None:
            return how_ended(fired, status, sig)
    return None


#: How much of the ledger's end :func:`newest_indexed` reads first, and at most: the
#: newest ``start`` entry is near the end (an attempt is indexed as it is created); a
#: window without one is read four times larger, up to the cap, then nothing is said.
TAIL_FIRST = 16 << 10
TAIL_CAP = 16 << 20


def newest_indexed(root: str) -> int | None:
    """The attempt number the last ``start`` entry of the root's ledger names, read
    back from the ledger's end (bounded: :data:`TAIL_CAP`), or None (no ledger, none
    found). An id the ledger indexed is never given out again, nor is an older attempt
    the newest in its place, even when the ids below it were never indexed (a runner
    killed between creating its directory and indexing it, that directory removed since).
    Entries appended out of order (two runs started together) are the caller's to step
    over: the ids after this one are asked for in turn (:func:`indexed`)."""
    try:
        fd = regular.open_fd(pathtext.join(root, LEDGER))
    except (OSError, EvidenceError):
        return None
    try:
        size = os.fstat(fd).st_size
        window = TAIL_FIRST
        while True:
            start = max(0, size - window)
            block = os.pread(fd, size - start, start)
            found = _last_started(block, whole_first=start == 0)
            if found is not None or start == 0 or window >= TAIL_CAP:
                return found
            window = min(4 * window, TAIL_CAP)
    except OSError:
        return None
    finally:
        os.close(fd)


def _last_started(block: bytes, *, whole_first: bool) -> int | None:
    """The attempt number of the last ``start`` entry among the whole lines of ``block``
    (its first line too when ``whole_first``; never a torn last line), parsed one at a
    time from the end: one line in the common case."""
    end = block.rfind(b"\n")  # the whole lines are block[:end]
    if end < 0:
        return None  # no line ends in it: nothing whole to read
    # The first line was begun before the window, unless the window starts the ledger.
    floor = 0 if whole_first else block.find(b"\n") + 1
    at = block.rfind(b'"start"', floor, end)
    while at >= 0:
        lo = block.rfind(b"\n", 0, at) + 1
        hi = block.find(b"\n", at)
        if lo >= floor and hi - lo <= LINE_LIMIT:
            number = _started(block[lo:hi])
            if number is not None:
                return number
        at = block.rfind(b'"start"', floor, lo)
    return None


def _started(raw: bytes) -> int | None:
    """The attempt number of one ledger line when it is a ``start`` entry of the root's
    own attempt (named with its path, as the writer writes it), else None."""
    try:
        entry = jsonread.loads(raw)
    except (ValueError, RecursionError):
        return None  # a damaged line: verify names it
    name = entry.get("attempt") if isinstance(entry, dict) else None
    if (
        isinstance(name, str)
        and name.isascii()
        and name.isdigit()
        and entry_kind(entry) is LedgerEvent.START
        and entry.get("path") == f"{ATTEMPTS}/{name}"
    ):
        return int(name)
    return None


def indexed_names(root: str) -> frozenset[str]:
    """Every attempt name the ledger of ``root`` indexed, read in one pass (``status
    --all`` of a root lists the removed ones too)."""
    needle = b'"' + ATTEMPTS.encode() + b"/"
    return frozenset(n for kind, n, _ in _entries(root, needle) if kind in _INDEXING)
