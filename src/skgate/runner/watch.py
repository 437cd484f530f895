"""What the runner hears from its Supervisor while the command runs, and the final files.

:class:`Watcher` is the runner's :class:`~skgate.proc.supervise.SupervisorObserver`: it
streams the output to ``run.log`` (and the scanner, and the echo), writes the ownership
snapshots and ``procs.jsonl`` (C3), feeds the stage tracker and journals through the
attempt. What it opens is registered on the runner's ``ExitStack``, closed once at the
end of the attempt. :func:`finish_after_return` writes the final files after the tree has
returned (C1: each stage's logs are final only then), then classifies and seals (C2).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from skgate.evidence import files, plog
from skgate.evidence.census import (
    OBSERVATION_EVERY,
    census_outputs,
    observer,
    take_census,
)
from skgate.evidence.diskfull import DiskFull, RunLog
from skgate.evidence.follow import stage_announcer
from skgate.evidence.logscan import LogScanner
from skgate.model.errors import SkgateError
from skgate.model.events import Event
from skgate.model.frozen import mutable
from skgate.model.running import Coverage, ProcessRecord
from skgate.preflight import prepare as preflight
from skgate.preflight.request import legacy_outputs_dir, outputs_dir
from skgate.proc.supervise import Outcome
from skgate.runner.attempt import Attempt
from skgate.runner.stage_tracker import StageTracker

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.model.records import Verdict
    from skgate.proc.echo import TerminalEcho

Echo = Callable[[bytes], None]


@mutable
class Watcher:
    """The runner's side of one supervised run (a SupervisorObserver)."""

    att: Attempt
    scanner: LogScanner
    tracker: StageTracker
    log_fd: int
    procs: files.AppendFile
    echoer: TerminalEcho | None
    on_tick: Callable[[int], None]
    on_process: Callable[[ProcessRecord], None]
    #: Issue 21 s2, C4: a full evidence disk never ends supervision nor stops the drain of
    #: the pipe (the compile would die of SIGPIPE); the facts wait in memory.
    full: DiskFull
    runlog: RunLog
    _emit: Callable[[Event], object]
    _manifest: Callable[[list[ProcessRecord], bool, Coverage | None], object]
    _journal: Callable[[bytes], object]
    _sync_journal: Callable[[], object]
    _warm: bool = False

    @classmethod
    def open(
        cls,
        att: Attempt,
        plan: preflight.LaunchPlan,
        echo: Echo | None,
        before: frozenset[tuple[str, int]],
        held: contextlib.ExitStack,
    ) -> Watcher:
        """Open run.log, procs.jsonl and the echo, each closed by ``held``."""
        request = att.request
        log_fd = os.open(
            att.dir / files.RUN_LOG,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC,
            0o644,
        )
        held.callback(os.close, log_fd)
        procs = files.AppendFile(att.dir / files.PROCS)  # every fork, exec, exit (C3)
        held.callback(procs.close)
        echoer = None
        if echo is not None:
            # Only a run with a terminal echoes: ``--quiet``, ``start`` and the API load
            # no echo thread's queue (issue 29).
            from skgate.proc.echo import TerminalEcho  # noqa: PLC0415

            echoer = TerminalEcho(echo)
        if echoer is not None:
            held.callback(echoer.close)
        full = DiskFull()
        full.watch_home(att.dir)  # issue 28: a removed directory ends no supervision
        emit = full.guard(att.emit, files.EVENTS, appends=True)
        # C2/C3: every owned op_compiler invocation becomes a stage of its own.
        tracker = StageTracker(preflight.compiler_names(request, plan.env), cwd=request.cwd)
        on_tick = observer(
            emit,
            outputs_dir(request),
            OBSERVATION_EVERY * request.scan_interval,
            before,
            stage_progress=tracker.progress,
        )
        return cls(
            att,
            LogScanner(request.summary_patterns, request.completion_marker),
            tracker,
            log_fd,
            procs,
            echoer,
            on_tick,
            stage_announcer(tracker, emit),
            full,
            RunLog(log_fd, full),
            emit,
            full.guard(att.write_ownership, files.OWNERSHIP, by_path=True),
            full.guard(procs, files.PROCS, appends=True),
            full.guard(att.sync_journal, files.EVENTS),
        )

    def emit(self, event: Event) -> object:
        return self._emit(event)

    def output(self, data: bytes) -> None:
        self.runlog.write(data)
        self.scanner.feed(data)
        if self.echoer is not None:
            self.echoer(data)

    def manifest(
        self, records: list[ProcessRecord], complete: bool, coverage: Coverage | None
    ) -> None:
        self._manifest(records, complete, coverage)

    def journal(self, data: bytes) -> None:
        self._journal(data)

    def tick(self, live: int) -> None:
        if not self._warm:
            # The first tick is after the launch: off the start-up and off the last exit's
            # path to the verdict (issue 29).
            self._warm = True
            self.att.warm_readers()
        else:
            self.att.advance_journal()
        # The tree's end lines written without their own fsync are durable within one scan
        # interval when the tree lives on (see runner.attempt.SYNCED_LATER): a reap or
        # the leader's exit brings the scan back to its configured interval (proc.scanpace).
        self._sync_journal()
        self.on_tick(live)

    def process(self, record: ProcessRecord) -> None:
        self.on_process(record)

    def scan(self, alive: list[tuple[int, int]]) -> None:
        self.tracker.on_scan(alive)

    def note(self, line: str) -> None:
        self.att.notify(line)

    def stop_request(self) -> dict[str, Any] | None:
        ask = self.att.stop_request
        return ask(self.att.dir) if ask is not None else None


