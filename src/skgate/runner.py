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

Protocol when run as ``python -m skgate.runner [--attempt-id NNNN]`` (used by
:mod:`skgate.api` and the Ray executor, which reserves the id in the driver's root): a
:class:`~skgate.model.request.RunRequest` as JSON on stdin; the workload's output echoed on
stderr unless the request is quiet; one JSON object on stdout at the end, either the
verdict (``Verdict.to_dict()``) or ``{"error": MESSAGE, "exit_code": N}``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from skgate.attempt import Attempt, Notify, OnEvent, StopRequest
from skgate.evidence import files, ledger, plog
from skgate.evidence.census import (
    OBSERVATION_EVERY,
    observer,
    outputs_record,
    take_census,
    top_entries,
)
from skgate.evidence.diskfull import DiskFull, RunLog
from skgate.evidence.follow import stage_announcer
from skgate.evidence.intent import write_intent
from skgate.evidence.logscan import LogScanner
from skgate.model.errors import BlockedError, SkgateError
from skgate.model.events import Created, Launched, SignalsIgnored
from skgate.model.request import RunRequest
from skgate.model.running import ProcessRecord, State
from skgate.model.signals import signal_name
from skgate.preflight import prepare as preflight
from skgate.preflight.early import EarlyWork
from skgate.preflight.interpreter import resolve_command
from skgate.preflight.request import outputs_dir, validate
from skgate.proc.cgroup import leaf_name
from skgate.proc.echo import TerminalEcho
from skgate.proc.signals import Phase, StopRequested, StopSignals, deferred
from skgate.proc.sources import allowed_sources, open_sources
from skgate.proc.supervise import Outcome, Supervisor
from skgate.proc.waitstatus import become_subreaper, cpu_seconds
from skgate.stage_tracker import StageTracker

if TYPE_CHECKING:
    from skgate.model.records import Verdict

#: Needed only once the tree has returned, so not loaded before the launch (start latency,
#: issue 13): imported right after it, while the command runs (see _supervise).
_FINISHING = (
    "skgate.evidence.seal",
    "skgate.evidence.load",
    "skgate.verdict.classify",
    "skgate.evidence.installed",
)

Echo = Callable[[bytes], None]


def run_here(
    request: RunRequest,
    echo: Echo | None = None,
    notify: Notify | None = None,
    *,
    progress_every: float = 30.0,
    on_event: OnEvent | None = None,
    stop_request: StopRequest | None = None,
    attempt_id: str | None = None,
    early: EarlyWork | None = None,
) -> Verdict:
    """Run one attempt in this process and return its verdict (see the module doc).

    ``echo`` receives the command's output as it streams (from a thread; it may block
    without stalling supervision); ``notify`` receives one-line notes for the person
    running it (a forwarded stop signal, for example, or a wait for a foreign compiler
    and its progress every ``progress_every`` seconds); ``on_event`` every journal
    record as it is written; ``stop_request`` is asked, when a SIGTERM arrives, whether
    it is a ``skgate stop`` request (see :mod:`skgate.lifecycle`).

    Stop signals are deferred, never lost, from the allocation of the attempt to its last
    ledger entry (see :mod:`skgate.proc.signals`); the dispositions are restored on return.
    ``attempt_id``: take exactly this id (reserved by a distributed driver, ledger.allocate).
    ``early``: the hook scan and cgroup leaf started before this call (see
    :mod:`skgate.preflight.early`); closed here on every way out.
    """
    with contextlib.ExitStack() as cleanup:
        if early is not None:
            cleanup.callback(early.close)
        validate(request)
        preflight.check_inputs(request)  # every input error before anything is recorded
        if early is None:  # the probes and the leaf then run while the attempt is made
            early = EarlyWork.begin(request, checked=True)
            if early is not None:
                cleanup.callback(early.close)
        stops = StopSignals()
        stops.install()
        try:
            hooks = (on_event, stop_request, early)
            return _run(request, stops, echo, notify, progress_every, hooks=hooks, aid=attempt_id)
        finally:
            stops.restore()
            # After the last ledger entry nothing is left to record them in: say so.
            for signum, _ in stops.unrecorded():
                if notify is not None:
                    notify(f"skgate: {signal_name(signum)} received after the attempt was recorded")


def _run(
    request: RunRequest,
    stops: StopSignals,
    echo: Echo | None,
    notify: Notify | None,
    progress_every: float,
    *,
    hooks: tuple[OnEvent | None, StopRequest | None, EarlyWork | None] = (None, None, None),
    aid: str | None = None,
) -> Verdict:
    att: Attempt | None = None
    try:
        with deferred():  # an attempt directory never exists without its first records
            attempt_dir = ledger.allocate(Path(request.root), aid)
            att = Attempt(
                request,
                attempt_dir,
                stops,
                notify,
                on_event=hooks[0],
                stop_request=hooks[1],
                early=hooks[2],
            )
            att.emit(
                Created(
                    attempt=str(attempt_dir),
                    argv=tuple(request.argv),
                    cwd=request.cwd,
                    # Who owns it, before control.json exists: what 'skgate recover' checks.
                    runner={"pid": att.runner_pid, "start_ticks": att.runner_start_ticks},
                    boot_id=att.boot_id,
                )
            )
            if stops.ignored:
                att.emit(
                    SignalsIgnored(
                        signals=tuple(signal_name(s) for s in stops.ignored),
                        note="inherited ignored (nohup); kept, and passed on to the workload",
                    )
                )
            try:
                ledger.record_start(att.root, attempt_dir, request.retry_of)
            except (OSError, SkgateError) as exc:
                # Never run unrecorded: leave a readable not-started attempt, refuse (exit 3).
                reason = (
                    f"the evidence root's ledger cannot be written ({exc}); nothing was started"
                )
                att.abandon(reason)
                raise BlockedError(reason) from None
        return _before_launch(att, echo, notify, progress_every)
    except StopRequested as stop:
        assert att is not None  # allocation runs deferred: a stop acts only after it
        return att.stopped_before_launch(stop.signum, "during preflight")


def _before_launch(
    att: Attempt, echo: Echo | None, notify: Notify | None, progress_every: float
) -> Verdict:
    request = att.request
    if att.early is not None:
        att.early.prewarm()
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
            request,
            att.root,
            emit=att.emit,
            notify=notify,
            progress_every=progress_every,
            early_scan=att.early.scan_result if att.early is not None else None,
            attempt_dir=att.dir,
        )
    except SkgateError as exc:
        att.not_started((f"preflight could not run: {exc}",), None)
        raise
    except KeyboardInterrupt:
        # Only when SIGINT is not ours (an embedding caller's handler raised it).
        att.not_started(("interrupted during preflight, before launch",), None)
        raise
    try:
        att.foreign = plan.foreign
        # C8: what the outputs directory already holds belongs to earlier runs.
        before, controls = top_entries(outputs_dir(request)), dict(plan.controls)
        controls["outputs_before"] = outputs_record(outputs_dir(request), before)
        with deferred():
            att.write_control(controls)
        if notify is not None:
            # C6: what will make the compile skip is said before launch, in en and zh.
            for line in preflight.skip_lines(controls):
                notify(line)
        if plan.blocked:
            return att.not_started(plan.blocked, controls)
        return _supervise(att, plan, echo, notify, before, progress_every=progress_every)
    finally:
        plan.release()


