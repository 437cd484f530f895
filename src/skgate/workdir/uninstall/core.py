"""Validated uninstall of static-kernel packages: from a run log, or from stale records.

Upstream prints ``.../uninstall.sh`` paths and asks a person to run them, and its record
cleanup runs whatever ``uninstall_path`` a JSON file names. skgate runs a script only
when it is exactly ``$ASCEND_HOME_PATH/opp/static_kernel/ai_core/<package>/uninstall.sh``
with ``<package>`` the stem of a ``.run`` produced under the outputs directory (C8), and
never the full-uninstall ``ai_core/uninstall.sh``. Every candidate is recorded: run or
refused, why, its exit status and output (upstream throws both away).

Check-to-run gap: the script is opened component by component from the install root with
``O_NOFOLLOW`` (a symbolic link anywhere below ``ASCEND_HOME_PATH`` is refused), its
device and inode are compared with the path as checked, the path is checked again just
before the run, and the shell reads the script through the held descriptor
(``/bin/sh /proc/self/fd/N``), so a file swapped in after the check is never the one run.

``ASCEND_HOME_PATH`` itself is operator configuration, not log content: it is resolved
once (real installs point it at a ``latest`` symlink) and log paths must name it, or its
resolved form, textually.

Log reading streams fixed-size blocks and only looks at lines that contain
``uninstall.sh`` (bounded memory for a multi-GB log): :mod:`skgate.workdir.uninstall.logpaths`.
The path checks are :mod:`skgate.workdir.uninstall.validate`; uninstall from stale records
is :mod:`skgate.workdir.uninstall.stale`. This module runs checked scripts and records them.

The record is created exclusively *before* anything runs (``RecordWriter``): if it cannot
be created, nothing runs. It is then filled as candidates are handled: just before a
script runs its entry says ``running`` and the file is flushed, fsync'd and atomically
renamed into place, and again when it returns, so a crash mid-way still leaves what ran.
``complete`` says whether the run of ``skgate uninstall`` finished.

Schema history: ``skgate.uninstall/1``: first version (2026-11), written once at the end.
``skgate.uninstall/2``: created before anything runs and filled as it goes; adds
``complete`` and the ``running`` action (a script started, no result recorded).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skgate.evidence.files import dumps, is_attempt_dir, replace_text
from skgate.evidence.load import load_control
from skgate.model.errors import EvidenceError
from skgate.model.outcomes import UninstallAction
from skgate.model.request import OUTPUTS_DIRNAME
from skgate.preflight.request import outputs_dir
from skgate.workdir.uninstall.logpaths import extract_paths, iter_marker_lines
from skgate.workdir.uninstall.validate import Checked, Refused, check_path, produced_packages

SCHEMA_UNINSTALL = "skgate.uninstall/2"
MAX_CANDIDATES = 10_000
MAX_OUTPUT = 64 * 1024


@dataclass(frozen=True)
class Candidate:
    """One uninstall path and what became of it."""

    path: str
    source: str  # "log line N" or "record <package>"
    action: UninstallAction
    reason: str
    exit_status: int | None = None
    output: str | None = None
    package: str | None = None

    @property
    def ok(self) -> bool:
        return self.action in (UninstallAction.WOULD_RUN, UninstallAction.KEPT) or (
            self.action is UninstallAction.RUN and self.exit_status == 0
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source": self.source,
            "action": self.action.value,
            "reason": self.reason,
            "exit_status": self.exit_status,
            "output": self.output,
            "package": self.package,
        }


@dataclass(frozen=True)
class UninstallResult:
    mode: str  # "from-log" or "stale-records"
    ascend_home: str | None
    outputs: str | None
    dry_run: bool
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.candidates) and not self.notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_UNINSTALL,
            "mode": self.mode,
            "ascend_home": self.ascend_home,
            "outputs": self.outputs,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "candidates": [c.to_dict() for c in self.candidates],
            "notes": list(self.notes),
            **dict(self.extra),
        }


# ---------------------------------------------------------------------------
# Packages and validation


def run_checked(
    checked: Checked,
    *,
    timeout: float = 600.0,
    env: Mapping[str, str] | None = None,
    before_exec: Callable[[], None] | None = None,
) -> tuple[bool, int | None, str, str | None]:
    """Run the checked script through its descriptor: (ran, exit status, output, note)."""
    try:
        now = os.stat(checked.path, follow_symlinks=False)
    except OSError:
        return False, None, "", "the script vanished between check and run"
    if (now.st_dev, now.st_ino) != (checked.dev, checked.ino):
        return False, None, "", "the script was swapped between check and run"
    if before_exec is not None:
        before_exec()  # test seam: a swap here must not change what runs
    try:
        proc = subprocess.run(
            ["/bin/sh", f"/proc/self/fd/{checked.fd}"],
            pass_fds=(checked.fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=os.path.dirname(checked.path),
            env=dict(os.environ if env is None else env),
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.output or b""
        text = out[-MAX_OUTPUT:].decode("utf-8", "backslashreplace")
        return True, None, text, f"no natural return within {timeout:g} s (it was stopped)"
    text = proc.stdout[-MAX_OUTPUT:].decode("utf-8", "backslashreplace")
    return True, proc.returncode, text, None


_RUNNING = "started; no result recorded (the uninstall run was cut short)"


class RecordWriter:
    """The uninstall record: created exclusively before anything runs, filled as it goes.

    Every fill writes the whole document to a temp file in the record's directory,
    flushes and fsyncs it and renames it over the record (then fsyncs the directory):
    a reader or a crash sees the previous or the next complete state, never half a file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, path: Path) -> RecordWriter:
        """Create ``path`` exclusively; any problem is a one-line ``EvidenceError``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EvidenceError(
                f"{path.parent}: cannot create the record directory ({exc.strerror}); "
                "nothing was run"
            ) from None
        head = {"schema": SCHEMA_UNINSTALL, "complete": False, "created_at": time.time()}
        try:
            # Whole or not at all (temp, fsync, link, fsync dir): never a 0-byte record.
            replace_text(path, dumps({**head, "candidates": [], "notes": []}), only_new=True)
        except FileExistsError:
            raise EvidenceError(
                f"{path}: already exists; a record is never overwritten (nothing was run)"
            ) from None
        except OSError as exc:
            raise EvidenceError(
                f"{path}: cannot create the record ({exc.strerror}); nothing was run"
            ) from None
        return cls(path)

    def fill(self, result: UninstallResult, *, complete: bool = False) -> None:
        """Replace the record's content with ``result`` (durably, atomically)."""
        data = {**result.to_dict(), "complete": complete}
        try:
            replace_text(self.path, dumps(data))
        except OSError as exc:
            raise EvidenceError(
                f"{self.path}: cannot update the record ({exc.strerror}); stopped, "
                "nothing further was run"
            ) from None


