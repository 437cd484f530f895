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
from pathlib import Path

from skgate.evidence import ledger
from skgate.evidence.stops import clear_stop_request, stop_pending
from skgate.model.errors import BlockedError, SkgateError, UnfinishedError
from skgate.model.events import Launched, SignalsIgnored
from skgate.model.request import RunRequest
from skgate.model.running import State
from skgate.model.signals import signal_name
from skgate.preflight.inputs import check_inputs
from skgate.preflight.request import legacy_outputs_dir, outputs_dir, validate
from skgate.proc.signals import (
    Phase,
    StopRequested,
    StopSignals,
    after_record_line,
    deferred,
)
from skgate.runner.attempt import Attempt, Notify, OnEvent, StopRequest

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from skgate.model.records import Verdict
    from skgate.preflight.early import EarlyWork
    from skgate.preflight.prepare import LaunchPlan
    from skgate.proc.keeper import PipeKeeper
    from skgate.proc.supervise import Outcome, Supervisor
    from skgate.runner.watch import Echo, Watcher

# Start-up (issue 29): this module loads only what recording an attempt needs (the
# allocation, the journal, the ledger, the stop signals). Preflight, the launch
# machinery and the watcher are imported by their steps, after the attempt is recorded:
# ``skgate start`` answers its caller there (api/detach.py), and ``skgate run`` loads
# them while the early hook scan and cgroup leaf (preflight/early.py) run.

#: Needed only once the tree has returned, so not loaded before the launch (start latency,
#: issue 13): imported right after it, while the command runs (see _supervise).
_FINISHING = (
    "skgate.evidence.seal",
    "skgate.evidence.load",
    "skgate.verdict.classify",
    "skgate.evidence.installed",
    # Loaded by the stage tracker's finish (issue 29: imported after the last exit they
    # cost the verdict ~15 ms where bytecode is not cached, PYTHONDONTWRITEBYTECODE).
    "skgate.evidence.idle",
    "skgate.evidence.stage_roots",
)


