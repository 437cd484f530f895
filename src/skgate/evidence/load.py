"""Evidence of one attempt, read back from its directory alone.

The classifier is a pure function of archived evidence (C2): this module is the one
place that turns the files of an attempt directory into :class:`~skgate.model.records.Evidence`.
The runner itself classifies through it, so the verdict it writes is exactly the one
``skgate classify`` recomputes later from the same files.

Facts about now (is the runner alive, which owned processes live, has the frozen deadline
passed) are live probing, not archive reading: :mod:`skgate.read.liveness` adds them, and this
module loads no ``skgate.proc`` module, so a report of archives never does (issue 22 s3).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from skgate.evidence import files
from skgate.evidence.diskfull import read_diskfull
from skgate.evidence.follow import Progress
from skgate.evidence.installs import load_installs
from skgate.evidence.intent import read_intent
from skgate.evidence.journal import iter_journal, read_journal
from skgate.evidence.recorded import guarded, recorded_verdict
from skgate.evidence.stages import load_stages
from skgate.model import jsonread
from skgate.model.controls import FrozenControls
from skgate.model.errors import EvidenceError
from skgate.model.events import (
    Adopted,
    Blocked,
    Event,
    EventKind,
    Finished,
    Launched,
    LeaderExited,
    Recovered,
    SignalReceived,
    Timeout,
    TreeEnded,
    UnknownEvent,
)
from skgate.model.events import SignalSent as JournalSignalSent
from skgate.model.frozen import record
from skgate.model.logscan import LogScan
from skgate.model.phrases import Lang
from skgate.model.records import (
    Census,
    Evidence,
    Ownership,
    RecoveredWhen,
    SignalSent,
    Verdict,
)
from skgate.model.request import RunRequest, frozen_jobs
from skgate.model.schema import SCHEMA_CONTROL, SCHEMA_REGRESS, check_schema, require
from skgate.verdict.classify import classify

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


@record
class Control:
    """The parts of ``control.json`` the gate itself reads back."""

    attempt: str
    request: RunRequest
    runner_pid: int
    runner_start_ticks: int
    boot_id: str
    controls: FrozenControls
    raw: dict[str, Any]


def load_control(attempt_dir: Path) -> Control:
    path = attempt_dir / files.CONTROL
    data = check_schema(files.read_json(path), SCHEMA_CONTROL, str(path))
    runner = require(data, "runner", dict, str(path))
    return Control(
        attempt=str(data.get("attempt", attempt_dir.name)),
        request=RunRequest.from_dict(require(data, "request", dict, str(path)), str(path)),
        runner_pid=require(runner, "pid", int, str(path)),
        runner_start_ticks=require(runner, "start_ticks", int, str(path)),
        boot_id=str(runner.get("boot_id", "")),
        controls=FrozenControls.from_dict(data.get("controls")),
        raw=dict(data),
    )


def prelaunch_evidence(attempt_dir: Path) -> Evidence:
    """Evidence of an attempt whose controls are not frozen yet (preflight under way),
    from the archive alone (``skgate.read.liveness`` adds whether its runner lives)."""
    progress = Progress()
    finished = False
    blocked: list[str] = []
    journal = attempt_dir / files.EVENTS
    for ev in iter_journal(journal):
        progress.update(ev)
        finished = finished or isinstance(ev, Finished)
        blocked.extend(_event_reasons(ev, str(journal)))
    return Evidence(
        launched=False,
        not_started_reasons=tuple(blocked),
        runner_finished=finished,
        waiting_for=tuple(progress.waiting),
        waiting=progress.blocked_by,
        journal_missing=not files.present(journal),
    )


def load_ownership(attempt_dir: Path) -> Ownership | None:
    path = attempt_dir / files.OWNERSHIP
    if not files.present(path):
        return None
    return Ownership.from_dict(files.read_json(path), str(path))


def load_logscan(attempt_dir: Path) -> LogScan | None:
    path = attempt_dir / files.LOGSCAN
    if not files.present(path):
        return None
    return LogScan.from_dict(files.read_json(path), str(path))


def load_census(attempt_dir: Path) -> Census | None:
    path = attempt_dir / files.CENSUS
    if not files.present(path):
        return None
    return Census.from_dict(files.read_json(path), str(path))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _event_reasons(ev: Event, where: str) -> list[str]:
    """The ``reasons`` of a ``blocked`` event (none for another kind); a damaged field
    is a one-line EvidenceError, so it makes this attempt unreadable, never the whole
    root (issue 21)."""
    _refuse_damaged(ev, where, (EventKind.BLOCKED,))
    return list(ev.reasons) if isinstance(ev, Blocked) else []


#: The kinds whose fields the verdict is computed from: one of them damaged blocks it.
_DECISIVE = (
    EventKind.BLOCKED,
    EventKind.LAUNCHED,
    EventKind.LEADER_EXITED,
    EventKind.TREE_ENDED,
    EventKind.TIMEOUT,
    EventKind.SIGNAL_SENT,
    EventKind.SIGNAL_RECEIVED,
    EventKind.FINISHED,
    EventKind.RECOVERED,
)


def _refuse_damaged(ev: Event, where: str, kinds: tuple[EventKind, ...] = _DECISIVE) -> None:
    """A record of a decisive kind with a field of the wrong type is a one-line
    EvidenceError (C2.5: damaged evidence blocks the conclusion, it is never guessed)."""
    if isinstance(ev, UnknownEvent) and ev.kind in kinds:
        raise EvidenceError(
            f"{where}: event {ev.event_name!r} has a damaged {ev.problem} field; "
            "the journal was altered or truncated"
        )


def _signal_of(ev: JournalSignalSent | SignalReceived, where: str) -> int:
    if ev.signal is None:
        raise EvidenceError(
            f"{where}: event {ev.event_name!r} has a damaged 'signal' field (None); "
            "the journal was altered or truncated"
        )
    return ev.signal


@record
class Archived:
    """The classifier's input from the archive, and the two launch facts a live look at
    the attempt needs (``skgate.read.liveness``): its frozen deadline and its cgroup leaf."""

    evidence: Evidence
    deadline_wall: float | None
    cgroup: str | None


def load_evidence(
    attempt_dir: Path,
    *,
    finishing: bool = False,
    pending: Mapping[str, str] | None = None,
    control: Control | None = None,
    events: Sequence[Event] | None = None,
) -> Evidence:
    """Build the classifier's input from the attempt directory alone.

    ``finishing`` is for the runner's own final classification, made just before it
    journals ``finished``: the files are then complete, exactly as a later reader sees them.
    ``pending`` maps final file names to the exact text the runner is about to write
    there, in the same flush as verdict.json (issue 29): each is parsed from that text, as
    a later reader parses the file's bytes, so the verdict is the one ``skgate classify``
    recomputes from the files (C2). ``control``: ``control.json`` as :func:`load_control`
    read it from this attempt's file earlier (the file is written once, before launch,
    and never again), so the runner parses it while the command runs, not after.
    ``events``: the journal as :class:`~skgate.evidence.journal.JournalSoFar` read it from
    the file (the list :func:`~skgate.evidence.journal.read_journal` gives), mostly
    while the command ran.
    """
    return archived_evidence(
        attempt_dir, finishing=finishing, pending=pending, control=control, events=events
    ).evidence


def _final(
    attempt_dir: Path,
    name: str,
    pending: Mapping[str, str] | None,
    parse: Callable[[Any, str], T],
    load: Callable[[], T | None],
) -> T | None:
    """A final file's record: from its ``pending`` text if it has one, else from disk."""
    text = pending.get(name) if pending is not None else None
    if text is None:
        return load()
    # The reader a later ``classify`` uses for the file's bytes (skgate.model.jsonread).
    return parse(jsonread.loads(text), str(attempt_dir / name))


