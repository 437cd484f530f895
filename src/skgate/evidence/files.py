"""The attempt directory: file names, durable writes and the event journal.

Every box of the pipeline reads and writes the attempt directory; nothing passes hidden
state, so ``status``, ``classify`` and ``report`` can run later, from another process.

Durability rules (C3, C4 last bullet: evidence is never lost or rewritten):

- every evidence file appears whole or not at all: it is written under a temporary name
  in the same directory, fsync'd, then linked to its final name (never over an existing
  one: a second write of the same file is refused, never a silent overwrite), and the
  directory is fsync'd; a runner killed at any instant leaves at most a dot-named
  ``*.tmp`` file, never a truncated ``verdict.json`` (issue 12);
- the ownership manifest is a snapshot while the attempt runs, replaced atomically
  (temp file + rename), so a reader never sees half a file;
- ``events.jsonl`` is append-only, one JSON object per line, flushed and fsync'd as each
  event happens, so a runner that is killed leaves its journal up to that moment (the
  runner's tree-end lines are written at once and fsync'd with what follows them, before
  ``verdict.json``: see ``skgate.runner.attempt.SYNCED_LATER``).
"""

from __future__ import annotations

import _thread
import errno
import os
import stat
import time

from skgate.evidence import ledger_seals, pathtext, regular, sealed
from skgate.model import jsonread
from skgate.model.errors import (
    EvidenceError,
    EvidenceExistsError,
    RootUnwritableError,
    UsageError,
)
from skgate.model.frozen import replace

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path
    from typing import Any

    # An annotation only: reading verdict.json (skgate status) loads no event types.
    from skgate.model.events import Event

#: The evidence root when none is given (here, so the CLI names it without the ledger).
#: Text, not a ``Path``: the read side loads no ``pathlib`` (issue 29); ``Path(...)`` it
#: where a path object is needed.
DEFAULT_ROOT = "skgate-runs"
CONTROL = ledger_seals.CONTROL
OWNERSHIP = "ownership.json"
EVENTS = ledger_seals.EVENTS
#: The owned tree's fork/exec/exit lines, appended as the runner learns them (C3); a
#: reader after a runner death finds there which owned processes were last known alive.
PROCS = "procs.jsonl"
RUN_LOG = "run.log"
SUMMARY = "summary.txt"
LOGSCAN = "logscan.json"
CENSUS = "census.json"
STAGES = "stages.json"
#: ``--enforce-jobs`` (C5): the op_compiler shim installed for the attempt, and the two
#: argvs it leaves per call (read by :mod:`skgate.evidence.shim_calls`).
SHIM_BIN = "shim/bin"
SHIM_CALLS = "shim/calls"
VERDICT = "verdict.json"
SEAL = ledger_seals.SEAL
#: Written by ``skgate regress`` into its own evidence root (never into an attempt).
REGRESS_FILE = "regress.json"


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a create or rename in it survives a crash); best effort."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def json_text(data: Any, *, indent: int | None = None) -> str:
    """JSON of evidence, always encodable as UTF-8, losslessly.

    Names and arguments that are not UTF-8 (a GBK file name on a Chinese host) reach
    Python as ``surrogateescape`` text; written raw they cannot be encoded (an evidence
    file must never be lost to that). Such text is written with ASCII escapes instead
    (``\\udcb2``), which JSON readers turn back into the same string, and
    ``os.fsencode`` into the original bytes (issue 12).
    """
    import json  # noqa: PLC0415 - writers only: a read (skgate status) never loads it (issue 29)

    separators = None if indent is not None else (",", ":")
    text = json.dumps(data, indent=indent, ensure_ascii=False, separators=separators)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, indent=indent, ensure_ascii=True, separators=separators)
    return text


def dumps(data: Any) -> str:
    return json_text(data, indent=2) + "\n"


