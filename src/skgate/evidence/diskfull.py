"""A full evidence disk harms nothing (issue 21 s2, C4): the runner's side and the record.

With the evidence root on a full file system, an evidence write used to raise ENOSPC out
of the supervision loop: the runner died ("internal error"), and the compile, still
writing to its stdout pipe, died of SIGPIPE. skgate killed a compile. Now:

* the run log's sink (:class:`RunLog`) keeps draining the pipe when ``run.log`` cannot
  grow, and remembers at which byte it was truncated (the scanner still sees every byte);
* every other evidence write made during supervision (journal lines, manifests, the
  process journal) goes through :meth:`DiskFull.guard`: a full disk is noted in memory
  and the write dropped, never raised into supervision;
* after the tree is gone the runner waits for space, at most its frozen grace (issue 28:
  the wait had no bound, and ``skgate run`` hung for as long as the disk stayed full),
  cuts back a line of its own torn by the full disk, and writes ``diskfull.json``; the
  classifier then reads ``unknown`` ("evidence incomplete: disk full at ..."), never a
  verdict from evidence it knows is incomplete (C2, C3). When the grace passes, or at
  the first stop signal, the runner ends (exit 5) with one line: how much is free, then
  ``skgate recover ATTEMPT``. Meanwhile ``status`` says "finishing: evidence disk full"
  (:func:`disk_full_now`).

Any other OSError still propagates: only a full disk (ENOSPC, EDQUOT) is absorbed, and a
write that failed because the attempt's directory is no longer the one the runner made
(removed under it, or another directory put in its place, issue 28): the runner then
goes on supervising its command to its end, frozen timeout included, and finishes
nothing into that path (C1, C2.4, C4: it died at the next manifest, and its command ran
on unsupervised, a process that ignores SIGTERM never sent the SIGKILL of the grace).
A write that makes a file by its path (a manifest) checks the directory first (one
``lstat``, at most a few a second), so a directory put in its place never takes one; once
the directory is found gone or replaced, every later one is dropped. The journals,
appended through descriptors opened in the runner's own directory, cannot reach another.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from skgate.evidence import files
from skgate.model.errors import EvidenceError
from skgate.model.frozen import field, mutable, record
from skgate.model.schema import check_schema

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

DISKFULL = "diskfull.json"
#: ``skgate.diskfull/1`` first version (2026-12).
SCHEMA_DISKFULL = "skgate.diskfull/1"
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def _stamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


@mutable
class DiskFull:
    """The disk-full facts of one attempt, held in memory until they can be written."""

    first_wall: float | None = None
    first_file: str = ""
    dropped: int = 0
    log_truncated_at: int | None = None
    log_bytes: int = 0
    files_hit: list[str] = field(default_factory=list)
    #: The attempt directory the writes go to, and its (device, inode) when the runner
    #: made it (:meth:`watch_home`); when it was removed (:attr:`removed`).
    home: str = ""
    home_id: tuple[int, int] | None = None
    removed_wall: float | None = None

    @property
    def full(self) -> bool:
        return self.first_wall is not None

    @property
    def removed(self) -> bool:
        """Did a write fail because the attempt's directory is gone (see the module doc)?"""
        return self.removed_wall is not None

    def watch_home(self, attempt_dir: Path) -> None:
        st = os.stat(attempt_dir)
        self.home, self.home_id = str(attempt_dir), (st.st_dev, st.st_ino)

    def home_gone(self) -> bool:
        """Is the attempt's directory no longer the one the runner made (removed, or
        another in its place)? False when :meth:`watch_home` was never called."""
        if self.home_id is None:
            return False
        try:
            st = os.lstat(self.home)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self.home_id

    def note(self, what: str, exc: OSError) -> bool:
        """Remember a failed write; True when it was a full disk or the attempt's
        directory is gone (then it is absorbed)."""
        if exc.errno not in FULL_ERRNOS:
            if not self.home_gone():
                return False
            self.removed_wall = self.removed_wall or time.time()
            self.dropped += 1
            return True
        if self.first_wall is None:
            self.first_wall, self.first_file = time.time(), what
        if what not in self.files_hit:
            self.files_hit.append(what)
        self.dropped += 1
        return True

    def guard(
        self, fn: Callable[..., T], what: str, *, appends: bool = False, by_path: bool = False
    ) -> Callable[..., T | None]:
        """``fn`` with a full disk absorbed: the write is dropped and noted (C4: an
        evidence write never ends supervision).

        ``appends``: ``fn`` appends lines to ``what``; once one failed, the later ones are
        dropped too, until :meth:`record` has cut back the torn line the failure may have
        left: a line appended after it would be glued to it, a damaged record mid-file.
        ``by_path``: ``fn`` makes ``what`` by its path in the attempt's directory, which
        is checked to be the runner's own first (see the module doc)."""

        def guarded(*args: Any, **kwargs: Any) -> T | None:
            if by_path and (self.removed or self.home_gone()):
                # Removed, or another directory in its place: never written into.
                self.removed_wall = self.removed_wall or time.time()
                self.dropped += 1
                return None
            if appends and what in self.files_hit:
                self.dropped += 1
                return None
            try:
                return fn(*args, **kwargs)
            except OSError as exc:
                if not self.note(what, exc):
                    raise
                return None

        return guarded

    def describe(self) -> str:
        """``2026-12-02T00:10:00Z writing run.log; run.log truncated at byte 2093056 of
        4194400``: the one line the verdict quotes."""
        assert self.first_wall is not None
        text = f"{_stamp(self.first_wall)} writing {self.first_file}"
        if self.log_truncated_at is not None:
            text += (
                f"; run.log truncated at byte {self.log_truncated_at} of {self.log_bytes} "
                "the command wrote"
            )
        others = [f for f in self.files_hit if f != self.first_file]
        if others:
            text += f"; also lost writes to {', '.join(others)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_DISKFULL,
            "first_wall": self.first_wall,
            "first_file": self.first_file,
            "files": list(self.files_hit),
            "dropped_writes": self.dropped,
            "run_log_truncated_at": self.log_truncated_at,
            "run_log_bytes": self.log_bytes,
            "text": self.describe(),
        }

    def record(
        self,
        attempt_dir: Path,
        waiting: Callable[[str], None],
        *,
        bound: float,
        stopped: Callable[[], bool],
        poll: float = 0.05,
    ) -> bool:
        """Write ``diskfull.json`` as soon as space allows, waiting at most ``bound``
        seconds; False when the bound passed or ``stopped()`` said a stop signal came
        first (the attempt is then left for ``recover``, see :func:`still_full_line`).

        First a line of the journals torn by the full disk (the runner's own partial
        write) is cut back to the last whole line, so what follows is appended whole."""
        said = False
        give_up = time.monotonic() + bound
        while True:
            try:
                for name in (files.EVENTS, files.PROCS):
                    cut_torn_tail(attempt_dir / name)
                files.write_json_new(attempt_dir / DISKFULL, self.to_dict())
                return True
            except OSError as exc:
                if not is_full(exc):
                    raise
            if stopped() or time.monotonic() >= give_up:
                return False
            if not said:
                waiting(
                    f"skgate: the evidence disk is full ({self.describe()}); the command "
                    f"ran on undisturbed. Waiting up to {bound:g} s for space in "
                    f"{attempt_dir} to record that the evidence is incomplete (free space "
                    "there; a stop signal ends the wait and leaves it for 'skgate recover')"
                )
                said = True
            time.sleep(poll)


