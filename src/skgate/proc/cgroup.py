"""A cgroup v2 leaf per attempt: exact membership, and an event when the whole tree is gone.

Where a writable cgroup v2 hierarchy is available (detected, never assumed: a pure v2
mount, the ``unified`` mount of a hybrid host, or a systemd-delegated scope), the runner
creates a leaf under its *own* cgroup and the leader starts inside it. Every descendant
inherits the leaf whatever it does with sessions and process groups (``setsid``,
``setpgid``, double forks), so:

* membership is exact: ``cgroup.procs`` lists every owned process alive now, escapes
  included, and a reader in another process (``skgate status``) can ask it after the
  runner died;
* ``cgroup.events`` turns ``populated 0`` when the last member exits: an event-driven
  "the whole owned tree has returned" (``poll`` reports ``POLLPRI`` on a change);
* ``cpu.stat`` gives the tree's CPU time and, where the memory controller is enabled for
  the leaf, ``memory.peak`` its peak memory: evidence for the verdict.

The cgroup is for *knowing*; it kills only what the group signal would (C4: only the
runner's own process group, only at the frozen timeout or when told to stop).
:meth:`Leaf.kill` writes ``cgroup.kill`` for the group's SIGKILL, and the Supervisor asks
for it only while every member of the leaf is in that group (issue 21 s4: no escapee
and no process put there from outside is hit). Otherwise it writes only ``cgroup.procs``
(the runner moving *itself*), never ``cgroup.freeze``, and creates/removes its own leaf
directory.

Placement before exec, without ``preexec_fn`` (unsafe in a threaded runner): the runner
moves itself into the leaf, forks the leader (which inherits the leaf before it executes
anything), and moves itself back. :meth:`Leaf.create` proves both moves work before the
launch, so a runner can never be left inside its own leaf.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from skgate.model.frozen import record
from skgate.model.sources import SOURCE_CGROUP, SOURCES_VAR
from skgate.proc.observe import is_alive

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROC_SELF_CGROUP = Path("/proc/self/cgroup")
#: Every leaf is named ``skgate-<runner pid>-<runner start ticks>``.
LEAF_PREFIX = "skgate-"
PROC_SELF_MOUNTINFO = Path("/proc/self/mountinfo")


class CgroupUnavailable(Exception):
    """No writable cgroup v2 leaf can be made here; ``str()`` says why (one line)."""


@record
class Hierarchy:
    """Where this process sits in the cgroup v2 hierarchy."""

    mount: Path  # the cgroup2 mount point (``/sys/fs/cgroup`` or ``.../unified``)
    own: Path  # this process's cgroup directory under it
    kind: str  # "v2" (pure), "hybrid" (a cgroup2 mount beside v1 controllers)


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and i + 4 <= len(field):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def detect(
    cgroup_file: Path = PROC_SELF_CGROUP, mountinfo: Path = PROC_SELF_MOUNTINFO
) -> Hierarchy:
    """Find this process's cgroup v2 directory; :class:`CgroupUnavailable` if none."""
    try:
        lines = cgroup_file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CgroupUnavailable(f"cannot read {cgroup_file} ({exc.strerror})") from None
    rel = next((ln[3:] for ln in lines if ln.startswith("0::")), None)
    if rel is None:
        raise CgroupUnavailable("no cgroup v2 membership (a cgroup v1 only host)")
    try:
        mounts = mountinfo.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CgroupUnavailable(f"cannot read {mountinfo} ({exc.strerror})") from None
    v1 = False
    found: tuple[str, str] | None = None
    for ln in mounts:
        left, sep, right = ln.partition(" - ")
        if not sep:
            continue
        fstype = right.split()[0] if right.split() else ""
        parts = left.split()
        if len(parts) < 5:
            continue
        if fstype == "cgroup":
            v1 = True
        elif fstype == "cgroup2" and found is None:
            found = (_unescape(parts[3]), _unescape(parts[4]))
    if found is None:
        raise CgroupUnavailable("no cgroup2 filesystem is mounted")
    mroot, mpoint = found
    # Inside a cgroup namespace or a bind mount, the mount shows a subtree: strip it.
    if mroot != "/":
        if rel != mroot and not rel.startswith(mroot.rstrip("/") + "/"):
            raise CgroupUnavailable(
                f"this process's cgroup {rel} is outside the mounted cgroup2 tree {mroot}"
            )
        rel = rel[len(mroot.rstrip("/")) :] or "/"
    own = Path(mpoint) / rel.lstrip("/")
    if not (own / "cgroup.procs").exists():
        raise CgroupUnavailable(f"{own} is not a cgroup directory")
    return Hierarchy(mount=Path(mpoint), own=own, kind="hybrid" if v1 else "v2")


