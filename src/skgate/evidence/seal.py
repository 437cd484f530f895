"""Seals: a sha256 manifest over an attempt's evidence, and ``verify``.

``seal.json`` (schema ``skgate.seal/1``) is written last, exclusively, when an attempt
ends: ``{"schema", "attempt", "files": [{"name", "sha256", "size"}], "sealed_at"}`` over
every regular file in the attempt directory (the evidence files of ``attempt.py`` and any
extra file or directory present, such as a preserved scene). Names are POSIX paths
relative to the attempt directory.

A working-directory scene preserved *after* the seal (``skgate cleanup`` / ``retry`` move
it into ``<attempt>/scene/<k>/``) carries its own manifest (schema ``skgate.scene/1``),
whose hash is chained into the ledger; ``verify`` checks those files against it. Nothing
else may appear in a sealed attempt (C4 last bullet: the scene is never rewritten).

``verify`` re-hashes everything and names each file that changed, vanished or appeared,
and checks the ledger's hash chain and its cross-references to seals and scenes. Every
problem it finds is a typed :class:`~skgate.evidence.seal_problem.SealProblem` whose kind
says whether ``skgate recover`` finishes it (:func:`find_problems`); :func:`verify` gives
their English lines, the ones ``skgate verify`` prints.

Schema history: ``skgate.seal/1``, ``skgate.scene/1``: first versions (2026-11).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from skgate.evidence import digest, ledger, ledger_seals, regular
from skgate.evidence.files import (
    SEAL,
    is_attempt_dir,
    is_temp_name,
    read_json,
    write_json_new,
)
from skgate.evidence.ledger import LedgerEvent
from skgate.evidence.seal_problem import Flaw, Odd, Phase, SealProblem, problem
from skgate.evidence.sealed import FileEntry
from skgate.evidence.unsealed import overlong, unfinished_problem
from skgate.evidence.walk import interrupted_scene, walk_files
from skgate.model.errors import EvidenceError
from skgate.model.frozen import replace
from skgate.model.schema import check_schema, require

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_SEAL = "skgate.seal/1"
SCHEMA_SCENE = "skgate.scene/1"
SCENE_DIR = "scene"
SCENE_MANIFEST = "manifest.json"


def _hash_one(base: Path, name: str) -> tuple[str, int] | None:
    try:
        # Regular files only, never waiting on a FIFO put there after the walk (issue 21).
        fd = regular.open_fd(base / name)
    except (OSError, EvidenceError):
        return None
    try:
        return digest.hash_fd(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


#: Below this many bytes in all, files are hashed one after another.
PARALLEL_MIN_BYTES = 8 << 20


def _total_size(base: Path, names: list[str]) -> int:
    total = 0
    for n in names:
        with contextlib.suppress(OSError):
            total += os.lstat(base / n).st_size
    return total


def hash_files(base: Path, names: list[str]) -> dict[str, tuple[str, int] | None]:
    """sha256 and size of each named file under ``base`` (None: unreadable), in parallel."""
    if len(names) <= 1 or _total_size(base, names) < PARALLEL_MIN_BYTES:
        # An attempt's own evidence is small: threads would cost more than they save.
        return {n: _hash_one(base, n) for n in names}
    # Imported here: only large scenes need it, and its import costs every run's start-up.
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        return dict(zip(names, pool.map(lambda n: _hash_one(base, n), names), strict=True))


def manifest_entries(base: Path, skip: Iterable[str] = ()) -> list[FileEntry]:
    """Hash every regular file under ``base`` into sorted manifest entries."""
    names, _ = walk_files(base, skip)
    hashed = hash_files(base, names)
    entries: list[FileEntry] = []
    for name in names:
        got = hashed[name]
        if got is None:
            raise EvidenceError(f"{base / name}: unreadable while sealing; fix its permissions")
        entries.append(FileEntry(name, got[0], got[1]))
    return entries


def seal_attempt(attempt: Path, *, chain: bool = True) -> Path:
    """Write ``seal.json`` over every evidence file present; refuse if already sealed.

    ``chain=False`` leaves chaining the seal's hash to the caller: the runner's ``end``
    ledger entry, written right after, carries it (one ledger append instead of two).
    """
    path = attempt / SEAL
    if path.exists():
        raise EvidenceError(f"{path}: already exists; a seal is never rewritten")
    entries = manifest_entries(attempt, skip=(SEAL,))
    write_json_new(
        path,
        {
            "schema": SCHEMA_SEAL,
            "attempt": attempt.name,
            "files": [e.to_dict() for e in entries],
            "sealed_at": time.time(),
        },
    )
    root = ledger.root_of(attempt)
    if root is not None and chain:
        ledger.record_seal(root, attempt)
    return path


def load_manifest(path: Path, schema: str) -> tuple[Mapping[str, Any], list[FileEntry]]:
    """Read a seal or scene manifest; hostile or damaged content is an EvidenceError."""
    data = check_schema(read_json(path), schema, str(path))
    raw = require(data, "files", list, str(path))
    entries = [FileEntry.from_dict(item, str(path)) for item in raw]
    return data, entries


def _compare(base: Path, label: str, entries: list[FileEntry], what: Phase) -> list[SealProblem]:
    problems: list[SealProblem] = []
    present: list[FileEntry] = []
    for e in entries:
        try:
            st = os.lstat(base / e.name)
        except FileNotFoundError:
            problems.append(problem(f"{label}/{e.name}", Flaw.REMOVED, what))
            continue
        except OSError as exc:
            problems.append(problem(f"{label}/{e.name}", Flaw.UNREADABLE_WHY, why=exc.strerror))
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(problem(f"{label}/{e.name}", Flaw.REPLACED, what))
            continue
        if st.st_size != e.size:
            # Never hashed: a 1 GiB line appended to procs.jsonl is named by its size
            # alone, at once (issue 28 s4).
            where = f"{label}/{e.name}"
            problems.append(problem(where, Flaw.RESIZED, what, size=st.st_size, sealed=e.size))
            continue
        present.append(e)
    hashed = hash_files(base, [e.name for e in present])
    for e in present:
        got = hashed[e.name]
        if got is None:
            problems.append(problem(f"{label}/{e.name}", Flaw.UNREADABLE))
        elif got[1] != e.size:
            where = f"{label}/{e.name}"
            problems.append(problem(where, Flaw.RESIZED, what, size=got[1], sealed=e.size))
        elif got[0] != e.sha256:
            problems.append(problem(f"{label}/{e.name}", Flaw.HASH_DIFFERS, what))
    return problems


def scene_dirs(attempt: Path) -> list[Path]:
    base = attempt / SCENE_DIR
    try:
        return sorted(Path(e.path) for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _sealed_in_ledger(root: Path | None) -> set[str]:
    """Attempts whose seal hash the ledger holds (an end or seal entry with one)."""
    if root is None or not (root / ledger.LEDGER).exists():
        return set()
    return {name for name, entries in _entries_by_attempt(root).items() if _chains_seal(entries)}


def _chains_seal(entries: list[dict[str, Any]]) -> bool:
    return any(
        ledger.entry_kind(e) in (LedgerEvent.END, LedgerEvent.SEAL)
        and isinstance(e.get("seal_sha256"), str)
        for e in entries
    )


#: Each root's ledger entries by attempt name, and the ledger's state they were read at
#: (``ledger_seals.ledger_key``): a report checks each of its attempts against the
#: ledger, which was read whole once per attempt (a 300-attempt root's report took 7 s
#: instead of 1.5 s); read again whenever the ledger changes.
_BY_ATTEMPT: dict[str, tuple[object, dict[str, list[dict[str, Any]]]]] = {}


def _entries_by_attempt(root: Path) -> dict[str, list[dict[str, Any]]]:
    key = ledger_seals.ledger_key(str(root))
    got = _BY_ATTEMPT.get(str(root))
    if got is None or got[0] != key:
        by: dict[str, list[dict[str, Any]]] = {}
        for entry in ledger.read_ledger(root):
            name = entry.get("attempt")
            if isinstance(name, str):
                by.setdefault(name, []).append(entry)
        got = _BY_ATTEMPT[str(root)] = (key, by)
    return got[1]


def _named(root: Path, name: str) -> list[Path]:
    """The attempt ``name`` of ``root`` when it is one (``list_attempts``, for one name)."""
    attempt = root / ledger.ATTEMPTS / name
    return [attempt] if name.isdigit() and is_attempt_dir(attempt) else []


def verify_attempt(attempt: Path, *, recorded: bool = False) -> list[str]:
    """Problems in one attempt, in the words ``verify`` prints (:func:`attempt_problems`)."""
    return [str(p) for p in attempt_problems(attempt, recorded=recorded)]


def attempt_problems(attempt: Path, *, recorded: bool = False) -> list[SealProblem]:
    """Problems in one attempt: its seal, its scene manifests, files added after sealing.

    ``recorded``: the ledger holds the attempt's seal hash (see :func:`unfinished_problem`).
    """
    label = attempt.name
    problems: list[SealProblem] = []
    seal_path = attempt / SEAL
    sealed: set[str] = set()
    unfinished = unfinished_problem(attempt, recorded=recorded)
    if unfinished is not None:
        return [unfinished, *overlong(attempt)]
    if seal_path.is_file() and not seal_path.is_symlink():
        try:
            data, entries = load_manifest(seal_path, SCHEMA_SEAL)
        except EvidenceError as exc:
            return [problem(label, Flaw.MANIFEST_BAD, why=exc)]
        if data.get("attempt") != attempt.name:
            named = repr(data.get("attempt"))
            problems.append(problem(f"{label}/{SEAL}", Flaw.OTHER_ATTEMPT, named=named))
        problems += _compare(attempt, label, entries, Phase.SEALING)
        sealed = {e.name for e in entries}
    elif os.path.lexists(seal_path):
        return [problem(f"{label}/{SEAL}", Flaw.SEAL_NOT_REGULAR)]
    else:
        return problems  # in progress: nothing sealed yet, nothing to check
    covered: set[str] = set(sealed)
    linked: set[str] = set()
    for scene in scene_dirs(attempt):
        rel = f"{SCENE_DIR}/{scene.name}"
        manifest = scene / SCENE_MANIFEST
        if not manifest.is_file():
            if any(n.startswith(rel + "/") for n in sealed):
                continue  # the scene was present at sealing and is covered by the seal
            if not interrupted_scene(attempt, scene):
                problems.append(problem(f"{label}/{rel}", Flaw.SCENE_NO_MANIFEST))
                continue
            # A cleanup or retry killed between moving the outputs in and writing the
            # manifest (issue 28): recover finishes it, naming what it found.
            problems.append(problem(f"{label}/{rel}", Flaw.SCENE_UNFINISHED, attempt=attempt))
            covered.update(n for n in walk_files(attempt)[0] if n.startswith(rel + "/"))
            continue
        try:
            data, entries = load_manifest(manifest, SCHEMA_SCENE)
        except EvidenceError as exc:
            problems.append(problem(label, Flaw.MANIFEST_BAD, why=exc))
            continue
        problems += _compare(scene, f"{label}/{rel}", entries, Phase.PRESERVING)
        covered.add(f"{rel}/{SCENE_MANIFEST}")
        covered.update(f"{rel}/{e.name}" for e in entries)
        links = data.get("links", [])
        for link in links if isinstance(links, list) else []:
            # Links preserved as links (cleanup never follows them): unchanged target only.
            if not isinstance(link, dict) or not isinstance(link.get("name"), str):
                continue
            name = link["name"]
            try:
                same = os.readlink(scene / name) == link.get("target")
            except OSError:
                same = False
            if same and ".." not in name.split("/"):
                linked.add(f"{rel}/{name}")
            else:
                problems.append(problem(f"{label}/{rel}/{name}", Flaw.LINK_CHANGED))
    files, others = walk_files(attempt, skip=(SEAL,))
    for name in files:
        if name in covered:
            continue
        scene_temp = name.startswith(f"{SCENE_DIR}/") and name.count("/") == 2
        if scene_temp and is_temp_name(name.rsplit("/", 1)[1]):
            # A scene's manifest (or a copied output) is put in place from a dot-named
            # temporary file: a cleanup killed before removing it leaves it (issue 28).
            problems.append(problem(f"{label}/{name}", Flaw.SCENE_TEMP, attempt=attempt))
            continue
        if not recorded and is_temp_name(name) and name.startswith(f".{SEAL}."):
            # The seal is linked into place from this temporary file, which is removed
            # next: a runner killed in between leaves both (one inode). The ledger has no
            # end entry then, and recover finishes it: unfinished, not tampering.
            problems.append(problem(f"{label}/{name}", Flaw.SEAL_TEMP, attempt=attempt))
            continue
        problems.append(problem(f"{label}/{name}", Flaw.ADDED))
    for name in others:
        if name not in linked:
            problems.append(problem(f"{label}/{name}", Flaw.NOT_REGULAR))
    return problems


def ledger_problems(root: Path) -> list[SealProblem]:
    """What is wrong with the root's ledger file itself (empty: intact or absent): a
    ledger that is a link or not a regular file, else its hash chain and lines
    (:func:`ledger.check_chain`: a torn last line is unfinished, the rest a change, C4).
    The one reader ``verify`` and ``report`` use for it."""
    linked = _ledger_entry(root)
    return [linked] if linked is not None else ledger.check_chain(root)


def _ledger_problems(
    root: Path, only: str | None = None, *, chain: bool = True
) -> list[SealProblem]:
    """Cross-check ledger entries against the attempts: seals, scenes, presence; and,
    with ``chain``, the ledger's own lines (:func:`ledger_problems`)."""
    problems = ledger_problems(root) if chain else []
    where = str(root / ledger.LEDGER)
    started: set[str] = set()
    others: set[str] = set()  # indexed, holding another attempt's evidence
    ended: set[str] = set()
    scenes: set[tuple[str, str]] = set()
    seals: set[str] = set()
    entries = ledger.read_ledger(root) if only is None else _entries_by_attempt(root).get(only, [])
    for entry in entries:
        name = entry.get("attempt")
        rel = entry.get("path")
        if not isinstance(name, str) or not isinstance(rel, str):
            continue
        attempt = Path(rel) if os.path.isabs(rel) else root / rel
        event = ledger.entry_kind(entry)
        if event is LedgerEvent.START:
            started.add(name)
            if not ledger_seals.holds_attempt(str(attempt)):  # gone, or replaced
                problems.append(problem(where, Flaw.INDEXED_GONE, name=name))
            elif ledger_seals.holds_another(str(attempt), str(root), name):
                others.add(name)  # never "interrupted": recover would index the copy
                problems.append(problem(where, Flaw.INDEXED_OTHER, name=name))
        elif event in (LedgerEvent.END, LedgerEvent.SEAL):
            if event is LedgerEvent.END:
                ended.add(name)
            want = entry.get("seal_sha256")
            if isinstance(want, str):
                seals.add(name)
                got = digest.sha256_file(attempt / SEAL)
                if got is None:
                    problems.append(problem(f"{name}/{SEAL}", Flaw.LEDGER_SEAL_REMOVED))
                elif got != want:
                    problems.append(problem(f"{name}/{SEAL}", Flaw.LEDGER_DIFFERS))
        elif event is LedgerEvent.SCENE:
            manifest = entry.get("manifest")
            want = entry.get("manifest_sha256")
            if isinstance(manifest, str) and isinstance(want, str):
                scenes.add((name, manifest))
                got = digest.sha256_file(attempt / manifest)
                if got != want:
                    problems.append(problem(f"{name}/{manifest}", Flaw.LEDGER_DIFFERS))
    if (root / ledger.LEDGER).exists():
        for attempt in ledger.list_attempts(root) if only is None else _named(root, only):
            if attempt.name not in started:
                problems.append(problem(attempt.name, Flaw.NOT_IN_LEDGER))
            elif (attempt / SEAL).exists() and attempt.name not in seals | others:
                if attempt.name not in ended and _seal_matches(attempt):
                    # The seal matches the files and the ledger has no end at all: the
                    # runner died between the two writes. Interrupted, not tampered.
                    problems.append(problem(attempt.name, Flaw.LEDGER_NO_END, attempt=attempt))
                else:
                    problems.append(problem(f"{attempt.name}/{SEAL}", Flaw.SEAL_NOT_RECORDED))
            for scene in scene_dirs(attempt):
                rel = f"{SCENE_DIR}/{scene.name}/{SCENE_MANIFEST}"
                if (scene / SCENE_MANIFEST).is_file() and (attempt.name, rel) not in scenes:
                    if scene_matches(scene):
                        # Written whole and matching its files, but not indexed: a cleanup
                        # killed before its ledger entry (issue 28); recover indexes it.
                        where_scene = f"{attempt.name}/{rel}"
                        problems.append(
                            problem(where_scene, Flaw.SCENE_NOT_INDEXED, attempt=attempt)
                        )
                    else:
                        problems.append(problem(f"{attempt.name}/{rel}", Flaw.NOT_IN_LEDGER))
    return problems


