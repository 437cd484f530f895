"""Attempt roots: atomic allocation of attempt directories and lookup.

Layout: ``<root>/attempts/<NNNN>/`` holds one attempt's evidence (see ``attempt.py``).
An id is taken with an exclusive ``mkdir``: two runs started at the same moment in the
same root get distinct ids, and an existing attempt is never reused or overwritten (C4).
"""

from __future__ import annotations

import os
from pathlib import Path

from skgate.attempt import is_attempt_dir
from skgate.errors import BlockedError, EvidenceError

ATTEMPTS = "attempts"
DEFAULT_ROOT = Path("skgate-runs")


def allocate(root: Path) -> Path:
    """Create and return a new, empty attempt directory under ``root``."""
    base = root / ATTEMPTS
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BlockedError(
            f"evidence root {root} cannot be written ({exc.strerror}); "
            "choose a writable --root (skgate never runs unrecorded)"
        ) from None
    if not os.access(base, os.W_OK | os.X_OK):
        raise BlockedError(
            f"evidence root {root} cannot be written; choose a writable --root "
            "(skgate never runs unrecorded)"
        )
    existing = [int(p.name) for p in _children(base) if p.name.isdigit()]
    n = max(existing, default=0) + 1
    while True:
        candidate = base / f"{n:04d}"
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


def _children(path: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def list_attempts(root: Path) -> list[Path]:
    """Attempt directories of ``root``, oldest first."""
    found = [p for p in _children(root / ATTEMPTS) if p.name.isdigit() and is_attempt_dir(p)]
    return sorted(found, key=lambda p: int(p.name))


def resolve(target: Path) -> list[Path]:
    """An attempt directory, or every attempt of a root, oldest first."""
    if is_attempt_dir(target):
        return [target]
    if (target / ATTEMPTS).is_dir():
        return list_attempts(target)
    if not target.exists():
        raise EvidenceError(f"{target}: no such attempt directory or evidence root")
    raise EvidenceError(
        f"{target}: not an attempt directory (no control.json) nor an evidence root "
        f"(no {ATTEMPTS}/); pass one of those"
    )


def latest(root: Path) -> Path:
    attempts = resolve(root)
    if not attempts:
        raise EvidenceError(f"{root}: the evidence root has no attempts yet")
    return attempts[-1]
