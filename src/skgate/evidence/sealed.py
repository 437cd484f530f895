"""The one reader of an attempt's files: each read checked against ``seal.json``.

``verify`` re-hashes a whole attempt, but people and agents read ``status``, ``wait``,
``report`` and MCP (issue 28 s3): before this module a rewritten ``verdict.json`` was
shown as its content said. Now every evidence read (``files.read_json``,
``journal.iter_journal``, the report's ``summary.txt``, ``procs.jsonl``) comes here:

- a file whose attempt directory holds no ``seal.json`` (in progress, or its runner
  died) is read as before, as a regular file only, bounded (:mod:`regular`);
- in a sealed attempt, the first read loads the seal once and compares every sealed
  file's presence and size with ``lstat`` (no read, no hash): a truncated, emptied,
  grown (a 1 GiB line appended to ``procs.jsonl``) or deleted file is caught even when
  this command would not read it;
- each file actually read is hashed and must match its sealed sha256; a file the seal
  does not name is refused (added after sealing);
- in a root (``<root>/attempts/<id>``), ``seal.json`` itself must be the one the root's
  ledger chained, and the ledger must still index the attempt (C4: every attempt is
  indexed before it runs): a ledger that is gone, a link, not a regular file or names the
  attempt nowhere vouches for nothing (:func:`_unanchored`).

A mismatch is a :class:`SealBreachError` carrying a :class:`~skgate.model.records.
SealBreach`; the verdict readers turn it into ``unknown`` whose first line is
"evidence changed after sealing: FILE (sealed sha256 ..., now ...)" (C2.5: evidence
that contradicts its own seal decides nothing). Cost: one ``lstat`` per sealed file and
one hash of what is read (``bench/bench_cli.py``).
"""

from __future__ import annotations

import os
import stat

from skgate.evidence import digest, ledger_seals, pathtext, regular
from skgate.model import jsonread
from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.running import (
    ATTEMPT_DIRECTORY,
    COPIED_IN,
    REPLACED,
    ROOT_LEDGER,
    SealBreach,
)
from skgate.model.schema import require

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from skgate.evidence.seal_problem import SealProblem

SEAL = ledger_seals.SEAL
SCHEMA_SEAL = "skgate.seal/1"
#: Files a sealed attempt may gain later, each with a check of its own: a preserved scene
#: (its manifest, chained in the ledger) and a seal's temporary link name.
_AFTER_SEAL = ("scene/",)


class SealBreachError(EvidenceError):
    """A file of a sealed attempt differs from its seal (see the module doc)."""

    def __init__(self, breach: SealBreach) -> None:
        super().__init__(breach.line())
        self.breach = breach


class OverlongError(EvidenceError):
    """A JSON-lines record over the line bound, refused and never read (issue 28 s4)."""


@record
class FileEntry:
    """One sealed file: POSIX path relative to its base directory, sha256, size."""

    name: str
    sha256: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "size": self.size}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> FileEntry:
        if not isinstance(data, dict):
            raise EvidenceError(f"{where}: a file entry is not an object")
        name = require(data, "name", str, where)
        sha = require(data, "sha256", str, where)
        size = require(data, "size", int, where)
        parts = name.split("/")
        # A name that climbs out of the base (or is absolute) would make verify read
        # outside the attempt: refuse the whole manifest as hostile.
        if not name or name.startswith("/") or ".." in parts or "" in parts:
            raise EvidenceError(f"{where}: file name {name!r} is not a plain relative path")
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise EvidenceError(f"{where}: sha256 of {name!r} is not 64 hex digits")
        return cls(name, sha, size)


@record
class Seal:
    """A loaded seal and what the ``lstat`` sweep found (the first breach, if any)."""

    #: ``seal.json``'s (inode, size, mtime, mode) and the root ledger's (None: none).
    key: tuple[int, int, int, int, tuple[int, int, int, int] | None]
    entries: dict[str, FileEntry]
    breach: SealBreach | None


#: Seals already loaded in this process, by attempt directory; reloaded when
#: ``seal.json``'s inode, size or mtime changes.
_CACHE: dict[str, Seal] = {}


