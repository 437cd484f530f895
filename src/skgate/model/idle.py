"""When the launcher ran no compile by design, and what on disk shows it (C2, issue 27).

torchair's static-kernel code returns without running op_compiler in a few ways (each
in every release that has it; ``docs/cann-static-compile.md`` gives wheel, file, line):

- the cache-compile path (``use_cache_compile``, 2.9 and later) finds
  ``compile_cache_dir/static_kernel_compile_outputs/ts*_outputs/*.run``, runs each
  ``.run`` to install it and returns: no start line, no build directory, no op_compiler;
- the dump left no operator JSON (no ``<pid>_opcompile/`` nor ``<pid>_debug/`` JSON);
- every dumped input was blacklisted (2.14: moved or copied to
  ``<pid>_opcompile_blacklist/``), so the chosen directory is empty;
- every dumped input was compiled before in the same process (the per-process dedup),
  so ``<pid>_opcompile_selected/`` is empty and no blacklist directory exists.

An :class:`Idle` is made only from positive evidence on disk (and, for the install, an
owned process that ran the cached ``.run``): without it an attempt with no op_compiler
stays unknown (C2.5). No I/O here: :mod:`skgate.evidence.idle` finds them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.schema import require

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class IdleKind(enum.Enum):
    """Why the launcher had nothing to compile."""

    #: The cache-compile path installed packages of an earlier compile.
    CACHED_INSTALL = "cached_install"
    #: The dump left no operator JSON in the build directory.
    NO_OPERATORS = "no_operators"
    #: A package was installed (the launcher printed its uninstall path) and no
    #: op_compiler ran, with no cached ``.run`` of that name found to name its source.
    PRINTED_INSTALL = "printed_install"
    #: Every dumped input went to the blacklist directory.
    ALL_BLACKLISTED = "all_blacklisted"
    #: The selection is empty with no blacklist: every input was compiled before in
    #: this process (torchair's per-process dedup).
    EMPTY_SELECTION = "empty_selection"


@record
class Idle:
    """One way the launcher ran no compile, with the directory that shows it."""

    kind: IdleKind
    #: The directory the finding was read from: the cached ``ts*_outputs`` root, the
    #: build directory, the blacklist directory, or the empty selection.
    directory: str
    #: Inputs blacklisted, or dumped inputs left out; packages installed for a cache.
    count: int = 0
    #: The cached packages run (``CACHED_INSTALL``), with their exit status.
    packages: tuple[str, ...] = ()
    #: Packages whose install exited non-zero (``CACHED_INSTALL``): never "installed".
    failed: tuple[str, ...] = ()
    #: Packages whose exit status was not observed: run, never said "installed".
    unobserved: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "directory": self.directory,
            "count": self.count,
            "packages": list(self.packages),
            "failed": list(self.failed),
            "unobserved": list(self.unobserved),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Idle:
        raw = require(data, "kind", str, where)
        try:
            kind = IdleKind(raw)
        except ValueError:
            raise EvidenceError(f"{where}: unknown idle kind {raw!r}") from None
        packages = data.get("packages", [])
        failed = data.get("failed", [])
        unobserved = data.get("unobserved", [])
        if not all(isinstance(x, list) for x in (packages, failed, unobserved)):
            raise EvidenceError(f"{where}: idle packages have the wrong type")
        return cls(
            kind=kind,
            directory=require(data, "directory", str, where),
            count=int(data.get("count", 0)),
            packages=tuple(str(p) for p in packages),
            failed=tuple(str(p) for p in failed),
            unobserved=tuple(str(p) for p in unobserved),
        )


#: How to get a real compile, per kind (the reason ends with it).
IDLE_ADVICE: Mapping[IdleKind, str] = {
    IdleKind.CACHED_INSTALL: (
        "turn the launcher's cache compile off (static_kernel_compile.use_cache_compile) or "
        "move that cached build directory away (after `skgate cleanup`) for a real compile"
    ),
    IdleKind.PRINTED_INSTALL: (
        "turn the launcher's cache compile off (static_kernel_compile.use_cache_compile) "
        "for a real compile"
    ),
    IdleKind.NO_OPERATORS: (
        "run a graph whose operators the launcher dumps (aclnn operators) for a real compile"
    ),
    IdleKind.ALL_BLACKLISTED: (
        "remove those operators from the static-kernel blacklist for a real compile"
    ),
    IdleKind.EMPTY_SELECTION: (
        "start a new process (the launcher compiles each input once per process) for a real compile"
    ),
}


def _join(items: tuple[str, ...], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def idle_reason(idle: Idle) -> str:
    """The one sentence of a finding: what was seen on disk, then how to compile (C2)."""
    d = idle.directory
    if idle.kind is IdleKind.CACHED_INSTALL:
        if idle.failed:
            seen = (
                f"cached packages from {d} were run to install, and {len(idle.failed)} "
                f"install(s) exited non-zero ({_join(idle.failed)})"
            )
        elif idle.unobserved:
            seen = (
                f"cached packages from {d} were run to install ({_join(idle.packages)}; "
                "their exit status was not observed)"
            )
        else:
            seen = f"cached packages from {d} were installed ({_join(idle.packages)})"
        said = f"{seen}; no start line, no build directory and no op_compiler"
    elif idle.kind is IdleKind.PRINTED_INSTALL:
        said = (
            f"package(s) {_join(idle.packages)} were installed (the launcher printed their "
            f"uninstall path under {d}) with no start line, no build directory and no "
            "op_compiler"
        )
    elif idle.kind is IdleKind.NO_OPERATORS:
        said = f"the launcher dumped no operator into {d}, so it started no op_compiler"
    elif idle.kind is IdleKind.ALL_BLACKLISTED:
        said = f"{idle.count} input(s) blacklisted to {d}, none left to compile"
    else:
        said = (
            f"empty selection in {d}: each of the {idle.count} dumped input(s) was compiled "
            "earlier in the same process"
        )
    return f"no compile ran: {said}; {IDLE_ADVICE[idle.kind]}"


def idles_from(data: Any, where: str) -> tuple[Idle, ...]:
    """The ``idle`` list of ``stages.json`` (absent in older records)."""
    if data is None:
        return ()
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise EvidenceError(f"{where}: field 'idle' has the wrong type")
    return tuple(Idle.from_dict(x, where) for x in data)
