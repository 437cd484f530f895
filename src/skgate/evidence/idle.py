"""Find, after the tree ended, each way the launcher ran no compile by design (C2, issue 27).

The records are :class:`skgate.model.idle.Idle`; what each means and the release facts
behind it are in that module. Only positive evidence makes a finding (C2.5: never a
claim beyond the evidence):

- a build directory this attempt made (fresh, not there before launch) holding no
  per-input log and no ``.run``, whose dump, blacklist and selection directories say why
  nothing was left to compile;
- an owned process that ran a ``.run`` lying in ``static_kernel_compile_outputs/ts*_outputs/``
  and there before launch (the cache-compile install), read from its argv.

Directories are listed without following links, and only a bounded number is read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from skgate.evidence.stage_census import input_stems
from skgate.evidence.stage_roots import subdirs
from skgate.model.idle import Idle, IdleKind
from skgate.model.lazy_re import Lazy
from skgate.model.request import OUTPUTS_DIRNAME
from skgate.model.running import ProcessRecord
from skgate.model.stage_roots import AnnouncedRoot

DUMP_SUFFIX = "_opcompile"
DEBUG_SUFFIX = "_debug"
BLACKLIST_SUFFIX = "_opcompile_blacklist"
CHOSEN_SUFFIXES = ("_opcompile_selected", "_opcompile_gathered")
#: Build directories and packages considered, at the most.
MAX_ITEMS = 64
#: Where in an argv a ``.run`` may stand: itself, or after its shebang's interpreter.
_ARGV_SPAN = 3


def _dirs(root: str, suffix: str) -> list[str]:
    return sorted(subdirs(root, (suffix,)))


def _jsons(dirs: Iterable[str]) -> int:
    return sum(len(input_stems(d) or ()) for d in dirs)


def root_idle(root: str) -> Idle | None:
    """Why a fresh build directory with nothing compiled had nothing to compile, or None
    when what is on disk does not show it (then nothing is claimed)."""
    dumps, debugs = _dirs(root, DUMP_SUFFIX), _dirs(root, DEBUG_SUFFIX)
    blacklists = _dirs(root, BLACKLIST_SUFFIX)
    chosen_dirs = [d for s in CHOSEN_SUFFIXES for d in _dirs(root, s)]
    dumped, debugged, blacklisted = _jsons(dumps), _jsons(debugs), _jsons(blacklists)
    chosen = _jsons(chosen_dirs) if chosen_dirs else None
    if not dumped and not debugged and not blacklisted:
        # No operator JSON anywhere (torchair: "Can not find json of ops" / "No JSON files").
        return Idle(IdleKind.NO_OPERATORS, root)
    if blacklisted and (chosen == 0 or (chosen is None and not dumped)):
        # 2.14: blacklisted inputs are copied (moved, on the cache-compile path) to
        # <pid>_opcompile_blacklist/ and the chosen directory is left empty.
        return Idle(IdleKind.ALL_BLACKLISTED, blacklists[0], blacklisted)
    if chosen == 0 and dumped and not blacklisted:
        # 2.9, 2.14: an input is selected once per process; an empty selection with no
        # blacklist means every input was compiled before in this process.
        return Idle(IdleKind.EMPTY_SELECTION, chosen_dirs[0], dumped)
    return None


def _run_path(argv: Sequence[str], cwd: str | None) -> str | None:
    for arg in argv[:_ARGV_SPAN]:
        if arg.endswith(".run"):
            whole = arg if os.path.isabs(arg) or cwd is None else os.path.join(cwd, arg)
            return os.path.normpath(whole)
    return None


def _cached_root(run: str, since: float | None) -> str | None:
    """The ``ts*_outputs`` root of a cached package that was there before launch."""
    root = os.path.dirname(run)
    name = os.path.basename(root)
    if not (name.startswith("ts") and name.endswith("_outputs")):
        return None
    if os.path.basename(os.path.dirname(root)) != OUTPUTS_DIRNAME:
        return None
    try:
        st = os.lstat(run)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or (since is not None and st.st_mtime >= since):
        return None
    return root


def cached_installs(
    records: Iterable[ProcessRecord], cwd: str | None, since: float | None
) -> tuple[Idle, ...]:
    """The cache-compile installs: owned processes that ran a cached ``.run`` (one
    finding per cached build directory), with each package's exit status."""
    by_root: dict[str, list[tuple[str, int | None]]] = {}
    for rec in records:
        run = _run_path(rec.argv, cwd)
        if run is None:
            continue
        root = _cached_root(run, since)
        if root is not None and len(by_root) < MAX_ITEMS:
            by_root.setdefault(root, []).append((os.path.basename(run), rec.exit_status))
    out: list[Idle] = []
    for root, runs in sorted(by_root.items()):
        names = tuple(sorted({n for n, _ in runs}))
        failed = tuple(sorted({n for n, s in runs if s not in (0, None)}))
        unseen = tuple(sorted({n for n, s in runs if s is None} - set(failed)))
        out.append(Idle(IdleKind.CACHED_INSTALL, root, len(names), names, failed, unseen))
    return tuple(out)