def scene_matches(scene: Path) -> bool:
    """Is the scene's manifest one a cleanup writes (its attempt named, outputs moved) and
    does it match its files, nothing else in the scene?"""
    try:
        data, entries = load_manifest(scene / SCENE_MANIFEST, SCHEMA_SCENE)
    except EvidenceError:
        return False
    moved = data.get("moved")
    if data.get("attempt") != scene.parent.parent.name or not (isinstance(moved, list) and moved):
        return False
    names, _ = walk_files(scene, skip=(SCENE_MANIFEST,))
    return names == sorted(e.name for e in entries) and not _compare(
        scene, scene.name, entries, Phase.PRESERVING
    )


def _seal_matches(attempt: Path) -> bool:
    try:
        _, entries = load_manifest(attempt / SEAL, SCHEMA_SEAL)
    except EvidenceError:
        return False
    return not _compare(attempt, attempt.name, entries, Phase.SEALING)


def _sealed_here(target: Path) -> bool:
    """Was ``target`` sealed (its seal.json is there, or its root's ledger chained its
    seal)? Its control.json gone is then a change (C2.5), never an attempt in preflight."""
    return os.path.lexists(target / SEAL) or target.name in _sealed_in_ledger(
        ledger.root_of(target)
    )


def _orphans(root: Path) -> list[SealProblem]:
    """Attempt directories without control.json: a runner that died early (unfinished),
    or a sealed attempt whose control.json was removed (its files against its seal)."""
    base = root / ledger.ATTEMPTS
    try:
        dirs = sorted(e.path for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    problems = []
    for d in dirs:
        path = Path(d)
        if path.name.isdigit() and not is_attempt_dir(path):
            if _sealed_here(path):
                # The ledger read once per root state (_entries_by_attempt keeps it).
                problems += attempt_problems(path, recorded=path.name in _sealed_in_ledger(root))
                continue
            found = unfinished_problem(path)
            if found is not None:
                problems.append(found)
    return problems


def _not_regular(path: Path) -> dict[str, object] | None:
    """What ``path`` is when it is a link (``odd``, with ``target`` when it can be read),
    as a problem's values, or None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            return {"odd": Odd.LINK_TO, "target": os.readlink(path)}
        except OSError:
            return {"odd": Odd.LINK}
    return None


def _root_entries(root: Path) -> list[SealProblem]:
    """Linked or non-regular entries of a root (issue 21): ``attempts/``, each
    ``attempts/NNNN``, the ledger. Each is named: the attempt walks never follow them,
    so without this ``verify`` would say OK for a root whose attempt is elsewhere."""
    problems: list[SealProblem] = []
    base = root / ledger.ATTEMPTS
    linked_base = _attempts_link(root)
    if linked_base is not None:
        problems.append(linked_base)
    else:
        try:
            with os.scandir(base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            entries = []
        for e in entries:
            if e.is_dir(follow_symlinks=False) or not (e.is_symlink() or e.name.isdigit()):
                continue  # a real attempt (checked below), or a stray file that is none
            what = _not_regular(Path(e.path)) or {"odd": Odd.NOT_DIR}
            where = f"{ledger.ATTEMPTS}/{e.name}"
            problems.append(problem(where, Flaw.ATTEMPT_THROUGH_LINK, **what))
    linked = _ledger_entry(root)
    return problems if linked is None else [*problems, linked]


def _attempts_link(root: Path) -> SealProblem | None:
    """The root's ``attempts/`` when it is a link (never followed by the walks), else None."""
    what = _not_regular(root / ledger.ATTEMPTS)
    return None if what is None else problem(ledger.ATTEMPTS, Flaw.READ_THROUGH_LINK, **what)


def _ledger_entry(root: Path) -> SealProblem | None:
    """The root's ledger when it is a link or not a regular file (never read then), or
    gone from a root that holds sealed attempts: every attempt is indexed before it runs
    (C4: never run unrecorded), so those were in it."""
    path = root / ledger.LEDGER
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        count = sum(os.path.lexists(a / SEAL) for a in ledger.list_attempts(root))
        return problem(ledger.LEDGER, Flaw.LEDGER_REMOVED, count=count) if count else None
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return None
    what = _not_regular(path) or {"odd": Odd.NOT_REGULAR}
    return problem(ledger.LEDGER, Flaw.LEDGER_THROUGH_LINK, **what)


def _ledger_regular(root: Path | None) -> bool:
    """Is the root's ledger a regular file (or absent)? A linked one is named by
    :func:`_root_entries` and never read as this root's index."""
    return root is None or _ledger_entry(root) is None


def verify(target: Path) -> list[str]:
    """Problems found in an attempt or a whole evidence root (empty list: all intact), in
    the words ``skgate verify`` prints (:func:`find_problems`)."""
    return [str(p) for p in find_problems(target)]


def attempt_findings(attempt: Path) -> list[SealProblem]:
    """What ``skgate verify ATTEMPT`` names about the attempt itself: its files against
    its seal, and its seal (and scenes) against what the root's ledger chained for it; not
    the ledger's own lines (:func:`ledger_problems`, which a report shows once per root).
    The report's seal section reads this, so it never calls an attempt intact, or its
    missing seal an interrupted one, where ``verify`` and ``status`` see a change."""
    root = ledger.root_of(attempt)
    if root is not None and not _ledger_regular(root):
        return attempt_problems(attempt)  # the root's entries say what the ledger is
    return _attempt_and_ledger(attempt, root, chain=False)


def _attempt_and_ledger(attempt: Path, root: Path | None, *, chain: bool) -> list[SealProblem]:
    recorded = (
        root is not None
        and (root / ledger.LEDGER).exists()
        and _chains_seal(_entries_by_attempt(root).get(attempt.name, []))
    )
    problems = attempt_problems(attempt, recorded=recorded)
    if root is not None and (root / ledger.LEDGER).exists():
        problems += _ledger_problems(root, only=attempt.name, chain=chain)
    return list(dict.fromkeys(problems))  # several ledger entries may name one change


def find_problems(target: Path) -> list[SealProblem]:
    """Every problem in an attempt or a whole evidence root, typed (empty: all intact);
    each says whether it is unfinished (``skgate recover`` finishes it) or a change."""
    if ledger.is_prelaunch_dir(target) and not _sealed_here(target):
        # Still in preflight: unfinished if its runner is gone, else nothing to check yet
        # (issue 30: a runner waiting for a foreign compiler has not died).
        found = unfinished_problem(target)
        return [] if found is None else [found]
    if ledger.is_removed(target):  # gone though indexed (issue 28): what its ledger says
        root = ledger.root_of(target)
        assert root is not None  # a removed attempt is one of a root
        return list(dict.fromkeys(_ledger_problems(root, only=target.name, chain=True)))
    if is_attempt_dir(target) or ledger.is_prelaunch_dir(target):  # the latter sealed
        root = ledger.root_of(target)
        if os.path.islink(target):
            return [problem(str(target), Flaw.READ_THROUGH_LINK, odd=Odd.LINK)]
        if root is not None and not _ledger_regular(root):
            return _root_entries(root) + attempt_problems(target)
        # Reached through a linked ``attempts/``: named here as ``verify ROOT`` names it
        # (it said OK for the attempt and CHANGED for its root).
        linked = _attempts_link(root) if root is not None else None
        return ([linked] if linked else []) + _attempt_and_ledger(target, root, chain=True)
    subs = ledger.sub_roots(target)
    if subs:  # a matrix session root: every arm's root, each with its own ledger
        return [
            replace(p, within=f"{ledger.RUNS}/{sub.name}")
            for sub in subs
            for p in find_problems(sub)
        ]
    attempts = ledger.resolve(target)  # raises a one-line EvidenceError for a bad target
    problems = _root_entries(target) + _orphans(target)
    readable = _ledger_regular(target)
    recorded = _sealed_in_ledger(target) if readable else set()
    for attempt in attempts:
        problems += attempt_problems(attempt, recorded=attempt.name in recorded)
    if readable:
        problems += _ledger_problems(target)
    return list(dict.fromkeys(problems))  # several ledger entries may name one change