def _supervise(
    att: Attempt,
    plan: preflight.LaunchPlan,
    echo: Echo | None,
    notify: Notify | None,
    before: frozenset[tuple[str, int]],
    *,
    progress_every: float = 30.0,
) -> Verdict:
    request = att.request
    scanner = LogScanner(request.summary_patterns, request.completion_marker)
    log_fd = os.open(
        att.dir / files.RUN_LOG,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC,
        0o644,
    )

    echoer = TerminalEcho(echo) if echo is not None else None
    # C2/C3: every owned op_compiler invocation becomes a stage of its own.
    tracker = StageTracker(preflight.compiler_names(request, plan.env), cwd=request.cwd)
    procs = files.AppendFile(att.dir / files.PROCS)  # every fork, exec, exit (C3)

    # Subscribed and created before the launch, so the leader's first fork is seen and
    # the leader is born in the leaf (C3).
    allowed, name = allowed_sources(os.environ), leaf_name(att.runner_pid, att.runner_start_ticks)
    sources = open_sources(allowed, name, att.early.leaf(allowed, name) if att.early else None)

    # Issue 21 s2, C4: a full evidence disk never ends supervision nor stops the drain of
    # the pipe (the compile would die of SIGPIPE); the facts wait in memory.
    full = DiskFull()
    runlog = RunLog(log_fd, full)
    emit = full.guard(att.emit, files.EVENTS, appends=True)

    def sink(data: bytes) -> None:
        runlog.write(data)
        scanner.feed(data)
        if echoer is not None:
            echoer(data)

    sup = Supervisor(
        request.argv,
        env=plan.env,
        cwd=request.cwd,
        timeout=request.timeout,
        grace=request.grace,
        emit=emit,
        sink=sink,
        on_manifest=full.guard(att.write_ownership, files.OWNERSHIP),
        scan_interval=request.scan_interval,
        on_tick=observer(
            emit,
            outputs_dir(request),
            OBSERVATION_EVERY * request.scan_interval,
            before,
            stage_progress=tracker.progress,
        ),
        notify=notify,
        on_process=stage_announcer(tracker, emit),
        on_scan=tracker.on_scan,
        stop_request=partial(att.stop_request, att.dir) if att.stop_request else None,
        sources=sources,
        journal=full.guard(procs, files.PROCS, appends=True),
        progress_every=progress_every,
    )
    subreaper = become_subreaper()
    # The handover: from here the Supervisor owns the stop signals and forwards them to
    # the group once it exists; one that came during the handover still stops the launch.
    att.stops.phase = Phase.HANDOVER
    sup.install_handlers()
    early = att.stops.handover_stop()
    if early is None:
        early = next(iter(sup.pending_stops()), None)
    if early is not None:
        sup.restore_handlers()
        os.close(log_fd)
        procs.close()
        sources.close()
        if echoer is not None:
            echoer.close()
        return att.stopped_before_launch(early, "while launching")
    try:
        try:
            # C2, issue 21 s1: durable before the fork, so a runner killed before its
            # 'launched' entry is never read as "nothing was launched".
            write_intent(att.dir, request.argv, str(sources.leaf.path) if sources.leaf else None)
            proc = sup.launch(plan.lease_fds)
        except OSError as exc:
            os.close(log_fd)
            procs.close()
            sources.close()
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
        emit(
            Launched(
                pid=proc.pid,
                pgid=proc.pid,
                sid=proc.pid,
                start_ticks=att.leader.start_ticks if att.leader else None,
                deadline_wall=wall + request.timeout,
                timeout=request.timeout,
                grace=request.grace,
                subreaper=subreaper,
                ownership_sources=tuple(sources.used),
                sources_unavailable=dict(sources.unavailable),
                cgroup=str(sources.leaf.path) if sources.leaf else None,
                runner_cpu_s=cpu_seconds(),
            )
        )
        full.guard(att.write_ownership, files.OWNERSHIP)(
            sup.records(), False, sup.coverage_of(False)
        )
        for name in _FINISHING:
            importlib.import_module(name)
        outcome = sup.wait(launched_mono)
        sup.reap_leader()
        sup.finish_manifest()
    finally:
        # Back to the runner's handlers, which only record (the tree has returned or the
        # runner is failing); what the Supervisor caught after its last look is kept.
        att.stops.phase = Phase.FINISHING
        sup.restore_handlers()
        att.stops.add(sup.pending_stops())
        sources.close()
    try:
        if full.full:
            full.record(att.dir, att.notify)  # as soon as space allows (issue 21 s2)
        return _finish_after_return(
            att,
            scanner=scanner,
            tracker=tracker,
            records=sup.records(),
            outcome=outcome,
            before=before,
            log_fd=log_fd,
            procs=procs,
            echoer=echoer,
            plog_env=plan.env,
            launched_wall=wall,
        )
    except StopRequested as stop:
        raise att.cut_short(stop.signum) from None