class _Run:
    """One attempt as it goes through :data:`STEPS`: each step reads what the earlier
    ones left here and adds its own; what the attempt holds open is in ``held``. (A plain
    class, not a dataclass: one generated class less on every start-up, issue 29.)"""

    def __init__(
        self,
        request: RunRequest,
        stops: StopSignals,
        *,
        echo: Echo | None,
        notify: Notify | None,
        progress_every: float,
        on_event: OnEvent | None,
        stop_request: StopRequest | None,
        early: EarlyWork | None,
        attempt_id: str | None,
        held: contextlib.ExitStack,
        recorded: Callable[[Path], None] | None = None,
        early_after_record: bool = False,
    ) -> None:
        self.request = request
        self.stops = stops
        self.echo = echo
        self.notify = notify
        self.progress_every = progress_every
        self.on_event = on_event
        self.stop_request = stop_request
        self.early = early
        self.attempt_id = attempt_id
        self.held = held
        self.recorded = recorded
        self.early_after_record = early_after_record
        self.att: Attempt | None = None
        self.plan: LaunchPlan | None = None
        self.before: frozenset[tuple[str, int]] = frozenset()
        self.sup: Supervisor | None = None
        self.watcher: Watcher | None = None
        self.outcome: Outcome | None = None
        self.launched_wall = 0.0
        self.launched_mono = 0.0
        self.keeper: PipeKeeper | None = None

    @property
    def attempt(self) -> Attempt:
        assert self.att is not None  # set by the first step
        return self.att


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
    late: Callable[[str], None] | None = None,
    recorded: Callable[[Path], None] | None = None,
    early_after_record: bool = False,
) -> Verdict:
    """Run one attempt in this process and return its verdict (see the module doc).

    ``echo`` receives the command's output as it streams (from a thread; it may block
    without stalling supervision); ``notify`` receives one-line notes for the person
    running it (a forwarded stop signal, for example, or a wait for a foreign compiler
    and its progress every ``progress_every`` seconds); ``on_event`` every journal
    record as it is written; ``stop_request`` is asked, when a SIGTERM arrives, whether
    it is a ``skgate stop`` request (see :mod:`skgate.api.lifecycle`).

    Stop signals are deferred, never lost, from the allocation of the attempt to its last
    ledger entry (see :mod:`skgate.proc.signals`); the dispositions are restored on return.
    ``attempt_id``: take exactly this id (reserved by a distributed driver, ledger.allocate).
    ``early``: the hook scan and cgroup leaf started before this call (see
    :mod:`skgate.preflight.early`); closed here on every way out.
    ``late``: this process exits after the verdict (the command line); a stop signal
    after the last ledger entry is then only said through it, never a KeyboardInterrupt
    in the exit (:meth:`StopSignals.restore`).
    ``recorded``: called with the attempt directory once the attempt is recorded (its
    ``created`` entry and its ledger entry), before preflight (``skgate start`` answers
    its caller there, issue 29).
    ``early_after_record`` (without ``early``): the early work begins once the attempt
    is recorded instead of before the allocation, so that the imports and the hook-cache
    lookup it costs are not on the way to ``recorded`` (``skgate start``'s caller waits
    for that alone; issue 29).
    """
    with contextlib.ExitStack() as cleanup:
        if early is not None:
            cleanup.callback(early.close)
        validate(request)
        check_inputs(request)  # every input error before anything is recorded
        if early is None and not early_after_record:
            # The probes and the leaf then run while the attempt is made.
            from skgate.preflight.early import EarlyWork  # noqa: PLC0415 - see the top

            early = EarlyWork.begin(request, checked=True)
            if early is not None:
                cleanup.callback(early.close)
        stops = StopSignals()
        stops.install()
        try:
            run = _Run(
                request,
                stops,
                echo=echo,
                notify=notify,
                progress_every=progress_every,
                on_event=on_event,
                stop_request=stop_request,
                early=early,
                attempt_id=attempt_id,
                held=contextlib.ExitStack(),
                recorded=recorded,
                early_after_record=early_after_record and early is None,
            )
            verdict = _execute(run)
            # A signal from here on never changes the exit status away from the record's.
            stops.exit_code = verdict.exit_code
            return verdict
        finally:
            stops.restore(late=late)
            # After the last ledger entry nothing is left to record them in: say so.
            after = stops.unrecorded()
            if after and notify is not None:
                notify(after_record_line(*(s for s, _ in after)))


def _execute(run: _Run) -> Verdict:
    """Run the steps in order; the first that returns a verdict ends the attempt (a
    blocked or refused launch), the last always does. Everything the attempt held open
    (leases, run.log, procs.jsonl, the sources, the echo) is closed once, at the end."""
    try:
        with run.held:
            for step in STEPS:
                verdict = step(run)
                if verdict is not None:
                    return verdict
        raise AssertionError("the finish step returns the verdict")  # pragma: no cover
    except StopRequested as stop:
        att = run.attempt  # allocation runs deferred: a stop acts only after it
        if run.outcome is not None:
            raise att.cut_short(stop.signum) from None
        return att.stopped_before_launch(stop.signum, "during preflight")
    except OSError as exc:
        from skgate.evidence.diskfull import is_full  # noqa: PLC0415 - see the module top

        if run.outcome is not None and run.watcher is not None and run.watcher.full.home_gone():
            return _removed_end(run)  # removed while it was being finished
        if run.outcome is None or run.att is None or not is_full(exc):
            raise
        # The tree has returned: a disk that filled up again while the evidence is
        # finished harms nothing, and is no bug of skgate's. The attempt is left for
        # ``recover``, as after a second stop signal (C4; issue 21 s2).
        where = f" writing {exc.filename}" if exc.filename else ""
        raise UnfinishedError(
            f"the evidence disk filled up while {run.att.dir} was being finished "
            f"({exc.strerror or exc}{where}); the command had already returned and was "
            f"not touched; free space there, then run 'skgate recover {run.att.dir}'"
        ) from None
    finally:
        if run.att is not None:  # the attempt is over: its stop request goes too
            clear_stop_request(run.att.dir)


