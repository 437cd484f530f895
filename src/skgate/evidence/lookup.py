"""Finding attempts: an attempt directory, or every attempt of an evidence root (of each
arm's root of a matrix session root), oldest first.

Layout: ``<root>/attempts/<NNNN>/`` holds one attempt's evidence; an attempt still in
preflight has its journal and no controls yet (issue 30). Apart from the ledger
(:mod:`skgate.evidence.ledger`, which re-exports these names), so ``skgate status``
finds its attempt without loading the ledger's writers (start-up, issue 29). Paths are
``str`` or ``Path``: each lookup gives back the caller's kind, spelled as pathlib spells
it (:mod:`skgate.evidence.pathtext`).
"""

from __future__ import annotations

import os

from skgate.evidence import ledger_seals, pathtext
from skgate.evidence.files import EVENTS as JOURNAL
from skgate.evidence.files import is_attempt_dir

# Where a root keeps its attempts: named with the ledger's, which the seal check reads
# without this module (files -> sealed -> ledger_seals; lookup imports files).
from skgate.evidence.ledger_seals import ATTEMPTS as ATTEMPTS  # noqa: PLC0414
from skgate.model.errors import EvidenceError

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from skgate.evidence.pathtext import P


def child_names(path: Path | str) -> list[str]:
    """The names of the directories in ``path`` (links to one are not)."""
    try:
        with os.scandir(path) as it:
            return [e.name for e in it if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def child_dirs(path: Path | str) -> list[str]:
    """The directories in ``path`` (links to one are not), as ``pathtext`` spells them."""
    return [pathtext.join(path, name) for name in child_names(path)]


def is_prelaunch_dir(path: Path | str) -> bool:
    """An attempt still in preflight: its journal, no controls yet (a runner waiting for
    a foreign compiler, or one that died there; issue 30)."""
    return not is_attempt_dir(path) and pathtext.is_file(pathtext.join(path, JOURNAL))


def list_attempts(root: P, *, prelaunch: bool = False, removed: bool = False) -> list[P]:
    """Attempt directories of ``root``, oldest first; with ``prelaunch``, also those still
    in preflight (what ``status`` and ``report`` show, never "no attempts"); with
    ``removed``, also those the root's ledger indexed that are gone or no longer read as
    attempts (what ``status --all`` and ``report`` show, issue 28). ``str`` in, ``str``
    out; ``Path`` in, ``Path`` out (the lookups below alike)."""
    base = pathtext.join(root, ATTEMPTS)
    # Names first, joined only when numbered: a root of agents' runs holds thousands.
    names = child_names(base)
    numbered = ((n, pathtext.join(base, n)) for n in names if n.isdigit())
    found = [
        (int(n), p) for n, p in numbered if is_attempt_dir(p) or (prelaunch and is_prelaunch_dir(p))
    ]
    if removed:
        # Gone, or no longer read as an attempt (its control.json and journal deleted):
        # every id the ledger indexed is listed, once.
        listed = {n for n, _ in found}
        for name in ledger_seals.indexed_names(pathtext.plain(root)):
            if name.isdigit() and int(name) not in listed:
                found.append((int(name), pathtext.join(base, name)))
    return [pathtext.like(root, p) for _, p in sorted(found, key=lambda f: f[0])]


#: Where a diagnosis matrix keeps one evidence root per arm (``<session>/runs/<arm>/``).
RUNS = "runs"


def sub_roots(target: P) -> list[P]:
    """The per-arm evidence roots of a matrix session root (empty for anything else)."""
    if pathtext.is_dir(pathtext.join(target, ATTEMPTS)):
        return []
    arms = child_dirs(pathtext.join(target, RUNS))
    # Sorted as ``Path`` objects sort: siblings differ only in their last name.
    found = sorted(p for p in arms if pathtext.is_dir(pathtext.join(p, ATTEMPTS)))
    return [pathtext.like(target, p) for p in found]


def resolve(target: P, *, prelaunch: bool = False, removed: bool = False) -> list[P]:
    """An attempt directory, or every attempt of a root (of each arm's root of a matrix
    session root), oldest first; ``prelaunch`` and ``removed`` as :func:`list_attempts`
    (with ``removed``, a removed attempt's own path is itself)."""
    if is_attempt_dir(target) or (prelaunch and is_prelaunch_dir(target)):
        return [target]
    if removed and is_removed(target):
        return [target]
    if pathtext.is_dir(pathtext.join(target, ATTEMPTS)):
        return list_attempts(target, prelaunch=prelaunch, removed=removed)
    subs = sub_roots(target)
    if subs:
        return [a for sub in subs for a in list_attempts(sub, prelaunch=prelaunch, removed=removed)]
    if not pathtext.exists(target):
        raise EvidenceError(f"{target}: no such attempt directory or evidence root")
    raise EvidenceError(
        f"{target}: not an attempt directory (no control.json) nor an evidence root "
        f"(no {ATTEMPTS}/); pass one of those"
    )


def latest(root: P) -> P:
    """The newest attempt of ``root`` (an attempt directory: itself), a waiting one
    included (issue 30). C2.5: one whose directory is gone though the root's ledger
    indexed it is still the newest, so that its removal is what ``status`` says; an
    older attempt never answers in its place (issue 28)."""
    if is_removed(root):
        return root  # a removed attempt named by its path: read as removed, not "no such"
    attempts = resolve(root, prelaunch=True)
    if pathtext.is_dir(pathtext.join(root, ATTEMPTS)):
        newest = int(pathtext.name(attempts[-1])) if attempts else 0
        # The newest the ledger indexed, though ids below it were never indexed and are
        # gone; then the ones indexed after it, in turn (an index appended late).
        top = ledger_seals.newest_indexed(pathtext.plain(root)) or 0
        after = _indexed_after(root, max(newest, top))
        if after is None and top > newest:
            after = f"{top:04d}"
        if after is not None:
            return pathtext.like(root, pathtext.join(pathtext.join(root, ATTEMPTS), after))
    if not attempts:
        raise EvidenceError(f"{root}: the evidence root has no attempts yet")
    return attempts[-1]


def is_removed(attempt: P) -> bool:
    """Is ``attempt`` an attempt path of a root whose directory is gone, though the
    root's ledger indexed it (issue 28)?"""
    return ledger_seals.removed(pathtext.plain(attempt)) is not None


def _indexed_after(root: P, newest: int) -> str | None:
    """The newest attempt the ledger of ``root`` indexed after the attempt numbered
    ``newest`` (None: none). Ids are given out one after the other, never again
    (``ledger.allocate``), so the next ones are asked for in turn, one search of the
    ledger each: a ``status`` of a root of any size pays one when nothing was removed."""
    found = None
    n = newest + 1
    while ledger_seals.indexed(pathtext.plain(root), f"{n:04d}"):
        found, n = f"{n:04d}", n + 1
    return found
