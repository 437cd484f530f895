"""Stale ``kernel_meta/*.o`` in a working directory: what makes a SuperKernel compile skip (C6).

graph-autofusion's ``super_kernel.py`` ``compile()`` returns early when
``kernel_meta/<called_kernel_name>.o`` exists, and ``extract_sub_bin_file`` skips the same
way (``docs/cann-static-compile.md``, facts 8a and 8b): an object left by an earlier
compile silently stands in for the new one. :func:`stale_kernel_meta` names them. It is
the one scan of them: preflight (before launch) and the health gate's "did the declared
change reach the compile" check (after the run, for objects older than its launch) both
call it. Read-only: ``lstat`` and a directory listing, never a link followed, nothing
opened, moved or deleted (C4: only ``skgate cleanup`` moves them, preserving first).

``control.json`` may carry preflight's list under ``controls.kernel_meta`` (a list of
:meth:`KernelMetaObject.to_dict`, or ``{"objects": [...]}``); :func:`from_controls`
reads either form.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KERNEL_META = "kernel_meta"
#: The key of ``control.json["controls"]`` where preflight names the objects it found.
CONTROL_KEY = "kernel_meta"
#: At most this many objects are named (the rest are counted by the caller's len()).
MAX_OBJECTS = 200


@dataclass(frozen=True)
class KernelMetaObject:
    """One ``kernel_meta/<name>.o``: where, how big, and when last written."""

    path: str
    size: int
    mtime: float

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "size": self.size, "mtime": self.mtime}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelMetaObject | None:
        path, size, mtime = data.get("path"), data.get("size"), data.get("mtime")
        if not isinstance(path, str) or isinstance(size, bool) or not isinstance(size, int):
            return None
        if isinstance(mtime, bool) or not isinstance(mtime, (int, float)):
            return None
        return cls(path, size, float(mtime))

    def still_in_place(self) -> bool:
        """The same regular file is there: same size and mtime (never followed if a link)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == self.size and st.st_mtime == self.mtime


def stale_kernel_meta(workdir: Path, before: float) -> list[KernelMetaObject]:
    """The regular ``workdir/kernel_meta/*.o`` files last written before ``before``.

    ``before`` is a wall-clock time (an attempt's launch). Sorted by name; a missing or
    unreadable ``kernel_meta`` gives ``[]``; symbolic links are neither followed nor named.
    """
    directory = workdir / KERNEL_META
    try:
        names = sorted(e.name for e in os.scandir(directory) if e.name.endswith(".o"))
    except OSError:
        return []
    out: list[KernelMetaObject] = []
    for name in names:
        path = directory / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mtime < before:
            out.append(KernelMetaObject(str(path), st.st_size, st.st_mtime))
            if len(out) >= MAX_OBJECTS:
                break
    return out


def from_controls(controls: Mapping[str, Any] | None) -> list[KernelMetaObject] | None:
    """Preflight's named objects from ``control.json["controls"]``; None when it named none
    (an attempt recorded before preflight looked)."""
    if not isinstance(controls, Mapping) or CONTROL_KEY not in controls:
        return None
    raw = controls[CONTROL_KEY]
    if isinstance(raw, Mapping):
        raw = raw.get("objects", [])
    if not isinstance(raw, list):
        return None
    found = (KernelMetaObject.from_dict(x) for x in raw if isinstance(x, Mapping))
    return [o for o in found if o is not None]