def verdict_bytes(verdict: Mapping[str, Any]) -> tuple[bytes, str]:
    """``verdict.json``'s bytes and their sha256, which the writer journals (the
    ``verdict_hash`` record) before it links them: in an attempt not sealed yet, the only
    record of which verdict is its own (C2.5; skgate.evidence.recorded.foreign_verdict)."""
    from skgate.evidence.digest import sha256_bytes  # noqa: PLC0415 - writers only

    data = _payload(dumps(verdict))
    return data, sha256_bytes(data)


def _payload(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def create_exclusive(path: Path, text: str | bytes) -> int:
    """Create ``path`` (``O_EXCL``, mode 0644) and write ``text``; return the open fd.

    The exclusive-create step under every evidence writer (on a temporary name, see
    ``replace_text``: final names are only ever linked, whole): ``FileExistsError`` if
    anything is at ``path`` (never an overwrite), any other ``OSError`` as raised. The
    caller fsyncs and closes the descriptor (alone or batched, see ``write_batch_new``).
    """
    payload = _payload(text)  # before creating: a text that cannot be encoded leaves no file
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, payload)
    except BaseException:
        os.close(fd)
        _unlink_quietly(path)  # never a half-written file left behind
        raise
    return fd


def _unlink_quietly(path: Path) -> None:
    # Not ``contextlib.suppress``: an import ``skgate status`` does without (issue 29).
    try:  # noqa: SIM105
        os.unlink(path)
    except OSError:
        pass


def temp_name(path: Path) -> Path:
    """A fresh temporary name beside ``path`` (dot-named, ends in ``.tmp``, holds our pid)."""
    return path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def is_temp_name(name: str) -> bool:
    """Is ``name`` a temporary file of :func:`temp_name` (never published evidence)?"""
    return name.startswith(".") and name.endswith(".tmp")


def _create_temp(path: Path, text: str | bytes) -> tuple[Path, int]:
    """Write ``text`` to a new temporary file beside ``path``; return its name and open fd."""
    for _ in range(100):
        tmp = temp_name(path)
        try:
            return tmp, create_exclusive(tmp, text)
        except FileExistsError:
            continue  # a leftover of the same name: draw another
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


def _publish(tmp: Path, path: Path, only_new: bool) -> None:
    if only_new:
        _link_new(tmp, path)
    else:
        os.replace(tmp, path)


def replace_text(
    path: Path, text: str | bytes, *, sync: bool = True, only_new: bool = False
) -> None:
    """Put ``text`` at ``path`` atomically: temp file in the same directory, then rename.

    A reader or a crash sees the previous or the next complete file, never half of one.
    ``sync=True`` fsyncs the temp file before the rename and the directory after it, so
    the new content is durable when this returns; ``sync=False`` leaves both flushes to
    the caller. ``only_new=True`` refuses with ``FileExistsError`` if anything is at
    ``path`` (a hard link, which cannot race a new file; a checked rename on file
    systems without links). Other failures raise ``OSError``; the temp file never stays
    behind (except after a SIGKILL, as a dot-named ``*.tmp`` that is never evidence).
    """
    tmp, fd = _create_temp(path, text)
    try:
        try:
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        _publish(tmp, path, only_new)
    finally:
        _unlink_quietly(tmp)
    if sync:
        fsync_dir(path.parent)