def _now_of(base: str, entry: FileEntry, st: os.stat_result) -> str:
    """What a changed file is now: its sha256 when it is small enough to hash here."""
    if st.st_size != entry.size and st.st_size > regular.limit_for(entry.name):
        return f"{st.st_size} bytes, sealed {entry.size}"
    got = digest.sha256_file(pathtext.join(base, entry.name))
    return f"sha256 {got[:16]}" if got else f"{st.st_size} bytes, unreadable"


def _sweep(base: str, entries: dict[str, FileEntry]) -> SealBreach | None:
    """Presence, kind and size of every sealed file (``lstat`` only), in name order."""
    for entry in entries.values():
        try:
            st = os.lstat(pathtext.join(base, entry.name))
        except FileNotFoundError:
            return SealBreach(entry.name, entry.sha256, "missing")
        except OSError as exc:
            return SealBreach(entry.name, entry.sha256, f"unreadable ({exc.strerror})")
        if not stat.S_ISREG(st.st_mode):
            return SealBreach(entry.name, entry.sha256, "not a regular file")
        if st.st_size != entry.size:
            return SealBreach(entry.name, entry.sha256, _now_of(base, entry, st))
    return None


def load_seal(base: Path | str) -> Seal | None:
    """The seal of the attempt directory ``base`` (None: not sealed); a damaged seal is
    a breach of ``seal.json`` itself (a :class:`Seal` with no entries)."""
    base = pathtext.plain(base)
    path = pathtext.join(base, SEAL)
    at = ledger_seals.root_of(base)
    # The ledger's own key too: a long-lived reader (MCP, wait) sees an edit of it.
    ledger = ledger_seals.ledger_key(at[0]) if at is not None else None
    try:
        st = os.lstat(path)
    except OSError:
        return _removed(base, at, ledger)
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode, ledger)
    cached = _CACHE.get(base)
    if cached is not None and cached.key == key:
        return cached
    try:
        blob = regular.read_bytes(path)
        data = jsonread.loads(blob)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA_SEAL:
            raise EvidenceError(f"{path}: not a {SCHEMA_SEAL!r} seal")
        raw = require(data, "files", list, str(path))
        entries = {e.name: e for e in (FileEntry.from_dict(x, str(path)) for x in raw)}
    except (EvidenceError, ValueError, RecursionError) as exc:
        why = str(exc).removeprefix(f"{path}: ") if isinstance(exc, EvidenceError) else "not JSON"
        seal = Seal(key, {}, SealBreach(SEAL, None, f"damaged: {why}"))
    except FileNotFoundError:
        return _removed(base, at, ledger)
    else:
        breach = _sweep(base, entries)
        named = data.get("attempt")
        if breach is None and at is not None and isinstance(named, str) and named != at[1]:
            # Copied in from another attempt (verify: "names attempt ... (copied from
            # elsewhere?)"): its files match its seal, and the seal is not this one's.
            breach = SealBreach(SEAL, None, "a copy", sealed_as=named)
        if breach is None and at is not None:
            breach = _unrecorded(at[0], at[1], blob) or _unanchored(*at) or _copied_in(base, at)
        seal = Seal(key, entries, breach)
    _CACHE[base] = seal
    return seal


#: The key of an attempt without ``seal.json``: only its ledger's key is compared.
_NO_SEAL = (-1, -1, -1, -1)


def _removed(
    base: str, at: tuple[str, str] | None, ledger: tuple[int, int, int, int] | None
) -> Seal | None:
    """An attempt without ``seal.json``: unsealed (in progress, or its runner died: None,
    read as it is), unless the root's ledger chained a seal for it, which was removed
    then (``verify``: "seal.json: removed (the ledger recorded it)"): every read of it
    is a breach, "seal.json (sealed sha256 ..., now missing)" (C2.5)."""
    if at is None or ledger is None:
        return None
    key = (*_NO_SEAL, ledger)
    cached = _CACHE.get(base)
    if cached is None or cached.key != key:
        recorded = ledger_seals.recorded_seals(*at)
        missing = SealBreach(SEAL, recorded[-1], "missing") if recorded else None
        cached = Seal(key, {}, missing or _copied_in(base, at))
        _CACHE[base] = cached
    return cached if cached.breach is not None else None