#: The uninstall path torchair prints after an install (``save_uninstall_info``).
_UNINSTALL = Lazy(r"(?P<dir>.*/opp/static_kernel/ai_core)/(?P<pkg>[^/]+)/uninstall\.sh")


def printed_installs(
    uninstall_paths: Iterable[str], outputs: str | None, since: float | None
) -> tuple[Idle, ...]:
    """Installs the launcher printed (its uninstall warning names each package): a cached
    ``.run`` of that name in a ``ts*_outputs`` of ``outputs`` from before launch names the
    source; else the install is said as printed, nothing more."""
    cached: dict[str, list[str]] = {}
    printed: dict[str, list[str]] = {}
    for path in list(uninstall_paths)[:MAX_ITEMS]:
        m = _UNINSTALL.get().fullmatch(path.strip())
        if m is None:
            continue
        pkg = m.group("pkg")
        source = None
        for root in sorted(subdirs(outputs, ("_outputs",))) if outputs else ():
            source = _cached_root(os.path.join(root, pkg + ".run"), since)
            if source is not None:
                break
        if source is not None:
            cached.setdefault(source, []).append(pkg + ".run")
        else:
            printed.setdefault(m.group("dir"), []).append(pkg)
    out = [
        Idle(IdleKind.CACHED_INSTALL, d, len(set(p)), tuple(sorted(set(p))))
        for d, p in sorted(cached.items())
    ]
    out += [
        Idle(IdleKind.PRINTED_INSTALL, d, len(set(p)), tuple(sorted(set(p))))
        for d, p in sorted(printed.items())
    ]
    return tuple(out)


def find_idle(
    roots: Sequence[AnnouncedRoot],
    records: Iterable[ProcessRecord],
    cwd: str | None,
    since: float | None,
    *,
    uninstall_paths: Iterable[str] = (),
    outputs: str | None = None,
) -> tuple[Idle, ...]:
    """Every finding of an attempt in which no op_compiler ran (the caller checks that).

    A fresh build directory not shown idle makes the whole attempt unexplained (()).
    An install seen from its exec comes first; an install only printed (the exec too
    short to read its argv) is said from the launcher's uninstall line."""
    found: list[Idle] = []
    fresh = [a for a in roots if a.exists and not a.preexisting]
    for a in fresh[:MAX_ITEMS]:
        if a.logs or a.run_packages:
            return ()  # something was compiled there: no claim of an idle launcher
        idle = root_idle(a.root)
        if idle is None:
            return ()  # one fresh root unexplained: the attempt is not shown idle
        found.append(idle)
    installs = cached_installs(records, cwd, since)
    if not installs and not found:
        installs = printed_installs(uninstall_paths, outputs, since)
    return (*installs, *found)
