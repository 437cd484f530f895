"""Typed records shared by every part of skgate.

Nothing here does I/O. Every record that is written to an attempt directory has a
``to_dict``/``from_dict`` pair and every file carries a ``schema`` name and version.

The schema names and the checks every ``from_dict`` uses live in :mod:`skgate.model.schema`;
the run request in :mod:`skgate.model.request`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skgate.model.errors import EvidenceError
from skgate.model.exits import STATE_CODES
from skgate.model.launcher import LauncherFacts
from skgate.model.schema import (
    SCHEMA_CENSUS,
    SCHEMA_OWNERSHIP,
    SCHEMA_VERDICT,
    check_schema,
    opt_int,
    require,
)
from skgate.model.stages import Stages


class State(str, enum.Enum):
    """The five compile states of contract C2, plus ``not_started``.

    ``not_started`` is not a compile result: an attempt that was blocked before launch
    is recorded with it and never counts as a failure.
    """

    IN_PROGRESS = "in_progress"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    UNKNOWN = "unknown"
    NOT_STARTED = "not_started"


class Cause(str, enum.Enum):
    """Why an attempt is ``interrupted`` (C2.4)."""

    TIMEOUT = "timeout"
    EXTERNAL = "external"


class PackageMode(str, enum.Enum):
    """C8 output check: must a ``.run`` package exist after natural return?"""

    REQUIRED = "required"
    OPTIONAL = "optional"


#: Exit status of ``run``, ``status`` and ``classify`` for each state (docs/contract.md C2;
#: the table is :data:`skgate.model.exits.EXIT_TABLE`).
EXIT_CODES: Mapping[State, int] = {State(s): code for s, code in STATE_CODES.items()}

# ---------------------------------------------------------------------------
# Processes and ownership (C4)


@dataclass(frozen=True)
class ProcessRecord:
    """One process, identified by (pid, start_ticks) so a recycled pid never matches."""

    pid: int
    start_ticks: int
    ppid: int
    pgid: int
    sid: int
    argv: tuple[str, ...]
    name: str
    first_seen: float
    last_seen: float
    exit_status: int | None = None
    exit_signal: int | None = None
    escaped: bool = False
    #: Which sources reported it: "events", "scan", "reap", "launch" (see proc.owned).
    seen_by: tuple[str, ...] = ()
    #: "proc" (read from /proc/<pid>/stat) or "event" (dead before it could be read:
    #: the fork event's time, in the same boot clock ticks).
    start_from: str = "proc"
    #: It exec'ed and was gone before its argv could be read (argv is its parent's).
    argv_late: bool = False
    execs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "ppid": self.ppid,
            "pgid": self.pgid,
            "sid": self.sid,
            "argv": list(self.argv),
            "name": self.name,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "exit_status": self.exit_status,
            "exit_signal": self.exit_signal,
            "escaped": self.escaped,
            "seen_by": list(self.seen_by),
            "start_from": self.start_from,
            "argv_late": self.argv_late,
            "execs": self.execs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "process") -> ProcessRecord:
        argv = require(data, "argv", list, where)
        return cls(
            pid=require(data, "pid", int, where),
            start_ticks=require(data, "start_ticks", int, where),
            ppid=require(data, "ppid", int, where),
            pgid=require(data, "pgid", int, where),
            sid=require(data, "sid", int, where),
            argv=tuple(str(a) for a in argv),
            name=require(data, "name", str, where),
            first_seen=float(require(data, "first_seen", (int, float), where)),
            last_seen=float(require(data, "last_seen", (int, float), where)),
            exit_status=opt_int(data, "exit_status", where),
            exit_signal=opt_int(data, "exit_signal", where),
            escaped=bool(data.get("escaped", False)),
            seen_by=tuple(str(x) for x in data.get("seen_by", ())),
            start_from=str(data.get("start_from", "proc")),
            argv_late=bool(data.get("argv_late", False)),
            execs=int(data.get("execs", 0)),
        )


#: Ownership sources (C3: the manifest says how it was made, and so how complete it is).
SOURCE_EVENTS = "events"
SOURCE_CGROUP = "cgroup"
SOURCE_SCAN = "scan"


@dataclass(frozen=True)
class Coverage:
    """How complete an ownership manifest is: which sources made it, what they missed."""

    sources: tuple[str, ...]
    unavailable: Mapping[str, str] = field(default_factory=dict)  # source -> why not
    events_overruns: int = 0  # times the kernel dropped events (ENOBUFS)
    missed_by_events: int = 0  # processes only the scan or the reaper found
    argv_late: int = 0  # processes whose argv was gone before it could be read
    folded: Mapping[str, Any] = field(default_factory=dict)  # counted, not listed
    cgroup: Mapping[str, Any] = field(default_factory=dict)  # path, kind, stats, removed

    @property
    def exact(self) -> bool:
        """Every fork, exec and exit of the owned tree is on record."""
        return SOURCE_EVENTS in self.sources and self.events_overruns == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": list(self.sources),
            "unavailable": dict(self.unavailable),
            "exact": self.exact,
            "events_overruns": self.events_overruns,
            "missed_by_events": self.missed_by_events,
            "argv_late": self.argv_late,
            "folded": dict(self.folded),
            "cgroup": dict(self.cgroup),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Coverage:
        if not isinstance(data, dict):
            raise EvidenceError(f"{where}: field 'coverage' has the wrong type")
        sources = require(data, "sources", list, where)
        return cls(
            sources=tuple(str(s) for s in sources),
            unavailable={str(k): str(v) for k, v in dict(data.get("unavailable") or {}).items()},
            events_overruns=int(data.get("events_overruns", 0)),
            missed_by_events=int(data.get("missed_by_events", 0)),
            argv_late=int(data.get("argv_late", 0)),
            folded=dict(data.get("folded") or {}),
            cgroup=dict(data.get("cgroup") or {}),
        )


@dataclass(frozen=True)
class Ownership:
    """What the attempt owns: the leader, every observed descendant, and foreign compilers.

    ``complete`` is true only in the runner's final write, after the whole owned tree was
    gone (or the runner gave up on escaped processes it may not signal).
    """

    boot_id: str
    runner_pid: int
    runner_start_ticks: int
    leader: ProcessRecord | None
    pgid: int | None
    sid: int | None
    owned: tuple[ProcessRecord, ...]
    foreign: tuple[ProcessRecord, ...]
    complete: bool
    updated_at: float
    scan_interval: float
    #: None in manifests written before the sources were recorded (then: scan only).
    coverage: Coverage | None = None

    @property
    def escaped(self) -> tuple[ProcessRecord, ...]:
        return tuple(p for p in self.owned if p.escaped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_OWNERSHIP,
            "boot_id": self.boot_id,
            "runner": {"pid": self.runner_pid, "start_ticks": self.runner_start_ticks},
            "leader": self.leader.to_dict() if self.leader else None,
            "pgid": self.pgid,
            "sid": self.sid,
            "owned": [p.to_dict() for p in self.owned],
            "escaped": [p.pid for p in self.owned if p.escaped],
            "foreign": [p.to_dict() for p in self.foreign],
            "complete": self.complete,
            "updated_at": self.updated_at,
            "scan_interval": self.scan_interval,
            **({"coverage": self.coverage.to_dict()} if self.coverage else {}),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "ownership.json") -> Ownership:
        d = check_schema(data, SCHEMA_OWNERSHIP, where)
        runner = require(d, "runner", dict, where)
        leader = d.get("leader")
        if leader is not None and not isinstance(leader, dict):
            raise EvidenceError(f"{where}: field 'leader' has the wrong type")
        return cls(
            boot_id=require(d, "boot_id", str, where),
            runner_pid=require(runner, "pid", int, where),
            runner_start_ticks=require(runner, "start_ticks", int, where),
            leader=ProcessRecord.from_dict(leader, where) if leader else None,
            pgid=opt_int(d, "pgid", where),
            sid=opt_int(d, "sid", where),
            owned=tuple(
                ProcessRecord.from_dict(p, where) for p in require(d, "owned", list, where)
            ),
            foreign=tuple(
                ProcessRecord.from_dict(p, where) for p in require(d, "foreign", list, where)
            ),
            complete=require(d, "complete", bool, where),
            updated_at=float(require(d, "updated_at", (int, float), where)),
            scan_interval=float(require(d, "scan_interval", (int, float), where)),
            coverage=Coverage.from_dict(d["coverage"], where) if "coverage" in d else None,
        )


# ---------------------------------------------------------------------------
# Summary and census (C3)


@dataclass(frozen=True)
class Stage:
    """One aggregate compile stage as a final summary reports it."""

    name: str
    inputs: int
    succeeded: int
    failed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "inputs": self.inputs,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Summary:
    """The final aggregate summary: verbatim lines, parsed stages, contradictions found."""

    lines: tuple[str, ...]
    stages: tuple[Stage, ...]
    problems: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        return bool(self.stages)

    @property
    def consistent(self) -> bool:
        return not self.problems

    @property
    def total_failed(self) -> int:
        return sum(s.failed for s in self.stages)

    @property
    def all_succeeded(self) -> bool:
        return self.present and all(s.failed == 0 and s.succeeded == s.inputs for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": list(self.lines),
            "stages": [s.to_dict() for s in self.stages],
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class RootCensus:
    """Artifact counts under one result root (``ts..._pid..._outputs``) or other folder."""

    root: str
    error_logs: int
    succ_logs: int
    run_packages: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "error_logs": self.error_logs,
            "succ_logs": self.succ_logs,
            "run_packages": self.run_packages,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "census") -> RootCensus:
        return cls(
            root=require(data, "root", str, where),
            error_logs=require(data, "error_logs", int, where),
            succ_logs=require(data, "succ_logs", int, where),
            run_packages=require(data, "run_packages", int, where),
        )


@dataclass(frozen=True)
class Census:
    """Counts of final success and error artifacts (C3) under the outputs directory.

    ``live`` is true when the census was taken while owned processes could still be
    running: error-named files are then provisional (C1).
    """

    outputs: str
    exists: bool
    roots: tuple[RootCensus, ...]
    live: bool
    taken_at: float
    #: Directories under outputs that could not be read: the counts are then a lower
    #: bound, and a missing ``.run`` may only be hidden (the C8 check cannot conclude).
    unreadable: int = 0
    #: Top-level entries of outputs that existed before launch: not counted, they are not
    #: this attempt's artifacts (C8: a stale error log or .run must not decide a verdict).
    preexisting: int = 0

    @property
    def error_logs(self) -> int:
        return sum(r.error_logs for r in self.roots)

    @property
    def succ_logs(self) -> int:
        return sum(r.succ_logs for r in self.roots)

    @property
    def run_packages(self) -> int:
        return sum(r.run_packages for r in self.roots)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_CENSUS,
            "outputs": self.outputs,
            "exists": self.exists,
            "live": self.live,
            "taken_at": self.taken_at,
            "unreadable": self.unreadable,
            "preexisting": self.preexisting,
            "totals": {
                "error_logs": self.error_logs,
                "succ_logs": self.succ_logs,
                "run_packages": self.run_packages,
            },
            "roots": [r.to_dict() for r in self.roots],
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "census.json") -> Census:
        d = check_schema(data, SCHEMA_CENSUS, where)
        return cls(
            outputs=require(d, "outputs", str, where),
            exists=require(d, "exists", bool, where),
            roots=tuple(RootCensus.from_dict(r, where) for r in require(d, "roots", list, where)),
            live=require(d, "live", bool, where),
            taken_at=float(require(d, "taken_at", (int, float), where)),
            unreadable=int(d.get("unreadable", 0)),
            preexisting=int(d.get("preexisting", 0)),
        )


# ---------------------------------------------------------------------------
# Classifier input and output (C2)


@dataclass(frozen=True)
class SignalSent:
    """A signal the runner sent to its own process group, and why."""

    signal: int
    reason: str  # "timeout", "grace-expired", "forwarded", "escalated"

    def to_dict(self) -> dict[str, Any]:
        return {"signal": self.signal, "reason": self.reason}


@dataclass(frozen=True)
class Evidence:
    """Everything the classifier may look at. Built from an attempt directory.

    Fields are facts as recorded, never interpretations: the classifier decides.
    """

    launched: bool
    not_started_reasons: tuple[str, ...] = ()
    ownership_recorded: bool = False
    leader_ended: bool = False
    leader_exit_status: int | None = None
    leader_exit_signal: int | None = None
    #: The runner saw the whole owned tree end (or gave up on escaped processes).
    tree_ended: bool = False
    #: Owned processes alive right now (only meaningful for a live status check).
    owned_alive: int = 0
    #: Escaped owned processes still alive when the runner finished.
    escaped_alive: int = 0
    escaped_total: int = 0
    timeout_fired: bool = False
    signals_sent: tuple[SignalSent, ...] = ()
    external_signals: tuple[int, ...] = ()
    runner_finished: bool = False
    runner_alive: bool = False
    deadline_passed: bool = False
    summary: Summary | None = None
    census: Census | None = None
    package_mode: PackageMode = PackageMode.OPTIONAL
    #: The attempt's journal (events.jsonl) is gone: launch and exits are unknowable.
    journal_missing: bool = False
    #: Every observed owned op_compiler invocation (stages.json; None before it existed).
    stages: Stages | None = None
    #: What the launcher's own lines said (logscan.json's ``launcher``).
    launcher: LauncherFacts | None = None
    #: The frozen NPU_STATIC_KERNEL_COMPILE_JOBS of control.json (None: not frozen).
    frozen_jobs: int | None = None
    #: ``skgate recover`` finished this attempt after its runner died: when it died
    #: (one of :data:`RECOVERED_WHEN`), else None.
    recovered: str | None = None
    #: Blockers a live runner waits for before launch (foreign compilers, leases; C4).
    waiting_for: tuple[str, ...] = ()
    #: Reasons given to ``skgate stop`` requests the runner acted on (C2.4, external).
    stop_reasons: tuple[str, ...] = ()
    #: How complete the ownership record is (None: a manifest from before sources were
    #: recorded, made by the scan alone), and the scan interval it used.
    coverage: Coverage | None = None
    scan_interval: float = 1.0


#: When a runner died, as ``skgate recover`` establishes it from the files.
RECOVERED_WHEN = ("before launch", "before natural return", "after natural return")


@dataclass(frozen=True)
class Verdict:
    """The classifier's answer: a state, its cause, and the reasons, citing rules."""

    state: State
    cause: Cause | None
    reasons: tuple[str, ...]
    missing: tuple[str, ...] = ()
    natural_return: bool = False
    exit_status: int | None = None
    exit_signal: int | None = None
    timeout_fired: bool = False
    escaped: int = 0
    attempt: str | None = None
    census: Census | None = None
    summary: Summary | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Where the summary came from: "summary_lines", "pattern", "op_compiler census" (C2).
    summary_source: str | None = None
    #: False when no compile ran (a cached package was installed); None when unknown.
    compiled: bool | None = None
    #: The -j of every observed op_compiler invocation: the concurrency used (C3, C5).
    effective_jobs: tuple[int, ...] = ()
    #: The most opc processes seen alive at once (a lower bound: scans are periodic).
    peak_opc: int | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]

    def with_attempt(self, attempt: str) -> Verdict:
        return dataclasses.replace(self, attempt=attempt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERDICT,
            "state": self.state.value,
            "cause": self.cause.value if self.cause else None,
            "attempt": self.attempt,
            "exit_status": self.exit_status,
            "exit_signal": self.exit_signal,
            "timeout_fired": self.timeout_fired,
            "natural_return": self.natural_return,
            "escaped": self.escaped,
            "reasons": list(self.reasons),
            "missing": list(self.missing),
            "census": self.census.to_dict() if self.census else None,
            "summary": self.summary.to_dict() if self.summary else None,
            "summary_source": self.summary_source,
            "compiled": self.compiled,
            "effective_jobs": list(self.effective_jobs),
            "peak_opc": self.peak_opc,
            **({"extra": dict(self.extra)} if self.extra else {}),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "verdict.json") -> Verdict:
        d = check_schema(data, SCHEMA_VERDICT, where)
        try:
            state = State(require(d, "state", str, where))
            cause_raw = d.get("cause")
            cause = Cause(cause_raw) if cause_raw is not None else None
        except ValueError as exc:
            raise EvidenceError(f"{where}: {exc}") from None
        census_raw = d.get("census")
        summary_raw = d.get("summary")
        summary = None
        if isinstance(summary_raw, dict):
            summary = Summary(
                lines=tuple(str(x) for x in summary_raw.get("lines", [])),
                stages=tuple(
                    Stage(
                        name=require(s, "name", str, where),
                        inputs=require(s, "inputs", int, where),
                        succeeded=require(s, "succeeded", int, where),
                        failed=require(s, "failed", int, where),
                    )
                    for s in summary_raw.get("stages", [])
                ),
                problems=tuple(str(x) for x in summary_raw.get("problems", [])),
            )
        extra = d.get("extra", {})
        compiled = d.get("compiled")
        jobs = d.get("effective_jobs", [])
        if not isinstance(jobs, list) or not all(
            isinstance(j, int) and not isinstance(j, bool) for j in jobs
        ):
            raise EvidenceError(f"{where}: field 'effective_jobs' has the wrong type")
        source = d.get("summary_source")
        return cls(
            state=state,
            cause=cause,
            reasons=tuple(str(r) for r in require(d, "reasons", list, where)),
            missing=tuple(str(r) for r in d.get("missing", [])),
            natural_return=bool(d.get("natural_return", False)),
            exit_status=opt_int(d, "exit_status", where),
            exit_signal=opt_int(d, "exit_signal", where),
            timeout_fired=bool(d.get("timeout_fired", False)),
            escaped=int(d.get("escaped", 0)),
            attempt=d.get("attempt") if isinstance(d.get("attempt"), str) else None,
            census=Census.from_dict(census_raw, where) if census_raw else None,
            summary=summary,
            extra=extra if isinstance(extra, dict) else {},
            summary_source=source if isinstance(source, str) else None,
            compiled=compiled if isinstance(compiled, bool) else None,
            effective_jobs=tuple(jobs),
            peak_opc=opt_int(d, "peak_opc", where),
        )
