"""What the launcher announced, and the static-kernel cache beside it, as stage evidence (C2).

Records of :mod:`skgate.model.stages` (``stages.json``, ``announced`` and ``caches``):
the build directories the start lines named, as found after the tree ended, and the
cache files with their entries. No I/O here: :mod:`skgate.evidence.stage_roots` fills
them.
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.schema import opt_int, require

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The static-kernel cache directory beside the ``ts*_outputs`` roots (fact 5a).
CACHE_DIRNAME = "static_kernel_cache"


@record
class AnnouncedRoot:
    """A build directory a launcher start line named, as found after the tree ended.

    A real cache hit prints only the start line: what is left is a fresh root holding
    the dumped JSONs and nothing compiled (no ``*_compile_log/``, no ``.run``).
    """

    root: str
    rank: int | None
    exists: bool
    inputs: int
    logs: int
    run_packages: int
    #: The root was already there before launch (an earlier compile's, not this one's).
    preexisting: bool = False
    #: The chosen inputs (``*_opcompile_selected/`` or ``*_opcompile_gathered/`` JSONs),
    #: what torchair looks up in its cache; None where no such directory was made (or in
    #: a record that did not count them). 0: every input was left out (blacklisted or
    #: compiled before), and torchair returns before the lookup, so no hit (stand-in 2).
    chosen: int | None = None
    #: No start line named it: an owned process made it after launch (the start line, a
    #: ``warnings.warn``, was hidden). Reasons then never say "announced".
    unannounced: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "root": self.root,
            "rank": self.rank,
            "exists": self.exists,
            "inputs": self.inputs,
            "logs": self.logs,
            "run_packages": self.run_packages,
            "preexisting": self.preexisting,
        }
        if self.chosen is not None:
            out["chosen"] = self.chosen
        if self.unannounced:
            out["unannounced"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> AnnouncedRoot:
        return cls(
            root=require(data, "root", str, where),
            rank=opt_int(data, "rank", where),
            exists=require(data, "exists", bool, where),
            inputs=require(data, "inputs", int, where),
            logs=require(data, "logs", int, where),
            run_packages=require(data, "run_packages", int, where),
            preexisting=bool(data.get("preexisting", False)),
            chosen=opt_int(data, "chosen", where),
            unannounced=data.get("unannounced") is True,
        )


@record
class CacheEntry:
    """One ``{key: run_path}`` entry of a static-kernel cache file."""

    key: str
    run_path: str
    #: The named package is a regular file now (a cached ``.run`` gone missing is a
    #: silent miss and a recompile, not a hit).
    run_exists: bool
    #: The key equals one torchair would compute from an announced root's chosen inputs
    #: (sorted sha256 of each JSON, the super-kernel config, deterministic mode and, from
    #: torch-npu 2.11, its level): the hit is then shown, not only possible. None: no
    #: computed key matched, which proves nothing (the key also covers super-kernel
    #: options that are not on disk, issue 27); never a claim that the key differs.
    key_matches: bool | None = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "run_path": self.run_path,
            "run_exists": self.run_exists,
            "key_matches": self.key_matches,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> CacheEntry:
        return cls(
            key=require(data, "key", str, where),
            run_path=require(data, "run_path", str, where),
            run_exists=require(data, "run_exists", bool, where),
            key_matches=(
                None if data.get("key_matches", False) is None else bool(data["key_matches"])
            )
            if "key_matches" in data
            else False,
        )


@record
class CacheFile:
    """``static_kernel_cache/CANN-<version>_<device>.json`` beside the build directories."""

    path: str
    #: It was there before launch: a hit can only come from a cache that existed.
    preexisting: bool
    entries: tuple[CacheEntry, ...]
    #: Why its entries could not be read (None when they could).
    problem: str | None = None
    #: Entries beyond the first MAX_NAMED, counted, not listed.
    omitted: int = 0

    @property
    def packages(self) -> tuple[str, ...]:
        """The cached packages that exist: what a hit would install."""
        return tuple(e.run_path for e in self.entries if e.run_exists)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "preexisting": self.preexisting,
            "entries": [e.to_dict() for e in self.entries],
            "problem": self.problem,
            "omitted": self.omitted,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> CacheFile:
        entries = require(data, "entries", list, where)
        if not all(isinstance(e, dict) for e in entries):
            raise EvidenceError(f"{where}: field 'entries' has the wrong type")
        problem = data.get("problem")
        return cls(
            path=require(data, "path", str, where),
            preexisting=require(data, "preexisting", bool, where),
            entries=tuple(CacheEntry.from_dict(e, where) for e in entries),
            problem=str(problem) if problem is not None else None,
            omitted=int(data.get("omitted", 0)),
        )