def archived_evidence(
    attempt_dir: Path,
    *,
    finishing: bool = False,
    pending: Mapping[str, str] | None = None,
    control: Control | None = None,
    events: Sequence[Event] | None = None,
) -> Archived:
    """:func:`load_evidence` with the launch facts a live look needs."""
    if control is None:
        control = load_control(attempt_dir)
    journal = attempt_dir / files.EVENTS
    journal_missing = not files.present(journal)
    if events is None:
        events = read_journal(journal)
    where = str(journal)
    launched = False
    blocked: list[str] = []
    leader_ended = False
    exit_status: int | None = None
    exit_signal: int | None = None
    tree_ended = False
    escaped_alive = 0
    timeout_fired = False
    signals: list[SignalSent] = []
    external: list[int] = []
    stops: list[str] = []
    finished = False
    recovered: RecoveredWhen | None = None
    deadline_wall: float | None = None
    cgroup: str | None = None
    runner_last: float | None = None  # the runner's last record (C3, issue 28 s9)
    runner_died = False
    for ev in events:
        _refuse_damaged(ev, where)
        if isinstance(ev, (Adopted, Recovered)):
            runner_died = True
        elif not runner_died and ev.t is not None:
            runner_last = ev.t
        if isinstance(ev, Launched):
            launched = True
            if ev.deadline_wall is not None:
                deadline_wall = float(ev.deadline_wall)
            cgroup = ev.cgroup
        elif isinstance(ev, Blocked):
            blocked.extend(ev.reasons)
        elif isinstance(ev, LeaderExited):
            leader_ended = True
            exit_status, exit_signal = ev.exit_status, ev.exit_signal
        elif isinstance(ev, TreeEnded):
            tree_ended = True
            escaped_alive = ev.escaped_alive
        elif isinstance(ev, Timeout):
            timeout_fired = True
        elif isinstance(ev, JournalSignalSent) and ev.delivered is not False:
            signals.append(SignalSent(_signal_of(ev, where), ev.reason or ""))
        elif isinstance(ev, SignalReceived):
            external.append(_signal_of(ev, where))
            if ev.stop_request is not None:
                stops.append(str(ev.stop_request.get("reason") or "no reason given"))
        elif isinstance(ev, Finished):
            finished = True
        elif isinstance(ev, Recovered):
            # 'skgate recover' finished the attempt after its runner died (issue 12).
            finished = True
            recovered = RecoveredWhen.of(ev.when)

    ownership = load_ownership(attempt_dir)
    scan = _final(
        attempt_dir, files.LOGSCAN, pending, LogScan.from_dict, lambda: load_logscan(attempt_dir)
    )
    census = _final(
        attempt_dir, files.CENSUS, pending, Census.from_dict, lambda: load_census(attempt_dir)
    )
    stages = installs = None
    if pending is None:
        stages = load_stages(attempt_dir / files.STAGES)
        installs = load_installs(attempt_dir)
    else:
        from skgate.evidence.installs import INSTALLS_FILE  # noqa: PLC0415 - as stages.py
        from skgate.model.installs import Installs  # noqa: PLC0415
        from skgate.model.stages import Stages  # noqa: PLC0415

        stages = _final(
            attempt_dir,
            files.STAGES,
            pending,
            Stages.from_dict,
            lambda: load_stages(attempt_dir / files.STAGES),
        )
        installs = _final(
            attempt_dir,
            INSTALLS_FILE,
            pending,
            Installs.from_dict,
            lambda: load_installs(attempt_dir),
        )
    # Issue 21 s1: the intent without 'launched' is a runner killed around the fork; the
    # workload may have run, so the attempt is never read as not started (C2).
    intent = None if launched or blocked else read_intent(attempt_dir)
    evidence = Evidence(
        launched=launched,
        launch_unconfirmed=intent is not None,
        disk_full=full.text if (full := read_diskfull(attempt_dir)) is not None else None,
        not_started_reasons=tuple(blocked),
        ownership_recorded=ownership is not None,
        leader_ended=leader_ended,
        leader_exit_status=exit_status,
        leader_exit_signal=exit_signal,
        tree_ended=tree_ended,
        escaped_alive=escaped_alive,
        escaped_total=len(ownership.escaped) if ownership else 0,
        escaped_torchrun=len(ownership.torchrun_escaped) if ownership else 0,
        timeout_fired=timeout_fired,
        signals_sent=tuple(signals),
        external_signals=tuple(external),
        runner_finished=finished or finishing,
        summary=scan.summary if scan is not None else None,
        census=census,
        stages=stages,
        launcher=scan.launcher if scan is not None else None,
        frozen_jobs=frozen_jobs(control.controls),
        torch_npu=control.controls.torch_npu_version,
        package_mode=control.request.package_mode,
        verdict_from=control.request.verdict_from,
        journal_missing=journal_missing,
        recovered=recovered,
        runner_last_record=_utc(runner_last),
        stop_reasons=tuple(stops),
        coverage=ownership.coverage if ownership else None,
        scan_interval=ownership.scan_interval if ownership else control.request.scan_interval,
        installs=installs,
    )
    if intent is not None and cgroup is None:
        cgroup = intent.cgroup
    return Archived(evidence, deadline_wall, cgroup)