def _finish_after_return(
    att: Attempt,
    *,
    scanner: LogScanner,
    tracker: StageTracker,
    records: list[ProcessRecord],
    outcome: Outcome,
    before: frozenset[tuple[str, int]],
    log_fd: int,
    procs: files.AppendFile,
    echoer: TerminalEcho | None,
    plog_env: dict[str, str],
    launched_wall: float,
) -> Verdict:
    from skgate.evidence import installed as inst  # noqa: PLC0415 - see _FINISHING

    request = att.request
    att.record_signals()
    scan = scanner.finish()
    census = take_census(outputs_dir(request), live=outcome.escaped_alive > 0, exclude=before)
    # After the tree ended: each stage's per-input logs are final now (C1), not before.
    starts = scan.launcher.starts if scan.launcher is not None else ()
    stages = tracker.finish(
        records,
        after_return=outcome.escaped_alive == 0,
        announced=[(str(s.get("root", "")), s.get("rank")) for s in starts if s.get("root")],
        outputs=outputs_dir(request),
        before=before,
    )
    if request.enforce_jobs:
        # Loaded only now, after the launch (start latency, issue 13).
        from skgate.evidence import shim_calls  # noqa: PLC0415

        # C5: the shim's own record of each call: the launcher's argv and the one it ran.
        stages = shim_calls.with_shim_calls(
            stages, shim_calls.read_shim_calls(att.dir / shim_calls.SHIM_CALLS)
        )
    # C3: CANN's own process logs of the owned pids, copied before the seal (bounded).
    plog_index = plog.archive(att.dir, plog_env, {r.pid for r in records}, launched_wall)
    # C8: the installed static binaries of this attempt's packages, as the tree left them
    # (torchair uninstalls at exit, so "no manifest" is recorded, never concluded).
    installed = inst.installed_binaries(
        str(outputs_dir(request)),
        plog_env.get("ASCEND_OPP_PATH") or None,
        frozenset(name for name, _ in before),
    )
    own_fd = os.open(att.dir / files.OWNERSHIP, os.O_RDONLY | os.O_CLOEXEC)
    try:
        files.write_batch_new(
            att.dir,
            {
                files.SUMMARY: "".join(line + "\n" for line in scan.summary.lines),
                files.LOGSCAN: files.dumps(scan.to_dict()),
                files.CENSUS: files.dumps(census.to_dict()),
                files.STAGES: files.dumps(stages.to_dict()),
                plog.PLOG_INDEX: files.dumps(plog_index),
                inst.INSTALLED_FILE: files.dumps(inst.installed_record(installed)),
            },
            also_sync=(log_fd, own_fd, procs.fd),
        )
    finally:
        os.close(log_fd)
        os.close(own_fd)
        procs.close()
    try:
        return att.finish()
    finally:
        # After the verdict is written: a terminal that does not read never delays it.
        if echoer is not None:
            echoer.close()


# -- the child side of the API protocol -------------------------------------------------


def _child_main(argv: list[str]) -> int:
    attempt_id = argv[1] if len(argv) == 2 and argv[0] == "--attempt-id" else None
    if argv and attempt_id is None:
        print(json.dumps({"error": f"bad runner arguments: {argv}", "exit_code": 2}))
        return 2
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
        verdict = run_here(request, echo, attempt_id=attempt_id)
    except SkgateError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}))
        return exc.exit_code
    print(json.dumps(verdict.to_dict()))
    return 0 if verdict.state is State.SUCCEEDED else verdict.exit_code


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
