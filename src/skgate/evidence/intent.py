"""``launch.json``: the intent to launch, written durably just before the fork (issue 21 s1).

A runner killed between the fork of the leader and its ``launched`` journal entry left
no trace of the launch: the workload ran, yet ``recover`` sealed "nothing was launched"
(``not_started``, C2 says that is never a compile result). With this record, a reader
that finds the intent and no ``launched`` knows the workload may have run: the state is
``unknown``, never ``not_started``; and the record names the cgroup leaf the leader is
born in, so the liveness check (``skgate.read.liveness``) finds the tree that no ``launched``
entry names.

A separate small file, so the journal's bytes stay those of every earlier attempt.
"""

from __future__ import annotations

import time
from pathlib import Path

from skgate.evidence import files
from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.schema import check_schema

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INTENT = "launch.json"
#: ``skgate.launch_intent/1`` first version (2026-12).
SCHEMA_INTENT = "skgate.launch_intent/1"


@record
class LaunchIntent:
    """What the runner was about to launch, recorded before the fork."""

    wall: float
    argv: tuple[str, ...]
    cgroup: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_INTENT,
            "wall": self.wall,
            "argv": list(self.argv),
            "cgroup": self.cgroup,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> LaunchIntent:
        d = check_schema(data, SCHEMA_INTENT, where)
        wall, argv, cgroup = d.get("wall"), d.get("argv"), d.get("cgroup")
        if not isinstance(wall, (int, float)) or isinstance(wall, bool):
            raise EvidenceError(f"{where}: field 'wall' has the wrong type")
        if not isinstance(argv, list) or (cgroup is not None and not isinstance(cgroup, str)):
            raise EvidenceError(f"{where}: field 'argv' or 'cgroup' has the wrong type")
        return cls(float(wall), tuple(str(a) for a in argv), cgroup)


def write_intent(attempt_dir: Path, argv: tuple[str, ...] | list[str], cgroup: str | None) -> None:
    """Durably record the intent (fsync'd file and directory) before the fork: a reader
    that finds it cannot tell whether the fork happened, and says so (C2)."""
    intent = LaunchIntent(time.time(), tuple(argv), cgroup)
    files.write_json_new(attempt_dir / INTENT, intent.to_dict())


def read_intent(attempt_dir: Path) -> LaunchIntent | None:
    """The recorded intent, or None (an attempt refused before its launch, or older)."""
    path = attempt_dir / INTENT
    if not files.present(path):
        return None
    return LaunchIntent.from_dict(files.read_json(path), str(path))
