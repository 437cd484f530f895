"""Attempt roots: atomic allocation of attempt directories, lookup, and the ledger.

Layout: ``<root>/attempts/<NNNN>/`` holds one attempt's evidence (see ``attempt.py``).
An id is taken with an exclusive ``mkdir``: two runs started at the same moment in the
same root get distinct ids, and an existing attempt is never reused or overwritten (C4).

The ledger ``<root>/ledger.jsonl`` is the append-only index of the root: one JSON object
per line (schema ``skgate.ledger/1``) for each attempt start, end and preserved scene.
Each entry carries ``prev``, the sha256 of the exact bytes of the previous line (64 zeros
for the first), so rewriting, removing or reordering any earlier entry breaks the chain
and ``skgate verify`` names the line (C4 last bullet: the interrupted scene is never
rewritten; a later attempt is appended).

Why a JSONL file and not SQLite: SQLite rewrites pages in place, so "append-only" would
be a promise of the code, not a property of the file. A JSONL file opened ``O_APPEND``
only grows, can be checked with ``sha256sum`` and read by a person with ``less``, and
survives a crash with at most one torn last line. Writers serialise with ``flock`` on the
ledger file itself, read the last line, append one line with a single ``write`` and
``fsync``.

A torn last line (no line end; it begins as every entry does and stops before its end:
an append the disk filled up under, or whose writer was killed mid-write) is no entry,
and no entry depends on it
(issue 29's leftover: it made ``verify`` call the root changed forever, and the next
append chained onto it). ``verify`` calls it unfinished; the next append, or ``skgate
recover``, writes its entry in the torn line's place, recording the cut (``torn_cut``: its
size and sha256) in that entry, or, when it cannot (the disk still full), leaves the torn
line as it was: the cut is never made without its record (``ledger_tail.replace_torn``).
A writer whose own append fails (ENOSPC after a partial write) takes its partial line
back at once. Every whole line stays as written
(C4: append-only); a whole entry that lost only its line end is kept and completed.

Schema history: ``skgate.ledger/1``: first version (2026-11).
"""

from __future__ import annotations

import contextlib
import os
import time

from skgate.evidence import regular
from skgate.evidence.digest import sha256_bytes, sha256_file
from skgate.evidence.files import EVENTS as JOURNAL
from skgate.evidence.files import (
    SEAL,
    check_root,
    fsync_dir,
    is_attempt_dir,
    json_text,
)

# The file's name and its entry kinds live in ledger_seals.py, which the read side loads
# without the ledger's writers (issue 29); re-exported here for the callers that always
# found them in the ledger.
from skgate.evidence.ledger_seals import LEDGER as LEDGER  # noqa: PLC0414
from skgate.evidence.ledger_seals import LINE_LIMIT as LINE_LIMIT  # noqa: PLC0414
from skgate.evidence.ledger_seals import LedgerEvent as LedgerEvent  # noqa: PLC0414
from skgate.evidence.ledger_seals import entry_kind as entry_kind  # noqa: PLC0414
from skgate.evidence.ledger_seals import indexed, newest_indexed
from skgate.evidence.ledger_tail import ENTRY_HEAD as ENTRY_HEAD  # noqa: PLC0414
from skgate.evidence.ledger_tail import SCHEMA_LEDGER as SCHEMA_LEDGER  # noqa: PLC0414
from skgate.evidence.ledger_tail import (
    TornTail,
    ends_torn,
    last_line,
    parsed,
    replace_torn,
    torn_tail,
)
from skgate.evidence.ledger_tail import is_torn as is_torn  # noqa: PLC0414

# The lookups live in lookup.py (status loads no ledger, issue 29); re-exported here for
# the callers that always found them in the ledger (``as``: an explicit re-export).
from skgate.evidence.lookup import ATTEMPTS as ATTEMPTS  # noqa: PLC0414
from skgate.evidence.lookup import RUNS as RUNS  # noqa: PLC0414
from skgate.evidence.lookup import child_names
from skgate.evidence.lookup import is_prelaunch_dir as is_prelaunch_dir  # noqa: PLC0414
from skgate.evidence.lookup import is_removed as is_removed  # noqa: PLC0414
from skgate.evidence.lookup import latest as latest  # noqa: PLC0414
from skgate.evidence.lookup import list_attempts as list_attempts  # noqa: PLC0414
from skgate.evidence.lookup import resolve as resolve  # noqa: PLC0414
from skgate.evidence.lookup import sub_roots as sub_roots  # noqa: PLC0414
from skgate.model import jsonread
from skgate.model.errors import BlockedError, EvidenceError, RootUnwritableError, UsageError
from skgate.model.frozen import record

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path
    from typing import Any

    from skgate.evidence.seal_problem import SealProblem
    from skgate.model.records import Verdict