#: Below this many free bytes the evidence file system counts as full for ``status``:
#: less than one evidence file and its temporary copy (issue 28).
FULL_BELOW = 64 << 10


def disk_full_now(attempt_dir: Path) -> int | None:
    """Free bytes under ``attempt_dir`` when its file system is full now, else None."""
    free = free_bytes(attempt_dir)
    return free if free is not None and free < FULL_BELOW else None


def still_full_line(attempt_dir: Path, bound: float, signals: tuple[str, ...]) -> str:
    """The one line a runner ends with when space did not come back (exit 5)."""
    free = free_bytes(attempt_dir)
    ended = (
        f"{', '.join(signals)} ended the wait for space"
        if signals
        else f"no space came back within {bound:g} s (the grace)"
    )
    have = f"{free} bytes free" if free is not None else "free space unknown"
    return (
        f"the evidence disk under {attempt_dir} is full ({have}) and {ended}; the command "
        f"returned on its own and was not touched; free space there, then run "
        f"'skgate recover {attempt_dir}'"
    )


def cut_torn_tail(path: Path) -> None:
    """Cut a torn last line (no newline) that the full disk left of the runner's own
    write, so the next record is not glued to it (C3: every line whole)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, OSError):
        return
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        if os.pread(fd, 1, size - 1) == b"\n":
            return
        start = max(0, size - (1 << 20))
        tail = os.pread(fd, size - start, start)
        cut = tail.rfind(b"\n")
        os.ftruncate(fd, start + cut + 1 if cut >= 0 else start)
    finally:
        os.close(fd)


class RunLog:
    """The run log's sink: writes ``run.log`` until the disk is full, then keeps draining
    (the bytes still reach the scanner and the echo) and records where it was cut."""

    def __init__(self, fd: int, full: DiskFull) -> None:
        self.fd = fd
        self.full = full

    def write(self, data: bytes) -> None:
        self.full.log_bytes += len(data)
        if self.full.log_truncated_at is not None:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            if not self.full.note(files.RUN_LOG, exc):
                raise
            with contextlib.suppress(OSError):
                self.full.log_truncated_at = os.fstat(self.fd).st_size


@record
class DiskFullRecord:
    """``diskfull.json`` read back: the line the classifier quotes."""

    text: str

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DiskFullRecord:
        d = check_schema(data, SCHEMA_DISKFULL, where)
        text = d.get("text")
        if not isinstance(text, str):
            raise EvidenceError(f"{where}: field 'text' has the wrong type")
        return cls(text)


def read_diskfull(attempt_dir: Path) -> DiskFullRecord | None:
    path = attempt_dir / DISKFULL
    if not files.present(path):
        return None
    return DiskFullRecord.from_dict(files.read_json(path), str(path))


def free_bytes(path: Path) -> int | None:
    """Free bytes for an unprivileged writer on the file system of ``path`` (or of its
    nearest existing parent), None when that cannot be read."""
    for p in (path, *path.parents):
        try:
            st = os.statvfs(p)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


#: The preflight bound on free space under the evidence root (issue 21 s2): 1 GiB, set
#: in MiB by ``SKGATE_MIN_FREE_MB`` (0 turns the warning off).
MIN_FREE_ENV = "SKGATE_MIN_FREE_MB"
MIN_FREE_DEFAULT_MB = 1024


def low_space_warning(root: Path, env: Mapping[str, str]) -> list[str]:
    """Preflight's warnings: the root has less free space than the bound (and a bound
    that is not a number, which is then the default)."""
    raw = env.get(MIN_FREE_ENV, "").strip()
    said: list[str] = []
    try:
        bound_mb = int(raw) if raw else MIN_FREE_DEFAULT_MB
    except ValueError:
        said.append(
            f"skgate: warning: {MIN_FREE_ENV}={raw!r} is not a whole number of MiB; "
            f"checking against {MIN_FREE_DEFAULT_MB} MiB (set it to 0 to turn this off)"
        )
        bound_mb = MIN_FREE_DEFAULT_MB
    low = _low(root, bound_mb) if bound_mb > 0 else None
    return [*said, low] if low else said


def _low(root: Path, bound_mb: int) -> str | None:
    free = free_bytes(root)
    if free is None or free >= bound_mb * (1 << 20):
        return None
    return (
        f"skgate: warning: only {free // (1 << 20)} MiB free under the evidence root {root} "
        f"(less than {bound_mb} MiB, {MIN_FREE_ENV}); if it fills, the compile runs on but "
        "the evidence is incomplete and the verdict unknown: free space or use another --root"
    )