def _copied_in(base: str, at: tuple[str, str]) -> SealBreach | None:
    """C2.5, C4: the directory holds another attempt's evidence (its journal names another
    runner than the ledger's ``start`` entry: copied in from another root): no file of it
    is read as this attempt's, so that nothing acts on it either (``retry`` would run the
    copy's command and move the working directory's outputs into it, its runner's
    liveness checked by the copy's controls, not by the runner that may still run)."""
    return removed_attempt(base) if ledger_seals.holds_another(base, *at) else None


def removed_attempt(attempt: Path | str) -> SealBreach | None:
    """C2.5: an attempt directory of a root that is gone though the root's ledger indexed
    it (removed by hand, or by a script that "cleans up" a failure): every answer about it
    is ``unknown``, never "no such attempt", and an older attempt never answers in its
    place (:func:`skgate.evidence.lookup.latest`). None for anything else: a directory
    that is there, a path outside any root, a root without a ledger."""
    plain = pathtext.plain(attempt)
    at = ledger_seals.removed(plain)
    if at is None:
        return None
    recorded = ledger_seals.recorded_seals(*at)
    runner, ended, lost = _removed_run(*at)
    if not os.path.lexists(plain):
        now = "missing"
    else:
        now = COPIED_IN if ledger_seals.holds_attempt(plain) else REPLACED
    return SealBreach(
        ATTEMPT_DIRECTORY,
        recorded[-1] if recorded else None,
        now,
        runner=runner,
        ended=ended,
        lost=None if recorded else lost,  # a runner that sealed had seen its tree end
    )


def _removed_run(root: str, name: str) -> tuple[int | None, str | None, int | None]:
    """(pid of its runner while that still runs, how its command ended, pid of its runner
    when that died without recording an end) of a removed attempt, from the root's
    ledger: the runner its ``start`` entry names, checked alive by boot and start time
    (C4), or the end that runner recorded once it had supervised its command to the end.
    All None for a runner the ledger does not name (an older skgate, an attempt brought
    home or recovered)."""
    ended = ledger_seals.ended_after_removal(root, name)
    if ended is not None:
        return None, ended, None
    named = ledger_seals.started_by(root, name)
    if named is not None:
        from skgate.proc.observe import still_runs  # noqa: PLC0415 - a removed attempt only

        if still_runs(*named):
            return named[0], None, None
        # It may have recorded its end between the two reads.
        ended = ledger_seals.ended_after_removal(root, name)
        return None, ended, named[0] if ended is None else None
    return None, None, None


def _unrecorded(root: str, name: str, blob: bytes) -> SealBreach | None:
    """C2.5: a ``seal.json`` whose hash is not the one the root's ledger chained for it
    (``verify``: "differs from the one the ledger recorded"). Re-made to match edited
    files, it passes the sweep and every file's hash; the ledger tells. A ledger that
    indexes the attempt but chained no seal hash for it (a runner killed between the seal
    and its end entry: ``recover`` finishes it) has nothing to tell: the seal alone is
    checked. A root whose ledger does not vouch for it at all is :func:`_unanchored`."""
    got = digest.sha256_small(blob)
    for want in ledger_seals.recorded_seals(root, name):
        if want != got:
            return SealBreach(SEAL, want, f"sha256 {got[:16]}, not the seal the ledger recorded")
    return None


def _unanchored(root: str, name: str) -> SealBreach | None:
    """C2.5: a sealed attempt of a root whose ledger no longer anchors it (gone, a link,
    not a regular file, or naming it nowhere: :class:`ledger_seals.Anchor`). Its seal
    cannot be checked against the hash the ledger chained, so a ``seal.json`` re-made to
    match edited files, with the ledger removed or emptied, would pass: ``verify`` calls
    each a change, and every reader answers ``unknown`` (before, only the seal was checked
    then, and ``status`` believed such an attempt)."""
    held = ledger_seals.anchor(root, name)
    if held in (ledger_seals.Anchor.HELD, ledger_seals.Anchor.UNREAD):
        return None
    return SealBreach(ROOT_LEDGER, None, held.value)