def _link_new(tmp: Path, path: Path) -> None:
    """Put ``tmp`` at ``path`` only if nothing is there (``FileExistsError`` otherwise)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # A file system without hard links: fall back to a checked rename.
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(tmp, path)


def _exists_error(path: Path) -> EvidenceError:
    return EvidenceExistsError(str(path))


def write_new(path: Path, text: str | bytes) -> None:
    """Create ``path`` whole and durably; refuse if it exists (never overwrite)."""
    try:
        replace_text(path, text, only_new=True)
    except FileExistsError:
        raise _exists_error(path) from None


def _fsync_all(fds: tuple[int, ...]) -> None:
    """fsync every descriptor at once, one thread each; the first error is raised.

    Concurrent fsyncs share one journal commit and their disk cache flushes merge (one
    after the other, each fsync after the first still flushes the disk's cache: 14-24 ms
    for 12 files on this project's shared ext4 host under load, against 5 ms at once).
    Low-level threads (``_thread``, loaded in every interpreter): ``threading.Thread.start``
    waits until each new thread has run, which on a busy CPU costs a scheduling delay per
    file, one after the other (8-10 ms for the same 12 files); ``concurrent.futures``'s
    import alone costs every run's start-up more than this whole flush (issue 29).
    """
    errors: list[OSError] = []
    left = [len(fds)]
    count = _thread.allocate_lock()
    done = _thread.allocate_lock()
    done.acquire()

    def flush(fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            errors.append(exc)
        finally:
            with count:
                left[0] -= 1
                if left[0] == 0:
                    done.release()

    for fd in fds:
        try:
            _thread.start_new_thread(flush, (fd,))
        except RuntimeError:  # no thread to be had: this one here, now
            flush(fd)
    if fds:
        done.acquire()
    if errors:
        raise errors[0]


def write_batch_new(
    directory: Path,
    items: Mapping[str, str | bytes],
    also_sync: Iterable[int] = (),
    *,
    sync_dir: bool = True,
) -> None:
    """Create several evidence files, each whole or not at all, durable all at once.

    The files are written under temporary names and fsync'd all at once
    (:func:`_fsync_all`), then linked to their final names, and the directory is fsync'd
    once: concurrent fsyncs share one journal commit on ext4/xfs, so four files cost about
    one flush instead of eight (the runner's last-exit-to-verdict latency). ``also_sync``
    adds already open descriptors (the run log) to the same flush. ``sync_dir=False`` leaves
    the directory's fsync to the caller's next write in it (the runner's verdict.json:
    one directory fsync makes its links and these durable, in the order they were made).
    """
    for name in items:
        if os.path.lexists(directory / name):
            raise _exists_error(directory / name)
    temps: list[tuple[Path, Path]] = []
    fds: list[int] = []
    try:
        for name, text in items.items():
            tmp, fd = _create_temp(directory / name, text)
            temps.append((tmp, directory / name))
            fds.append(fd)
        _fsync_all((*fds, *also_sync))
        for fd in fds:
            os.close(fd)
        fds.clear()
        for tmp, path in temps:
            try:
                _link_new(tmp, path)
            except FileExistsError:
                raise _exists_error(path) from None
    finally:
        for fd in fds:
            os.close(fd)
        for tmp, _ in temps:
            _unlink_quietly(tmp)
    if sync_dir:
        fsync_dir(directory)


def write_json_new(path: Path, data: Any) -> None:
    write_new(path, dumps(data))


def replace_json(path: Path, data: Any, *, sync: bool = True) -> None:
    """Atomically replace a snapshot file (see :func:`replace_text`)."""
    replace_text(path, dumps(data), sync=sync)


def read_json(path: Path | str, limit: int | None = None) -> Any:
    """Read an evidence JSON file; any problem is a one-line EvidenceError.

    Read as a regular file only, within the bound of its kind (``regular.read_bytes``):
    a link, a FIFO or an oversized file is refused, never followed, waited on or read
    whole (issue 21; C2: a verdict comes only from the attempt's own evidence).
    """
    try:
        data = sealed.read_bytes(path, limit)
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing") from None
    try:
        return jsonread.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"{path}: unreadable ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # json.JSONDecodeError (skgate.model.jsonread)
        raise EvidenceError(
            f"{path}: not valid JSON (truncated or damaged at line {jsonread.error_line(exc)})"
        ) from None
    except RecursionError:
        raise EvidenceError(f"{path}: not valid JSON (nested too deeply; damaged)") from None


class Journal:
    """The append-only, fsync'd event journal of one attempt (``events.jsonl``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Regular file only, never through a link: a recover must not write outside the
        # attempt (issue 21).
        self._fd = regular.open_append(path)
        #: Lines written since the last fsync (``emit(sync=False)``).
        self.unsynced = False

    def emit(self, event: Event, *, sync: bool = True) -> Event:
        """Append ``event``, stamped with the time now; the stamped event is returned.

        The line is the envelope and the fields in their declared order
        (``Event.to_dict``): the same bytes as every earlier version wrote (C3).
        ``sync=False``: the line is written (a reader, or a runner killed a moment later,
        still finds it) but made durable only by the next synced line or :meth:`sync`."""
        stamped = replace(event, t=time.time())
        line = json_text(stamped.to_dict()) + "\n"
        os.write(self._fd, line.encode("utf-8"))
        # fsync per event: a runner killed a moment later still leaves this record (C3).
        if sync:
            os.fsync(self._fd)
        self.unsynced = not sync
        return stamped

    def sync(self) -> None:
        """Make the lines written with ``sync=False`` durable (one fsync), if any."""
        if self.unsynced and self._fd >= 0:
            os.fsync(self._fd)
            self.unsynced = False

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AppendFile:
    """A new append-only evidence file, written as facts are learnt (``procs.jsonl``).

    Not fsync'd per write: a runner killed later still leaves what it wrote in the page
    cache for a reader on this boot; the runner's final flush makes it durable.
    """

    def __init__(self, path: Path) -> None:
        self.fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644
        )

    def __call__(self, data: bytes) -> None:
        _write_all(self.fd, data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def present(path: Path | str) -> bool:
    """Is anything at ``path``, a dangling link included (``Path.exists`` follows links:
    a linked evidence file must be refused when read, never taken as missing; issue 21).
    In a sealed attempt a sealed file gone or resized is a ``SealBreachError`` (issue 28)."""
    return sealed.present(path)


def is_attempt_dir(path: Path | str) -> bool:
    return pathtext.is_file(pathtext.join(path, CONTROL))


def require_dir(path: Path, what: str, hint: str, *, follow_links: bool = False) -> None:
    """``path`` must be a directory (a symbolic link to one only with ``follow_links``):
    else a one-line UsageError saying which of missing / a file / a link it is (``what``
    names it, ``hint`` says what to do)."""
    try:
        st = os.stat(path) if follow_links else os.lstat(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such {what} ({hint})") from None
    except OSError as exc:
        raise UsageError(f"{path}: {what} cannot be read ({exc.strerror}); {hint}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"{path}: is a symbolic link, not a {what} ({hint})")
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path}: is a file, not a directory; {hint}")


def require_file(path: Path, what: str, hint: str) -> None:
    """``path`` must be a regular file (a one-line UsageError otherwise, as above)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such {what} ({hint})") from None
    except OSError as exc:
        raise UsageError(f"{path}: {what} cannot be read ({exc.strerror}); {hint}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path}: is a directory, not a {what}; {hint}")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{path}: is not a regular file, not a {what}; {hint}")


def check_root(root: Path) -> None:
    """Refuse an evidence root that cannot hold attempts, without creating anything.

    A --root that is a file, a dangling link or unwritable is bad input (exit 2, nothing
    recorded, nothing run: skgate never runs unrecorded), the same rule as --cwd and
    every other path a command is given (issue 23); ``skgate preflight`` says the same."""
    for part in (root, *root.parents):
        if os.path.lexists(part):
            if not part.is_dir():
                what = "a dangling symbolic link" if part.is_symlink() else "not a directory"
                raise UsageError(
                    f"evidence root {root} (or a part of it) is {what}; choose a writable "
                    "--root (skgate never runs unrecorded)"
                )
            if not os.access(part, os.W_OK | os.X_OK):
                raise RootUnwritableError(
                    f"evidence root {root} cannot be written; choose a writable --root "
                    "(skgate never runs unrecorded)"
                )
            return
