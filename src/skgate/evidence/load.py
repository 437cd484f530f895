"""Evidence of one attempt, read back from its directory alone.

The classifier is a pure function of archived evidence (C2): this module is the one
place that turns the files of an attempt directory into :class:`~skgate.model.records.Evidence`.
The runner itself classifies through it, so the verdict it writes is exactly the one
``skgate classify`` recomputes later from the same files.

``live=True`` (``skgate status``) adds facts about now, read-only: whether the runner that
owns the attempt is still alive, how many owned processes live, whether the frozen
deadline has passed. Nothing here sends a signal or writes a file (C2.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence import files, regular
from skgate.evidence.follow import Progress
from skgate.evidence.recorded import recorded_verdict
from skgate.evidence.stages import load_stages
from skgate.model.controls import FrozenControls
from skgate.model.errors import EvidenceError
from skgate.model.logscan import LogScan
from skgate.model.records import (
    RECOVERED_WHEN,
    Census,
    Evidence,
    Ownership,
    ProcessRecord,
    SignalSent,
    Verdict,
)
from skgate.model.request import RunRequest, frozen_jobs
from skgate.model.schema import SCHEMA_CONTROL, SCHEMA_REGRESS, check_schema, require
from skgate.proc.cgroup import LEAF_PREFIX, read_pids
from skgate.proc.observe import boot_id, is_alive, read_stat
from skgate.proc.owned import journal_alive
from skgate.verdict.classify import classify


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class RunnerRef:
    """The runner that owns an attempt: pid, start time, boot."""

    pid: int
    start_ticks: int
    boot_id: str

    def alive(self) -> bool:
        return self.boot_id in ("", boot_id()) and is_alive(self.pid, self.start_ticks)


def runner_ref(attempt_dir: Path) -> RunnerRef | None:
    """The owning runner, from ``control.json`` or, before preflight has frozen the
    controls (a runner still waiting for a blocker), from the journal's ``created``."""
    if files.present(attempt_dir / files.CONTROL):
        c = load_control(attempt_dir)
        return RunnerRef(c.runner_pid, c.runner_start_ticks, c.boot_id)
    for ev in files.iter_events(attempt_dir / files.EVENTS):
        runner = ev.get("runner") if ev.get("event") == "created" else None
        if isinstance(runner, dict) and _is_int(runner.get("pid")):
            ticks = runner.get("start_ticks")
            if isinstance(ticks, int) and _is_int(ticks):
                boot = runner.get("boot_id", ev.get("boot_id", ""))
                return RunnerRef(runner["pid"], ticks, str(boot))
    return None


def prelaunch_evidence(attempt_dir: Path) -> Evidence:
    """Evidence of an attempt whose controls are not frozen yet (preflight under way)."""
    progress = Progress()
    finished = False
    blocked: list[str] = []
    journal = attempt_dir / files.EVENTS
    for ev in files.iter_events(journal):
        progress.update(ev)
        finished = finished or ev.get("event") == "finished"
        if ev.get("event") == "blocked":
            blocked.extend(_event_reasons(ev, str(journal)))
    ref = runner_ref(attempt_dir)
    return Evidence(
        launched=False,
        not_started_reasons=tuple(blocked),
        runner_finished=finished,
        runner_alive=not finished and ref is not None and ref.alive(),
        waiting_for=tuple(progress.waiting),
        journal_missing=not files.present(journal),
    )


def runner_is_alive(control: Control) -> bool:
    """Is the runner that owns the attempt alive now (same boot, same pid and start time)?"""
    same_boot = control.boot_id in ("", boot_id())
    return same_boot and is_alive(control.runner_pid, control.runner_start_ticks)