def finish_after_return(
    att: Attempt,
    watcher: Watcher,
    *,
    records: list[ProcessRecord],
    outcome: Outcome,
    before: frozenset[tuple[str, int]],
    plog_env: dict[str, str],
    launched_wall: float,
) -> Verdict:
    from skgate.evidence import installed as inst  # noqa: PLC0415 - see runner._FINISHING
    from skgate.evidence.installs import INSTALLS_FILE, attempt_installs  # noqa: PLC0415

    request = att.request
    att.record_signals()
    scan = watcher.scanner.finish()
    # Issue 27: a torch-npu 2.7 run writes into its own outputs directory.
    outputs = census_outputs(outputs_dir(request), legacy_outputs_dir(request), before)
    census = take_census(outputs, live=outcome.escaped_alive > 0, exclude=before)
    # After the tree ended: each stage's per-input logs are final now (C1), not before.
    starts = scan.launcher.starts if scan.launcher is not None else ()
    stages = watcher.tracker.finish(
        records,
        after_return=outcome.escaped_alive == 0,
        announced=[(str(s.get("root", "")), s.get("rank")) for s in starts if s.get("root")],
        outputs=outputs,
        before=before,
        uninstall_paths=scan.uninstall_paths,
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
        str(outputs),
        plog_env.get("ASCEND_OPP_PATH") or None,
        frozenset(name for name, _ in before),
    )
    # C8: every package the owned tree installed or uninstalled, with its exit status.
    # The outputs the census counted (torch-npu 2.7's own directory included): a failing
    # ``.run`` gone before its argv was read is named from the packages found there.
    installs = attempt_installs(records, scan.launcher, outputs)
    try:
        own_fd = os.open(att.dir / files.OWNERSHIP, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        # A full evidence disk took every manifest write (diskfull.json says so, and the
        # verdict is unknown, issue 21 s2): nothing of it to sync.
        own_fd = -1
    # Issue 29, C2: the fewest flushes between the last exit and a durable verdict. The
    # final files are classified from the text about to be written (what a later reader
    # parses from their bytes), then written with verdict.json in one round of fsyncs,
    # together with what was appended meanwhile (run.log, the manifest, procs.jsonl, and
    # the journal's tree-end lines: runner.attempt.SYNCED_LATER), linked with verdict.json
    # last, and made durable by one directory fsync: Attempt._write_final says why a
    # durable verdict.json then implies durable evidence beneath it.
    try:
        return att.finish(
            pending={
                files.SUMMARY: "".join(line + "\n" for line in scan.summary.lines),
                files.LOGSCAN: files.dumps(scan.to_dict()),
                files.CENSUS: files.dumps(census.to_dict()),
                files.STAGES: files.dumps(stages.to_dict()),
                plog.PLOG_INDEX: files.dumps(plog_index),
                inst.INSTALLED_FILE: files.dumps(inst.installed_record(installed)),
                INSTALLS_FILE: files.dumps(installs.to_dict()),
            },
            also_sync=tuple(fd for fd in (watcher.log_fd, own_fd, watcher.procs.fd) if fd >= 0),
        )
    finally:
        # The echo is closed after the verdict is written (by the runner's ExitStack): a
        # terminal that does not read never delays it.
        if own_fd >= 0:
            os.close(own_fd)


def finish_removed(att: Attempt, outcome: Outcome) -> Verdict:
    """The attempt's directory was removed while its runner ran (issue 28): the command
    was supervised to its end all the same (C1, C2.4), and nothing is left to write its
    evidence into. The root's ledger records the end (``unknown``, with how the command
    ended), and the answer is the one every reader gives of a removed attempt (C2.5)."""
    from skgate.evidence import ledger  # noqa: PLC0415 - this end only
    from skgate.model.records import State, Verdict  # noqa: PLC0415
    from skgate.model.running import how_ended  # noqa: PLC0415
    from skgate.read.liveness import current_verdict  # noqa: PLC0415

    end = {
        "timeout_fired": outcome.timeout_fired,
        "exit_status": outcome.leader_exit_status,
        "exit_signal": outcome.leader_exit_signal,
    }
    how = how_ended(outcome.timeout_fired, outcome.leader_exit_status, outcome.leader_exit_signal)
    line = (
        f"the attempt directory {att.dir} was removed while its runner ran; the runner "
        f"supervised its command to its end ({how}) and recorded that end in the root's "
        "ledger; nothing else of it is left"
    )
    ended = Verdict(
        state=State.UNKNOWN,
        cause=None,
        reasons=(line,),
        exit_status=outcome.leader_exit_status,
        exit_signal=outcome.leader_exit_signal,
        timeout_fired=outcome.timeout_fired,
        attempt=str(att.dir),
    )
    with contextlib.suppress(OSError, SkgateError):  # the answer below says the same
        # ``ended``: the same facts, typed, for the readers that quote them (status).
        ledger.record_end(att.root, att.dir, ended, {"removed": line, "ended": end}, sealed=False)
    att.notify(f"skgate: {line}")
    try:
        return current_verdict(att.dir)
    except (OSError, SkgateError):  # another directory put in its place: not read
        return ended
