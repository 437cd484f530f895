"""Pre-launch work started while the runner is still importing itself (issue 13).

Before a launch the runner waits on two things that need no attempt directory: the
start-up hook scan (two rounds of probe interpreters, C6) and the attempt's cgroup leaf
(whose first move can wait a kernel RCU grace period, C3). Both are mostly waits, so
:meth:`EarlyWork.begin` starts each in a thread the moment the request is valid, and the
runner imports the rest of itself, allocates the attempt and runs the cheap preflight
steps meanwhile. That is most of what ``skgate run`` costs before launch, on a 2-core
machine. ``skgate start``'s runner begins it right after the record instead, which is
all its caller waits for (issue 29; ``run_here(early_after_record=True)``).

Nothing here decides anything. Preflight uses the early scan only when it would have
scanned exactly the same inputs (:class:`~skgate.preflight.hooks.scan.ScanInputs`);
otherwise it scans again itself, and the early one is cancelled. A scan is the same
scan either way: round 2 runs only after round 1 approved everything (C6), and every
probe runs in its own session, ended and reaped by the scan thread alone. A probe is
never born inside the leaf: its fork and the leaf's moves hold one lock
(:data:`skgate.proc.cgroup.MIGRATION_LOCK`).

:meth:`EarlyWork.close` (the runner calls it on every way out) cancels what is still
running: probes are killed by their own session (skgate started them, C4), an unused
leaf is removed. The thread never touches signal dispositions; the runner's stop
signals act in the main thread as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Mapping

from skgate.model.errors import UsageError
from skgate.model.request import RunRequest
from skgate.model.sources import allowed_sources
from skgate.preflight import jobs
from skgate.preflight.hooks.probe import Cancel, ProbeCancelled
from skgate.preflight.hooks.rounds import FirstRound, ScanInputs
from skgate.preflight.inputs import check_inputs, early_scan_inputs
from skgate.proc.cgroup import WARM_LIMIT, MadeLeaf, leaf_name, make_leaf
from skgate.proc.observe import self_stat

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.preflight.hooks.findings import HookScan

#: How long :meth:`EarlyWork.close` waits for the thread after cancelling it.
CLOSE_JOIN = 5.0
#: The interpreter's thread switch interval while the early work runs. The main thread
#: is importing (pure CPU, holding the GIL); at the default 5 ms each of the few short
#: steps the early thread takes between its waits (spawning a probe, reading a result)
#: would first wait up to 5 ms for the GIL, which added 10-20 ms before round 1 began.
EARLY_SWITCH_INTERVAL = 0.0005


class EarlyWork:
    """The hook scan and the cgroup leaf of one attempt, each made in its own thread."""

    def __init__(
        self, inputs: ScanInputs | None, allowed: frozenset[str] | None, name: str
    ) -> None:
        self.inputs = inputs
        self.allowed = allowed
        self.leaf_name = name
        #: :func:`jobs.probe_host`'s facts as :meth:`begin` read them (None: not read),
        #: handed to preflight so that a run reads them once (issue 29), and its jobs
        #: value and the scan's environment come from the same facts.
        self.host: dict[str, Any] | None = None
        self._cancel = Cancel()
        self._first: FirstRound | None = None
        self._scan: HookScan | None = None
        self._error: BaseException | None = None
        self._leaf: MadeLeaf | None = None
        self._leaf_taken = False
        self._closed = False
        self._switch = sys.getswitchinterval()
        self._threads = {
            "scan": threading.Thread(target=self._scan_work, name="skgate-scan", daemon=True),
            "leaf": threading.Thread(target=self._leaf_work, name="skgate-leaf", daemon=True),
        }
        self._running = len(self._threads)
        self._lock = threading.Lock()

    @classmethod
    def begin(
        cls,
        request: RunRequest,
        runner_env: Mapping[str, str] | None = None,
        *,
        checked: bool = False,
    ) -> EarlyWork | None:
        """Start the early work for a request that passed validation; None when there is
        nothing to start early (preflight then does everything itself, as before), and
        for bad input: nothing runs before it is refused (exit 2, see check_inputs)."""
        try:
            if not checked:  # ``checked``: the caller has just run check_inputs itself
                check_inputs(request, runner_env)
        except UsageError:
            return None  # the runner refuses it with this same message, running nothing
        # The host facts once for the scan's jobs value and preflight's (``host``).
        host = jobs.probe_host()
        try:
            inputs = early_scan_inputs(request, runner_env, host)
        except Exception:  # preflight reports the same problem itself
            inputs = None
        try:
            allowed: frozenset[str] | None = allowed_sources(
                os.environ if runner_env is None else runner_env
            )
        except Exception:  # the runner refuses the bad value itself
            allowed = None
        if inputs is None and allowed is None:
            return None
        me = self_stat()
        work = cls(inputs, allowed, leaf_name(me.pid, me.start_ticks))
        work.host = host
        sys.setswitchinterval(min(work._switch, EARLY_SWITCH_INTERVAL))
        if inputs is not None:
            # Round 1 from this thread, at once: a thread would first wait for the GIL.
            with contextlib.suppress(Exception):  # the scan thread starts it again then
                work._first = inputs.first_round(work._cancel)
        work._threads["scan"].start()
        work._threads["leaf"].start()
        return work

    def _finished(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                sys.setswitchinterval(self._switch)

    def _scan_work(self) -> None:
        try:
            # What judges round 1 is loaded while round 1 runs (the runner needs it too,
            # so this is no extra work), then round 1 is waited for.
            from skgate.preflight.hooks.scan import run_scan  # noqa: PLC0415

            if self._first is not None:
                self._first.results()
            if self.inputs is not None:
                self._scan = run_scan(self.inputs, self._cancel, self._first)
        except BaseException as exc:  # handed to the runner's thread by scan_result()
            self._error = exc
            if self._first is not None:
                self._first.cleanup()
        finally:
            self._finished()

    def _leaf_work(self) -> None:
        try:
            if self._first is not None:
                # While a cgroup move waits for its RCU grace period the kernel holds up
                # every fork, so the leaf is made once the scan has started its probes.
                self._first.forked.wait(CLOSE_JOIN)
            if self.allowed is not None and not self._cancel.is_set:
                self._leaf = make_leaf(self.allowed, self.leaf_name)
        finally:
            self._finished()

    def scan_result(self, inputs: ScanInputs) -> HookScan | None:
        """The early scan's result for exactly ``inputs`` (its error re-raised here), or
        None when it scanned something else or did not run (then the caller scans)."""
        if self.inputs is None or inputs != self.inputs:
            self._cancel.set()
            self._threads["scan"].join()
            return None
        self._threads["scan"].join()
        if self._error is not None:
            if isinstance(self._error, ProbeCancelled):
                return None
            raise self._error
        return self._scan

    def leaf(self, allowed: frozenset[str], name: str) -> MadeLeaf | None:
        """The leaf made for these sources and this runner, or None (make it then)."""
        self._threads["leaf"].join()
        if self._leaf is None or allowed != self.allowed or name != self.leaf_name:
            return None
        self._leaf_taken = True
        return self._leaf

    def prewarm(self) -> None:
        """The launch is near: keep the cgroup migration lock warm in a thread until the
        launch enters the leaf (see :meth:`skgate.proc.cgroup.Leaf.warm`), so the
        leader's move is not delayed. The runner calls it again once preflight is done:
        after a wait for a foreign compiler (C4) longer than ``WARM_LIMIT`` the first
        thread has given up, and a new one starts (none while one still warms)."""
        running = self._threads.get("warm")
        if self._closed or (running is not None and running.is_alive()):
            return
        thread = threading.Thread(target=self._warm, name="skgate-warm", daemon=True)
        self._threads["warm"] = thread
        thread.start()

    def _warm(self) -> None:
        self._threads["leaf"].join()
        made = self._leaf[0] if self._leaf is not None else None
        if made is not None and not self._cancel.is_set:
            made.warm(WARM_LIMIT, lambda: self._cancel.is_set)

    def close(self) -> None:
        """Cancel what still runs, wait for the threads, remove a leaf nobody took.
        Idempotent (the runner and its caller may both close it)."""
        if self._closed:
            return
        self._closed = True
        self._cancel.set()
        for thread in self._threads.values():
            thread.join(CLOSE_JOIN)
        if self._leaf is not None and not self._leaf_taken:
            made, _ = self._leaf
            if made is not None:
                with contextlib.suppress(OSError):
                    made.remove()
            self._leaf = None
        if not self._threads["scan"].is_alive():  # else its pipe may still be in a select
            self._cancel.close()
