"""The index of CANN's process logs archived into an attempt (``plog.json``, C3).

Written by :mod:`skgate.evidence.plog` after the owned tree ended; read back here for the
report, which links the plog of each failed stage (its op_compiler pid and its
children). Reading is lenient: a missing or ill-typed entry is skipped. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlogFile:
    """One archived process log: where it came from, where it is, and if it was cut."""

    source: str
    archived: str
    pid: int
    kind: str
    size: int
    copied: int
    truncated: bool

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlogFile | None:
        try:
            return cls(
                source=str(data["source"]),
                archived=str(data["archived"]),
                pid=int(data["pid"]),
                kind=str(data.get("kind", "plog")),
                size=int(data.get("size", 0)),
                copied=int(data.get("copied", 0)),
                truncated=data.get("truncated") is True,
            )
        except (KeyError, TypeError, ValueError):
            return None


def plog_files(index: Any) -> tuple[PlogFile, ...]:
    """The files of a ``plog.json`` object (empty for anything else)."""
    raw = index.get("files") if isinstance(index, dict) else None
    if not isinstance(raw, list):
        return ()
    got = (PlogFile.from_dict(f) for f in raw if isinstance(f, dict))
    return tuple(f for f in got if f is not None)


def of_pids(files: Iterable[PlogFile], pids: Iterable[int]) -> tuple[PlogFile, ...]:
    """The archived logs of the given pids, in archive order."""
    wanted = set(pids)
    return tuple(f for f in files if f.pid in wanted)
