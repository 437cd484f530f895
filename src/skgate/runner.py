"""One attempt, end to end: record, preflight, freeze, supervise, census, classify, seal.

:func:`run_here` runs in the process that will own the workload (``skgate run``, or the
child started by :mod:`skgate.api`). Every step writes into the attempt directory before
the next one starts, so an attempt cut off at any point still says how far it got:

1. allocate the attempt (exclusive ``mkdir``; an unwritable root refuses to launch:
   skgate never runs unrecorded), journal ``created``, index it in the ledger;
2. preflight (hooks, foreign compilers, leases, jobs, environment; C4-C6) and write the
   frozen ``control.json``; a blocked attempt is recorded ``not_started``, never a
   compile result;
3. supervise (see :mod:`skgate.proc.supervise`), streaming output to ``run.log``;
4. after the tree is gone: release the leases, write ``summary.txt``, ``logscan.json``,
   ``census.json``, the final ``ownership.json``; classify from the files (C2);
   ``verdict.json``; ``finished``; ledger entry; ``seal.json``.

Protocol when run as ``python -m skgate.runner`` (used by :mod:`skgate.api`): a
:class:`~skgate.model.request.RunRequest` as JSON on stdin; the workload's output echoed on
stderr unless the request is quiet; one JSON object on stdout at the end, either the
verdict (``Verdict.to_dict()``) or ``{"error": MESSAGE, "exit_code": N}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skgate import __version__
from skgate.evidence import files, ledger, seal
from skgate.evidence.census import take_census, top_entries
from skgate.evidence.load import load_evidence
from skgate.evidence.logscan import LogScanner
from skgate.evidence.stages import StageTracker
from skgate.model.errors import BlockedError, SkgateError
from skgate.model.records import Ownership, ProcessRecord, State, Verdict
from skgate.model.request import RunRequest
from skgate.model.schema import SCHEMA_CONTROL
from skgate.preflight import prepare as preflight
from skgate.preflight.request import outputs_dir, validate
from skgate.proc.observe import boot_id, self_stat
from skgate.proc.supervise import Supervisor, become_subreaper, cpu_seconds
from skgate.verdict.classify import classify

Echo = Callable[[bytes], None]
Notify = Callable[[str], None]


def resolve_command(argv0: str, env: dict[str, str], cwd: str) -> str | None:
    """The executable the workload would run, or None (then it is not started)."""
    if "/" in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd, argv0)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(argv0, path=env.get("PATH", os.defpath))


class _Attempt:
    """The files of one attempt being written by this runner."""

    def __init__(self, request: RunRequest, attempt_dir: Path) -> None:
        self.request = request
        self.dir = attempt_dir
        self.root = Path(request.root)
        self.journal = files.Journal(attempt_dir / files.EVENTS)
        me = self_stat()
        self.runner_pid = me.pid
        self.runner_start_ticks = me.start_ticks
        self.boot_id = boot_id()
        self.foreign: tuple[ProcessRecord, ...] = ()
        self.pgid: int | None = None
        self.leader: ProcessRecord | None = None

    def emit(self, event: str, **fields: Any) -> object:
        return self.journal.emit(event, mono=time.monotonic(), **fields)

    def write_control(self, controls: dict[str, Any]) -> None:
        files.write_json_new(
            self.dir / files.CONTROL,
            {
                "schema": SCHEMA_CONTROL,
                "attempt": self.dir.name,
                "created_at": time.time(),
                "skgate_version": __version__,
                "request": self.request.to_dict(),
                "runner": {
                    "pid": self.runner_pid,
                    "start_ticks": self.runner_start_ticks,
                    "boot_id": self.boot_id,
                },
                "controls": controls,
            },
        )

    def write_ownership(self, records: list[ProcessRecord], complete: bool) -> None:
        leader = next((r for r in records if r.pid == self.pgid), self.leader)
        own = Ownership(
            boot_id=self.boot_id,
            runner_pid=self.runner_pid,
            runner_start_ticks=self.runner_start_ticks,
            leader=leader,
            pgid=self.pgid,
            sid=self.pgid,
            owned=tuple(records),
            foreign=self.foreign,
            complete=complete,
            updated_at=time.time(),
            scan_interval=self.request.scan_interval,
        )
        # A snapshot while running (atomic replace); the last write has complete=True and
        # is flushed together with the other final files (see _supervise).
        files.replace_json(self.dir / files.OWNERSHIP, own.to_dict(), sync=not complete)

    def finish(self, *, indexed: bool = True) -> Verdict:
        """Classify from the files, exactly as ``skgate classify`` will later (C2).

        ``indexed=False`` skips the ledger (when the ledger is what cannot be written).
        """
        verdict = classify(load_evidence(self.dir, finishing=True)).with_attempt(str(self.dir))
        files.write_json_new(self.dir / files.VERDICT, verdict.to_dict())
        self.emit(
            "finished",
            state=verdict.state.value,
            cause=verdict.cause.value if verdict.cause else None,
            # The runner's own CPU time (not its children's): its overhead, measured.
            runner_cpu_s=cpu_seconds(),
        )
        self.journal.close()
        # Seal first, so the ledger's end entry carries the seal's hash (C4: the scene
        # can be verified later, and a rebuilt seal.json breaks the chain).
        seal.seal_attempt(self.dir, chain=False)
        if indexed:
            ledger.record_end(self.root, self.dir, verdict)  # chains the seal's hash
        return verdict

    def abandon(self, reason: str) -> None:
        """Record a not-started attempt without the ledger (it is what failed)."""
        with contextlib.suppress(OSError, SkgateError):
            self.not_started((reason,), None, indexed=False)
        self.journal.close()

    def not_started(
        self, reasons: tuple[str, ...], controls: dict[str, Any] | None, *, indexed: bool = True
    ) -> Verdict:
        if not (self.dir / files.CONTROL).exists():
            self.write_control(controls or {})
        self.emit("blocked", reasons=list(reasons))
        return self.finish(indexed=indexed)


def run_here(
    request: RunRequest,
    echo: Echo | None = None,
    notify: Notify | None = None,
    *,
    progress_every: float = 30.0,
) -> Verdict:
    """Run one attempt in this process and return its verdict (see the module doc).

    ``echo`` receives the command's output as it streams (from a thread; it may block
    without stalling supervision); ``notify`` receives one-line notes for the person
    running it (a forwarded stop signal, for example, or a wait for a foreign compiler
    and its progress every ``progress_every`` seconds).
    """
    validate(request)
    attempt_dir = ledger.allocate(Path(request.root))
    att = _Attempt(request, attempt_dir)
    att.emit("created", attempt=str(attempt_dir), argv=list(request.argv), cwd=request.cwd)
    try:
        ledger.record_start(att.root, attempt_dir, request.retry_of)
    except (OSError, SkgateError) as exc:
        # Never run unrecorded: leave a readable not-started attempt and refuse (exit 3).
        reason = f"the evidence root's ledger cannot be written ({exc}); nothing was started"
        att.abandon(reason)
        raise BlockedError(reason) from None
    env = preflight.base_env(request, os.environ)
    if resolve_command(request.argv[0], env, request.cwd) is None:
        # Nothing to scan or freeze for a command that cannot start: say so first.
        return att.not_started(
            (
                f"command not found or not executable: {request.argv[0]!r} "
                "(check the command and its PATH); nothing was started",
            ),
            None,
        )
    try:
        plan = preflight.prepare(
            request, att.root, emit=att.emit, notify=notify, progress_every=progress_every
        )
    except SkgateError as exc:
        att.not_started((f"preflight could not run: {exc}",), None)
        raise
    except KeyboardInterrupt:
        att.not_started(("interrupted during preflight, before launch",), None)
        raise
    try:
        att.foreign = plan.foreign
        # C8: what the outputs directory already holds belongs to earlier runs; only new
        # entries are counted, so a stale error log or .run cannot decide this verdict.
        before = top_entries(outputs_dir(request))
        controls = dict(plan.controls)
        controls["outputs_before"] = {
            "path": str(outputs_dir(request)),
            "entries": len(before),
            "names": sorted(name for name, _ in before)[:50],
            "note": "entries present before launch are not counted in this attempt's census",
        }
        att.write_control(controls)
        if plan.blocked:
            return att.not_started(plan.blocked, controls)
        return _supervise(att, plan, echo, notify, before)
    finally:
        plan.release()


#: Scan intervals between two ``observation`` events (15 s at the default 1 s scan).
#: Each takes a census of the outputs (read-only, provisional: C1), so it is kept rare
#: enough to stay far below 1 % CPU even on trees of hundreds of thousands of files.
OBSERVATION_EVERY = 15


def _observer(
    att: _Attempt, outputs: Path, interval: float, before: frozenset[tuple[str, int]]
) -> Callable[[int], None]:
    last = [time.monotonic()]
    seen = [-1]

    def tick(owned_alive: int) -> None:
        now = time.monotonic()
        if now - last[0] < interval and owned_alive == seen[0]:
            return
        if now - last[0] < interval / 3:
            return  # a changing tree is still observed at most every few seconds
        last[0], seen[0] = now, owned_alive
        census = take_census(outputs, live=True, exclude=before)
        att.emit(
            "observation",
            owned_alive=owned_alive,
            counts={
                "error_logs": census.error_logs,
                "succ_logs": census.succ_logs,
                "run_packages": census.run_packages,
            },
            provisional=True,  # C1: counts taken while the compile lives prove nothing
        )

    return tick


class _Echo:
    """Echo the command's output from a thread, never blocking the supervision loop.

    The loop that enforces the frozen deadline (C4) must not wait on a terminal: a
    paused pager or a full pipe on stdout would stall the timeout and the run log. The
    loop hands chunks to a bounded queue; when the terminal does not keep up, chunks are
    dropped from the echo (never from ``run.log``, the evidence) and counted.
    """

    MAX_CHUNKS = 256

    def __init__(self, write: Echo) -> None:
        self._write = write
        self._queue: queue.Queue[bytes | None] = queue.Queue(self.MAX_CHUNKS)
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="skgate-echo", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            with contextlib.suppress(OSError, ValueError):  # a closed terminal
                self._write(data)

    def __call__(self, data: bytes) -> None:
        try:
            self._queue.put_nowait(data)
        except queue.Full:
            self.dropped += len(data)

    def close(self, timeout: float = 1.0) -> None:
        """Let the thread flush what is queued, waiting at most ``timeout``; never blocks
        the caller on the terminal itself (the thread is a daemon)."""
        if self.dropped:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(
                    f"\n[skgate: {self.dropped} bytes of output were not echoed because the "
                    "terminal did not keep up; run.log has all of it]\n".encode()
                )
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)


def _supervise(
    att: _Attempt,
    plan: preflight.LaunchPlan,
    echo: Echo | None,
    notify: Notify | None,
    before: frozenset[tuple[str, int]],
) -> Verdict:
    request = att.request
    scanner = LogScanner(request.summary_patterns, request.completion_marker)
    log_fd = os.open(
        att.dir / files.RUN_LOG,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC,
        0o644,
    )

    echoer = _Echo(echo) if echo is not None else None
    # C2/C3: every owned op_compiler invocation becomes a stage of its own.
    tracker = StageTracker(preflight.compiler_names(request, plan.env), cwd=request.cwd)

    def sink(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(log_fd, view) :]
        scanner.feed(data)
        if echoer is not None:
            echoer(data)

    sup = Supervisor(
        request.argv,
        env=plan.env,
        cwd=request.cwd,
        timeout=request.timeout,
        grace=request.grace,
        emit=att.emit,
        sink=sink,
        on_manifest=att.write_ownership,
        scan_interval=request.scan_interval,
        on_tick=_observer(
            att, outputs_dir(request), OBSERVATION_EVERY * request.scan_interval, before
        ),
        notify=notify,
        on_process=tracker.on_process,
        on_scan=tracker.on_scan,
    )
    subreaper = become_subreaper()
    sup.install_handlers()
    try:
        try:
            proc = sup.launch(plan.lease_fds)
        except OSError as exc:
            os.close(log_fd)
            if echoer is not None:
                echoer.close()
            return att.not_started(
                (f"the command could not be started: {exc.strerror or exc}",), None
            )
        launched_mono = time.monotonic()
        wall = time.time()
        att.pgid = proc.pid
        sup.track_leader(wall)
        att.leader = next(iter(sup.records()), None)
        att.emit(
            "launched",
            pid=proc.pid,
            pgid=proc.pid,
            sid=proc.pid,
            start_ticks=att.leader.start_ticks if att.leader else None,
            deadline_wall=wall + request.timeout,
            timeout=request.timeout,
            grace=request.grace,
            subreaper=subreaper,
            runner_cpu_s=cpu_seconds(),
        )
        att.write_ownership(sup.records(), False)
        outcome = sup.wait(launched_mono)
        sup.reap_leader()
    finally:
        sup.restore_handlers()
    scan = scanner.finish()
    census = take_census(outputs_dir(request), live=outcome.escaped_alive > 0, exclude=before)
    # After the tree ended: each stage's per-input logs are final now (C1), not before.
    stages = tracker.finish(sup.records(), after_return=outcome.escaped_alive == 0)
    own_fd = os.open(att.dir / files.OWNERSHIP, os.O_RDONLY | os.O_CLOEXEC)
    try:
        files.write_batch_new(
            att.dir,
            {
                files.SUMMARY: "".join(line + "\n" for line in scan.summary.lines),
                files.LOGSCAN: files.dumps(scan.to_dict()),
                files.CENSUS: files.dumps(census.to_dict()),
                files.STAGES: files.dumps(stages.to_dict()),
            },
            also_sync=(log_fd, own_fd),
        )
    finally:
        os.close(log_fd)
        os.close(own_fd)
    try:
        return att.finish()
    finally:
        # After the verdict is written: a terminal that does not read never delays it.
        if echoer is not None:
            echoer.close()


# -- the child side of the API protocol -------------------------------------------------


def _child_main() -> int:
    try:
        raw = json.loads(sys.stdin.read())
        request = RunRequest.from_dict(raw)
    except (ValueError, SkgateError) as exc:
        print(json.dumps({"error": f"bad request: {exc}", "exit_code": 2}))
        return 2
    echo: Echo | None = None
    if not request.quiet:

        def echo(data: bytes) -> None:
            sys.stderr.buffer.write(data)
            sys.stderr.buffer.flush()

    try:
        verdict = run_here(request, echo)
    except SkgateError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}))
        return exc.exit_code
    print(json.dumps(verdict.to_dict()))
    return 0 if verdict.state is State.SUCCEEDED else verdict.exit_code


if __name__ == "__main__":
    sys.exit(_child_main())