GENESIS = "0" * 64


#: Entry kinds: an attempt started, ended, was sealed, had a scene preserved, or the
#: ledger's torn last line was cut back.
EVENTS = tuple(k.value for k in LedgerEvent)


def unallocate(attempt_dir: Path) -> None:
    """Take back an attempt directory :func:`allocate` just made, whose first record could
    not be written (a full evidence disk): its journal goes if it holds no whole line
    (nothing recorded), then the directory if nothing else is in it. Anything a record
    reached stays, to be read as a runner that died (C2.5)."""
    journal = attempt_dir / JOURNAL
    with contextlib.suppress(OSError):
        if b"\n" not in regular.read_bytes(journal, 1 << 20):
            journal.unlink()
    with contextlib.suppress(OSError):
        attempt_dir.rmdir()


def allocate(root: Path, name: str | None = None) -> Path:
    """Create and return a new, empty attempt directory under ``root``.

    ``name`` asks for that exact id (a distributed driver reserved it in its own root, so
    the attempt keeps one name wherever its evidence lives, C4); it is taken with the
    same exclusive ``mkdir`` and never reused.
    """
    check_root(root)
    base = root / ATTEMPTS
    try:
        base.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        # mkdir's "File exists" would mislead: something that is not a directory is there.
        what = "a dangling symbolic link" if root.is_symlink() else "not a directory"
        raise UsageError(
            f"evidence root {root} (or a part of it) is {what}; choose a writable --root "
            "(skgate never runs unrecorded)"
        ) from None
    except OSError as exc:
        raise RootUnwritableError(
            f"evidence root {root} cannot be written ({exc.strerror}); "
            "choose a writable --root (skgate never runs unrecorded)"
        ) from None
    if not os.access(base, os.W_OK | os.X_OK):
        raise RootUnwritableError(
            f"evidence root {root} cannot be written; choose a writable --root "
            "(skgate never runs unrecorded)"
        )
    if name is not None:
        if not (name.isdigit() and len(name) >= 4):
            raise BlockedError(f"attempt id {name!r} is not a 4-digit or longer number")
        if indexed(str(root), name):
            raise BlockedError(
                f"cannot create attempt {name} in {base}: the root's ledger indexed an "
                "attempt of that id before (its directory was removed since); an attempt "
                "id is never reused (C4)"
            )
        try:
            (base / name).mkdir()
        except OSError as exc:
            raise BlockedError(
                f"cannot create attempt {name} in {base} ({exc.strerror}); "
                "an attempt id is never reused (C4)"
            ) from None
        return base / name
    existing = [int(n) for n in child_names(base) if n.isascii() and n.isdigit()]
    # Past the newest id the ledger indexed too: one below it whose directory is gone
    # (never indexed, its runner killed before that) would make a new attempt older than
    # a removed one, and the removed one the root's newest in its place.
    n = max(max(existing, default=0), newest_indexed(str(root)) or 0) + 1
    while True:
        candidate = base / f"{n:04d}"
        if indexed(str(root), candidate.name):
            # C4: an id the ledger indexed is never given out again, even when its
            # directory was removed: the ledger's entries for it (its seal hashes) would
            # be read as the new attempt's, and the removed one must still read as removed.
            n += 1
            continue
        try:
            candidate.mkdir()
        except FileExistsError:
            n += 1  # another run took this id a moment ago: take the next
            continue
        except OSError as exc:
            raise BlockedError(
                f"cannot create an attempt directory in {base} ({exc.strerror}); "
                "choose a writable --root"
            ) from None
        return candidate


def root_of(attempt: Path) -> Path | None:
    """The evidence root that holds ``attempt`` (``<root>/attempts/<id>``), if it is one."""
    parent = attempt.parent
    if parent.name == ATTEMPTS:
        return parent.parent
    return None


# ---------------------------------------------------------------------------
# The append-only, hash-chained ledger


