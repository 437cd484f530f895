"""The records a runner needs before and while its command runs: the compile states
(C2), process identity and ownership (C3, C4), the final summary's lines (C2).

Nothing here does I/O. Kept apart from :mod:`skgate.model.records` (census, evidence,
verdict), which re-exports all of these, so that a runner loads that module only once
the command has been launched (start latency, issue 13).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from skgate.model.errors import EvidenceError
from skgate.model.exits import STATE_CODES
from skgate.model.frozen import field, record
from skgate.model.schema import SCHEMA_OWNERSHIP, check_schema, opt_int, require

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


#: Exit status of ``run``, ``status`` and ``classify`` for each state (docs/contract.md C2;
#: the table is :data:`skgate.model.exits.EXIT_TABLE`).
EXIT_CODES: Mapping[State, int] = {State(s): code for s, code in STATE_CODES.items()}

# ---------------------------------------------------------------------------
# Processes and ownership (C4)


@record
class ProcessRecord:
    """One process, identified by (pid, start_ticks) so a recycled pid never matches."""

    pid: int
    start_ticks: int
    #: The parent that forked it (C3), kept when it is re-parented to the runner.
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


@record
class Coverage:
    """How complete an ownership manifest is: which sources made it, what they missed."""

    sources: tuple[str, ...]
    unavailable: Mapping[str, str] = field(default_factory=dict)  # source -> why not
    events_overruns: int = 0  # times the kernel dropped events (ENOBUFS)
    missed_by_events: int = 0  # processes only the scan or the reaper found
    argv_late: int = 0  # processes whose argv was gone before it could be read
    folded: Mapping[str, Any] = field(default_factory=dict)  # counted, not listed
    cgroup: Mapping[str, Any] = field(default_factory=dict)  # path, kind, stats, removed
    #: Owned processes seen alive outside the attempt's cgroup (they moved themselves):
    #: tracked by the other sources, but the cgroup no longer holds every one.
    left_cgroup: int = 0
    #: Processes gone before their argv and name could be read, named from the kernel's
    #: exit records (issue 28 s7), and that source (``taskstats``; empty: not read).
    named_at_exit: int = 0
    exit_names: str = ""
    #: Times the kernel dropped exit records (ENOBUFS): some such names may be missing.
    exit_overruns: int = 0

    @property
    def exact(self) -> bool:
        """Every fork, exec and exit of the owned tree is on record: the events were on,
        the kernel dropped none, and no other source found a process they did not."""
        # Here, not at the top: ``skgate status`` reads a recorded verdict without it.
        from skgate.model.sources import SOURCE_EVENTS  # noqa: PLC0415

        return (
            SOURCE_EVENTS in self.sources
            and self.events_overruns == 0
            and self.missed_by_events == 0
        )

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
            "left_cgroup": self.left_cgroup,
            "named_at_exit": self.named_at_exit,
            "exit_names": self.exit_names,
            "exit_overruns": self.exit_overruns,
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
            left_cgroup=int(data.get("left_cgroup", 0)),
            named_at_exit=int(data.get("named_at_exit", 0)),
            exit_names=str(data.get("exit_names", "")),
            exit_overruns=int(data.get("exit_overruns", 0)),
        )


def is_torchrun(argv: tuple[str, ...]) -> bool:
    """``torchrun ...``, ``python .../torchrun ...`` (or a script named after it, such as a
    ``torchrun`` stand-in ``rc_torchrun.py``) or ``python -m torch.distributed.run`` (or
    the older ``torch.distributed.launch``)."""
    head = argv[:3]
    return any("torchrun" in a.rsplit("/", 1)[-1] for a in head[:2]) or any(
        a in ("torch.distributed.run", "torch.distributed.launch") for a in head
    )


@record
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

    @property
    def torchrun_escaped(self) -> tuple[ProcessRecord, ...]:
        """Escaped processes in a session torchrun made: the session's leader is a child
        of a torchrun process (torchrun starts every worker with
        ``start_new_session=True``), read from the recorded argv and parent (C4: the
        launcher's normal shape, still watched and never signalled).

        A parent whose exec was gone before its argv could be read still carries its own
        parent's argv (``argv_late``): what it ran is unknown, so it is never taken for
        torchrun; the leader's argv is the one it was launched with, known either way."""
        by_pid = {p.pid: p for p in self.owned}
        leader = self.leader.pid if self.leader is not None else None
        if self.leader is not None:
            by_pid.setdefault(self.leader.pid, self.leader)
        out: list[ProcessRecord] = []
        for p in self.escaped:
            head = by_pid.get(p.sid)
            parent = by_pid.get(head.ppid) if head is not None else None
            if parent is None or (parent.argv_late and parent.pid != leader):
                continue
            if is_torchrun(parent.argv):
                out.append(p)
        return tuple(out)

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


@record
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


@record
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


#: :attr:`SealBreach.file` when the attempt's whole directory is gone though the root's
#: ledger indexed it (issue 28): a removed attempt is never read as one that did not run,
#: and an older attempt never answers in its place (C2.5).
ATTEMPT_DIRECTORY = "."
#: The missing item of a removed attempt (its zh form: verdict.words._MISSING_ZH); here,
#: beside the breach it names, so that the words of every verdict need not load the
#: removed attempt's own verdict (skgate.verdict.changed) to translate it (issue 29).
REMOVED_MISSING = "the attempt directory"
#: :attr:`SealBreach.now` of a removed attempt whose path holds another directory, one
#: without any of its evidence (``rm -rf`` then ``mkdir``): never read as that attempt.
REPLACED = "replaced"
#: :attr:`SealBreach.now` of a removed attempt whose path holds another attempt's evidence:
#: its journal names another runner than the ledger's ``start`` entry (copied in from
#: another root), never read as the attempt this root ran there.
COPIED_IN = "copied in"
#: :attr:`SealBreach.file` when the root's ledger no longer anchors a sealed attempt of the
#: root (skgate.evidence.ledger_seals.Anchor): the ledger, from the attempt directory.
ROOT_LEDGER = "../../ledger.jsonl"
#: :attr:`SealBreach.now` for :data:`ROOT_LEDGER`: gone, a link, not a regular file, or
#: a ledger that names the attempt nowhere.
LEDGER_GONE = "gone"
LEDGER_LINK = "a symbolic link"
LEDGER_NOT_REGULAR = "not a regular file"
LEDGER_SILENT = "silent"
#: :attr:`SealBreach.now` of an attempt whose final names another process wrote while its
#: run ran (``skgate.model.events.Finished.disowned``); :attr:`SealBreach.file` names them.
DISOWNED = "written by another process while the run ran"
#: :attr:`SealBreach.now` of an unsealed attempt whose runner is gone and whose
#: ``verdict.json`` no ``verdict_hash`` record of its journal names (copied from another
#: attempt, edited, or written by hand: skgate.evidence.recorded.foreign_verdict);
#: :attr:`SealBreach.file` is ``verdict.json``.
UNRECORDED = "not the verdict its runner recorded"
#: :attr:`SealBreach.now` for the same when the journal itself is gone (removed, a link,
#: not a regular file): nothing records which verdict is the attempt's own.
JOURNAL_GONE = "its journal is gone"
#: Why nothing vouches for such a verdict, in the first line of each (zh in
#: skgate.verdict.words_reasons, as docs/contract.md gives them).
_UNRECORDED_WHY = {
    UNRECORDED: (
        "its journal records no verdict with this content: copied from another attempt, "
        "edited, or written by hand?"
    ),
    JOURNAL_GONE: (
        "its journal, events.jsonl, which records its verdict, is gone or not a regular file"
    ),
}
#: The missing item of an attempt whose final names another process wrote while it ran
#: (:func:`disowned_line`; its zh form: verdict.words._MISSING_ZH).
DISOWNED_MISSING = "the runner's own final files (verdict.json, seal.json)"
#: The missing item of such an attempt (its zh form: verdict.words._MISSING_ZH).
LEDGER_MISSING = "the root's ledger (ledger.jsonl) indexing this attempt"
#: The first line of each (en; zh in skgate.verdict.words_reasons, as docs/contract.md
#: gives them).
_LEDGER_LINES = {
    LEDGER_GONE: (
        "the root's ledger is gone (ledger.jsonl indexes every attempt before it runs "
        "and chains its seal; nothing of skgate removes it)"
    ),
    LEDGER_LINK: (
        "the root's ledger is a symbolic link (ledger.jsonl; evidence is never read through a link)"
    ),
    LEDGER_NOT_REGULAR: (
        "the root's ledger is not a regular file (ledger.jsonl; evidence is only read "
        "from regular files)"
    ),
    LEDGER_SILENT: (
        "the root's ledger does not index this attempt (no entry of ledger.jsonl names "
        "it: emptied, edited, or the attempt added by hand?)"
    ),
}


@record
class SealBreach:
    """A file of a sealed attempt that no longer is what its seal says (issue 28 s3):
    changed, damaged, missing, or added after sealing; or the attempt's whole directory,
    gone though the root's ledger indexed it (:data:`ATTEMPT_DIRECTORY`). Its content is
    never shown."""

    #: The file, relative to the attempt directory (``verdict.json``, ``plog/0001-x``);
    #: :data:`ATTEMPT_DIRECTORY` for the directory itself.
    file: str
    #: The sha256 the seal recorded (None: the file is not in the seal). For the
    #: directory: the ``seal.json`` hash the ledger chained (None: it chained none).
    sealed: str | None
    #: What it is now: ``sha256 <hex>``, ``missing``, ``N bytes (sealed M)``, or why
    #: ``seal.json`` itself cannot be read.
    now: str
    #: The attempt a ``seal.json`` seals when it is not this one: an attempt directory
    #: copied from another into a root ("cp -r 0001 0005"), never read as its own.
    sealed_as: str | None = None
    #: For the directory: the pid of the runner the ledger names for this attempt, while
    #: that runner still runs (its boot and start time checked, C4): its command may
    #: still run, and no answer of now is its end.
    runner: int | None = None
    #: For the directory: how its command ended (:func:`how_ended`), as its runner
    #: recorded in the root's ledger once it had supervised it to its end after the
    #: removal. Quoted, never a verdict: nothing of the evidence is left (C2.5).
    ended: str | None = None
    #: For the directory: the pid of the runner the ledger names when it no longer runs
    #: and recorded neither a seal nor an end for the attempt (killed: SIGKILL, the OOM
    #: killer): its command may still run, with nothing supervising it, and no answer of
    #: now is its end (C2.1, C4).
    lost: int | None = None

    def line(self) -> str:
        """The first line of every answer about such an attempt (en)."""
        if self.sealed_as is not None:
            return (
                f"evidence changed after sealing: {self.file} (it seals attempt "
                f"{self.sealed_as}, not this one: copied from elsewhere?)"
            )
        if self.file == ATTEMPT_DIRECTORY:
            if self.sealed is None:
                gone = (
                    "evidence removed: the attempt directory is gone (the root's ledger indexed it)"
                )
            else:
                gone = (
                    "evidence changed after sealing: the attempt directory is gone (the root's "
                    f"ledger recorded its seal, sha256 {self.sealed[:16]})"
                )
            if self.now == REPLACED:
                gone += "; a directory without its evidence stands in its place"
            elif self.now == COPIED_IN:
                gone += (
                    "; another attempt's evidence stands in its place (its journal names "
                    "another runner: copied from another root?)"
                )
            # What became of its run comes in the same line, the headline: a removed
            # attempt whose runner still runs is never taken for one that has ended.
            if self.runner is not None:
                return f"{gone}; its runner (pid {self.runner}) still runs, and its command may too"
            if self.ended is not None:
                return (
                    f"{gone}; its runner recorded in the root's ledger how it ended: {self.ended}"
                )
            if self.lost is not None:
                return (
                    f"{gone}; its runner (pid {self.lost}) died without recording how its "
                    "command ended: the command may still run, unsupervised"
                )
            return gone
        if self.now == DISOWNED:
            return disowned_line(self.file.split(", "))
        if self.now in _UNRECORDED_WHY:
            return (
                f"evidence its runner did not record: {self.file} (the attempt is not sealed, "
                f"its runner is gone, and {_UNRECORDED_WHY[self.now]})"
            )
        if self.file == ROOT_LEDGER:
            said = _LEDGER_LINES.get(self.now, f"the root's ledger ({self.now})")
            return f"evidence changed after sealing: {said}"
        if self.sealed is None and self.now.startswith("damaged"):
            return f"evidence changed after sealing: {self.file} ({self.now})"
        was = f"sealed sha256 {self.sealed[:16]}" if self.sealed else "not in the seal"
        return f"evidence changed after sealing: {self.file} ({was}, now {self.now})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "sealed_sha256": self.sealed, "now": self.now}
        if self.sealed_as is not None:
            out["sealed_as"] = self.sealed_as
        if self.runner is not None:
            out["runner_pid"] = self.runner
        if self.ended is not None:
            out["ended"] = self.ended
        if self.lost is not None:
            out["runner_lost_pid"] = self.lost
        return out


def disowned_line(names: tuple[str, ...] | list[str]) -> str:
    """The first line about an attempt whose final names another process wrote while its
    run ran (:attr:`skgate.model.events.Finished.disowned`), in the words the runner ends
    with and every reader answers with (one function: they cannot drift)."""
    return (
        f"evidence written by another process while the run ran: {', '.join(names)} (its "
        "runner found them at its final names, overwrote nothing and left the attempt "
        "unsealed; its own verdict is in its journal's finished record)"
    )


def how_ended(timeout_fired: bool, exit_status: int | None, exit_signal: int | None) -> str:
    """How a command ended, in the words the runner of a removed attempt records in the
    ledger and every reader quotes (one function for both: they cannot drift)."""
    if timeout_fired:
        return "the frozen timeout fired"
    if exit_signal is not None:
        from skgate.model.signals import signal_name  # noqa: PLC0415 - a removed attempt only

        return f"its command ended by {signal_name(exit_signal)}"
    return f"its command returned with exit status {exit_status}"


@record
class Waiting:
    """The in-progress phase before launch (C2.1, C4): a live runner waits for blockers
    it never signals, and nothing was launched yet. Not a sixth state."""

    #: Foreign compilers by (pid, name), as the runner's ``foreign_wait`` named them.
    foreign: tuple[tuple[int, str], ...] = ()
    #: Any other blocker, one line each (a device lease and its holder).
    other: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": "waiting_for_blockers",
            "foreign": [{"pid": pid, "name": name} for pid, name in self.foreign],
            "other": list(self.other),
        }