#: Held while this process may sit in a cgroup other than its own (the leaf's proof,
#: the launch). A child forked then is born in that cgroup, so code that forks helpers
#: from another thread (the hook probes, see skgate.preflight.early) holds it around the
#: fork: no helper is ever born inside an attempt's leaf.
MIGRATION_LOCK = threading.Lock()

#: After a move, the kernel's next move is quick for about one RCU grace period (its
#: cgroup migration lock is still in its fast state); after that, the first move waits a
#: whole grace period again. Measured on the 2-core host of issue 29: a move 1-8 ms after
#: the last took 0.05 ms, one 16-200 ms after it 7.9 ms. :meth:`Leaf.warm` moves again
#: this often, well inside that window, until the launch's own move.
WARM_EVERY = 0.004
#: :meth:`Leaf.warm` gives up after this long: a run's steps from the warming to the
#: launch take 20-60 ms; a preflight that waits for a foreign compiler (C4) takes much
#: longer, and its launch then pays one grace period, as it would without warming
#: (each move costs about 0.05 ms of kernel time: at most 125 of them).
WARM_LIMIT = 0.5


def _write_pid(procs: Path, pid: int) -> None:
    fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, f"{pid}\n".encode())
    finally:
        os.close(fd)


def read_pids(cgroup: Path) -> list[int]:
    """Members of ``cgroup`` and of any sub-cgroup below it (read-only); [] if gone.

    Plain ``os`` calls on ``str`` paths: the supervisor reads it at every scan (issue 29)."""
    pids: list[int] = []
    for path in _walk(os.fspath(cgroup)):
        with contextlib.suppress(OSError, ValueError):
            fd = os.open(f"{path}/cgroup.procs", os.O_RDONLY | os.O_CLOEXEC)
            try:
                chunks = []
                while chunk := os.read(fd, 65536):
                    chunks.append(chunk)
            finally:
                os.close(fd)
            pids.extend(int(x) for x in b"".join(chunks).split())
    return pids


def _walk(cgroup: str) -> Iterator[str]:
    if not os.path.isdir(cgroup):
        return
    yield cgroup
    with contextlib.suppress(OSError):
        for entry in os.scandir(cgroup):
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(entry.path)


def is_populated(cgroup: Path) -> bool | None:
    """``populated`` from ``cgroup.events``; None when the cgroup is gone or unreadable."""
    try:
        text = (cgroup / "cgroup.events").read_text()
    except OSError:
        return None
    return _populated(text)


def _populated(text: str) -> bool | None:
    for ln in text.splitlines():
        key, _, value = ln.partition(" ")
        if key == "populated":
            return value.strip() == "1"
    return None