@dataclass
class UninstallProgress:
    """Candidates so far, filled into the record around each script that runs."""

    record: RecordWriter | None
    mode: str
    ascend_home: str | None
    outputs: str | None
    dry_run: bool
    extra: Mapping[str, Any] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)

    def result(
        self, notes: tuple[str, ...] = (), pending: Candidate | None = None
    ) -> UninstallResult:
        cands = (*self.candidates, pending) if pending is not None else tuple(self.candidates)
        return UninstallResult(
            self.mode, self.ascend_home, self.outputs, self.dry_run, cands, notes, self.extra
        )

    def start(self) -> None:
        if self.record is not None:
            self.record.fill(self.result())

    def running(self, pending: Candidate) -> None:
        if self.record is not None:
            self.record.fill(self.result(pending=pending))

    def add(self, candidate: Candidate) -> None:
        self.candidates.append(candidate)
        if self.record is not None and candidate.action is UninstallAction.RUN:
            self.record.fill(self.result())

    def finish(self, notes: tuple[str, ...] = ()) -> UninstallResult:
        result = self.result(notes)
        if self.record is not None:
            self.record.fill(result, complete=True)
        return result


def handle_candidate(
    path: str,
    source: str,
    *,
    ascend_home: str | None,
    packages: set[str],
    dry_run: bool,
    env: Mapping[str, str] | None,
    before_exec: Callable[[], None] | None,
    before_run: Callable[[Candidate], None] | None = None,
) -> Candidate:
    try:
        checked = check_path(path, ascend_home, packages)
    except Refused as why:
        return Candidate(path, source, UninstallAction.REFUSED, str(why))
    try:
        if dry_run:
            return Candidate(
                path,
                source,
                UninstallAction.WOULD_RUN,
                "valid package uninstall script",
                package=checked.package,
            )
        if before_run is not None:
            before_run(
                Candidate(path, source, UninstallAction.RUNNING, _RUNNING, package=checked.package)
            )
        ran, status, output, refusal = run_checked(checked, env=env, before_exec=before_exec)
    finally:
        checked.close()
    if not ran:
        return Candidate(
            path, source, UninstallAction.REFUSED, refusal or "not run", package=checked.package
        )
    reason = refusal or ("exited 0" if status == 0 else f"exited {status}")
    return Candidate(path, source, UninstallAction.RUN, reason, status, output, checked.package)


def uninstall_from_log(
    log: Path,
    outputs: Path,
    ascend_home: str | None,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    before_exec: Callable[[], None] | None = None,
    record: RecordWriter | None = None,
) -> UninstallResult:
    """Validate and run each distinct ``uninstall.sh`` path the log prints (C8).

    With ``record`` (already created, see ``RecordWriter.create``), each script is
    recorded as ``running`` before it runs and with its result after.
    """
    progress = UninstallProgress(record, "from-log", ascend_home, str(outputs), dry_run)
    progress.start()
    packages = produced_packages(outputs)
    seen: set[str] = set()
    dropped = 0
    for offset, line in iter_marker_lines(log):
        for path in extract_paths(line):
            if path in seen:
                continue
            if len(seen) >= MAX_CANDIDATES:
                dropped += 1
                continue
            seen.add(path)
            source = f"log byte {offset}"
            progress.add(
                handle_candidate(
                    path,
                    source,
                    ascend_home=ascend_home,
                    packages=packages,
                    dry_run=dry_run,
                    env=env,
                    before_exec=before_exec,
                    before_run=progress.running,
                )
            )
    notes = (
        (f"{dropped} further distinct paths not examined (cap {MAX_CANDIDATES})",)
        if dropped
        else ()
    )
    return progress.finish(notes)


# ---------------------------------------------------------------------------
# Stale records (.static_kernel_records.json)


def write_record(path: Path, result: UninstallResult) -> None:
    """Write a finished result as a new record (never overwrites an earlier record)."""
    RecordWriter.create(path).fill(result, complete=True)


def outputs_for_log(log: Path) -> Path:
    """The outputs directory whose ``.run`` packages a run log's paths may name (C8).

    A log inside an attempt directory: that attempt's frozen request says; otherwise the
    default name, relative to the current directory.
    """
    attempt = log.parent
    if is_attempt_dir(attempt):
        try:
            return outputs_dir(load_control(attempt).request)
        except EvidenceError:
            pass
    return Path(OUTPUTS_DIRNAME)


def default_record_path(root: Path) -> Path:
    """Where an uninstall run's record goes unless the user names one: its own file under
    ``<root>/uninstall/``, never inside an attempt directory (C4: evidence is sealed)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return root / "uninstall" / f"{stamp}-{os.getpid()}.json"