def _attempt_ref(root: Path, attempt: Path) -> str:
    """The attempt's path relative to the root when it lives there, else absolute."""
    try:
        return str(attempt.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(attempt.resolve())


class _LockedLedger:
    """``with _LockedLedger(root) as fd``: ``<root>/ledger.jsonl`` open for append under
    an exclusive flock, closed (and so unlocked) on exit. A plain class, not
    ``contextlib.contextmanager``: ``skgate status`` reads the ledger without
    ``contextlib`` (issue 29)."""

    __slots__ = ("fd", "root")

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fd = -1

    def __enter__(self) -> int:
        path = self.root / LEDGER
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # Never appended through a link, nor to a FIFO (issue 21: a linked
            # ledger.jsonl would index this root's attempts in someone else's file; C4
            # append-only).
            fd = regular.open_append(path, read=True)
        except OSError as exc:
            raise EvidenceError(
                f"{path}: cannot open the ledger ({exc.strerror}); check the --root permissions"
            ) from None
        import fcntl  # noqa: PLC0415 - the writers' lock; a read (status) never loads it

        try:
            # flock serialises writers in any process: the tail read and the append below
            # must be one step, or two writers would chain to the same previous entry.
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return fd

    def __exit__(self, *_exc: object) -> None:
        os.close(self.fd)  # closing releases the lock


def append_entry(root: Path, event: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Append one chained entry to ``<root>/ledger.jsonl`` and return it (fsync'd)."""
    if event not in EVENTS:
        raise ValueError(f"unknown ledger event {event!r}")
    with _LockedLedger(root) as fd:
        fresh = os.fstat(fd).st_size == 0
        entry = _append_locked(fd, event, fields, torn_tail(fd))
    if fresh:
        fsync_dir(root)
    return entry


def _append_locked(
    fd: int, event: str, fields: dict[str, Any], torn: TornTail | None
) -> dict[str, Any]:
    """Append one entry; over ``torn`` (the torn last line) when there is one, which the
    entry records as ``torn_cut`` (:func:`replace_torn`)."""
    last, last_hash, _ = last_line(fd, None if torn is None else torn.start)
    prev = GENESIS if last_hash is None else last_hash
    seq = 1
    if last is None and last_hash is not None:
        seq = -1  # an oversized last line: damaged, verify reports it
    elif last is not None:
        try:
            seq = int(jsonread.loads(last)["seq"]) + 1
        except (ValueError, KeyError, TypeError):
            seq = -1  # a damaged previous line: verify reports it; the chain still holds
    entry: dict[str, Any] = {
        "schema": SCHEMA_LEDGER,
        "seq": seq,
        "event": event,
        **fields,
        **({"torn_cut": torn.cut} if torn is not None else {}),
        "t": time.time(),
        "prev": prev,
    }
    line = json_text(entry).encode("utf-8")
    if torn is not None:
        replace_torn(fd, torn, line + b"\n")  # the cut and its record in one act (C7)
        return entry
    # A whole entry that lost only its line end gets it now, so the new entry is never
    # glued to it (a torn one is written over, above).
    size = os.fstat(fd).st_size
    lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
    view = memoryview(lead + line + b"\n")
    try:
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        # ENOSPC after a partial write (or a signal mid-write) would leave a torn line:
        # take this writer's own bytes back, so the ledger is exactly as it was.
        try:  # noqa: SIM105 - no contextlib on status's read path (issue 29)
            os.ftruncate(fd, size)
        except OSError:
            pass  # the next append, or recover, cuts it back
        raise
    return entry


def repair(root: Path) -> dict[str, Any] | None:
    """``skgate recover``: write a ``repair`` entry (returned) in place of the ledger's
    torn last line, recording the cut; None when the ledger is absent, linked or ends
    whole."""
    if not ends_torn(root / LEDGER):
        return None  # read-only look first: a root this user may only read is not opened
    with _LockedLedger(root) as fd:
        torn = torn_tail(fd)
        if torn is None:
            return None
        return _append_locked(fd, LedgerEvent.REPAIR.value, {"by": "skgate recover"}, torn)


def record_start(
    root: Path, attempt: Path, parent: str | None, runner: Mapping[str, Any] | None = None
) -> None:
    """Index an attempt that is starting; ``parent`` is the attempt it retries, if any.

    ``runner`` is who runs it (pid, start time, boot, as its ``control.json`` says): the
    one record that still names the runner once the attempt's directory is removed, so
    that ``skgate wait`` and ``stop`` of that attempt reach the runner it had, verified by
    its start time, and never anything else (C4; :func:`ledger_seals.started_by`)."""
    append_entry(
        root,
        LedgerEvent.START.value,
        {
            "attempt": attempt.name,
            "path": _attempt_ref(root, attempt),
            "parent": parent,
            **({"runner": dict(runner)} if runner is not None else {}),
        },
    )


def record_end(
    root: Path,
    attempt: Path,
    verdict: Verdict,
    extra: Mapping[str, Any] | None = None,
    *,
    sealed: bool = True,
) -> None:
    """Index an attempt's end: its state, cause and the hash of its seal when present.

    Putting the seal's hash in the chain means a rewritten ``seal.json`` (one re-made to
    match edited evidence) no longer matches the ledger. ``extra`` adds facts that came
    after the journal was sealed (stop signals received while sealing, a recovery).
    ``sealed=False``: the caller sealed nothing there (a runner whose attempt directory
    was removed under it), so whatever ``seal.json`` stands at the path now is not
    vouched for: a copy put in its place is never chained as this attempt's seal.
    """
    seal = attempt / SEAL
    append_entry(
        root,
        LedgerEvent.END.value,
        {
            "attempt": attempt.name,
            "path": _attempt_ref(root, attempt),
            "state": verdict.state.value,
            "cause": verdict.cause.value if verdict.cause else None,
            "seal_sha256": sha256_file(seal) if sealed and seal.is_file() else None,
            **(extra or {}),
        },
    )


def record_import(
    root: Path, attempt: Path, verdict: Verdict, node: dict[str, Any], origin: str
) -> None:
    """Index an attempt whose evidence was made on another node and brought home.

    Two entries, as for a local attempt (``start``, then ``end`` with the seal's hash),
    each naming the node the runner ran on and where its node-local copy lives.
    """
    where = {"node": dict(node), "origin": origin}
    append_entry(
        root,
        LedgerEvent.START.value,
        {"attempt": attempt.name, "path": _attempt_ref(root, attempt), "parent": None, **where},
    )
    record_end(root, attempt, verdict, where)


def nodes(root: Path) -> dict[str, dict[str, Any]]:
    """The node each imported attempt of ``root`` ran on (attempt id -> node facts)."""
    found: dict[str, dict[str, Any]] = {}
    for entry in read_ledger(root):
        node = entry.get("node")
        name = entry.get("attempt")
        start = entry_kind(entry) is LedgerEvent.START
        if start and isinstance(node, dict) and isinstance(name, str):
            found[name] = node
    return found


def record_seal(root: Path, attempt: Path) -> None:
    """Chain the hash of the attempt's ``seal.json`` (called by ``seal.seal_attempt``).

    With the seal's hash in the chain, a ``seal.json`` re-made to match edited evidence
    no longer matches the ledger, whatever order the runner ends an attempt in.
    """
    append_entry(
        root,
        LedgerEvent.SEAL.value,
        {
            "attempt": attempt.name,
            "path": _attempt_ref(root, attempt),
            "seal_sha256": sha256_file(attempt / SEAL),
        },
    )


def record_scene(root: Path, attempt: Path, manifest: Path) -> None:
    """Index a working-directory scene preserved into ``attempt`` (cleanup, retry)."""
    append_entry(
        root,
        LedgerEvent.SCENE.value,
        {
            "attempt": attempt.name,
            "path": _attempt_ref(root, attempt),
            "manifest": str(manifest.relative_to(attempt)),
            "manifest_sha256": sha256_file(manifest),
        },
    )


@record
class LedgerLine:
    """One line of the ledger as read back: its number, raw bytes, parsed entry (or None).

    ``too_long``: the line is over :data:`LINE_LIMIT`; ``raw`` is then empty (never held
    whole, issue 21) and the next line's ``prev`` cannot be checked against it.
    """

    number: int
    raw: bytes
    entry: dict[str, Any] | None
    too_long: bool = False
    #: False for a last line without its line end.
    complete: bool = True


def iter_ledger(root: Path) -> Iterator[LedgerLine]:
    """Stream the ledger line by line (bounded memory); a missing ledger yields nothing.

    Read as a regular file only: a linked ledger is refused (EvidenceError), never read
    as this root's index (issue 21).
    """
    path = root / LEDGER
    try:
        for line in regular.iter_lines(path, LINE_LIMIT):
            if line.too_long:
                yield LedgerLine(line.number, b"", None, True, line.complete)
                continue
            value = parsed(line.raw)
            entry = value if isinstance(value, dict) else None
            yield LedgerLine(line.number, line.raw, entry, False, line.complete)
    except FileNotFoundError:
        return


#: How an ``end`` entry spells its kind: ``json_text`` writes no spaces (see ENTRY_HEAD).
END_MARK = b'"event":"end"'


def end_entries(root: Path) -> dict[str, dict[str, Any]]:
    """The last ``end`` entry of each attempt of this root, by attempt name (one read of
    the ledger instead of one of every attempt's files).

    Only the lines that spell the end event as skgate writes it (``END_MARK``) are
    parsed: the others are half the ledger, and parsing every line grew each run's
    preflight by 0.015 ms per attempt of the root (issue 29). An end entry spelt any
    other way is not found here; the caller then reads that attempt's own files, as it
    does for an attempt with no end entry, so the answer is the same, only slower."""
    ends: dict[str, dict[str, Any]] = {}
    try:
        for line in regular.iter_lines(root / LEDGER, LINE_LIMIT):
            if line.too_long or END_MARK not in line.raw:
                continue
            entry = parsed(line.raw)
            if (
                isinstance(entry, dict)
                and entry_kind(entry) is LedgerEvent.END
                and "node" not in entry
            ):
                name = entry.get("attempt")
                if isinstance(name, str) and entry.get("path") == f"{ATTEMPTS}/{name}":
                    ends[name] = entry
    except FileNotFoundError:
        pass
    return ends


def read_ledger(root: Path) -> list[dict[str, Any]]:
    """Every well-formed ledger entry, in order (damaged lines are skipped; see verify)."""
    return [ln.entry for ln in iter_ledger(root) if ln.entry is not None]


def check_chain(root: Path) -> list[SealProblem]:
    """Problems in the ledger's hash chain and entry shapes (empty: intact).

    A torn last line (:func:`is_torn`) is unfinished, not changed: no entry depends on it
    and ``skgate recover`` cuts it back. A damaged line anywhere
    else, or a whole one whose ``prev`` breaks the chain, is a change (C4)."""
    from skgate.evidence.seal_problem import Flaw, problem  # noqa: PLC0415 - not on status's path

    problems: list[SealProblem] = []
    where = str(root / LEDGER)
    prev_raw: bytes | None = None
    prev_long = False
    for ln in iter_ledger(root):
        expected = GENESIS if prev_raw is None else sha256_bytes(prev_raw)
        after_long, prev_long = prev_long, ln.too_long
        prev_raw = ln.raw
        number = ln.number
        if ln.too_long:
            problems.append(
                problem(where, Flaw.LEDGER_LINE_TOO_LONG, number=number, limit=LINE_LIMIT)
            )
            continue
        if not ln.complete and is_torn(ln.raw):
            problems.append(problem(where, Flaw.LEDGER_TORN, number=number, root=root))
            continue
        if ln.entry is None:
            problems.append(problem(where, Flaw.LEDGER_NOT_JSON, number=number))
            continue
        if ln.entry.get("schema") != SCHEMA_LEDGER:
            problems.append(
                problem(where, Flaw.LEDGER_WRONG_SCHEMA, number=number, schema=SCHEMA_LEDGER)
            )
            continue
        if not after_long and ln.entry.get("prev") != expected:
            problems.append(problem(where, Flaw.LEDGER_CHAIN_BROKEN, number=number))
    return problems


def _is_evidence_root(path: Path) -> bool:
    """``path`` holds a ledger or attempt directories (``<root>/attempts/NNNN``)."""
    if (path / LEDGER).exists():
        return True
    try:
        with os.scandir(path / ATTEMPTS) as it:
            return any(e.name.isdigit() and is_attempt_dir(e.path) for e in it)
    except OSError:
        return False


def evidence_owner(path: Path) -> Path | None:
    """The attempt directory, ``attempts/`` tree or ledger that ``path`` lies in, if any.

    Checked on the real path of the parent (links resolved) and on the real path of
    ``path`` itself, so neither ``..`` nor a symbolic link reaches sealed evidence.
    """
    from pathlib import Path  # noqa: PLC0415 - not on the read side (issue 29)

    parent = path.parent if str(path.parent) else Path(".")
    places = {Path(os.path.realpath(parent)) / path.name, Path(os.path.realpath(path))}
    for place in places:
        for d in (place, *place.parents):
            if is_attempt_dir(d):
                return d
            if d.name == ATTEMPTS and _is_evidence_root(d.parent):
                return d
        if place.name == LEDGER and _is_evidence_root(place.parent):
            return place  # the root's hash-chained ledger is evidence too
    return None
