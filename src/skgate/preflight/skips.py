"""Preflight: name what will make the compile skip, before launch (C6).

Gathers the facts the rules of :mod:`skgate.model.skips` judge: the static-kernel cache
files under the outputs directory and the working directory (read with
:func:`skgate.evidence.stage_roots.cache_files`, the same reader the stage evidence uses),
the ``kernel_meta/*.o`` objects of the working directory, the build path's depth, and the
launcher environment. Everything is read as regular files or directory entries without
following links; nothing is changed, moved or deleted (C4, C8: clearing is
``skgate cleanup``'s job, which preserves first). The record goes into
``control.json["controls"]["skips"]``; only a path too deep blocks (exit 3, not started),
unless ``--allow-long-paths`` was given.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from skgate.model.request import OUTPUTS_DIRNAME, RunRequest
from skgate.model.skips import (
    NAME_MAX,
    SkipFinding,
    cache_finding,
    derived_name_bytes,
    kernel_meta_finding,
    path_finding,
    path_too_deep,
    static_off_finding,
    static_off_markers,
)
from skgate.model.stage_roots import CACHE_DIRNAME

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_SKIPS = "skgate.skips/1"
#: ``kernel_meta`` objects listed by name, at the most.
MAX_NAMED = 50
KERNEL_META_DIRNAME = "kernel_meta"
OBJECT_SUFFIX = ".o"


def _lock_exists(cache_json: str) -> bool:
    """torchair's lock beside a cache file: ``cache_file.with_suffix(".lock")`` (fact 5a)."""
    try:
        return stat.S_ISREG(os.lstat(cache_json[: -len(".json")] + ".lock").st_mode)
    except OSError:
        return False


def _cache_record(request: RunRequest) -> tuple[list[dict[str, Any]], list[SkipFinding]]:
    dirs = [request.outputs_path(), os.path.join(request.cwd, OUTPUTS_DIRNAME)]
    seen: set[str] = set()
    records: list[dict[str, Any]] = []
    findings: list[SkipFinding] = []
    for raw in dirs:
        d = os.path.normpath(raw)
        if d in seen:
            continue
        seen.add(d)
        if not os.path.isdir(os.path.join(d, CACHE_DIRNAME)):
            continue
        # Loaded only when there is a cache to read: the stage readers are finishing code,
        # kept off a run's start-up path (issue 13). The reader is the stage evidence's
        # own, so preflight and the verdict read a cache file alike.
        from skgate.evidence.stage_roots import cache_files  # noqa: PLC0415

        # since=None: every file found before launch is, by definition, from before.
        for cache in cache_files((), d, None):
            rec = cache.to_dict()
            rec["lock"] = _lock_exists(cache.path)
            records.append(rec)
            findings.append(
                cache_finding(
                    cache.path, [(e.run_path, e.run_exists) for e in cache.entries], cache.omitted
                )
            )
    return records, findings


def _kernel_meta(cwd: str) -> tuple[dict[str, Any], list[SkipFinding]]:
    directory = os.path.join(cwd, KERNEL_META_DIRNAME)
    record: dict[str, Any] = {"dir": directory, "objects": [], "omitted": 0}
    try:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return record, []  # a link or a file: not what graph-autofusion's check reads
        with os.scandir(directory) as it:
            entries = sorted(
                (e for e in it if e.name.endswith(OBJECT_SUFFIX)), key=lambda e: e.name
            )
            objects: list[tuple[str, int, float]] = []
            for e in entries:
                st = e.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    continue
                objects.append((e.name, st.st_size, st.st_mtime))
    except OSError:
        return record, []
    shown = objects[:MAX_NAMED]
    record["objects"] = [{"name": n, "size": s, "mtime": m} for n, s, m in shown]
    record["omitted"] = len(objects) - len(shown)
    if not objects:
        return record, []
    return record, [kernel_meta_finding(directory, shown, len(objects) - len(shown))]


def skips_step(
    request: RunRequest, env: Mapping[str, str]
) -> tuple[dict[str, Any], list[str], list[SkipFinding]]:
    """(``controls["skips"]``, blocking reasons, findings) for one request (see module)."""
    caches, findings = _cache_record(request)
    meta, meta_findings = _kernel_meta(request.cwd)
    findings.extend(meta_findings)
    blocked: list[str] = []
    # The compiler sees its working directory as getcwd() gives it: links resolved.
    build = os.path.realpath(request.cwd)
    deep = path_too_deep(build)
    if deep:
        found = path_finding(build, allowed=request.allow_long_paths)
        findings.append(found)
        if found.blocks:
            blocked.append(
                f"build path too deep (C6): {build}: estimated derived file name length "
                f"{derived_name_bytes(build)} bytes > limit {NAME_MAX} (ENAMETOOLONG); "
                "run from a shorter working directory, or pass --allow-long-paths"
            )
    markers = static_off_markers(env)
    if markers:
        findings.append(static_off_finding(markers))
    record: dict[str, Any] = {
        "schema": SCHEMA_SKIPS,
        "caches": caches,
        "cache_dir_name": CACHE_DIRNAME,
        "kernel_meta": meta,
        "path": {
            "cwd": build,
            "derived_name_bytes": derived_name_bytes(build),
            "limit": NAME_MAX,
            "too_deep": deep,
            "allow_long_paths": request.allow_long_paths,
        },
        "static_off": list(markers),
        "findings": [f.to_dict() for f in findings],
    }
    return record, blocked, findings
