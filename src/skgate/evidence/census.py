"""Artifact census: counts of error-named logs, success logs and ``.run`` packages (C3).

The census counts names, nothing more. What the counts mean depends on when they were
taken (C1): error-named files counted while the attempt is live are provisional, and
after natural return they are final compiler evidence only if the verdict is ``failed``.
``Census.live`` records which case this is; the report labels it.

Walking rules:

- ``os.scandir`` with an explicit stack (no recursion limit), and the ``d_type`` the
  kernel already returned, so a tree of hundreds of thousands of files costs about what
  ``find`` costs;
- symbolic links are never followed and never counted: a link named ``x.run`` is not a
  package this attempt produced, and a link to a directory could lead anywhere;
- a directory that vanishes or cannot be read while the compiler is still renaming files
  is skipped: a live census is provisional anyway.

Roots: each ``ts*_pid*_outputs`` directory directly under the outputs directory is one
result root; artifacts anywhere else under outputs are counted under the root ``"."``,
which is listed only when it holds any.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from skgate.model.events import Observation
from skgate.model.frozen import field, mutable
from skgate.model.lazy_re import Lazy

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.model.records import Census


ERROR_SUFFIX = "_compile_error.log"
SUCC_SUFFIX = "_compile_succ.log"
RUN_SUFFIX = ".run"
OTHER_ROOT = "."

# ``ts<time>_pid<pid>_outputs`` from torch-npu 2.9 on; ``<time>_<pid>_outputs`` in 2.7
# (static_kernel.py l.273-274 of 2.7.1.post2).
_RESULT_ROOT = Lazy(r"(?:ts.*_pid.*|\d+_\d+)_outputs\Z", re.DOTALL)


def is_result_root(name: str) -> bool:
    """Does a directory name look like a CANN result root (``ts<time>_pid<pid>_outputs``,
    or 2.7's ``<time>_<pid>_outputs``)?"""
    return _RESULT_ROOT.get().match(name) is not None


def _has_new(outputs: Path, before: Collection[tuple[str, int]]) -> bool:
    try:
        with os.scandir(outputs) as it:
            return any((e.name, e.inode()) not in before for e in it)
    except OSError:
        return False


def census_outputs(default: Path, legacy: Path | None, before: Collection[tuple[str, int]]) -> Path:
    """The outputs directory this attempt wrote into: the request's, or torch-npu 2.7's
    ``aclnn_static_shape_kernel_outputs`` when no directory was given, the default one got
    nothing new and the legacy one did (issue 27: a 2.7 run is counted, never ``exists:
    false``). ``before`` holds the entries of both taken before launch."""
    if legacy is None or _has_new(default, before) or not _has_new(legacy, before):
        return default
    return legacy


@mutable
class FirstNames:
    """The first ``limit`` error logs and ``.run`` packages a walk meets, for messages.

    Paths are relative to the walked top. With names wanted, each directory is read in
    name order, so the same tree always lists the same names.
    """

    limit: int
    errors: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)


def count_tree(
    top: str, unreadable: list[str] | None = None, names: FirstNames | None = None
) -> tuple[int, int, int]:
    """(error logs, success logs, .run packages) under ``top``, links not followed.

    Directories that cannot be read are appended to ``unreadable`` when given; ``names``
    (when given) collects the first few matching paths (``check-outputs`` lists them).
    """
    errors = succ = runs = 0
    stack = [top]
    pop, push = stack.pop, stack.append
    while stack:
        path = pop()
        try:
            it = os.scandir(path)
        except FileNotFoundError:
            continue  # vanished while the compiler renamed things (see the module docstring)
        except OSError:
            if unreadable is not None:
                unreadable.append(path)
            continue
        with it:
            # Sorting costs only the caller that wants names; the census never does.
            entries: Iterable[os.DirEntry[str]] = (
                it if names is None else sorted(it, key=lambda e: e.name)
            )
            for entry in entries:
                name = entry.name
                try:
                    # is_dir/is_file with follow_symlinks=False use d_type: no stat call.
                    if entry.is_dir(follow_symlinks=False):
                        push(entry.path)
                        continue
                    if name.endswith(".log"):
                        if name.endswith(ERROR_SUFFIX):
                            if entry.is_file(follow_symlinks=False):
                                errors += 1
                                if names is not None and len(names.errors) < names.limit:
                                    names.errors.append(os.path.relpath(entry.path, top))
                        elif name.endswith(SUCC_SUFFIX) and entry.is_file(follow_symlinks=False):
                            succ += 1
                    elif name.endswith(RUN_SUFFIX) and entry.is_file(follow_symlinks=False):
                        runs += 1
                        if names is not None and len(names.runs) < names.limit:
                            names.runs.append(os.path.relpath(entry.path, top))
                except OSError:
                    continue
    return errors, succ, runs