def live_owned(ownership: Ownership | None) -> list[ProcessRecord]:
    """Owned processes (the leader included) alive now, identified by (pid, start time).

    The one liveness check of an attempt's processes (status, the live view, cleanup): a
    manifest from another boot has none alive, whatever pids exist now, and a process
    the runner saw exit is never counted again.
    """
    if ownership is None or ownership.boot_id not in ("", boot_id()):
        return []
    seen: set[tuple[int, int]] = set()
    alive: list[ProcessRecord] = []
    for p in ([ownership.leader] if ownership.leader else []) + list(ownership.owned):
        key = (p.pid, p.start_ticks)
        if key in seen or p.exit_status is not None or p.exit_signal is not None:
            continue
        seen.add(key)
        if is_alive(p.pid, p.start_ticks):
            alive.append(p)
    return alive


def live_members(
    attempt_dir: Path, ownership: Ownership | None, cgroup: str | None, same_boot: bool
) -> int:
    """Owned processes alive now, from every record the attempt left (read-only).

    The last manifest is a snapshot and may predate a process; the process journal
    (``procs.jsonl``) has every fork the runner learnt up to its death; the attempt's
    cgroup, while it exists, lists every member now, even those forked after the runner
    died. Each counts once, by (pid, start time): never unknown while something owned
    runs (C2.1).
    """
    if not same_boot:
        return 0
    alive = {(p.pid, p.start_ticks) for p in live_owned(ownership)}
    procs = attempt_dir / files.PROCS
    if files.present(procs):
        # Bounded lines of a regular file only (issue 21); an over-long line is a
        # damaged record and, like a torn one, is skipped by journal_alive.
        lines = (ln.raw for ln in regular.iter_lines(procs) if not ln.too_long)
        for pid, ticks in journal_alive(lines):
            if (pid, ticks) not in alive and is_alive(pid, ticks):
                alive.add((pid, ticks))
    # Only a leaf skgate made (the name is the runner's): a damaged journal must not
    # point the check at a whole hierarchy.
    if cgroup and Path(cgroup).name.startswith(LEAF_PREFIX):
        for pid in read_pids(Path(cgroup)):
            st = read_stat(pid)
            if st is not None and not st.zombie:
                alive.add((pid, st.start_ticks))
    return len(alive)


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


def _event_reasons(ev: dict[str, Any], where: str) -> list[str]:
    """The ``reasons`` of a ``blocked`` event; a damaged field is a one-line
    EvidenceError, so it makes this attempt unreadable, never the whole root (issue 21)."""
    reasons = ev.get("reasons", [])
    if not isinstance(reasons, list):
        raise EvidenceError(
            f"{where}: event 'blocked' has a damaged 'reasons' field ({reasons!r}); the "
            "journal was altered or truncated"
        )
    return [str(r) for r in reasons]


