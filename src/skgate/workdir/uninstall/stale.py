"""Uninstall from stale records (``.static_kernel_records.json``, C8): packages whose recording
process is gone or whose pid was recycled; records of a live owner are kept (C4)."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skgate.model.outcomes import UninstallAction
from skgate.model.request import OUTPUTS_DIRNAME
from skgate.proc import observe
from skgate.workdir.uninstall.core import (
    Candidate,
    RecordWriter,
    UninstallProgress,
    UninstallResult,
    handle_candidate,
)
from skgate.workdir.uninstall.validate import INSTALL_SUBDIR, SCRIPT, produced_packages

RECORDS = ".static_kernel_records.json"
MAX_RECORDS_BYTES = 16 * 1024 * 1024


def _start_matches(rec: Mapping[str, Any], pid: int) -> bool | None:
    """Does ``pid``'s start time equal the one the record holds? None: cannot tell.

    The unit is decided from the record's own fields, never from the magnitude (a tick
    count passes 10**9 on a host up more than ~116 days at 100 Hz, so "small means
    ticks" judged a live owner stale and ran its uninstall.sh):

    * an integer ``process_start_time`` beside an ISO ``record_create_time`` is the
      torchair form: clock ticks since boot (``/proc/<pid>/stat`` field 22);
    * a float, or a string (ISO timestamp or number), is epoch seconds (psutil's
      ``create_time``), compared through the boot time;
    * an integer without ``record_create_time`` may be either: it matches if either
      reading matches, and is "not the same" only if both readings could be compared.

    "Cannot tell" (no boot time: /proc/stat unreadable or without ``btime``; a start
    time of no known form) keeps the record (C4: never act against a live owner).
    """
    st = observe.read_stat(pid)
    if st is None or st.zombie:
        return False
    recorded = rec.get("process_start_time")
    if isinstance(recorded, bool) or recorded is None:
        return None
    torchair = isinstance(rec.get("record_create_time"), str)
    if isinstance(recorded, int):
        if recorded == st.start_ticks:
            return True
        if torchair:
            return False  # ticks, compared exactly
        by_epoch = _epoch_matches(float(recorded), st.start_ticks)
        return by_epoch  # True, False, or None when the boot time is unknown
    epoch: float | None = None
    if isinstance(recorded, float):
        epoch = recorded
    elif isinstance(recorded, str):
        try:
            epoch = _dt.datetime.fromisoformat(recorded).timestamp()
        except ValueError:
            try:
                epoch = float(recorded)
            except ValueError:
                return None
    if epoch is None or not math.isfinite(epoch):
        # "nan", "1e400", NaN or Infinity (JSON's loads takes both): no time at all, so no
        # proof the owner is gone; abs(nan - x) <= 1 is false and read as "differs".
        return None
    return _epoch_matches(epoch, st.start_ticks)


def _epoch_matches(epoch: float, start_ticks: int) -> bool | None:
    boot = boot_time()
    if boot is None:
        return None  # cannot tell: the record is kept
    started = boot + start_ticks / observe.clock_ticks()
    # Start times in seconds are rounded by whoever wrote them: one second of slack.
    return abs(started - epoch) <= 1.0


def boot_time() -> float | None:
    """The host's boot time in epoch seconds (``btime`` of /proc/stat), or None."""
    try:
        with open("/proc/stat", "rb") as fh:
            for line in fh:
                if line.startswith(b"btime "):
                    value = float(line.split()[1])
                    return value if value > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_records(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Read the records file defensively: (records, problems). Never raises on content."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        return {}, [f"{path}: unreadable ({exc.strerror})"]
    if not stat.S_ISREG(st.st_mode):
        return {}, [f"{path}: not a regular file (a symbolic link?); refused"]
    if st.st_size > MAX_RECORDS_BYTES:
        return {}, [f"{path}: {st.st_size} bytes is too large for a records file; refused"]
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}, [f"{path}: not valid JSON (truncated or damaged); nothing uninstalled"]
    except OSError as exc:
        return {}, [f"{path}: unreadable ({exc.strerror})"]
    if not isinstance(data, dict):
        return {}, [f"{path}: not a JSON object of package -> record; refused"]
    return data, []


def uninstall_stale_records(
    workdir: Path,
    ascend_home: str | None,
    *,
    outputs: Path | None = None,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    record: RecordWriter | None = None,
) -> UninstallResult:
    """Uninstall packages whose recording process is gone or whose pid was recycled.

    Records of a process alive with the same start time are kept: that compile may
    still be using its package (C4: never act against a live owner). The records file
    itself is left as it is (it is part of the scene ``cleanup`` preserves).
    """
    outputs = outputs if outputs is not None else workdir / OUTPUTS_DIRNAME
    path = workdir / RECORDS
    progress = UninstallProgress(
        record, "stale-records", ascend_home, str(outputs), dry_run, {"records": str(path)}
    )
    progress.start()
    packages = produced_packages(outputs)
    records, notes = load_records(path)
    candidates = progress.candidates
    for package, rec in records.items():
        source = f"record {package!r}"
        if not isinstance(rec, dict):
            candidates.append(
                Candidate("", source, UninstallAction.REFUSED, "record is not an object")
            )
            continue
        upath = rec.get("uninstall_path")
        pid = rec.get("pid")
        if not isinstance(upath, str):
            candidates.append(
                Candidate("", source, UninstallAction.REFUSED, "uninstall_path missing")
            )
            continue
        if not upath.endswith(".sh"):
            upath = upath.rstrip("/") + "/" + SCRIPT  # a record may name the package dir
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            candidates.append(
                Candidate(upath, source, UninstallAction.REFUSED, "pid missing or invalid")
            )
            continue
        same = _start_matches(rec, pid)
        if same is True:
            candidates.append(
                Candidate(
                    upath,
                    source,
                    UninstallAction.KEPT,
                    f"pid {pid} is alive with the same start time",
                )
            )
            continue
        if same is None:
            candidates.append(
                Candidate(
                    upath,
                    source,
                    UninstallAction.KEPT,
                    f"pid {pid} is alive and the recorded start time cannot be compared; "
                    "not proven stale",
                )
            )
            continue
        why = "process gone or pid recycled (start time differs)"
        full = upath.endswith(f"/{INSTALL_SUBDIR[-1]}/{SCRIPT}")  # refused below, by name
        if not full and not upath.endswith(f"/{package}/{SCRIPT}"):
            candidates.append(
                Candidate(
                    upath,
                    source,
                    UninstallAction.REFUSED,
                    f"record key {package!r} names another package",
                )
            )
            continue
        c = handle_candidate(
            upath,
            source,
            ascend_home=ascend_home,
            packages=packages & {package},
            dry_run=dry_run,
            env=env,
            before_exec=None,
            before_run=progress.running,
        )
        progress.add(
            Candidate(
                c.path, c.source, c.action, f"{why}; {c.reason}", c.exit_status, c.output, c.package
            )
        )
    return progress.finish(tuple(notes))