def top_entries(outputs: Path) -> frozenset[tuple[str, int]]:
    """(name, inode) of every entry directly under ``outputs`` now (empty if none).

    Taken before launch: CANN makes a new ``ts<time>_pid<pid>_outputs`` root for each
    compile, so what is already there belongs to earlier runs.
    """
    try:
        with os.scandir(outputs) as it:
            return frozenset((e.name, e.inode()) for e in it)
    except OSError:
        return frozenset()


def outputs_record(outputs: Path, before: frozenset[tuple[str, int]]) -> dict[str, Any]:
    """``control.json["controls"]["outputs_before"]``: what the outputs directory held
    before the launch (``before``, from :func:`top_entries`). It belongs to earlier runs,
    and only entries not in it are counted, so a stale error log or ``.run`` cannot
    decide this attempt's verdict (C8)."""
    return {
        "path": str(outputs),
        "entries": len(before),
        "names": sorted(name for name, _ in before)[:50],
        # (name, inode) of every entry: a census taken later (skgate recover) excludes
        # exactly these, as the runner's own census does.
        "ids": sorted([name, ino] for name, ino in before),
        "note": "entries present before launch are not counted in this attempt's census",
    }


def take_census(outputs: Path, *, live: bool, exclude: Collection[tuple[str, int]] = ()) -> Census:
    """Count artifacts under ``outputs`` (the ``static_kernel_compile_outputs`` dir).

    Top-level entries in ``exclude`` (see :func:`top_entries`) are skipped and counted as
    ``preexisting``: an earlier run's error log or ``.run`` is not this attempt's (C8).
    """
    # Loaded with the first census (after the launch), not before it (start latency).
    from skgate.model.records import Census, RootCensus  # noqa: PLC0415

    taken_at = time.time()
    skip = frozenset(exclude)
    preexisting = 0
    try:
        st = os.lstat(outputs)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        # Missing, or a symlink/file in its place: nothing this attempt produced is there.
        return Census(outputs=str(outputs), exists=False, roots=(), live=live, taken_at=taken_at)

    roots: list[RootCensus] = []
    other = [0, 0, 0]
    skipped: list[str] = []
    try:
        it = os.scandir(outputs)
    except OSError:
        return Census(
            outputs=str(outputs), exists=True, roots=(), live=live, taken_at=taken_at, unreadable=1
        )
    with it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        name = entry.name
        if skip and (name, entry.inode()) in skip:
            preexisting += 1
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if is_dir and is_result_root(name):
            e, s, r = count_tree(entry.path, skipped)
            roots.append(RootCensus(root=name, error_logs=e, succ_logs=s, run_packages=r))
        elif is_dir:
            e, s, r = count_tree(entry.path, skipped)
            other[0] += e
            other[1] += s
            other[2] += r
        elif is_file:
            if name.endswith(ERROR_SUFFIX):
                other[0] += 1
            elif name.endswith(SUCC_SUFFIX):
                other[1] += 1
            elif name.endswith(RUN_SUFFIX):
                other[2] += 1
    if any(other):
        roots.append(
            RootCensus(
                root=OTHER_ROOT, error_logs=other[0], succ_logs=other[1], run_packages=other[2]
            )
        )
    return Census(
        outputs=str(outputs),
        exists=True,
        roots=tuple(roots),
        live=live,
        taken_at=taken_at,
        unreadable=len(skipped),
        preexisting=preexisting,
    )


#: Scan intervals between two ``observation`` events (15 s at the default 1 s scan).
#: Each takes a census of the outputs (read-only, provisional: C1), so it is kept rare
#: enough to stay far below 1 % CPU even on trees of hundreds of thousands of files.
OBSERVATION_EVERY = 15


def observer(
    emit: Callable[[Observation], object],
    outputs: Path,
    interval: float,
    before: frozenset[tuple[str, int]],
    stage_progress: Callable[[], list[dict[str, object]]] | None = None,
) -> Callable[[int], None]:
    """The runner's tick while the compile lives: a provisional ``observation`` event (C1)
    at most every ``interval`` (every third of it while the owned tree changes).

    ``stage_progress`` gives each op_compiler invocation's inputs and inputs done so far;
    the event carries it as ``stages`` once a stage has been seen."""
    last = [time.monotonic()]
    seen = [-1]

    def tick(owned_alive: int) -> None:
        now = time.monotonic()
        if now - last[0] < interval and owned_alive == seen[0]:
            return
        if now - last[0] < interval / 3:
            return  # a changing tree is still observed at most every few seconds
        last[0], seen[0] = now, owned_alive
        census = take_census(outputs, live=True, exclude=before)
        stages = stage_progress() if stage_progress is not None else []
        emit(
            Observation(
                owned_alive=owned_alive,
                counts={
                    "error_logs": census.error_logs,
                    "succ_logs": census.succ_logs,
                    "run_packages": census.run_packages,
                },
                provisional=True,  # C1: counts taken while the compile lives prove nothing
                stages=tuple(stages) or None,
            )
        )

    return tick