def _event_int(ev: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    """An integer field of a journal event; a damaged one is a one-line EvidenceError."""
    value = ev.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise EvidenceError(
            f"{where}: event {ev.get('event')!r} has a damaged {key!r} field ({value!r}); "
            "the journal was altered or truncated"
        )
    return value


def load_evidence(attempt_dir: Path, *, live: bool = False, finishing: bool = False) -> Evidence:
    """Build the classifier's input from the attempt directory (and, if ``live``, now).

    ``finishing`` is for the runner's own final classification, made just before it
    journals ``finished``: the files are then complete, exactly as a later reader sees them.
    """
    control = load_control(attempt_dir)
    journal = attempt_dir / files.EVENTS
    journal_missing = not files.present(journal)
    events = files.read_events(journal)
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
    recovered: str | None = None
    deadline_wall: float | None = None
    cgroup: str | None = None
    for ev in events:
        name = ev.get("event")
        if name == "launched":
            launched = True
            if isinstance(ev.get("deadline_wall"), (int, float)):
                deadline_wall = float(ev["deadline_wall"])
            if isinstance(ev.get("cgroup"), str):
                cgroup = ev["cgroup"]
        elif name == "blocked":
            blocked.extend(_event_reasons(ev, where))
        elif name == "leader_exited":
            leader_ended = True
            exit_status = ev["exit_status"] if _is_int(ev.get("exit_status")) else None
            exit_signal = ev["exit_signal"] if _is_int(ev.get("exit_signal")) else None
        elif name == "tree_ended":
            tree_ended = True
            escaped_alive = _event_int(ev, "escaped_alive", where, default=0)
        elif name == "timeout":
            timeout_fired = True
        elif name == "signal_sent" and ev.get("delivered", True) is not False:
            signals.append(SignalSent(_event_int(ev, "signal", where), str(ev.get("reason", ""))))
        elif name == "signal_received":
            external.append(_event_int(ev, "signal", where))
            stop = ev.get("stop_request")
            if isinstance(stop, dict):
                stops.append(str(stop.get("reason") or "no reason given"))
        elif name == "finished":
            finished = True
        elif name == "recovered":
            # 'skgate recover' finished the attempt after its runner died (issue 12).
            finished = True
            when = ev.get("when")
            recovered = when if when in RECOVERED_WHEN else None

    ownership = load_ownership(attempt_dir)
    scan = load_logscan(attempt_dir)
    owned_alive = 0
    runner_alive = False
    deadline_passed = False
    if live and not finished:
        runner_alive = runner_is_alive(control)
        owned_alive = live_members(
            attempt_dir, ownership, cgroup, control.boot_id in ("", boot_id())
        )
        deadline_passed = deadline_wall is not None and time.time() > deadline_wall
    return Evidence(
        launched=launched,
        not_started_reasons=tuple(blocked),
        ownership_recorded=ownership is not None,
        leader_ended=leader_ended,
        leader_exit_status=exit_status,
        leader_exit_signal=exit_signal,
        tree_ended=tree_ended,
        owned_alive=owned_alive,
        escaped_alive=escaped_alive,
        escaped_total=len(ownership.escaped) if ownership else 0,
        timeout_fired=timeout_fired,
        signals_sent=tuple(signals),
        external_signals=tuple(external),
        runner_finished=finished or finishing,
        runner_alive=runner_alive,
        deadline_passed=deadline_passed,
        summary=scan.summary if scan is not None else None,
        census=load_census(attempt_dir),
        stages=load_stages(attempt_dir / files.STAGES),
        launcher=scan.launcher if scan is not None else None,
        frozen_jobs=frozen_jobs(control.controls),
        package_mode=control.request.package_mode,
        verdict_from=control.request.verdict_from,
        journal_missing=journal_missing,
        recovered=recovered,
        stop_reasons=tuple(stops),
        coverage=ownership.coverage if ownership else None,
        scan_interval=ownership.scan_interval if ownership else control.request.scan_interval,
    )


def recompute(attempt_dir: Path) -> Verdict:
    """``skgate classify``: the verdict from the archived files alone.

    For an attempt the runner finished that is all there is. For an unfinished one the
    liveness of its runner and owned processes is looked at (read-only), so it reads
    ``in_progress`` or ``unknown`` ("the runner died before the verdict was written"),
    never a final state from a partial set of files (issue 12).
    """
    return classify(load_evidence(attempt_dir, live=True)).with_attempt(str(attempt_dir))


def current_verdict(attempt_dir: Path) -> Verdict:
    """``skgate status``: the recorded verdict if the run finished, else a read-only look.

    A live attempt of another runner reads ``in_progress``; an attempt whose runner died
    without a verdict reads ``in_progress`` while its owned processes live and its
    deadline has not passed, else ``unknown``: "the runner died before the verdict was
    written (after/before natural return)", never a final state derived from the partial
    set of files it left (no census, say, would skip the C8 check).
    """
    recorded = recorded_verdict(attempt_dir)
    if recorded is not None:
        return recorded
    if not files.present(attempt_dir / files.CONTROL) and files.present(attempt_dir / files.EVENTS):
        # Still in preflight (or ended there without controls): the journal alone says
        # whether a live runner is waiting for a blocker.
        return classify(prelaunch_evidence(attempt_dir)).with_attempt(str(attempt_dir))
    # No verdict recorded, or a damaged one: recompute from the rest of the evidence.
    return classify(load_evidence(attempt_dir, live=True)).with_attempt(str(attempt_dir))


def health_findings(root: Path, lang: str) -> list[str]:
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
    key = "zh" if lang == "zh" else "en"
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
