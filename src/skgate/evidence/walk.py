"""Walking evidence trees without following links, and what a scene may hold.

:func:`walk_files` lists the regular files under a directory (and, apart, every other
entry: a link inside evidence is reported, never entered); the seal, scene manifests
and ``verify`` walk with it. :func:`interrupted_scene` tells a scene that a killed
``cleanup`` or ``retry`` left without its manifest from one filled by hand (issue 28).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from skgate.evidence.files import is_temp_name
from skgate.evidence.load import load_control
from skgate.model.errors import EvidenceError
from skgate.model.request import CLEANUP_OUTPUTS, OPTIONAL_CLEANUP_OUTPUTS


def walk_files(base: Path, skip: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Regular files under ``base`` (relative POSIX names, sorted) and other entries.

    Never follows a symbolic link: a link inside evidence is reported, not entered.
    """
    skipped = set(skip)
    files: list[str] = []
    others: list[str] = []
    stack: list[tuple[str, str]] = [(str(base), "")]
    while stack:
        path, rel = stack.pop()
        try:
            it = os.scandir(path)
        except OSError:
            others.append(rel or ".")
            continue
        with it:
            for e in it:
                name = f"{rel}/{e.name}" if rel else e.name
                if name in skipped:
                    continue
                if e.is_dir(follow_symlinks=False):
                    stack.append((e.path, name))
                elif e.is_file(follow_symlinks=False):
                    files.append(name)
                else:
                    others.append(name)
    files.sort()
    others.sort()
    return files, others


def interrupted_scene(attempt: Path, scene: Path) -> bool:
    """Could this scene without a manifest be a cleanup's, killed before writing it?

    Only outputs a cleanup moves are in it (C8's names, or the attempt's own outputs
    directory), besides dot-named temporary files; anything else was put there by hand.
    """
    try:
        with os.scandir(scene) as it:
            names = [e.name for e in it if not is_temp_name(e.name)]
    except OSError:
        return False
    allowed = {*CLEANUP_OUTPUTS, *OPTIONAL_CLEANUP_OUTPUTS}
    with contextlib.suppress(EvidenceError):
        outputs = load_control(attempt).request.outputs
        if outputs:
            allowed.add(Path(outputs).name)
    return all(n in allowed for n in names)