def _locate(path: Path | str) -> tuple[str, str] | None:
    """The sealed attempt directory a file belongs to and its name there, or None: one
    with ``seal.json``, or an attempt of a root (``<root>/attempts/<id>``), whose ledger
    may have chained a seal that is gone now (see :func:`_removed`)."""
    leaf = pathtext.name(path)
    if leaf == SEAL:
        return None
    parent = pathtext.parent(path)
    upper = pathtext.parent(parent)
    for base, name in ((parent, leaf), (upper, f"{pathtext.name(parent)}/{leaf}")):
        if os.path.lexists(pathtext.join(base, SEAL)) or ledger_seals.root_of(base):
            return None if name.startswith(_AFTER_SEAL) else (base, name)
    return None


def _sealed(path: Path | str) -> tuple[Seal, str] | None:
    where = _locate(path)
    if where is None:
        return None
    seal = load_seal(where[0])
    return None if seal is None else (seal, where[1])


def _checked(path: Path | str) -> tuple[Seal, FileEntry | None, str] | None:
    """The seal a read of ``path`` must match (None: unsealed); raises its sweep's breach:
    no file of an attempt whose seal no longer holds is read."""
    found = _sealed(path)
    if found is None:
        return None
    seal, name = found
    if seal.breach is not None:
        raise SealBreachError(seal.breach)
    return seal, seal.entries.get(name), name


def present(path: Path | str) -> bool:
    """Is anything at ``path`` (a link included, never followed)? A sealed file that is
    gone or resized is a :class:`SealBreachError`, never "absent" (a deleted
    ``verdict.json`` is not an attempt without one)."""
    found = _sealed(path)
    if found is not None and found[0].breach is not None and found[0].breach.file == found[1]:
        raise SealBreachError(found[0].breach)
    return os.path.lexists(path)


def _match(name: str, entry: FileEntry | None, sha: str) -> None:
    if entry is None:
        raise SealBreachError(SealBreach(name, None, f"sha256 {sha[:16]}, added after sealing"))
    if sha != entry.sha256:
        raise SealBreachError(SealBreach(name, entry.sha256, f"sha256 {sha[:16]}"))


def read_bytes(path: Path | str, limit: int | None = None) -> bytes:
    """:func:`regular.read_bytes`, checked against the seal of a sealed attempt."""
    check = _checked(path)
    data = regular.read_bytes(path, limit)
    if check is not None:
        _match(check[2], check[1], digest.sha256_small(data))
    return data


def read_text(path: Path | str, limit: int | None = None, errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a decoding error is an EvidenceError)."""
    try:
        return read_bytes(path, limit).decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"{path}: unreadable ({exc.reason} at byte {exc.start})") from None


def iter_lines(path: Path | str, max_line: int = regular.LINE_LIMIT) -> Iterator[regular.Line]:
    """:func:`regular.iter_lines`, checked against the seal first: the file is hashed in
    fixed blocks before its first line is handed over (bounded memory), so a consumer
    that stops early still read only sealed lines."""
    check = _checked(path)
    with regular.opened(path) as fd:
        try:
            if check is not None:
                sha, _ = digest.hash_fd(fd)
                _match(check[2], check[1], sha)
                os.lseek(fd, 0, os.SEEK_SET)
            yield from regular.iter_fd_lines(fd, max_line)
        except OSError as exc:
            raise EvidenceError(f"{path}: unreadable ({exc.strerror})") from None


def first_overlong(path: Path | str, max_line: int = regular.LINE_LIMIT) -> int | None:
    """The number of the first line over the bound (never held whole), or None; a
    missing file has none. ``verify`` and ``recover`` name such a line (issue 28 s4)."""
    try:
        for line in regular.iter_lines(path, max_line):
            if line.too_long:
                return line.number
    except FileNotFoundError:
        return None
    return None


def overlong_problem(path: Path | str, number: int) -> SealProblem:
    """An over-long record, named (``verify`` and ``recover`` say it in these words)."""
    # Imported here: status, which loads this module, needs it only for a damaged journal.
    from skgate.evidence.seal_problem import Flaw, problem  # noqa: PLC0415

    return problem(str(path), Flaw.OVERLONG, number=number, limit=regular.LINE_LIMIT)


def overlong_text(path: Path | str, number: int) -> str:
    """One line naming an over-long record (:func:`overlong_problem`'s English)."""
    return str(overlong_problem(path, number))
