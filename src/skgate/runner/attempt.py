"""The files of one attempt, as its runner writes them (see :mod:`skgate.runner`).

:class:`Attempt` owns the attempt directory while the runner lives: the journal
(``events.jsonl``), ``control.json``, the ownership snapshots, and the finishing steps
(classify from the files, ``verdict.json``, seal, ledger end). Every write is whole
(write, fsync, rename) and made with stop signals deferred (C2.4), so an attempt cut off
at any point still says how far it got.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from skgate import __version__
from skgate.evidence import files, ledger
from skgate.model.errors import (
    EvidenceExistsError,
    RootUnwritableError,
    SkgateError,
    UnfinishedError,
)
from skgate.model.events import (
    Blocked,
    Created,
    Event,
    EventKind,
    Finished,
    FinishingCutShort,
    LeaderExited,
    Reaped,
    RunnerSignal,
    TreeEnded,
    VerdictHash,
    event_from_dict,
)
from skgate.model.frozen import replace
from skgate.model.request import RunRequest
from skgate.model.running import Coverage, Ownership, ProcessRecord, disowned_line
from skgate.model.schema import SCHEMA_CONTROL
from skgate.model.signals import signal_name
from skgate.preflight.jobs import frozen_value
from skgate.proc.observe import boot_id, self_stat
from skgate.proc.signals import (
    Phase,
    StopRequested,
    StopSignals,
    after_record_line,
    deferred,
)
from skgate.proc.waitstatus import cpu_seconds

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.evidence.journal import JournalSoFar
    from skgate.evidence.load import Control
    from skgate.model.records import Verdict
    from skgate.preflight.early import EarlyWork

Notify = Callable[[str], None]
#: Receives every journal record right after it is written (``--events jsonl``, the
#: detached runner's hand-shake with ``skgate start``).
OnEvent = Callable[[Event], None]
#: Returns the pending ``skgate stop`` request of an attempt, if any (skgate.api.lifecycle).
StopRequest = Callable[[Path], "dict[str, Any] | None"]

#: Journalled without an fsync of their own (issue 29: last exit to verdict.json). The
#: tree's end is followed at once by the finishing flush, which fsyncs the journal with
#: the final files before verdict.json is linked (runner.watch.finish_after_return): the
#: verdict is never durable without them. While the tree lives on, the next synced line
#: or the next scan tick (:meth:`Attempt.sync_journal`) makes them durable. Each is written
#: at once either way: a reader, or a runner killed a moment later, finds it (C3). The
#: verdict's hash is written just before that flush, which makes it durable.
SYNCED_LATER = (LeaderExited, Reaped, TreeEnded, VerdictHash)


#: The kinds the runner can journal once the command runs: their readers are built before
#: the last exit (:meth:`Attempt.warm_readers`), each about 0.25 ms. The earlier kinds
#: (``created``, ``preflight``, ``launched``...) are in the journal by then, or never:
#: reading it back on the first tick (:class:`~skgate.evidence.journal.JournalSoFar`)
#: builds the readers of those it holds, and none is built for a kind it does not.
_WRITTEN_AFTER_LAUNCH = (
    EventKind.STAGE_SEEN,
    EventKind.OBSERVATION,
    EventKind.SIGNAL_RECEIVED,
    EventKind.SIGNAL_SENT,
    EventKind.TIMEOUT,
    EventKind.LEADER_EXITED,
    EventKind.REAPED,
    EventKind.TREE_ENDED,
    EventKind.RUNNER_SIGNAL,
)


class Attempt:
    """The files of one attempt being written by this runner."""

    def __init__(
        self,
        request: RunRequest,
        attempt_dir: Path,
        stops: StopSignals | None = None,
        notify: Notify | None = None,
        *,
        on_event: OnEvent | None = None,
        stop_request: StopRequest | None = None,
        early: EarlyWork | None = None,
    ) -> None:
        self.request = request
        self.early = early
        self.stops = stops or StopSignals()
        self.notify: Notify = notify or (lambda _msg: None)
        self.on_event = on_event
        self.stop_request = stop_request
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
        self.frozen_jobs: dict[str, Any] | None = None
        #: Work that need not delay the verdict, done right after ``finished`` is on
        #: record and before the seal (the pipe keeper's release, issue 29).
        self.after_verdict: list[Callable[[], None]] = []
        #: ``control.json`` as read back once the command runs (:meth:`warm_readers`).
        self.control: Control | None = None
        #: The journal read back step by step while the command runs (the same).
        self.journal_so_far: JournalSoFar | None = None

    def emit(self, event: Event) -> Event:
        with deferred():  # a journal line is written whole, never cut by a stop signal
            record = self.journal.emit(
                replace(event, mono=time.monotonic()),
                sync=not isinstance(event, SYNCED_LATER),
            )
        if self.on_event is not None:
            self.on_event(record)
        return record

    def record_created(self) -> None:
        """Journal ``created``, the attempt's first record: who owns it, before
        control.json exists (what ``skgate recover`` checks). Where not even that can be
        written (a full evidence disk), the directory made a moment ago goes again, never
        left half-made for ``status`` to read as a runner that died, and the run is
        refused: nothing runs unrecorded."""
        try:
            self.emit(
                Created(
                    attempt=str(self.dir),
                    argv=tuple(self.request.argv),
                    cwd=self.request.cwd,
                    runner={"pid": self.runner_pid, "start_ticks": self.runner_start_ticks},
                    boot_id=self.boot_id,
                )
            )
        except OSError as exc:
            self.journal.close()
            ledger.unallocate(self.dir)
            raise RootUnwritableError(
                f"evidence root {self.request.root} cannot be written ({exc.strerror}); free "
                "space there or choose another --root (nothing was recorded or run)"
            ) from None

    def warm_readers(self) -> None:
        """While the command runs (issue 29), what the final classification would
        otherwise pay after the last exit: the record readers of the kinds journalled
        after the launch (:data:`_WRITTEN_AFTER_LAUNCH`), the journal so far read back,
        and ``control.json`` parsed (0.1-0.2 ms). That file is final since before the
        launch: written once, never replaced (C2: what is classified is still the file's
        own bytes, as a later reader's)."""
        from skgate.evidence.journal import JournalSoFar  # noqa: PLC0415 - runner._FINISHING
        from skgate.evidence.load import load_control  # noqa: PLC0415

        for kind in _WRITTEN_AFTER_LAUNCH:
            event_from_dict({"event": kind.value})
        try:
            self.control = load_control(self.dir)
        except (SkgateError, OSError, ValueError):  # read again when finishing, which says why
            self.control = None
        self.journal_so_far = JournalSoFar(self.dir / files.EVENTS)
        self.journal_so_far.advance()

    def advance_journal(self) -> None:
        """Parse the journal lines written since the last scan tick (issue 29): a long
        compile journals an observation every 15 s, about 17 us each to read back, which
        the final classification would otherwise read after the last exit (4 ms an hour)."""
        if self.journal_so_far is not None:
            self.journal_so_far.advance()

    def sync_journal(self) -> None:
        """Make the lines of :data:`SYNCED_LATER` durable now (one fsync, if any)."""
        self.journal.sync()

    def record_signals(self) -> None:
        """Journal the stop signals received outside supervision (the Supervisor journals
        its own as ``signal_received``). These never make a verdict ``interrupted``: before
        launch nothing ran; after the natural return the compile had already ended."""
        for signum, phase in self.stops.unrecorded():
            finishing = phase is Phase.FINISHING
            action = (
                "recorded after the verdict; the verdict and its exit status stand"
                if self.stops.recorded
                else "recorded; the evidence is finished and sealed first"
                if finishing
                else "the attempt ends not started; nothing is launched"
            )
            self.emit(
                RunnerSignal(
                    signal=signum, name=signal_name(signum), phase=phase.value, action=action
                )
            )
            if self.stops.recorded:
                self.notify(after_record_line(signum))
            elif finishing:
                self.notify(
                    f"skgate: {signal_name(signum)} received after the command's tree ended; "
                    "finishing and sealing the evidence first (send it again to cut that short)"
                )

    def cut_short(self, signum: int) -> UnfinishedError:
        """A second stop signal of one kind while finishing: record it while the journal
        is still open (it is sealed with the rest), and say what is left to do."""
        if not (self.dir / files.SEAL).exists():
            with contextlib.suppress(OSError, ValueError):
                self.record_signals()
                self.emit(
                    FinishingCutShort(
                        signal=signum,
                        name=signal_name(signum),
                        verdict_written=(self.dir / files.VERDICT).exists(),
                    )
                )
        self.journal.close()
        return UnfinishedError(
            f"{signal_name(signum)} received twice while finishing the evidence: finishing was "
            f"cut short and {self.dir} is unfinished; run 'skgate recover {self.dir}' "
            "once its owned processes are gone"
        )

    def write_control(self, controls: dict[str, Any]) -> None:
        # What later attempts of the root compare with (C5), also put in the ledger's end
        # entry: their preflight reads one file, not every attempt's control.json.
        record = controls.get("jobs")
        self.frozen_jobs = (
            {"value": frozen_value(controls), "varied": record.get("varied") is True}
            if isinstance(record, dict)
            else None
        )
        files.write_json_new(
            self.dir / files.CONTROL,
            {
                "schema": SCHEMA_CONTROL,
                "attempt": self.dir.name,
                "created_at": time.time(),
                "skgate_version": __version__,
                "request": self.request.to_dict(),
                "runner": self.runner,
                "controls": controls,
            },
        )

    @property
    def runner(self) -> dict[str, Any]:
        """Who runs the attempt, as ``control.json`` and the ledger's ``start`` entry name
        it: the process (pid, start time) and its boot (C4: how it is told from a pid
        recycled since)."""
        return {
            "pid": self.runner_pid,
            "start_ticks": self.runner_start_ticks,
            "boot_id": self.boot_id,
        }

    def write_ownership(
        self, records: list[ProcessRecord], complete: bool, coverage: Coverage | None = None
    ) -> None:
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
            coverage=coverage,
        )
        # A snapshot while running (atomic replace); the last write has complete=True and
        # is flushed together with the other final files (see _supervise), so it is not
        # synced here. Compact, the final one too: the indented encoder is pure Python,
        # about 2.5 times the CPU of the C one on a manifest (1.5 against 0.6 ms for 66
        # processes), paid at every snapshot while the tree is busy and, for the final
        # one, between the last exit and verdict.json (issue 29). Any JSON reader reads
        # both forms alike; ``skgate status`` and ``report`` show it to a person.
        text = files.json_text(own.to_dict()) + "\n"
        files.replace_text(self.dir / files.OWNERSHIP, text, sync=not complete)

    def finish(
        self,
        *,
        indexed: bool = True,
        pending: Mapping[str, str] | None = None,
        also_sync: tuple[int, ...] = (),
    ) -> Verdict:
        """Classify from the files, exactly as ``skgate classify`` will later (C2).

        ``pending``: the final files the runner has not written yet (name -> exact text),
        classified from that text and written with verdict.json in one flush
        (:meth:`_write_final`); ``also_sync``: open descriptors flushed with them.
        ``indexed=False`` skips the ledger (when the ledger is what cannot be written).
        Stop signals are only recorded meanwhile; a second one of a kind cuts it short
        (:class:`UnfinishedError`, the attempt is left for ``skgate recover``).
        """
        self.stops.phase = Phase.FINISHING
        try:
            return self._finish(indexed, pending or {}, also_sync)
        except StopRequested as stop:
            raise self.cut_short(stop.signum) from None

    def _write_final(
        self, pending: Mapping[str, str], verdict: Verdict, also_sync: tuple[int, ...]
    ) -> None:
        """The final files and verdict.json, in the fewest flushes (issue 29, C2).

        One round of fsyncs, from threads, of every new file's content (verdict.json's
        among them) and of ``also_sync`` (run.log, the manifest, procs.jsonl and the
        journal, whose tree-end lines had no fsync of their own: :data:`SYNCED_LATER`);
        then the links, verdict.json's last; then one directory fsync. Each file is whole
        before its name exists (never half-written), and a journalling file system (ext4,
        xfs) commits one directory's entries in the order they were made: a durable
        verdict.json link implies durable links of the files it was classified from. A
        crash before that directory flush leaves no verdict, or the verdict with all of
        them: an attempt without a verdict is finished by ``skgate recover``.
        """
        journal = self.journal
        text, sha = files.verdict_bytes(verdict.to_dict())
        # C2.5: the verdict's hash on record before its link, and durable with it (the
        # batch fsyncs the journal first): a verdict.json the runner did not write never
        # reads as its own once it is gone (skgate.evidence.recorded.foreign_verdict).
        self.emit(VerdictHash(sha256=sha))
        journal_fd = journal.fileno() if journal.unsynced else -1
        files.write_batch_new(
            self.dir,
            {**pending, files.VERDICT: text},  # the verdict last
            also_sync=(*also_sync, *((journal_fd,) if journal_fd >= 0 else ())),
        )
        if journal_fd >= 0:
            journal.unsynced = False  # flushed with the batch

    def _finish(
        self, indexed: bool, pending: Mapping[str, str], also_sync: tuple[int, ...]
    ) -> Verdict:
        from skgate.evidence import seal  # noqa: PLC0415 - see skgate.runner._FINISHING
        from skgate.evidence.load import load_evidence  # noqa: PLC0415
        from skgate.verdict.classify import classify  # noqa: PLC0415

        self.record_signals()
        so_far = self.journal_so_far
        evidence = load_evidence(
            self.dir,
            finishing=True,
            pending=pending,
            control=self.control,
            events=so_far.events() if so_far is not None else None,
        )
        verdict = classify(evidence).with_attempt(str(self.dir))
        disowned: tuple[str, ...] | None = None
        with deferred():
            try:
                self._write_final(pending, verdict, also_sync)
            except EvidenceExistsError as taken:
                # Another process wrote at the runner's final names while the run ran (an
                # agent's verdict.json): nothing is overwritten, none of the runner's own
                # final files is written, and the attempt is not sealed, which would vouch
                # for them (C2.5). Its verdict goes on record in the journal alone.
                names = (*pending, files.VERDICT)
                found = tuple(n for n in names if os.path.lexists(self.dir / n))
                disowned = found or (os.path.basename(taken.path),)  # gone again since
            # The verdict is on record: the journal, seal and ledger end are finished
            # whatever signal comes now, and the exit status is the verdict's (issue 28:
            # a second one cut the seal short, exit 5 beside a succeeded verdict.json).
            self.stops.recorded = True
        self.record_signals()
        self.emit(
            Finished(
                state=verdict.state,
                cause=verdict.cause.value if verdict.cause else None,
                # The runner's own CPU time (not its children's): its overhead, measured.
                runner_cpu_s=cpu_seconds(),
                # Its peak resident memory (KiB): the bounded-record promise, measured (C3).
                runner_maxrss_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                disowned=disowned,
            )
        )
        self.journal.close()
        for work in self.after_verdict:
            work()
        if disowned is not None:
            return self._disowned_end(indexed, verdict, disowned)
        # Seal first, so the ledger's end entry carries the seal's hash (C4: the scene
        # can be verified later, and a rebuilt seal.json breaks the chain).
        seal.seal_attempt(self.dir, chain=False)
        if indexed:
            with deferred():  # one ledger line, whole
                # Signals that came once the journal was sealed are recorded here.
                after = self.stops.unrecorded()
                late = [signal_name(s) for s, _ in after]
                extra: dict[str, Any] = {"signals_while_sealing": late} if late else {}
                if self.frozen_jobs is not None:
                    extra["jobs"] = self.frozen_jobs
                ledger.record_end(self.root, self.dir, verdict, extra)  # chains the seal's hash
            if after:
                self.notify(after_record_line(*(s for s, _ in after)))
        return verdict

    def _disowned_end(self, indexed: bool, verdict: Verdict, disowned: tuple[str, ...]) -> Verdict:
        """The end of an attempt whose final names another process took: the ledger's end
        entry chains no seal (none was made), and the run ends ``unknown`` (exit 5) with
        one line saying what was found and where the runner's own verdict is."""
        if indexed:
            with deferred():
                ledger.record_end(
                    self.root, self.dir, verdict, {"disowned": list(disowned)}, sealed=False
                )
        raise UnfinishedError(
            f"{self.dir}: {disowned_line(disowned)}; run 'skgate verify {self.dir}'"
        )

    def stopped_before_launch(self, signum: int, where: str) -> Verdict:
        """A stop signal before launch: the attempt ends not started, the signal on record."""
        self.stops.phase = Phase.FINISHING
        self.record_signals()
        stop = self.stop_request(self.dir) if self.stop_request is not None else None
        why = f" (through skgate stop: {stop.get('reason')})" if stop else ""
        return self.not_started(
            (
                f"the runner received {signal_name(signum)} {where}, before launch{why}; nothing "
                "was started (a clean retry is needed)",
            ),
            None,
        )

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
        self.emit(Blocked(reasons=tuple(reasons)))
        return self.finish(indexed=indexed)
