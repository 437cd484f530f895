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

from skgate.evidence import pathtext
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


def list_attempts(root: P, *, prelaunch: bool = False) -> list[P]:
    """Attempt directories of ``root``, oldest first; with ``prelaunch``, also those still
    in preflight (what ``status`` and ``report`` show, never "no attempts"). ``str`` in,
    ``str`` out; ``Path`` in, ``Path`` out (the lookups below alike)."""
    base = pathtext.join(root, ATTEMPTS)
    # Names first, joined only when numbered: a root of agents' runs holds thousands.
    numbered = ((n, pathtext.join(base, n)) for n in child_names(base) if n.isdigit())
    found = [
        (int(n), p) for n, p in numbered if is_attempt_dir(p) or (prelaunch and is_prelaunch_dir(p))
    ]
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


def resolve(target: P, *, prelaunch: bool = False) -> list[P]:
    """An attempt directory, or every attempt of a root (of each arm's root of a matrix
    session root), oldest first; ``prelaunch`` as :func:`list_attempts`."""
    if is_attempt_dir(target) or (prelaunch and is_prelaunch_dir(target)):
        return [target]
    if pathtext.is_dir(pathtext.join(target, ATTEMPTS)):
        return list_attempts(target, prelaunch=prelaunch)
    subs = sub_roots(target)
    if subs:
        return [a for sub in subs for a in list_attempts(sub, prelaunch=prelaunch)]
    if not pathtext.exists(target):
        raise EvidenceError(f"{target}: no such attempt directory or evidence root")
    raise EvidenceError(
        f"{target}: not an attempt directory (no control.json) nor an evidence root "
        f"(no {ATTEMPTS}/); pass one of those"
    )


def latest(root: P) -> P:
    attempts = resolve(root, prelaunch=True)  # a waiting attempt is the latest (issue 30)
    if not attempts:
        raise EvidenceError(f"{root}: the evidence root has no attempts yet")
    return attempts[-1]