def _record(run: _Run) -> Verdict | None:
    """Allocate the attempt and put its first records down (skgate never runs unrecorded)."""
    request, stops = run.request, run.stops
    with deferred():  # an attempt directory never exists without its first records
        attempt_dir = ledger.allocate(Path(request.root), run.attempt_id)
        att = run.att = Attempt(
            request,
            attempt_dir,
            stops,
            run.notify,
            on_event=run.on_event,
            stop_request=run.stop_request,
            early=run.early,
        )
        att.record_created()
        if stops.ignored:
            att.emit(
                SignalsIgnored(
                    signals=tuple(signal_name(s) for s in stops.ignored),
                    note="inherited ignored (nohup); kept, and passed on to the workload",
                )
            )
        try:
            ledger.record_start(att.root, attempt_dir, request.retry_of, att.runner)
        except (OSError, SkgateError) as exc:
            # Never run unrecorded: leave a readable not-started attempt, refuse (exit 3).
            reason = f"the evidence root's ledger cannot be written ({exc}); nothing was started"
            att.abandon(reason)
            raise BlockedError(reason) from None
    if run.recorded is not None:
        run.recorded(attempt_dir)
    if run.early_after_record:
        from skgate.preflight.early import EarlyWork  # noqa: PLC0415 - see the top

        # Closed with everything else the attempt holds, on every way out; a stop
        # signal acts once its threads are in that list, never between (C4: no probe
        # left running).
        with deferred():
            run.early = att.early = EarlyWork.begin(request, checked=True)
            if run.early is not None:
                run.held.callback(run.early.close)
    return None


def _preflight(run: _Run) -> Verdict | None:
    """Hooks, foreign compilers, leases, jobs, environment (C4-C6); the frozen control."""
    # Loaded once the attempt is recorded (see the module top).
    from skgate.evidence.census import outputs_record, top_entries  # noqa: PLC0415
    from skgate.preflight import prepare as preflight  # noqa: PLC0415
    from skgate.preflight.interpreter import resolve_command  # noqa: PLC0415

    att, request, notify = run.attempt, run.request, run.notify
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
            progress_every=run.progress_every,
            early_scan=att.early.scan_result if att.early is not None else None,
            host=att.early.host if att.early is not None else None,
            attempt_dir=att.dir,
        )
    except SkgateError as exc:
        att.not_started((f"preflight could not run: {exc}",), None)
        raise
    except KeyboardInterrupt:
        # Only when SIGINT is not ours (an embedding caller's handler raised it).
        att.not_started(("interrupted during preflight, before launch",), None)
        raise
    run.plan = plan
    if att.early is not None:
        att.early.prewarm()  # again, if a wait for a foreign compiler outlasted the first
    run.held.callback(plan.release)  # the leases are held until the attempt is finished
    att.foreign = plan.foreign
    # C8: what the outputs directory already holds belongs to earlier runs.
    # Issue 27: torch-npu 2.7's own outputs directory too, when none was given.
    legacy = legacy_outputs_dir(request)
    run.before = top_entries(outputs_dir(request)) | (
        top_entries(legacy) if legacy is not None else frozenset()
    )
    controls = dict(plan.controls)
    controls["outputs_before"] = outputs_record(outputs_dir(request), run.before)
    with deferred():
        att.write_control(controls)
    if notify is not None:
        # C6: what will make the compile skip is said before launch, in en and zh.
        for line in preflight.skip_lines(controls):
            notify(line)
    if plan.blocked:
        return att.not_started(plan.blocked, controls)
    return None


