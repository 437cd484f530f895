"""Typed records shared by every part of skgate.

Nothing here does I/O. Every record that is written to an attempt directory has a
``to_dict``/``from_dict`` pair and every file carries a ``schema`` name and version.

The records a runner needs before its command has returned (states, processes,
ownership, summary lines) are in :mod:`skgate.model.running`, re-exported here: a
runner loads this module only once the command runs (start latency, issue 13). The
schema names and the checks every ``from_dict`` uses live in :mod:`skgate.model.schema`;
the run request in :mod:`skgate.model.request`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from skgate.model.errors import EvidenceError
from skgate.model.frozen import field, record, replace
from skgate.model.modes import PackageMode, VerdictFrom
from skgate.model.running import (
    EXIT_CODES,
    Cause,
    Coverage,
    Ownership,
    ProcessRecord,
    SealBreach,
    Stage,
    State,
    Summary,
    Waiting,
)
from skgate.model.schema import (
    SCHEMA_CENSUS,
    SCHEMA_VERDICT,
    check_schema,
    opt_int,
    require,
)

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # Annotations only: a recorded verdict is read (``skgate status``) without the stage
    # and launcher records' classes being built (start-up cost, issue 22 s5).
    from skgate.model.installs import Installs
    from skgate.model.launcher import LauncherFacts
    from skgate.model.stages import Stages

__all__ = [
    "EXIT_CODES",
    "RECOVERED_WHEN",
    "Cause",
    "Census",
    "Coverage",
    "Evidence",
    "Ownership",
    "ProcessRecord",
    "RecoveredWhen",
    "RootCensus",
    "SealBreach",
    "SignalSent",
    "Stage",
    "State",
    "Summary",
    "Verdict",
    "Waiting",
]


@record
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


@record
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


@record
class SignalSent:
    """A signal the runner sent to its own process group, and why."""

    signal: int
    reason: str  # "timeout", "grace-expired", "forwarded", "escalated"

    def to_dict(self) -> dict[str, Any]:
        return {"signal": self.signal, "reason": self.reason}


@record
class Evidence:
    """Everything the classifier may look at. Built from an attempt directory.

    Fields are facts as recorded, never interpretations: the classifier decides.
    """

    launched: bool
    not_started_reasons: tuple[str, ...] = ()
    #: The runner recorded its intent to launch (``launch.json``) but no ``launched``
    #: entry: killed around the fork, the workload may have run (issue 21 s1).
    launch_unconfirmed: bool = False
    #: ``diskfull.json``: the evidence disk was full while the runner wrote (when, which
    #: files, where run.log was cut); the evidence is incomplete (issue 21 s2).
    disk_full: str | None = None
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
    #: Of them, torchrun's workers (and their children): in a session a torchrun child
    #: started (torchrun's ``start_new_session=True``; issue 27).
    escaped_torchrun: int = 0
    timeout_fired: bool = False
    signals_sent: tuple[SignalSent, ...] = ()
    external_signals: tuple[int, ...] = ()
    runner_finished: bool = False
    runner_alive: bool = False
    deadline_passed: bool = False
    #: Free bytes under the attempt when its file system is full right now (a live look
    #: at a live runner only; None otherwise): its records cannot grow (issue 28).
    evidence_full_free: int | None = None
    summary: Summary | None = None
    census: Census | None = None
    package_mode: PackageMode = PackageMode.OPTIONAL
    #: The frozen ``--verdict-from`` of control.json (C2): exit-status declares that the
    #: command's exit status is its final summary.
    verdict_from: VerdictFrom = VerdictFrom.SUMMARY
    #: The attempt's journal (events.jsonl) is gone: launch and exits are unknowable.
    journal_missing: bool = False
    #: Every observed owned op_compiler invocation (stages.json; None before it existed).
    stages: Stages | None = None
    #: What the launcher's own lines said (logscan.json's ``launcher``).
    launcher: LauncherFacts | None = None
    #: The frozen NPU_STATIC_KERNEL_COMPILE_JOBS of control.json (None: not frozen).
    frozen_jobs: int | None = None
    #: The installed torch-npu version of control.json (issue 27: its release's rules
    #: explain what the verdict did not see); None when not found or not recorded.
    torch_npu: str | None = None
    #: ``skgate recover`` finished this attempt after its runner died: when it died
    #: (one of :data:`RECOVERED_WHEN`), else None.
    recovered: RecoveredWhen | None = None
    #: When the runner wrote its last journal record (UTC, to the second): after a
    #: runner death, nothing later is on record (C3, issue 28 s9).
    runner_last_record: str | None = None
    #: Blockers a live runner waits for before launch (foreign compilers, leases; C4).
    waiting_for: tuple[str, ...] = ()
    #: The same, typed: the in-progress phase before launch (issue 30).
    waiting: Waiting | None = None
    #: Reasons given to ``skgate stop`` requests the runner acted on (C2.4, external).
    stop_reasons: tuple[str, ...] = ()
    #: How complete the ownership record is (None: a manifest from before sources were
    #: recorded, made by the scan alone), and the scan interval it used.
    coverage: Coverage | None = None
    scan_interval: float = 1.0
    #: Every static-kernel package the owned tree installed or uninstalled
    #: (``installs.json``; None: an attempt from before it was recorded), C8.
    installs: Installs | None = None


class RecoveredWhen(str, enum.Enum):
    """When a runner died, as ``skgate recover`` establishes it from the files."""

    BEFORE_LAUNCH = "before launch"
    BEFORE_NATURAL_RETURN = "before natural return"
    AFTER_NATURAL_RETURN = "after natural return"

    @classmethod
    def of(cls, value: object) -> RecoveredWhen | None:
        """The member named by a journal's ``when`` (None: the verdict was kept, or an
        unknown value, which decides nothing)."""
        try:
            return cls(value)
        except ValueError:
            return None


RECOVERED_WHEN = tuple(w.value for w in RecoveredWhen)


@record
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
    #: C8: False when a package install failed; True when every install seen exited 0;
    #: None when no install was seen or an outcome is unknown (``installs.json``).
    installed: bool | None = None
    #: C8: the global ``ai_core/uninstall.sh`` paths an owned process ran.
    global_uninstall: tuple[str, ...] = ()
    #: Read side only, never recorded: a sealed file changed (the state is then unknown).
    breach: SealBreach | None = None
    #: Read side only, never recorded: the in-progress phase before launch.
    waiting: Waiting | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]

    def with_attempt(self, attempt: str) -> Verdict:
        return replace(self, attempt=attempt)

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
            **({"installed": self.installed} if self.installed is not None else {}),
            **({"global_uninstall": list(self.global_uninstall)} if self.global_uninstall else {}),
            **({"extra": self._extra()} if self.extra or self.breach or self.waiting else {}),
        }

    def _extra(self) -> dict[str, Any]:
        out = dict(self.extra)
        if self.breach is not None:
            out["evidence_changed"] = self.breach.to_dict()
        if self.waiting is not None:
            out["waiting"] = self.waiting.to_dict()
        return out

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
        installed = d.get("installed")
        global_uninstall = d.get("global_uninstall", [])
        if not isinstance(global_uninstall, list):
            raise EvidenceError(f"{where}: field 'global_uninstall' has the wrong type")
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
            installed=installed if isinstance(installed, bool) else None,
            global_uninstall=tuple(str(p) for p in global_uninstall),
        )
