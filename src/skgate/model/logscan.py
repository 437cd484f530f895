"""The ``logscan.json`` record: what one pass over a run log found (C3).

Nothing here does I/O. Schema history: ``skgate.logscan/1``: first version (2026-11)."""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.errors import EvidenceError
from skgate.model.frozen import field, record
from skgate.model.launcher import LauncherFacts
from skgate.model.running import Stage, Summary
from skgate.model.schema import check_schema, require

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_LOGSCAN = "skgate.logscan/1"


@record
class LogScan:
    """What one pass over a run log found (written as ``logscan.json``)."""

    summary: Summary
    completion_seen: bool
    completion_lines: tuple[str, ...]
    result_roots: tuple[str, ...]
    packages: tuple[str, ...]
    compiler_errors: tuple[str, ...]
    uninstall_paths: tuple[str, ...]
    lines: int
    bytes: int
    truncated_lines: int
    #: How many items each capped list left off (only non-zero entries).
    omitted: Mapping[str, int] = field(default_factory=dict)
    #: The launcher's own lines (torchair warnings, cache, install); see
    #: ``skgate.evidence.launcher_lines``. Absent in older files: read back as empty.
    launcher: LauncherFacts = field(default_factory=LauncherFacts)

    def summary_text(self) -> str:
        """The content of ``summary.txt``: summary and matched lines, one per line."""
        return "".join(f"{line}\n" for line in self.summary.lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_LOGSCAN,
            "summary": self.summary.to_dict(),
            "completion_seen": self.completion_seen,
            "completion_lines": list(self.completion_lines),
            "result_roots": list(self.result_roots),
            "packages": list(self.packages),
            "compiler_errors": list(self.compiler_errors),
            "uninstall_paths": list(self.uninstall_paths),
            "lines": self.lines,
            "bytes": self.bytes,
            "truncated_lines": self.truncated_lines,
            "omitted": dict(self.omitted),
            "launcher": self.launcher.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "logscan.json") -> LogScan:
        d = check_schema(data, "skgate.logscan/1", where)
        s = require(d, "summary", dict, where)

        def strs(obj: Mapping[str, Any], key: str) -> tuple[str, ...]:
            items = require(obj, key, list, where)
            if not all(isinstance(x, str) for x in items):
                raise EvidenceError(f"{where}: field {key!r} must be a list of strings")
            return tuple(items)

        stages: list[Stage] = []
        for st in require(s, "stages", list, where):
            if not isinstance(st, dict):
                raise EvidenceError(f"{where}: field 'stages' has the wrong type")
            stages.append(
                Stage(
                    name=require(st, "name", str, where),
                    inputs=require(st, "inputs", int, where),
                    succeeded=require(st, "succeeded", int, where),
                    failed=require(st, "failed", int, where),
                )
            )
        omitted = d.get("omitted", {})
        if not isinstance(omitted, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in omitted.values()
        ):
            raise EvidenceError(f"{where}: field 'omitted' has the wrong type")
        return cls(
            summary=Summary(
                lines=strs(s, "lines"), stages=tuple(stages), problems=strs(s, "problems")
            ),
            completion_seen=require(d, "completion_seen", bool, where),
            completion_lines=strs(d, "completion_lines"),
            result_roots=strs(d, "result_roots"),
            packages=strs(d, "packages"),
            compiler_errors=strs(d, "compiler_errors"),
            uninstall_paths=strs(d, "uninstall_paths"),
            lines=require(d, "lines", int, where),
            bytes=require(d, "bytes", int, where),
            truncated_lines=require(d, "truncated_lines", int, where),
            omitted=dict(omitted),
            launcher=LauncherFacts.from_dict(d.get("launcher"), where),
        )
