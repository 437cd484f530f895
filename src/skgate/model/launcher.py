"""What a launcher's own lines said (torchair warnings, cache, install): a pure record.

Filled by :mod:`skgate.evidence.launcher_lines` (which documents each kind) and stored as
the ``launcher`` object of ``logscan.json``; the classifier reads it (C2, C7).
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.errors import EvidenceError
from skgate.model.frozen import field, record

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record
class LauncherFacts:
    """What the launcher's own lines said (see the module docstring for each kind)."""

    starts: tuple[Mapping[str, Any], ...] = ()
    compiler_errors: tuple[Mapping[str, Any], ...] = ()
    cache_hits: tuple[Mapping[str, Any], ...] = ()
    cache_misses: tuple[Mapping[str, Any], ...] = ()
    no_run_files: tuple[str, ...] = ()
    #: ``X.run install failed`` / ``... uninstall success`` lines: rank, path, ok (C8).
    package_lines: tuple[Mapping[str, Any], ...] = ()
    installs: int = 0
    uninstall_warnings: int = 0
    ranks: tuple[int, ...] = ()
    #: The launcher's words that it skipped the compile or its dump failed (a Gloo probe
    #: that failed, ``Failed to execute dump json``), verbatim (issue 27): an empty build
    #: directory is then no sign of a graph without operators.
    skips: tuple[str, ...] = ()
    #: Start lines that name no build directory (torch-npu 2.7.1: ``Starting static
    #: kernel compilation``).
    bare_starts: int = 0
    omitted: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "starts": [dict(x) for x in self.starts],
            "compiler_errors": [dict(x) for x in self.compiler_errors],
            "cache_hits": [dict(x) for x in self.cache_hits],
            "cache_misses": [dict(x) for x in self.cache_misses],
            "no_run_files": list(self.no_run_files),
            "package_lines": [dict(x) for x in self.package_lines],
            "installs": self.installs,
            "uninstall_warnings": self.uninstall_warnings,
            "ranks": list(self.ranks),
            "skips": list(self.skips),
            "bare_starts": self.bare_starts,
            "omitted": dict(self.omitted),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> LauncherFacts:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise EvidenceError(f"{where}: field 'launcher' has the wrong type")

        def objs(key: str) -> tuple[Mapping[str, Any], ...]:
            items = data.get(key, [])
            if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
                raise EvidenceError(f"{where}: launcher field {key!r} has the wrong type")
            return tuple(items)

        def num(key: str) -> int:
            value = data.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise EvidenceError(f"{where}: launcher field {key!r} has the wrong type")
            return value

        skips = data.get("skips", [])
        if not isinstance(skips, list):
            raise EvidenceError(f"{where}: launcher field 'skips' has the wrong type")
        notes = data.get("no_run_files", [])
        ranks = data.get("ranks", [])
        if not isinstance(notes, list) or not isinstance(ranks, list):
            raise EvidenceError(f"{where}: launcher lists have the wrong type")
        omitted = data.get("omitted", {})
        return cls(
            starts=objs("starts"),
            compiler_errors=objs("compiler_errors"),
            cache_hits=objs("cache_hits"),
            cache_misses=objs("cache_misses"),
            no_run_files=tuple(str(x) for x in notes),
            package_lines=objs("package_lines"),
            installs=num("installs"),
            uninstall_warnings=num("uninstall_warnings"),
            ranks=tuple(int(r) for r in ranks),
            skips=tuple(str(x) for x in skips),
            bare_starts=num("bare_starts"),
            omitted=dict(omitted) if isinstance(omitted, dict) else {},
        )

    def error_messages(self) -> list[str]:
        """Each ``execute op_compiler error`` message as one string (lines joined)."""
        return [
            " / ".join(str(x) for x in e.get("message", []) if str(x).strip())
            for e in self.compiler_errors
        ]