def _launch(run: _Run) -> Verdict | None:
    """Open what the run writes to, take the signals over, and start the command."""
    # Loaded once the attempt is recorded (see the module top).
    from skgate.evidence.intent import write_intent  # noqa: PLC0415
    from skgate.proc.cgroup import leaf_name  # noqa: PLC0415
    from skgate.proc.sources import allowed_sources, open_sources  # noqa: PLC0415
    from skgate.proc.supervise import Supervisor, SupervisorConfig  # noqa: PLC0415
    from skgate.proc.waitstatus import become_subreaper, cpu_seconds  # noqa: PLC0415
    from skgate.runner.watch import Watcher  # noqa: PLC0415

    att, request, plan = run.attempt, run.request, run.plan
    assert plan is not None
    watcher = run.watcher = Watcher.open(att, plan, run.echo, run.before, run.held)
    # Subscribed and created before the launch, so the leader's first fork is seen and
    # the leader is born in the leaf (C3).
    allowed, name = allowed_sources(os.environ), leaf_name(att.runner_pid, att.runner_start_ticks)
    sources = open_sources(allowed, name, att.early.leaf(allowed, name) if att.early else None)
    run.held.callback(sources.close)
    config = SupervisorConfig(
        request.argv,
        env=plan.env,
        cwd=request.cwd,
        timeout=request.timeout,
        grace=request.grace,
        scan_interval=request.scan_interval,
        progress_every=run.progress_every,
    )
    sup = run.sup = Supervisor(config, watcher, sources)
    subreaper = become_subreaper()
    # The handover: from here the Supervisor owns the stop signals and forwards them to
    # the group once it exists; one that came during the handover still stops the launch.
    att.stops.phase = Phase.HANDOVER
    sup.install_handlers()
    early = att.stops.handover_stop()
    try:
        if early is None:
            _keep_output(run, sup)
            # C2, issue 21 s1: durable before the fork, so a runner killed before its
            # 'launched' entry is never read as "nothing was launched".
            write_intent(att.dir, request.argv, str(sources.leaf.path) if sources.leaf else None)
        proc = sup.launch(plan.lease_fds) if early is None else None
    except OSError as exc:
        _unkeep_output(run, sup)
        sup.restore_handlers()
        return att.not_started((f"the command could not be started: {exc.strerror or exc}",), None)
    if proc is None:
        # Issue 21 s4: a stop signal that came before the fork refuses it (nothing ran).
        _unkeep_output(run, sup)
        pending = list(sup.pending_stops())
        sup.restore_handlers()
        if early is None:
            # The Supervisor's handlers caught it: it goes on record all the same (issue
            # 28 s5: a signal at any instant of start-up is never swallowed).
            att.stops.add(pending)
        signum = early if early is not None else pending[0]
        return att.stopped_before_launch(signum, "while launching")
    run.launched_mono, run.launched_wall = time.monotonic(), time.time()
    wall = run.launched_wall
    att.pgid = proc.pid
    sup.track_leader(wall)
    att.leader = next(iter(sup.records()), None)
    watcher.emit(
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
    return None


def _keep_output(run: _Run, sup: Supervisor) -> None:
    """C4: the output pipe outlives this runner, so its death never ends the compile
    (SIGPIPE / BrokenPipeError at its next print). The keeper holds the pipe before the
    fork: from the command's first write on, a reader is left (skgate.proc.keeper)."""
    from skgate.proc.keeper import PipeKeeper  # noqa: PLC0415 - see the module top

    run.keeper = PipeKeeper.start(sup.output_pipe(), run.attempt.dir)
    if run.keeper is not None:
        sup.helpers.add(run.keeper.pid)


def _unkeep_output(run: _Run, sup: Supervisor) -> None:
    """No launch after all: the keeper and the pipe go (nothing was run to keep)."""
    if run.keeper is not None:
        run.keeper.release()
        run.keeper = None
    sup.close_output()


def _supervise(run: _Run) -> Verdict | None:
    """Wait for the whole owned tree, then hand the signals back to the runner."""
    att, sup, watcher = run.attempt, run.sup, run.watcher
    assert sup is not None and watcher is not None
    try:
        watcher.manifest(sup.records(), False, sup.coverage_of(False))
        for name in _FINISHING:
            importlib.import_module(name)
        run.outcome = sup.wait(run.launched_mono)
        sup.reap_leader()
        sup.finish_manifest()
        if run.keeper is not None:
            # The pipe is drained to its end: the keeper has nothing to keep. Only on this
            # path: a runner failing here leaves it to drain whatever still comes. Released
            # right after verdict.json, before the seal (issue 29: its exit is off the last
            # exit's path to the verdict; its empty run.kept.log is gone before the seal
            # lists the files); if finishing fails, when the attempt's stack closes.
            att.after_verdict.append(run.keeper.release)
            run.held.callback(run.keeper.release)  # again after the verdict: a no-op
    finally:
        # Back to the runner's handlers, which only record (the tree has returned or the
        # runner is failing); what the Supervisor caught after its last look is kept.
        att.stops.phase = Phase.FINISHING
        sup.restore_handlers()
        att.stops.add(sup.pending_stops())
    if watcher.full.full and not watcher.full.removed:  # no space to wait for, then
        from skgate.evidence.diskfull import still_full_line  # noqa: PLC0415

        # As soon as space allows (issue 21 s2), at most the grace, and the first stop
        # signal ends the wait (issue 28: it had no bound; C2.4: a stop is acted on).
        seen = len(att.stops.received)
        if not watcher.full.record(
            att.dir,
            att.notify,
            bound=run.request.grace,
            stopped=lambda: len(att.stops.received) > seen,
        ):
            told = tuple(signal_name(s) for s, _ in att.stops.unrecorded())
            raise UnfinishedError(still_full_line(att.dir, run.request.grace, told))
        # Space is back: the final manifest the full disk took is written now.
        watcher.manifest(sup.records(), True, sup.coverage_of(True))
    return None


def _finish(run: _Run) -> Verdict | None:
    """After the tree is gone: the final files, then classify and seal (C2)."""
    att, watcher, outcome, plan = run.attempt, run.watcher, run.outcome, run.plan
    assert watcher is not None and outcome is not None and plan is not None and run.sup
    if watcher.full.removed or watcher.full.home_gone():
        return _removed_end(run)
    from skgate.runner.watch import finish_after_return  # noqa: PLC0415

    return finish_after_return(
        att,
        watcher,
        records=run.sup.records(),
        outcome=outcome,
        before=run.before,
        plog_env=plan.env,
        launched_wall=run.launched_wall,
    )


def _removed_end(run: _Run) -> Verdict:
    """The attempt's directory was removed while its runner ran (issue 28): see
    :func:`skgate.runner.watch.finish_removed`."""
    from skgate.runner.watch import finish_removed  # noqa: PLC0415 - this end only

    assert run.outcome is not None
    return finish_removed(run.attempt, run.outcome)


#: The attempt, step by step (see the module doc); :func:`_execute` runs them in order.
STEPS: tuple[Callable[[_Run], Verdict | None], ...] = (
    _record,
    _preflight,
    _launch,
    _supervise,
    _finish,
)


# -- the child side of the API protocol -------------------------------------------------


def child_main(argv: list[str]) -> int:
    detach = bool(argv) and argv[-1] == "--detach"
    args = argv[:-1] if detach else argv
    attempt_id = args[1] if len(args) == 2 and args[0] == "--attempt-id" else None
    if args and attempt_id is None:
        print(json.dumps({"error": f"bad runner arguments: {argv}", "exit_code": 2}))
        return 2
    if detach:
        _detach()
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
        # ``skgate stop`` reaches this runner too (a Ray arm's, api.run's child): its
        # SIGTERM carries the request's reason into the verdict (C2.4).
        verdict = run_here(request, echo, attempt_id=attempt_id, stop_request=stop_pending)
    except SkgateError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}))
        return exc.exit_code
    print(json.dumps(verdict.to_dict()))
    return 0 if verdict.state is State.SUCCEEDED else verdict.exit_code


def _detach() -> None:
    """``--detach``: run on as a grandchild of the caller, out of its reach (issue 28 s9).

    A Ray worker SIGKILLs its direct children when it exits
    (``RAY_kill_child_processes_on_worker_exit``, on by default, not recursive): a runner
    that is such a child dies and leaves its workload running unsupervised. Here the
    direct child forks and exits at once; the runner goes on in the grandchild (it keeps
    the same stdin and stdout, so the protocol is unchanged) and first says who it is, one
    JSON line, so the caller can follow it and stop it through a pidfd. Raylet's own
    subreaper mode (``..._with_raylet_subreaper``, off by default) still reaches it.
    """
    sys.stdout.flush()
    if os.fork() != 0:
        os._exit(0)  # the caller's direct child: gone, and with it the worker's reach
    from skgate.proc.observe import self_stat  # noqa: PLC0415 - the detached path only

    st = self_stat()
    print(json.dumps({"runner_pid": st.pid, "runner_start_ticks": st.start_ticks}), flush=True)