class Leaf:
    """The attempt's leaf cgroup, created under the runner's own cgroup."""

    def __init__(self, hierarchy: Hierarchy, path: Path) -> None:
        self.hierarchy = hierarchy
        self.path = path
        self._events_fd = -1
        self._epoll: select.epoll | None = None
        self.removed = False
        #: Set by the launch's move into the leaf: :meth:`warm` stops there.
        self._entered = threading.Event()

    @classmethod
    def create(cls, name: str, hierarchy: Hierarchy | None = None) -> Leaf:
        """Make the leaf and prove the runner can move into it and back (or raise)."""
        hier = hierarchy or detect()
        path = hier.own / name
        try:
            os.mkdir(path, 0o755)
        except OSError as exc:
            raise CgroupUnavailable(
                f"cannot create a cgroup under {hier.own} ({exc.strerror}); it needs root "
                "or a delegated cgroup (e.g. systemd-run --user --scope -p Delegate=yes)"
            ) from None
        leaf = cls(hier, path)
        try:
            # A move to where the runner already is changes nothing but takes the kernel's
            # migration lock, whose first use can wait a whole RCU grace period (10-25 ms
            # here): paid now, outside MIGRATION_LOCK, the two real moves are quick.
            _write_pid(hier.own / "cgroup.procs", os.getpid())
            with MIGRATION_LOCK:
                _write_pid(path / "cgroup.procs", os.getpid())
                _write_pid(hier.own / "cgroup.procs", os.getpid())
        except OSError as exc:
            with MIGRATION_LOCK:
                leaf._back_home()
            leaf.remove()
            raise CgroupUnavailable(
                f"cannot move processes into {path} ({exc.strerror}); the cgroup is not "
                "delegated to this user"
            ) from None
        return leaf

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Run the block inside the leaf: a child forked in it is born a member."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def enter(self) -> None:
        """Move the runner into the leaf (OSError if refused); :meth:`leave` right after.
        Called under MIGRATION_LOCK, as :meth:`warm`'s moves are: warming stops here."""
        self._entered.set()
        _write_pid(self.path / "cgroup.procs", os.getpid())

    def leave(self) -> None:
        self._back_home()

    def warm(self, limit: float = 0.0, stop: Callable[[], bool] | None = None) -> None:
        """Take the kernel's cgroup migration lock without moving anything (a move to
        where the runner is), and again every ``WARM_EVERY`` seconds until the launch
        enters the leaf (:meth:`enter`), ``stop()`` is true or ``limit`` seconds have
        passed (0: once). The lock's first use after a quiet spell waits a whole RCU
        grace period (8-25 ms); done in another thread from before the launch on, the
        launch's own move into the leaf does not wait. Once was not enough: on a slowed
        runner (its start-up probe running, a busy host) the steps before the launch
        (control.json, the pipe keeper, the intent, each fsynced) outlast the window a
        move leaves open (issue 29: sampled, the launch's move waited 13-26 ms in 13 of
        24 such runs of ``run -- true``; with both cores busy, created -> launched took
        101-113 ms before and 90-100 ms with this).

        Each move is under MIGRATION_LOCK: during the launch the runner is inside the
        leaf, and a move "home" then would take it out before the leader is forked."""
        deadline = time.monotonic() + limit
        while True:
            with MIGRATION_LOCK:
                if self._entered.is_set():
                    return
                self._back_home()
            if time.monotonic() >= deadline or (stop is not None and stop()):
                return
            if self._entered.wait(WARM_EVERY):
                return

    def _back_home(self) -> None:
        with contextlib.suppress(OSError):
            _write_pid(self.hierarchy.own / "cgroup.procs", os.getpid())

    def members(self) -> list[int]:
        return read_pids(self.path)

    def kill(self) -> bool:
        """SIGKILL every member at once through ``cgroup.kill`` (Linux 5.14+): a fork in
        flight cannot slip past it as it can past a group signal. False where the file is
        missing or refused (the caller then signals the group)."""
        try:
            fd = os.open(self.path / "cgroup.kill", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            os.write(fd, b"1")
        except OSError:
            return False
        finally:
            os.close(fd)
        return True

    def populated(self) -> bool:
        """Is any process still in the leaf? Reading also re-arms the change event."""
        if self._events_fd >= 0:
            with contextlib.suppress(OSError):
                return bool(_populated(os.pread(self._events_fd, 4096, 0).decode()))
        return bool(is_populated(self.path))

    def watch_fd(self) -> int:
        """An fd that becomes readable when ``cgroup.events`` changes (``populated``)."""
        if self._epoll is None:
            self._events_fd = os.open(self.path / "cgroup.events", os.O_RDONLY | os.O_CLOEXEC)
            self._epoll = select.epoll()
            # kernfs reports a change as POLLPRI (the file is always "readable").
            self._epoll.register(self._events_fd, select.EPOLLPRI)
            self.populated()
        return self._epoll.fileno()

    def rearm(self) -> None:
        """Consume a change notification (call when :meth:`watch_fd` was readable)."""
        if self._epoll is not None:
            self._epoll.poll(0)
            self.populated()

    def stats(self) -> dict[str, Any]:
        """The tree's CPU time (``cpu.stat``) and, if the controller is on, peak memory."""
        out: dict[str, Any] = {}
        try:
            for ln in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = ln.partition(" ")
                if key in ("usage_usec", "user_usec", "system_usec"):
                    out[key] = int(value)
        except (OSError, ValueError):
            out["cpu_stat"] = "unreadable"
        try:
            out["memory_peak_bytes"] = int((self.path / "memory.peak").read_text().strip())
        except FileNotFoundError:
            out["memory_peak_bytes"] = None
            out["memory_note"] = "the memory controller is not enabled for this cgroup"
        except (OSError, ValueError):
            out["memory_peak_bytes"] = None
            out["memory_note"] = "memory.peak unreadable"
        return out

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
        if self._events_fd >= 0:
            os.close(self._events_fd)
            self._events_fd = -1

    def remove(self) -> bool:
        """Remove the leaf if it is empty; False (and it stays, as evidence) if not."""
        self.close()
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            self.removed = True
        except OSError:
            return False
        self.removed = True
        return True


def leaf_name(pid: int, start_ticks: int) -> str:
    return f"{LEAF_PREFIX}{pid}-{start_ticks}"


def sweep_stale(hierarchy: Hierarchy) -> list[str]:
    """Remove empty leaves of runners that are gone; the names removed.

    A runner that gave up on escaped survivors leaves its leaf in place (it still has
    members); once they exit the leaf is empty and nobody needs it. ``rmdir`` removes
    only an empty cgroup, so a leaf with a live member is never touched.
    """
    removed: list[str] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(hierarchy.own):
            parts = entry.name.split("-")
            if len(parts) != 3 or f"{parts[0]}-" != LEAF_PREFIX or not entry.is_dir():
                continue
            try:
                pid, ticks = int(parts[1]), int(parts[2])
            except ValueError:
                continue
            if is_alive(pid, ticks):
                continue
            with contextlib.suppress(OSError):
                os.rmdir(entry.path)
                removed.append(entry.name)
    return removed


def probe() -> str | None:
    """None when a leaf can be made and entered here, else the one-line reason."""
    try:
        leaf = Leaf.create(f"skgate-probe-{os.getpid()}")
    except CgroupUnavailable as exc:
        return str(exc)
    leaf.remove()
    return None


#: A leaf made ahead of the launch (:func:`make_leaf`): the leaf, or why there is none.
MadeLeaf = tuple["Leaf | None", "str | None"]


def make_leaf(allowed: frozenset[str], leaf_name: str) -> MadeLeaf:
    """The attempt's cgroup leaf, or the one-line reason there is none.

    Separate from :func:`skgate.proc.sources.open_sources` so that it can be made while
    the runner is still starting (:mod:`skgate.preflight.early`): the first move into a
    cgroup can wait a whole RCU grace period (see :meth:`Leaf.create`).
    """
    if SOURCE_CGROUP not in allowed:
        return None, f"not allowed by {SOURCES_VAR}"
    try:
        hier = detect()
        sweep_stale(hier)
        return Leaf.create(leaf_name, hier), None
    except CgroupUnavailable as exc:
        return None, str(exc)
