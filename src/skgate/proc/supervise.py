"""The supervised runner: launch, own, wait for natural return, and stop only at the deadline.

One :class:`Supervisor` runs one command in a dedicated process (the ``skgate run`` CLI,
or the child that :mod:`skgate.api` starts). It must own that process: it becomes a child
subreaper, installs signal handlers and reaps children, none of which a library may do
inside a caller's process.

How the rules become code:

* C4, ownership: the command starts in a new session, so its process group id is its pid.
  The runner is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a descendant whose parent
  dies is re-parented to the runner, not to init, so the owned tree never loses a member
  and nothing that existed before the launch can ever join it. The manifest is the walk of
  ``/proc/<pid>/task/*/children`` from the runner down, identified by (pid, start time).
* C4, termination: the only signals sent go to the process group the runner created, by
  ``killpg``, at the frozen deadline (SIGTERM, then SIGKILL after the grace) or when the
  runner itself is told to stop (forwarded). The leader is left a zombie, unreaped, until
  signalling is over: while it exists its pid, and so the group id, cannot be recycled,
  and ``killpg`` can never reach a stranger's group.
* C2.1, natural return: waiting is event-driven. SIGCHLD and the leader's pidfd wake the
  loop through ``signal.set_wakeup_fd``; the last process of a tree to die always has the
  runner as its parent (every ancestor died first, so it was re-parented here), so
  SIGCHLD is enough to see the end of the whole tree, not just of the leader.
* Escaped processes (an owned descendant that moved to another process group with
  ``setsid``) are owned, watched and waited for, but never signalled: the group signal
  cannot reach them and nothing else is allowed to. They are reported.
* C3, the exact record: the sources of :mod:`skgate.proc.sources` feed one
  :class:`~skgate.proc.owned.OwnedTree`: process events as they arrive (every fork, exec
  and exit, however short-lived), the scan every interval (fallback and cross-check), the
  reaper; the attempt's cgroup wakes the loop when its last member exits (``populated
  0``). None of them ever decides a signal: signals stay as above (C4).
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skgate.model.events import (
    Event,
    LeaderExited,
    Reaped,
    SignalReceived,
    SignalSent,
    Timeout,
    TreeEnded,
)
from skgate.model.running import Coverage, ProcessRecord
from skgate.model.signals import signal_name
from skgate.proc.observe import ProcStat, direct_children, is_alive, read_stat, tree
from skgate.proc.owned import OwnedTree
from skgate.proc.signals import STOP_SIGNALS, inherited_ignore
from skgate.proc.sources import Sources, coverage
from skgate.proc.waiting import waiting_line
from skgate.proc.waitstatus import cpu_seconds, decode_wait_status

#: While the owned tree is quiet, process events of the rest of the machine are read in
#: batches (they queue in the socket meanwhile): one wake per event of a busy host would
#: cost the runner more than 1 % of a core. The pause doubles from the first to the last
#: value while batches hold only foreign events; any owned event resets it and keeps
#: reading at once, so argv is read promptly while the tree is active.
EVENTS_COALESCE = (0.025, 0.2)

#: Signals that, sent to the runner, are forwarded to its own group (C2.4: external).
FORWARDED = STOP_SIGNALS

Emit = Callable[[Event], object]


@dataclass
class Outcome:
    """Facts of one supervised run, as the journal also recorded them."""

    pid: int
    pgid: int
    leader_exit_status: int | None = None
    leader_exit_signal: int | None = None
    timeout_fired: bool = False
    external_signals: list[int] = field(default_factory=list)
    escaped_alive: int = 0


class Supervisor:
    """Run one command under the gate. Use :meth:`launch`, then :meth:`wait`."""

    def __init__(
        self,
        argv: tuple[str, ...],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        grace: float,
        emit: Emit,
        sink: Callable[[bytes], None],
        on_manifest: Callable[[list[ProcessRecord], bool, Coverage], None],
        scan_interval: float = 1.0,
        on_tick: Callable[[int], None] | None = None,
        notify: Callable[[str], None] | None = None,
        on_process: Callable[[ProcessRecord], None] | None = None,
        on_scan: Callable[[list[tuple[int, int]]], None] | None = None,
        stop_request: Callable[[], dict[str, Any] | None] | None = None,
        sources: Sources | None = None,
        journal: Callable[[bytes], None] | None = None,
        progress_every: float = 30.0,
    ) -> None:
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.timeout = timeout
        self.grace = grace
        self.emit = emit
        self.sink = sink
        self.on_manifest = on_manifest
        self.scan_interval = scan_interval
        self.on_tick = on_tick
        self.notify: Callable[[str], None] = notify or (lambda _msg: None)
        # Stage hooks (C3): every new or exec'd owned process, and the (pid, start time)
        # of the owned processes alive at each scan and, with the events, at each change
        # of the tree (so the most opc alive at once is exact).
        self.on_process = on_process
        self.on_scan = on_scan
        self.stop_request = stop_request
        #: Seconds between "still waiting" lines once the leader returned (C2.1).
        self.progress_every = progress_every
        self.sources = sources or Sources()
        self.owned = OwnedTree()
        #: Receives the owned tree's fork/exec/exit lines as they are learnt (C3).
        self.journal: Callable[[bytes], None] = journal or (lambda _data: None)
        self.foreign_members: set[int] = set()  # in the leaf, not descended from the runner
        self.left_leaf: set[tuple[int, int]] = set()  # owned, alive, moved out of the leaf
        if on_process is not None:
            self.owned.on_process = lambda p: on_process(p.record())
        self._dirty = False
        self._next_manifest = 0.0
        self._pending: list[int] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._old_handlers: dict[int, Any] = {}
        self._wake_r = -1
        self._wake_w = -1
        self._old_wakeup = -1
        self._t0 = 0.0

    # -- signal plumbing ------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: object) -> None:
        # Handlers only note the signal; the loop acts on it (no work in handler context).
        self._pending.append(signum)

    def install_handlers(self) -> None:
        """Catch SIGCHLD and the stop signals before launch, so none is lost."""
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._old_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        for sig in (signal.SIGCHLD, *FORWARDED):
            if inherited_ignore(sig):
                continue  # nohup: an inherited ignore is kept, and the workload inherits it
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def pending_stops(self) -> list[int]:
        """Take the stop signals caught but not yet acted on (before launch, or after the
        loop ended): the runner records them; nothing is lost between two handlers."""
        return [s for s in self._drain_pending() if s != signal.SIGCHLD]

    def restore_handlers(self) -> None:
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()
        if self._wake_r >= 0:
            signal.set_wakeup_fd(self._old_wakeup)
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1

    # -- launch ---------------------------------------------------------------------

    def launch(self, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
        """Start the command in its own session. Raises OSError if it cannot start.

        ``pass_fds`` are inherited by the command (the device lease locks).
        """
        # The leader is forked inside the attempt's cgroup, so it is a member before it
        # executes anything (see skgate.proc.cgroup).
        with self.sources.placing():
            self._proc = subprocess.Popen(
                list(self.argv),
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                # C4: a new session makes the command the leader of a fresh process group
                # whose id is its own pid: the only group this runner may ever signal.
                start_new_session=True,
                close_fds=True,
                pass_fds=pass_fds,
            )
        return self._proc

    # -- the wait loop --------------------------------------------------------------

    def wait(self, launched_mono: float) -> Outcome:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        pid = proc.pid
        out = Outcome(pid=pid, pgid=pid)
        deadline = launched_mono + self.timeout
        self._t0 = launched_mono
        kill_at: float | None = None  # when SIGKILL goes to the group, once stopping began
        give_up_at: float | None = None  # when escaped survivors stop being waited for
        leader_done = False
        escalated = False
        pipe_fd = proc.stdout.fileno()
        os.set_blocking(pipe_fd, False)

        sel = selectors.DefaultSelector()
        sel.register(pipe_fd, selectors.EVENT_READ, "pipe")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        pidfd = -1
        with contextlib.suppress(OSError, AttributeError):
            pidfd = os.pidfd_open(pid)
            sel.register(pidfd, selectors.EVENT_READ, "pidfd")
        conn = self.sources.connector
        events_resume: float | None = None  # when the paused events fd is watched again
        pause = EVENTS_COALESCE[0]
        if conn is not None:
            sel.register(conn.fileno(), selectors.EVENT_READ, "events")
            self._read_events()  # what queued since the subscription, the launch included
        leaf = self.sources.leaf
        if leaf is not None:
            sel.register(leaf.watch_fd(), selectors.EVENT_READ, "cgroup")

        next_scan = time.monotonic()
        next_progress: float | None = None  # no "waiting for" line said yet
        check_children = True
        try:
            while True:
                now = time.monotonic()
                if events_resume is not None and now >= events_resume and conn is not None:
                    events_resume = None
                    sel.register(conn.fileno(), selectors.EVENT_READ, "events")
                if now >= next_scan:
                    self._read_events()  # first, so the scan cross-checks fresh events
                    if self._observe(time.time()):
                        self._dirty = True
                    self._flush_journal()
                    self._flush_manifest(now)
                    if self.on_tick is not None:
                        self.on_tick(self.owned.live_count())
                    if self.on_scan is not None:
                        self.on_scan(self.owned.alive_keys())
                    next_scan = now + self.scan_interval
                    check_children = True

                for signum in self._drain_pending():
                    if signum == signal.SIGCHLD:
                        check_children = True
                        continue
                    out.external_signals.append(signum)
                    asked = signum == signal.SIGTERM and self.stop_request is not None
                    stop = self.stop_request() if asked and self.stop_request else None
                    name = signal_name(signum)
                    self.emit(SignalReceived(signal=signum, name=name, stop_request=stop or None))
                    if stop is not None and kill_at is None and not escalated:
                        # 'skgate stop' ends it as the frozen timeout does (C4): SIGTERM to
                        # the own group, SIGKILL to it after the grace; nothing else.
                        self._signal_group(pid, signum, "stop-requested")
                        kill_at, escalated = now + self.grace, True
                        self.notify(
                            f"skgate: stop requested ({stop.get('reason')}); SIGTERM "
                            f"to group {pid}, SIGKILL after {self.grace:g} s"
                        )
                    elif len(out.external_signals) == 1:
                        # Forwarded to the own group only (C4), once. No automatic SIGKILL
                        # follows: only the frozen timeout may end what ignores it.
                        self._signal_group(pid, signum, "forwarded")
                        self.notify(
                            f"skgate: forwarded {signal_name(signum)} to the command's process "
                            f"group {pid}; send it again to SIGKILL that group"
                        )
                    elif not escalated:
                        # A second stop request is an explicit "now".
                        escalated = True
                        self._signal_group(pid, signal.SIGKILL, "escalated")
                        give_up_at = now + self.grace
                        check_children = True

                if not out.timeout_fired and now >= deadline:
                    check_children = True  # an exit that raced the deadline counts first
                if give_up_at is not None and now >= give_up_at:
                    check_children = True

                if check_children:
                    check_children = False
                    if not leader_done:
                        status = _peek_exit(pid)
                        if status is not None:
                            leader_done = True
                            out.leader_exit_status, out.leader_exit_signal = status
                            self.owned.mark_exit(pid, status, time.time())
                            self._dirty = True
                            self.emit(
                                LeaderExited(pid=pid, exit_status=status[0], exit_signal=status[1])
                            )
                            if pidfd >= 0:
                                sel.unregister(pidfd)
                                os.close(pidfd)
                                pidfd = -1
                    if self._reap_orphans(pid):
                        self._dirty = True
                    if leader_done:
                        self._read_events()
                        live = self._live_tree(pid)
                        if self._observe(time.time(), live):
                            self._dirty = True
                        self._flush_journal()
                        if live and not out.timeout_fired and give_up_at is None:
                            next_progress = self._say_waiting(out, live, deadline, next_progress)
                        if not live:
                            self.emit(TreeEnded(escaped_alive=0, runner_cpu_s=cpu_seconds()))
                            break
                        if give_up_at is not None and time.monotonic() >= give_up_at:
                            # Only escaped processes can be left: the group got SIGKILL.
                            # They are never signalled (C4); report them, stop waiting.
                            out.escaped_alive = len(live)
                            self.emit(
                                TreeEnded(
                                    escaped_alive=len(live),
                                    gave_up=True,
                                    pids=tuple(sorted(live)),
                                    runner_cpu_s=cpu_seconds(),
                                )
                            )
                            break

                # The frozen top-level timeout (C4): SIGTERM the own group, once.
                if not out.timeout_fired and now >= deadline:
                    out.timeout_fired = True
                    self.emit(Timeout(timeout=self.timeout))
                    self._signal_group(pid, signal.SIGTERM, "timeout")
                    kill_at = now + self.grace
                if kill_at is not None and now >= kill_at:
                    kill_at = None
                    # Even with the leader gone: what ignored SIGTERM must not survive.
                    self._signal_group(pid, signal.SIGKILL, "grace-expired")
                    give_up_at = now + self.grace
                    check_children = True

                wake = [next_scan, kill_at, give_up_at, events_resume]
                if not out.timeout_fired:
                    wake.append(deadline)
                horizon = min(w for w in wake if w is not None)
                wait_s = 0.0 if check_children else max(0.0, horizon - time.monotonic())
                for key, _ in sel.select(wait_s):
                    if key.data == "pipe":
                        self._read_pipe(pipe_fd, sel)
                    elif key.data == "wake":
                        _drain_fd(self._wake_r)
                    elif key.data == "pidfd":
                        check_children = True
                    elif key.data == "events" and conn is not None:
                        if self._read_events():
                            self._dirty = True
                            self._flush_journal()
                            pause = EVENTS_COALESCE[0]
                        else:
                            sel.unregister(conn.fileno())
                            events_resume = time.monotonic() + pause
                            pause = min(2 * pause, EVENTS_COALESCE[1])
                    elif key.data == "cgroup" and leaf is not None:
                        leaf.rearm()
                        check_children = True  # populated changed: the tree may have ended
        finally:
            self._drain_pipe(pipe_fd)
            with contextlib.suppress(KeyError, ValueError):
                sel.unregister(pipe_fd)
            sel.close()
            if pidfd >= 0:
                os.close(pidfd)
            proc.stdout.close()
        self._read_events()
        self._flush_journal()
        return out

    def _say_waiting(
        self, out: Outcome, live: dict[int, ProcStat], deadline: float, next_at: float | None
    ) -> float | None:
        """C2.1: the leader returned while owned processes live: say once what the run
        waits for, then every ``progress_every`` s (a person must not see a silent gate)."""
        now = time.monotonic()
        if next_at is not None and now < next_at:
            return next_at
        deadline_wall = time.time() + (deadline - now)
        self.notify(
            waiting_line(
                out.leader_exit_status,
                out.leader_exit_signal,
                live,
                deadline_wall,
                first=next_at is None,
                after=now - self._t0,
            )
        )
        return now + self.progress_every

    def finish_manifest(self) -> None:
        """The final manifest (``complete``), once the leader is reaped and the leaf gone."""
        self.sources.close()
        self.on_manifest(self.records(), True, self.coverage_of(True))

    def reap_leader(self) -> None:
        """Reap the leader zombie, only once no group signal can follow (see module doc)."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            _, status = os.waitpid(proc.pid, 0)
        except ChildProcessError:
            proc.returncode = 0
            return
        code, sig = decode_wait_status(status)
        proc.returncode = -sig if sig is not None else (code or 0)

    # -- helpers --------------------------------------------------------------------

    def _flush_manifest(self, now: float) -> None:
        """Write the manifest snapshot when it changed, at a bounded rate.

        The snapshot holds every process ever seen, so its cost grows with the tree; the
        next write waits at least a scan interval and 100 times the last write's duration,
        which keeps the manifest under 1 % of the runner's time on any tree. The final
        write (``complete=True``) is always made.
        """
        if not self._dirty or now < self._next_manifest:
            return
        self._dirty = False
        started = time.monotonic()
        self.on_manifest(self.records(), False, self.coverage_of(False))
        spent = time.monotonic() - started
        self._next_manifest = now + max(self.scan_interval, 100 * spent)

    def records(self) -> list[ProcessRecord]:
        return self.owned.records()

    def coverage_of(self, final: bool) -> Coverage:
        """How complete the record is, for ``ownership.json`` (C3)."""
        foreign, left = sorted(self.foreign_members), len(self.left_leaf)
        return coverage(self.sources, self.owned, final=final, foreign=foreign, left_cgroup=left)

    def _read_events(self) -> bool:
        conn = self.sources.connector
        return conn is not None and self.owned.drain(conn)

    def _flush_journal(self) -> None:
        data = self.owned.journal_lines()
        if data:
            self.journal(data)

    def _drain_pending(self) -> list[int]:
        # pop() is atomic against the handler (which only appends), so nothing is lost.
        got: list[int] = []
        while self._pending:
            got.append(self._pending.pop(0))
        return got

    def _signal_group(self, pgid: int, signum: int, reason: str) -> None:
        """Signal the own group, and only while it has a live member.

        With only the leader's zombie left there is nobody to signal: the event says so
        (``delivered: false``) instead of claiming a signal that reached no process.
        """
        delivered = False
        if self._live_tree(pgid, group_only=True):
            try:
                os.killpg(pgid, signum)
                delivered = True
            except ProcessLookupError:
                delivered = False
        self.emit(
            SignalSent(
                signal=int(signum),
                name=signal_name(signum),
                target=f"process group {pgid}",
                reason=reason,
                delivered=delivered,
            )
        )

    def _live_tree(self, leader: int, group_only: bool = False) -> dict[int, ProcStat]:
        """Live (non-zombie) descendants of the runner, excluding the leader's zombie.

        As a subreaper the runner keeps every descendant below it, so this is the whole
        owned tree. A process in the attempt's cgroup that is not below the runner was
        put there from outside: it is noted as foreign, never waited for or signalled.
        """
        live = {
            pid: st
            for pid, st in tree(os.getpid()).items()
            if not st.zombie and (not group_only or st.pgid == leader)
        }
        leaf = self.sources.leaf
        if leaf is not None and not group_only:
            members = set(leaf.members())
            for member in members:
                if member not in live and member != os.getpid():
                    self.foreign_members.add(member)
            for pid, st in live.items():
                # Alive after the members were read and not among them: it left (C3).
                if pid not in members and is_alive(pid, st.start_ticks):
                    self._dirty = self._dirty or (pid, st.start_ticks) not in self.left_leaf
                    self.left_leaf.add((pid, st.start_ticks))
        return live

    def track_leader(self, wall: float) -> None:
        """Record the leader at once: it may exit before the first scan."""
        proc = self._proc
        if proc is not None:
            self.owned.add_leader(proc.pid, tuple(self.argv), wall)
            self._flush_journal()

    def _observe(self, wall: float, live: dict[int, ProcStat] | None = None) -> bool:
        """One read-only scan of the owned tree; True when the manifest changed.

        The escape test is the process group of every observation (see proc.owned).
        """
        if live is None:
            live = self._live_tree(self.pid_or_zero())
        return self.owned.observe(live, wall)

    def pid_or_zero(self) -> int:
        return self._proc.pid if self._proc is not None else 0

    def _reap_orphans(self, leader: int) -> bool:
        """Reap re-parented descendants by pid (never the leader: see module doc).

        True when the manifest changed (a reaped process it had not seen yet, or an exit).
        """
        changed = False
        for child in direct_children(os.getpid()):
            if child == leader:
                continue
            # Read its identity before reaping: a zombie still has its stat record, so a
            # descendant that lived between two scans still enters the manifest.
            st = read_stat(child)
            try:
                got, status = os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                continue
            if got == 0:
                continue
            code, sig = decode_wait_status(status)
            self.owned.reaped(child, st, (code, sig), time.time())
            self.emit(Reaped(pid=child, exit_status=code, exit_signal=sig))
            changed = True
        return changed

    def _read_pipe(self, fd: int, sel: selectors.BaseSelector) -> None:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EINTR:
                sel.unregister(fd)
            return
        if not data:
            sel.unregister(fd)  # every writer closed the pipe; keep waiting for the tree
            return
        self.sink(data)

    def _drain_pipe(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                return
            if not data:
                return
            self.sink(data)


def _peek_exit(pid: int) -> tuple[int | None, int | None] | None:
    """The leader's exit, seen without reaping it (WNOWAIT keeps the zombie)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status, None
    return None, info.si_status


def _drain_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 512):
            pass
