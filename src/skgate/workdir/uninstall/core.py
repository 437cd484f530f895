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
``uninstall.sh`` (bounded memory for a multi-GB log; own reader, so this module does not
depend on ``summary.LogScanner``).

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

import datetime as _dt
import json
import os
import re
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skgate.evidence.files import create_exclusive, dumps, fsync_dir, replace_text
from skgate.model.errors import EvidenceError, UsageError
from skgate.proc import observe

SCHEMA_UNINSTALL = "skgate.uninstall/2"
MARKER = b"uninstall.sh"
INSTALL_SUBDIR = ("opp", "static_kernel", "ai_core")
SCRIPT = "uninstall.sh"
RECORDS = ".static_kernel_records.json"
#: Package names CANN produces (``static_kernel_<datetime>_<pid>``); anything else is
#: refused before it reaches a path join.
PACKAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}")
MAX_CANDIDATES = 10_000
MAX_OUTPUT = 64 * 1024
MAX_RECORDS_BYTES = 16 * 1024 * 1024
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f]")


@dataclass(frozen=True)
class Candidate:
    """One uninstall path and what became of it."""

    path: str
    source: str  # "log line N" or "record <package>"
    # "run", "refused", "would-run" (dry run), "kept" (record of a live owner), and in a
    # partial record "running" (started, no result recorded: the run was cut short).
    action: str
    reason: str
    exit_status: int | None = None
    output: str | None = None
    package: str | None = None

    @property
    def ok(self) -> bool:
        return self.action in ("would-run", "kept") or (
            self.action == "run" and self.exit_status == 0
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source": self.source,
            "action": self.action,
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
# Streaming the log


def iter_marker_lines(
    path: Path, marker: bytes = MARKER, max_line: int = 64 * 1024, block: int = 4 << 20
) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for each line containing ``marker``, in bounded memory.

    Only lines with the marker are materialised: the search jumps between marker hits
    with ``bytes.find``, so a multi-GB log costs about one read of the file. A line longer
    than ``max_line`` is skipped whole (it cannot be a path skgate would run).
    """
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the log ({exc.strerror})") from None
    carry = b""
    carry_at = 0
    overflow = False  # the start of the current line was dropped (too long)
    offset = 0
    with fh:
        while True:
            chunk = fh.read(block)
            if not chunk:
                break
            data = carry + chunk if carry else chunk
            base = carry_at if carry else offset
            offset += len(chunk)
            last_nl = data.rfind(b"\n")
            if last_nl < 0:
                if overflow or len(data) > max_line:
                    overflow, carry = True, b""
                else:
                    carry, carry_at = data, base
                continue
            pos = 0
            while True:
                hit = data.find(marker, pos, last_nl)
                if hit < 0:
                    break
                start = data.rfind(b"\n", 0, hit) + 1
                end = data.find(b"\n", hit)
                if not (overflow and start == 0) and end - start <= max_line:
                    yield base + start, data[start:end]
                pos = end + 1
            overflow = False
            rest = data[last_nl + 1 :]
            if len(rest) > max_line:
                overflow, carry = True, b""
            else:
                carry, carry_at = rest, base + last_nl + 1
    if carry and not overflow and marker in carry:
        yield carry_at, carry


_EXECUTING = b"executing:"
_TOKEN = re.compile(rb"\S*uninstall\.sh\S*")


def extract_paths(line: bytes) -> list[str]:
    """Uninstall paths a log line names, verbatim (validation decides what to run).

    Upstream's line ends ``... by executing: <path>/uninstall.sh``: everything after the
    colon is the path, so a path with spaces or escape codes is kept whole and refused,
    never cut into a harmless-looking piece.
    """
    line = line.rstrip(b"\r")
    at = line.rfind(_EXECUTING)
    raws = [line[at + len(_EXECUTING) :].strip(b" ")] if at >= 0 else _TOKEN.findall(line)
    return [r.decode("utf-8", "backslashreplace") for r in raws if r]


# ---------------------------------------------------------------------------
# Packages and validation


def produced_packages(outputs: Path) -> set[str]:
    """Stems of ``.run`` regular files under ``outputs`` (never following a link)."""
    found: set[str] = set()
    stack = [str(outputs)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False) and e.name.endswith(".run"):
                    found.add(e.name[: -len(".run")])
    return found


@dataclass
class Checked:
    """A validated script, held open: the descriptor is what runs."""

    path: str
    package: str
    fd: int
    dev: int
    ino: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Refused(Exception):
    """A candidate failed validation; ``str`` is the reason."""


def _home(ascend_home: str | None) -> tuple[str, str]:
    if not ascend_home:
        raise Refused("ASCEND_HOME_PATH is not set; pass --ascend-home or set it")
    if not os.path.isabs(ascend_home):
        raise Refused(f"ASCEND_HOME_PATH {ascend_home!r} is not an absolute path")
    given = os.path.normpath(ascend_home)
    real = os.path.realpath(given)
    if not os.path.isdir(real):
        raise Refused(f"ASCEND_HOME_PATH {ascend_home!r} is not a directory")
    return given, real


def _open_below(real_home: str, parts: list[str]) -> tuple[int, os.stat_result]:
    """Walk from the install root with O_NOFOLLOW; refuse a link at any component."""
    fd = os.open(real_home, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_RDONLY if last else os.O_PATH)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                raise Refused(f"{'/'.join(parts[: i + 1])} does not exist") from None
            except OSError as exc:
                # ELOOP: the final component is a symlink (O_NOFOLLOW refuses to open it).
                raise Refused(
                    f"cannot open {'/'.join(parts[: i + 1])} without following links "
                    f"({exc.strerror})"
                ) from None
            os.close(fd)
            fd = nxt
            st = os.fstat(fd)
            if stat.S_ISLNK(st.st_mode):
                raise Refused(f"symbolic link at {'/'.join(parts[: i + 1])}")
            if not last and not stat.S_ISDIR(st.st_mode):
                raise Refused(f"{'/'.join(parts[: i + 1])} is not a directory")
        if not stat.S_ISREG(st.st_mode):
            raise Refused("the uninstall script is not a regular file")
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def check_path(candidate: str, ascend_home: str | None, packages: set[str]) -> Checked:
    """Validate one uninstall path (C8); return it open, or raise Refused with why."""
    given, real = _home(ascend_home)
    if _BAD_CHARS.search(candidate):
        raise Refused("the path contains whitespace or control characters (ANSI escapes?)")
    if "\\" in candidate:
        raise Refused("the path contains undecodable bytes or backslashes")
    if not candidate.startswith("/"):
        raise Refused("not an absolute path")
    parts_all = candidate.split("/")[1:]
    if ".." in parts_all or "." in parts_all or "" in parts_all:
        raise Refused("the path contains '..', '.' or an empty component")
    prefix = next((p for p in (given, real) if candidate.startswith(p.rstrip("/") + "/")), None)
    if prefix is None:
        raise Refused(f"outside the install root {given}/{'/'.join(INSTALL_SUBDIR)}")
    rel = candidate[len(prefix.rstrip("/")) + 1 :].split("/")
    if rel == [*INSTALL_SUBDIR, SCRIPT]:
        raise Refused("the full-uninstall script ai_core/uninstall.sh is never run")
    if len(rel) != len(INSTALL_SUBDIR) + 2 or rel[: len(INSTALL_SUBDIR)] != list(INSTALL_SUBDIR):
        raise Refused(f"not <ASCEND_HOME_PATH>/{'/'.join(INSTALL_SUBDIR)}/<package>/{SCRIPT}")
    if rel[-1] != SCRIPT:
        raise Refused(f"not a package {SCRIPT}")
    package = rel[len(INSTALL_SUBDIR)]
    if not PACKAGE_RE.fullmatch(package):
        raise Refused(f"package name {package!r} has unexpected characters")
    if package not in packages:
        raise Refused(f"no {package}.run produced under the outputs directory")
    fd, st = _open_below(real, rel)
    try:
        expected = os.path.join(real, *rel)
        if os.path.realpath(candidate) != expected:
            raise Refused("the resolved path differs from the path given (a redirect)")
        by_path = os.stat(candidate, follow_symlinks=False)
        if (by_path.st_dev, by_path.st_ino) != (st.st_dev, st.st_ino):
            raise Refused("the path and the opened file differ (changed during the check)")
    except BaseException:
        os.close(fd)
        raise
    return Checked(candidate, package, fd, st.st_dev, st.st_ino)


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
            fd = create_exclusive(path, dumps({**head, "candidates": [], "notes": []}))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except FileExistsError:
            raise EvidenceError(
                f"{path}: already exists; a record is never overwritten (nothing was run)"
            ) from None
        except OSError as exc:
            raise EvidenceError(
                f"{path}: cannot create the record ({exc.strerror}); nothing was run"
            ) from None
        fsync_dir(path.parent)
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
class _Progress:
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
        if self.record is not None and candidate.action == "run":
            self.record.fill(self.result())

    def finish(self, notes: tuple[str, ...] = ()) -> UninstallResult:
        result = self.result(notes)
        if self.record is not None:
            self.record.fill(result, complete=True)
        return result


def _handle(
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
        return Candidate(path, source, "refused", str(why))
    try:
        if dry_run:
            return Candidate(
                path, source, "would-run", "valid package uninstall script", package=checked.package
            )
        if before_run is not None:
            before_run(Candidate(path, source, "running", _RUNNING, package=checked.package))
        ran, status, output, refusal = run_checked(checked, env=env, before_exec=before_exec)
    finally:
        checked.close()
    if not ran:
        return Candidate(path, source, "refused", refusal or "not run", package=checked.package)
    reason = refusal or ("exited 0" if status == 0 else f"exited {status}")
    return Candidate(path, source, "run", reason, status, output, checked.package)


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
    progress = _Progress(record, "from-log", ascend_home, str(outputs), dry_run)
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
                _handle(
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


def _start_matches(recorded: Any, pid: int) -> bool | None:
    """Does ``pid``'s start time equal the recorded one? None: cannot tell.

    Accepts the forms seen in the field: clock ticks since boot (int, /proc stat field
    22), epoch seconds (float, psutil ``create_time``) or an ISO timestamp.
    """
    st = observe.read_stat(pid)
    if st is None or st.zombie:
        return False
    if isinstance(recorded, bool) or recorded is None:
        return None
    epoch: float | None = None
    if isinstance(recorded, int) and recorded < 10**9:
        return recorded == st.start_ticks
    if isinstance(recorded, (int, float)):
        epoch = float(recorded)
    elif isinstance(recorded, str):
        try:
            epoch = _dt.datetime.fromisoformat(recorded).timestamp()
        except ValueError:
            try:
                epoch = float(recorded)
            except ValueError:
                return None
    if epoch is None:
        return None
    started = _boot_time() + st.start_ticks / observe.clock_ticks()
    # Start times in seconds are rounded by whoever wrote them: one second of slack.
    return abs(started - epoch) <= 1.0


def _boot_time() -> float:
    try:
        with open("/proc/stat", "rb") as fh:
            for line in fh:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


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
    outputs = outputs if outputs is not None else workdir / "static_kernel_compile_outputs"
    path = workdir / RECORDS
    progress = _Progress(
        record, "stale-records", ascend_home, str(outputs), dry_run, {"records": str(path)}
    )
    progress.start()
    packages = produced_packages(outputs)
    records, notes = load_records(path)
    candidates = progress.candidates
    for package, rec in records.items():
        source = f"record {package!r}"
        if not isinstance(rec, dict):
            candidates.append(Candidate("", source, "refused", "record is not an object"))
            continue
        upath = rec.get("uninstall_path")
        pid = rec.get("pid")
        if not isinstance(upath, str):
            candidates.append(Candidate("", source, "refused", "uninstall_path missing"))
            continue
        if not upath.endswith(".sh"):
            upath = upath.rstrip("/") + "/" + SCRIPT  # a record may name the package dir
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            candidates.append(Candidate(upath, source, "refused", "pid missing or invalid"))
            continue
        same = _start_matches(rec.get("process_start_time"), pid)
        if same is True:
            candidates.append(
                Candidate(upath, source, "kept", f"pid {pid} is alive with the same start time")
            )
            continue
        if same is None:
            candidates.append(
                Candidate(
                    upath,
                    source,
                    "kept",
                    f"pid {pid} is alive and the recorded start time cannot be compared; "
                    "not proven stale",
                )
            )
            continue
        why = "process gone or pid recycled (start time differs)"
        full = upath.endswith(f"/{INSTALL_SUBDIR[-1]}/{SCRIPT}")  # refused below, by name
        if not full and not upath.endswith(f"/{package}/{SCRIPT}"):
            candidates.append(
                Candidate(upath, source, "refused", f"record key {package!r} names another package")
            )
            continue
        c = _handle(
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


def write_record(path: Path, result: UninstallResult) -> None:
    """Write a finished result as a new record (never overwrites an earlier record)."""
    RecordWriter.create(path).fill(result, complete=True)
