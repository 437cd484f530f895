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
  ``killpg`` (SIGKILL by the leaf's ``cgroup.kill`` when the leaf is exactly the group),
  at the frozen deadline or when the runner itself is told to stop: the signal, then
  SIGKILL after the grace (the policy: :mod:`skgate.proc.termination`), and only while
  the group has a live member. The leader is left a zombie, unreaped, until
  signalling is over: while it exists its pid, and so the group id, cannot be recycled,
  and ``killpg`` can never reach a stranger's group.
* C2.1, natural return: waiting is event-driven. SIGCHLD and the leader's pidfd wake the loop
  through ``signal.set_wakeup_fd``; the last process of a tree to die always has the runner
  as its parent (every ancestor died first, so it was re-parented here), so SIGCHLD is
  enough to see the end of the whole tree, not just of the leader.
* Escaped processes (an owned descendant that moved to another process group with
  ``setsid``) are owned, watched and waited for, but never signalled: the group signal
  cannot reach them and nothing else is allowed to. They are reported.
* C3, the exact record: the sources of :mod:`skgate.proc.sources` feed one
  :class:`~skgate.proc.owned.OwnedTree`: process events as they arrive (every fork, exec
  and exit, however short-lived), the scan (fallback and cross-check, paced by
  :mod:`skgate.proc.scanpace`), the reaper; the attempt's cgroup wakes the loop when its
  last member exits (``populated 0``). None of them ever decides a signal (C4).
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator

from skgate.model.events import (
    LeaderExited,
    Reaped,
    SignalReceived,
    SignalSent,
    Timeout,
    TreeEnded,
)
from skgate.model.running import Coverage, ProcessRecord
from skgate.model.signals import signal_name
from skgate.proc.eventpace import EventsPace
from skgate.proc.observe import ProcStat, direct_children, is_alive, read_stat, tree
from skgate.proc.outpipe import OutputPipe, drain, read_chunk
from skgate.proc.owned import OwnedTree
from skgate.proc.scanpace import ScanPace
from skgate.proc.signals import STOP_SIGNALS, inherited_ignore
from skgate.proc.sources import Sources, coverage
from skgate.proc.supervisor_types import Any, Outcome, SupervisorConfig, SupervisorObserver
from skgate.proc.termination import Action, Reason, RecordTimeout, Termination
from skgate.proc.waiting import waiting_line
from skgate.proc.waitstatus import cpu_seconds, decode_wait_status, drain_fd, peek_exit

#: Signals that, sent to the runner, are forwarded to its own group (C2.4: external).
FORWARDED = STOP_SIGNALS

__all__ = ["Outcome", "Supervisor", "SupervisorConfig", "SupervisorObserver"]


class Supervisor:
    """Run one command under the gate. Use :meth:`launch`, then :meth:`wait`."""

    def __init__(
        self, config: SupervisorConfig, observer: SupervisorObserver, sources: Sources | None = None
    ) -> None:
        self.config = config
        self.observer = observer
        self.emit = observer.emit
        self.sources = sources or Sources()
        self.owned = OwnedTree()
        self.owned.on_process = lambda p: observer.process(p.record())
        self.foreign_members: set[int] = set()  # in the leaf, not descended from the runner
        self.left_leaf: set[tuple[int, int]] = set()  # owned, alive, moved out of the leaf
        #: The runner's own helpers (the pipe keeper, skgate.proc.keeper): its children,
        #: never part of the owned tree, never waited for, reaped or signalled here (C4).
        self.helpers: set[int] = set()
        self._out: OutputPipe | None = None  # the output pipe, when made before the launch
        self._dirty = False
        self._next_manifest = 0.0
        self._pending: list[int] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._old_handlers: dict[int, Any] = {}
        self._wake_r = -1
        self._wake_w = -1
        self._old_wakeup = -1
        self._t0 = 0.0
        # The wait loop's state (see wait): one fd -> handler table, the policy, the clock.
        self._sel: selectors.BaseSelector = selectors.DefaultSelector()
        self._handlers: dict[int, Callable[[], None]] = {}
        self._policy = Termination(launched=0.0, timeout=config.timeout, grace=config.grace)
        self._look = True  # the children must be looked at before the next wait
        self._leader_done = False
        self._pidfd = -1
        self._pace = ScanPace(config.scan_interval)  # when the next scan is due
        self._next_progress: float | None = None  # no "waiting for" line said yet
        self._events = EventsPace()  # when the host's events are read while the tree is quiet
        self._stop: dict[str, Any] | None = None

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

    def output_pipe(self) -> int:
        """The output pipe, made before the launch: its read end (skgate.proc.outpipe)."""
        self._out = OutputPipe()
        return self._out.read_fd

    def close_output(self) -> None:
        if self._out is not None:
            self._out.close()

    def launch(self, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes] | None:
        """Start the command in its own session. Raises OSError if it cannot start;
        None, with nothing forked, when a stop signal came first (see :meth:`pending_stops`).

        ``pass_fds`` are inherited by the command (the device lease locks).
        """
        # The leader is forked inside the attempt's cgroup, so it is a member before it
        # executes anything (see skgate.proc.cgroup).
        with self.sources.placing():
            # Issue 21 s4: a stop signal caught since the handover (entering the leaf can
            # wait tens of ms for the migration lock) refuses the fork: nothing is run
            # that would at once be interrupted; the attempt ends not started (C2.4).
            if any(s != signal.SIGCHLD for s in self._pending):
                return None
            try:
                self._proc = subprocess.Popen(
                    list(self.config.argv),
                    cwd=self.config.cwd,
                    env=dict(self.config.env),
                    stdin=subprocess.DEVNULL,
                    stdout=self._out.write_fd if self._out else subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    # C4: a new session makes the command the leader of a fresh process
                    # group whose id is its own pid: the only group this runner may signal.
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=pass_fds,
                )
            finally:
                if self._out is not None:
                    self._out.handed_over()
        return self._proc

    def _output_fd(self) -> int:
        if self._out is not None:
            return self._out.read_fd
        assert self._proc is not None and self._proc.stdout is not None
        return self._proc.stdout.fileno()

    # -- the wait loop --------------------------------------------------------------

    def wait(self, launched_mono: float) -> Outcome:
        """Wait for the whole owned tree, acting only as the termination policy says."""
        proc = self._proc
        assert proc is not None
        out = Outcome(pid=proc.pid, pgid=proc.pid)
        self._t0 = launched_mono
        cfg = self.config
        self._policy = Termination(launched=launched_mono, timeout=cfg.timeout, grace=cfg.grace)
        self._pace.next_at = cfg.clock()
        with self._watching(self._output_fd()):
            while not self._step(out):
                pass
        self._read_events()
        self._flush_journal()
        return out

    def _step(self, out: Outcome) -> bool:
        """One turn of the loop; True once the tree ended (or only escapees are left)."""
        now = self.config.clock()
        if self._events.due(now):
            self._events_batch(listening=False)  # in this turn: no second turn to read it
        if now >= self._pace.next_at:
            self._scan(now)
        for signum in self._drain_pending():
            if signum == signal.SIGCHLD:
                self._look = True
            else:
                self._received(out, signum, now)
        if self._policy.look_first(now):
            self._look = True  # an exit that raced the deadline counts first (C2.1)
        if self._look:
            self._look = False
            if self._tree_done(out, now):
                return True
        self._perform(out, self._policy.advance(now))
        due = (self._pace.next_at, self._policy.wake_at(), self._events.resume_at)
        wake = [t for t in due if t]
        wait_s = 0.0 if self._look else max(0.0, min(wake) - self.config.clock())
        for key, _ in self._sel.select(wait_s):
            self._handlers[key.fd]()
        return False

    @contextlib.contextmanager
    def _watching(self, pipe_fd: int) -> Iterator[None]:
        """The fd dispatch table of the loop (fd -> handler), closed on every way out."""
        os.set_blocking(pipe_fd, False)
        self._sel = selectors.DefaultSelector()
        self._handlers = {pipe_fd: functools.partial(self._read_pipe, pipe_fd)}
        self._handlers[self._wake_r] = self._on_wake
        with contextlib.suppress(OSError, AttributeError):
            self._pidfd = os.pidfd_open(self.pid_or_zero())
            self._handlers[self._pidfd] = self._on_change
        conn, leaf = self.sources.connector, self.sources.leaf
        if conn is not None:  # its doorbell where there is one (skgate.proc.eventpace)
            self._handlers[(conn.doorbell or conn).fileno()] = self._on_events
        if leaf is not None:
            self._handlers[leaf.watch_fd()] = self._on_cgroup
        for fd in self._handlers:
            self._sel.register(fd, selectors.EVENT_READ)
        if conn is not None:
            self._read_events()  # what queued since the subscription, the launch included
            self._events.start(self.config.clock(), bell=conn.doorbell is not None)
        try:
            yield
        finally:
            drain(pipe_fd, self.observer.output)
            self._sel.close()
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1
            proc = self._proc
            if proc is not None and proc.stdout is not None:
                proc.stdout.close()
            self.close_output()

    def _scan(self, now: float) -> None:
        moved = self._read_events()  # first, so the scan cross-checks fresh events
        leaf_facts = (len(self.foreign_members), len(self.left_leaf))
        found = self._observe(time.time())  # C3: what the events did not report
        found |= leaf_facts != (len(self.foreign_members), len(self.left_leaf))
        self._dirty = self._dirty or moved or found
        self._flush_journal()
        self._flush_manifest(now)
        self.observer.tick(self.owned.live_count())
        self.observer.scan(self.owned.alive_keys())
        self._pace.after_scan(now, self.sources, agreed=not (moved or found))
        self._look = True

    def _received(self, out: Outcome, signum: int, now: float) -> None:
        """A stop signal reached the runner (C2.4): journal it, then act as the policy says."""
        out.external_signals.append(signum)
        stop = self.observer.stop_request() if signum == signal.SIGTERM else None
        self.emit(
            SignalReceived(signal=signum, name=signal_name(signum), stop_request=stop or None)
        )
        self._stop = stop or self._stop
        self._perform(out, self._policy.stop_signal(signum, now, requested=stop is not None))

    def _perform(self, out: Outcome, actions: list[Action]) -> None:
        """Do what the policy decided; nothing here decides (see skgate.proc.termination)."""
        pid, grace = out.pgid, self.config.grace
        for act in actions:
            if isinstance(act, RecordTimeout):
                out.timeout_fired = True
                self.emit(Timeout(timeout=self.config.timeout))
                continue
            self._signal_group(pid, act.signum, act.reason.value)
            if act.reason is Reason.STOP_REQUESTED:
                why = self._stop.get("reason") if self._stop else None
                self.observer.note(
                    f"skgate: stop requested ({why}); SIGTERM to group {pid}, "
                    f"SIGKILL after {grace:g} s"
                )
            elif act.reason is Reason.FORWARDED:
                self.observer.note(
                    f"skgate: forwarded {signal_name(act.signum)} to the command's process group "
                    f"{pid}; SIGKILL to it after {grace:g} s (send it again to SIGKILL it now)"
                )
            if act.signum == signal.SIGKILL:
                self._look = True

    def _tree_done(self, out: Outcome, now: float) -> bool:
        """Look at the children: True when the whole tree ended or waiting gives up."""
        pid = out.pid
        if not self._leader_done and (status := peek_exit(pid)) is not None:
            self._leader_done = True
            out.leader_exit_status, out.leader_exit_signal = status
            self.owned.mark_exit(pid, status, time.time())
            self._dirty = True
            self.emit(LeaderExited(pid=pid, exit_status=status[0], exit_signal=status[1]))
            if self._pidfd >= 0:
                self._sel.unregister(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = -1
        if self._reap_orphans(pid) or self._dirty:
            self._dirty = True
            self._pace.snap_back(self.config.clock())
        if not self._leader_done:
            return False
        self._read_events()
        live = self._live_tree(pid)
        if self._observe(time.time(), live):
            self._dirty = True
        self._flush_journal()
        if live and not self._policy.stopping():  # once stopping, "never signalled" is false
            self._next_progress = self._say_waiting(out, live, self._next_progress)
        if not live:
            self.emit(TreeEnded(escaped_alive=0, runner_cpu_s=cpu_seconds()))
            return True
        if not any(st.pgid == pid for st in live.values()):
            self._group_empty(pid, now)
        if self._policy.gives_up(now):
            # Only escaped processes can be left: the group got SIGKILL or has no member.
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
            return True
        return False

    def _group_empty(self, pgid: int, now: float) -> None:
        """Issue 21 s4: once the group has no live member, the SIGKILL that was due is
        recorded as not sent and the grace is not waited out twice for escapees."""
        if self._policy.kill_at is not None:
            self._policy.group_empty(now)
            self._signal_group(pgid, signal.SIGKILL, Reason.GRACE_EXPIRED.value)

    # -- the dispatch table's handlers ----------------------------------------------

    def _on_wake(self) -> None:
        drain_fd(self._wake_r)

    def _on_change(self) -> None:
        self._look = True

    def _on_events(self) -> None:
        self._events_batch(listening=True)

    def _events_batch(self, *, listening: bool) -> None:
        """Read the queued events: the fd (or doorbell) was readable (``listening``), or
        their pause ended (skgate.proc.eventpace); then listen to the fd, or pause it."""
        conn = self.sources.connector
        assert conn is not None
        before, bell = conn.received, conn.doorbell is not None
        if listening:
            conn.take_ring()
        if owned := self._read_events():
            self._dirty = True
            self._flush_journal()
            self._pace.snap_back(self.config.clock())
        # Nothing queued during a pause: the next event (an owned fork) is read as it comes.
        listen = not bell and (owned or (not listening and conn.received == before))
        if listen and not listening:
            self._sel.register(conn.fileno(), selectors.EVENT_READ)
        elif listening and not listen and not bell:
            self._sel.unregister(conn.fileno())
        now, read = self.config.clock(), conn.received - before
        self._events.after_batch(now, listen=listen, owned=owned, bell=bell, read=read)

    def _on_cgroup(self) -> None:
        leaf = self.sources.leaf
        assert leaf is not None
        leaf.rearm()
        self._look = True  # populated changed: the tree may have ended

    def _say_waiting(
        self, out: Outcome, live: dict[int, ProcStat], next_at: float | None
    ) -> float | None:
        """C2.1: the leader returned while owned processes live: say once what the run
        waits for, then every ``progress_every`` s (a person must not see a silent gate)."""
        now = time.monotonic()
        if next_at is not None and now < next_at:
            return next_at
        deadline_wall = time.time() + (self._policy.deadline - now)
        self.observer.note(
            waiting_line(
                out.leader_exit_status,
                out.leader_exit_signal,
                live,
                deadline_wall,
                first=next_at is None,
                after=now - self._t0,
            )
        )
        return now + self.config.progress_every

    def finish_manifest(self) -> None:
        """The final manifest (``complete``), once the leader is reaped and the leaf gone;
        the listeners close with the attempt, off the path to the verdict (issue 29)."""
        self.sources.close_leaf()
        self.observer.manifest(self.records(), True, self.coverage_of(True))

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
        """Write the manifest snapshot when it changed, at a bounded rate: it holds every
        process ever seen, so the next write waits at least a scan interval and 100 times
        the last write's duration (under 1 % of the runner's time on any tree). The final
        write (``complete=True``) is always made."""
        if not self._dirty or now < self._next_manifest:
            return
        self._dirty = False
        started = time.monotonic()
        self.observer.manifest(self.records(), False, self.coverage_of(False))
        spent = time.monotonic() - started
        self._next_manifest = now + max(self.config.scan_interval, 100 * spent)

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
            self.observer.journal(data)

    def _drain_pending(self) -> list[int]:
        # pop() is atomic against the handler (which only appends), so nothing is lost.
        got: list[int] = []
        while self._pending:
            got.append(self._pending.pop(0))
        return got

    def _signal_group(self, pgid: int, signum: int, reason: str) -> None:
        """Signal the own group, and only while it has a live member (issue 21 s4).

        With only the leader's zombie left there is nobody to signal: no signal is sent
        and the event says why (``delivered: false``). SIGKILL goes through the leaf's
        ``cgroup.kill`` when every member of the leaf is in the group (C4: an escapee or
        a process put there from outside is never signalled), else by ``killpg``.
        """
        members = set(self._live_tree(pgid, group_only=True))
        not_sent: str | None = None
        via: str | None = None
        if not members:
            not_sent = "the process group has no live member left"
        elif signum == signal.SIGKILL and self._leaf_is_group(members):
            via = "cgroup.kill"
        else:
            try:
                os.killpg(pgid, signum)
            except ProcessLookupError:
                not_sent = "the process group has no member left"
        self.emit(
            SignalSent(
                signal=int(signum),
                name=signal_name(signum),
                target=f"process group {pgid}",
                reason=reason,
                delivered=not_sent is None,
                not_sent=not_sent,
                via=via,
            )
        )

    def _leaf_is_group(self, members: set[int]) -> bool:
        """Is the leaf exactly (a subset of) the group, and did ``cgroup.kill`` act?"""
        leaf = self.sources.leaf
        if leaf is None or not set(leaf.members()) <= members:
            return False
        return leaf.kill()

    def _live_tree(self, leader: int, group_only: bool = False) -> dict[int, ProcStat]:
        """Live (non-zombie) descendants of the runner, excluding the leader's zombie.

        As a subreaper the runner keeps every descendant below it, so this is the whole
        owned tree. A process in the attempt's cgroup that is not below the runner was
        put there from outside: it is noted as foreign, never waited for or signalled.
        """
        live = {
            pid: st
            for pid, st in tree(os.getpid()).items()
            if not st.zombie and pid not in self.helpers and (not group_only or st.pgid == leader)
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
            self.owned.add_leader(proc.pid, tuple(self.config.argv), wall)
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
            if child == leader or child in self.helpers:
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

    def _read_pipe(self, fd: int) -> None:
        data = read_chunk(fd)
        if data == b"":
            self._sel.unregister(fd)  # every writer closed the pipe; keep waiting for the tree
        elif data is not None:
            self.observer.output(data)
