"""CANN's own process logs (plog) of the owned processes, archived into the attempt (C3).

The real error of a swallowed failure is often only in CANN's process logs: before CANN 9
torchair keeps only op_compiler's stderr. After the owned tree ended, and before the
seal (so they are sealed with the rest), the runner copies the logs of owned pids:

- ``<base>/debug/plog/plog-<pid>_<timestamp>.log`` (also ``plog-<pid>-<timestamp>.log``,
  the form one vendor page writes), and
- ``<base>/debug/device-<id>/device-<pid>_<timestamp>.log`` (``-`` too),

where ``<base>`` is ``$ASCEND_PROCESS_LOG_PATH``, else ``$ASCEND_WORK_PATH/log``, else
``$HOME/ascend/log`` of the workload's environment (facts 7a-7c of
``docs/cann-static-compile.md``). A pid alone can be recycled, so only files modified
since the launch count. Only regular files, never through a link, each read with a bound
and the whole archive bounded (:data:`MAX_TOTAL`, truncation recorded). They are copied
into ``<attempt>/plog/`` with new, exclusively created files; the index
``<attempt>/plog.json`` lists each (source, archived path, pid, size, copied, truncated).
Nothing in the log directory is changed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from skgate.model.lazy_re import Lazy

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_PLOG = "skgate.plog/1"
PLOG_DIR = "plog"
PLOG_INDEX = "plog.json"
#: The whole archive, at the most (bytes); what is left out is recorded as truncated.
MAX_TOTAL = 64 << 20
#: Files considered, at the most.
MAX_FILES = 4096
#: Compiled on first use: most runs leave no CANN process log (issue 29).
PLOG_NAME = Lazy(r"^plog-(\d+)[_-].*\.log$")
DEVICE_NAME = Lazy(r"^device-(\d+)[_-].*\.log$")
DEVICE_DIR = Lazy(r"^device-\d+$")


def log_base(env: Mapping[str, str]) -> tuple[str | None, str]:
    """(base directory, which variable gave it) in CANN's priority order (fact 7a)."""
    if env.get("ASCEND_PROCESS_LOG_PATH"):
        return env["ASCEND_PROCESS_LOG_PATH"], "ASCEND_PROCESS_LOG_PATH"
    if env.get("ASCEND_WORK_PATH"):
        return os.path.join(env["ASCEND_WORK_PATH"], "log"), "ASCEND_WORK_PATH"
    if env.get("HOME"):
        return os.path.join(env["HOME"], "ascend", "log"), "HOME"
    return None, "none"


def _names(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def candidates(base: str, pids: Iterable[int], since: float) -> list[tuple[str, int, str]]:
    """(path, pid, kind) of each plog / device log of ``pids`` modified since ``since``."""
    owned = set(pids)
    debug = os.path.join(base, "debug")
    found: list[tuple[str, int, str]] = []
    dirs = [(os.path.join(debug, "plog"), PLOG_NAME, "plog")]
    for e in _names(debug):
        if DEVICE_DIR.get().match(e.name) and e.is_dir(follow_symlinks=False):
            dirs.append((e.path, DEVICE_NAME, "device"))
    for directory, pattern, kind in dirs:
        for e in _names(directory):
            m = pattern.get().match(e.name)
            if m is None or int(m.group(1)) not in owned:
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_mtime >= since and len(found) < MAX_FILES:
                found.append((e.path, int(m.group(1)), kind))
    return found


def _copy(src: str, dst: Path, budget: int) -> tuple[int, int, bool] | None:
    """Copy up to ``budget`` bytes of a regular file (no link) into a new file:
    (size, copied, truncated), or None when ``src`` is not a regular file."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        copied = 0
        try:
            while copied < budget:
                chunk = os.read(fd, min(budget - copied, 1 << 16))
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
                copied += len(chunk)
            more = bool(os.read(fd, 1)) if copied >= budget else False
        finally:
            os.close(out)
        return max(st.st_size, copied), copied, more
    except OSError:
        return None
    finally:
        os.close(fd)


def archive(
    attempt: Path,
    env: Mapping[str, str],
    pids: Iterable[int],
    since: float,
    limit: int = MAX_TOTAL,
) -> dict[str, Any]:
    """Copy the plog / device logs of ``pids`` into ``attempt/plog/``; return the index
    (the caller writes it as ``plog.json``)."""
    base, source = log_base(env)
    index: dict[str, Any] = {
        "schema": SCHEMA_PLOG,
        "base": base,
        "base_from": source,
        "limit_bytes": limit,
        "files": [],
        "truncated": False,
    }
    if base is None:
        return index
    found = candidates(base, pids, since)
    if not found:
        return index
    out_dir = attempt / PLOG_DIR
    out_dir.mkdir(exist_ok=True)
    left = limit
    for n, (path, pid, kind) in enumerate(found):
        rel = os.path.relpath(path, base)
        # One flat, unique name per copy: the index keeps the source path.
        dst = out_dir / f"{n:04d}-{os.path.basename(path)}"
        got = _copy(path, dst, left)
        if got is None:
            continue
        size, copied, truncated = got
        left -= copied
        index["files"].append(
            {
                "source": path,
                "relative": rel,
                "archived": f"{PLOG_DIR}/{dst.name}",
                "pid": pid,
                "kind": kind,
                "size": size,
                "copied": copied,
                "truncated": truncated or copied < size,
            }
        )
        if truncated or copied < size:
            index["truncated"] = True
    return index