def archived_verdict(attempt_dir: Path) -> Verdict:
    """The recorded verdict, else the classification of the archive alone: no look at
    live processes (a report of archives; ``skgate.read.liveness.current_verdict`` adds it).
    A file that differs from the seal makes it unknown, saying so first (issue 28)."""
    return guarded(attempt_dir, _archived)


def _archived(attempt_dir: Path) -> Verdict:
    if not files.present(attempt_dir / files.CONTROL) and files.present(attempt_dir / files.EVENTS):
        return classify(prelaunch_evidence(attempt_dir)).with_attempt(str(attempt_dir))
    recorded = recorded_verdict(attempt_dir)
    if recorded is not None:
        return recorded
    return classify(load_evidence(attempt_dir)).with_attempt(str(attempt_dir))


def health_findings(root: Path, lang: Lang) -> list[str]:
    """For ``skgate report``: why a health root's declared change did not reach the
    compile (C6), each in ``lang`` as ``regress.json`` recorded it (en and zh)."""
    path = root / files.REGRESS_FILE
    try:
        data = files.read_json(path) if path.is_file() else None
    except EvidenceError:
        return []
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_REGRESS:
        return []
    found = data.get("not_reached")
    key = "zh" if lang is Lang.ZH else "en"
    if not isinstance(found, list):
        return []
    return [str(f[key]) for f in found if isinstance(f, dict) and isinstance(f.get(key), str)]


def health_statement(root: Path) -> str | None:
    """For ``skgate report``: the profiling sentence of a health root, if it has one."""
    path = root / files.REGRESS_FILE
    if not path.is_file():
        return None
    try:
        data = files.read_json(path)
    except EvidenceError:
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_REGRESS:
        return None
    if data.get("kind") != "health" or not isinstance(data.get("statement"), str):
        return None
    return str(data["statement"])


def _utc(t: float | None) -> str | None:
    """A journal time as the C3 line gives it (UTC, to the second)."""
    return None if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
