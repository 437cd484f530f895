"""The journal's events as types: one frozen record per kind of ``events.jsonl`` line.

Every record of ``events.jsonl`` (schema ``skgate.event/1``, ``schemas/event.json``) is
an envelope (``schema``, ``t``, ``event``, and ``mono`` when a runner wrote it) and the
fields of its kind. A writer builds an :class:`Event` and hands it to the journal, which
stamps ``t``; a reader gets :class:`Event` objects back from :func:`event_from_dict`
(through :mod:`skgate.evidence.journal`, the one reader), never raw dicts, so renaming a
kind or a field is a type error and not a silent miss.

The bytes on disk do not change with the types (C3: evidence is compared across
versions): :meth:`Event.to_dict` writes the envelope, then the fields in the order the
class declares them, which is the order the runner always wrote them. A field marked
:func:`_opt` is left out when it is None (it was only ever written when it had a value);
every other field is always written, as null when it has none.

A line the reader cannot type is never an error of the reader: a kind this version does
not know (an older or newer skgate, another tool) is an :class:`UnknownEvent` holding the
raw record. A known kind with a field of the wrong type reads that field as its default,
except for the fields the verdict is computed from (:func:`_strict`): then the record is
an :class:`UnknownEvent` with ``problem`` set, so that the evidence loader can say which
field is damaged (C2.5: damaged evidence blocks the conclusion, it is never guessed
around) while a chart or a progress line just skips it.

No I/O and no clock here (the model layer's contract).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from skgate.model.frozen import KwField, KwRecord, kw_field
from skgate.model.hint_read import ANY_HINT, BAD, reader_of
from skgate.model.running import State
from skgate.model.schema import SCHEMA_EVENT

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29); the readers
# below evaluate the fields' annotation strings themselves.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from skgate.model.hint_read import Reader

__all__ = [
    "EVENT_TYPES",
    "Adopted",
    "AdoptedTreeEnded",
    "Blocked",
    "Created",
    "Event",
    "EventKind",
    "Finished",
    "FinishingCutShort",
    "ForeignWait",
    "ForeignWaitEnd",
    "Launched",
    "LeaderExited",
    "Observation",
    "Preflight",
    "PreflightStep",
    "Reaped",
    "Recovered",
    "RunnerSignal",
    "SignalReceived",
    "SignalSent",
    "SignalsIgnored",
    "StageSeen",
    "Timeout",
    "TreeEnded",
    "UnknownEvent",
    "VerdictHash",
    "VerdictLine",
    "event_from_dict",
]


class EventKind(str, enum.Enum):
    """The ``event`` value of each journal record this version writes."""

    CREATED = "created"
    SIGNALS_IGNORED = "signals_ignored"
    PREFLIGHT = "preflight"
    FOREIGN_WAIT = "foreign_wait"
    FOREIGN_WAIT_END = "foreign_wait_end"
    BLOCKED = "blocked"
    LAUNCHED = "launched"
    STAGE_SEEN = "stage_seen"
    OBSERVATION = "observation"
    SIGNAL_RECEIVED = "signal_received"
    SIGNAL_SENT = "signal_sent"
    TIMEOUT = "timeout"
    LEADER_EXITED = "leader_exited"
    REAPED = "reaped"
    TREE_ENDED = "tree_ended"
    RUNNER_SIGNAL = "runner_signal"
    FINISHING_CUT_SHORT = "finishing_cut_short"
    #: The sha256 of the ``verdict.json`` about to be linked (C2.5: what makes an unsealed
    #: attempt's verdict its own).
    VERDICT_HASH = "verdict_hash"
    FINISHED = "finished"
    RECOVERED = "recovered"
    #: ``skgate recover --adopt`` took over a live tree whose runner died (issue 21 s1).
    ADOPTED = "adopted"
    ADOPTED_TREE_ENDED = "adopted_tree_ended"
    #: Stream-only (``run --events jsonl``, ``wait --follow``): never in the journal.
    VERDICT = "verdict"


class PreflightStep(str, enum.Enum):
    """The ``step`` of a ``preflight`` record (device leases, and the foreign-compiler
    steps older journals wrote as preflight steps)."""

    LEASE_WAIT = "lease_wait"
    LEASE_ACQUIRED = "lease_acquired"
    LEASE_WAIT_END = "lease_wait_end"
    FOREIGN_WAIT = "foreign_wait"
    FOREIGN_WAIT_END = "foreign_wait_end"
    FOREIGN_CLEARED = "foreign_cleared"


def _opt() -> Any:
    """A field written only when it has a value (see the module doc)."""
    return kw_field(default=None, metadata={"omit": True})


def _strict(default: Any = None) -> Any:
    """A field the verdict is computed from: of the wrong type it makes the record an
    :class:`UnknownEvent` with ``problem`` set (the loader refuses it, C2.5). A damaged
    field that is not strict reads as its default, as every earlier reader took it."""
    return kw_field(default=default, metadata={"strict": True})


_ENVELOPE = ("schema", "t", "event", "mono")


class Event(KwRecord):
    """The envelope every record shares; subclasses add the fields of their kind."""

    KIND: ClassVar[EventKind]
    #: Wall-clock time of writing (stamped by the journal; None in a record without one).
    t: float | None = None
    #: The runner's monotonic clock at writing (the runner's records only).
    mono: float | None = None

    @property
    def event_name(self) -> str:
        """The ``event`` value as written (for display, never to compare: use the type)."""
        return self.KIND.value

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": SCHEMA_EVENT, "t": self.t, "event": self.KIND.value}
        if self.mono is not None:
            out["mono"] = self.mono
        for f in _payload(type(self)):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit"):
                continue
            out[f.name] = _plain(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """The typed event of ``data`` (see :func:`event_from_dict`: never raises)."""
        return event_from_dict(data)


class Created(Event):
    """The runner made the attempt directory; who owns it, before control.json exists."""

    KIND: ClassVar[EventKind] = EventKind.CREATED
    attempt: str | None = None
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    #: ``pid``, ``start_ticks`` (and, in some versions, ``boot_id``) of the runner.
    runner: Mapping[str, Any] | None = None
    boot_id: str | None = None


class SignalsIgnored(Event):
    KIND: ClassVar[EventKind] = EventKind.SIGNALS_IGNORED
    signals: tuple[str, ...] = ()
    note: str | None = None


class Preflight(Event):
    """A preflight step; ``details`` are its fields in the order written."""

    KIND: ClassVar[EventKind] = EventKind.PREFLIGHT
    step: str | None = None
    details: Mapping[str, Any] = kw_field(default_factory=dict)

    @property
    def step_kind(self) -> PreflightStep | None:
        try:
            return PreflightStep(self.step)
        except ValueError:
            return None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        del out["details"]
        return {**out, **self.details}


class ForeignWait(Event):
    """Preflight starts waiting for compilers this attempt does not own (C4)."""

    KIND: ClassVar[EventKind] = EventKind.FOREIGN_WAIT
    blockers: tuple[Mapping[str, Any], ...] = ()
    ages_s: tuple[float | None, ...] = ()
    timeout: float | None = None
    policy: str | None = None


class ForeignWaitEnd(Event):
    KIND: ClassVar[EventKind] = EventKind.FOREIGN_WAIT_END
    #: ``cleared`` or ``timed_out``.
    outcome: str | None = None
    waited_s: float | None = None
    blockers: tuple[Mapping[str, Any], ...] = ()
    alive_at_end: int | None = None


class Blocked(Event):
    KIND: ClassVar[EventKind] = EventKind.BLOCKED
    reasons: tuple[str, ...] = _strict(())


class Launched(Event):
    KIND: ClassVar[EventKind] = EventKind.LAUNCHED
    pid: int | None = None
    pgid: int | None = None
    sid: int | None = None
    start_ticks: int | None = None
    deadline_wall: float | None = None
    timeout: float | None = None
    grace: float | None = None
    subreaper: bool | None = None
    ownership_sources: tuple[str, ...] = ()
    sources_unavailable: Mapping[str, Any] = kw_field(default_factory=dict)
    cgroup: str | None = None
    runner_cpu_s: float | None = None


class StageSeen(Event):
    """An owned op_compiler invocation appeared (its inputs: the ``-p`` directory)."""

    KIND: ClassVar[EventKind] = EventKind.STAGE_SEEN
    pid: int | None = None
    start_ticks: int | None = None
    inputs: int | None = None
    params_dir: str | None = None
    output: str | None = None
    jobs: int | None = None


class Observation(Event):
    """Counts taken while the compile lives: provisional, they prove nothing (C1)."""

    KIND: ClassVar[EventKind] = EventKind.OBSERVATION
    owned_alive: int | None = None
    counts: Mapping[str, Any] | None = None
    provisional: bool | None = None
    stages: tuple[Mapping[str, Any], ...] | None = _opt()


class SignalReceived(Event):
    KIND: ClassVar[EventKind] = EventKind.SIGNAL_RECEIVED
    signal: int | None = _strict()
    name: str | None = None
    #: ``reason``, ``requested_by_pid``, ``requested_at`` when it came from skgate stop.
    stop_request: Mapping[str, Any] | None = _opt()
    sender_pid: int | None = _opt()


class SignalSent(Event):
    KIND: ClassVar[EventKind] = EventKind.SIGNAL_SENT
    signal: int | None = _strict()
    name: str | None = None
    #: ``process group N`` (some writers and fixtures gave the group id alone).
    target: str | int | None = None
    reason: str | None = None
    delivered: bool | None = None
    #: Why nothing was sent (the group had no live member left, issue 21 s4).
    not_sent: str | None = _opt()
    #: ``cgroup.kill`` when the SIGKILL went through the attempt's leaf (issue 21 s4).
    via: str | None = _opt()
    #: One process, not the group: ``skgate recover --adopt`` signals each adopted
    #: process by its pidfd, checked by start time (issue 21 s1).
    pid: int | None = _opt()
    start_ticks: int | None = _opt()
    by: str | None = _opt()


class Timeout(Event):
    KIND: ClassVar[EventKind] = EventKind.TIMEOUT
    timeout: float | None = None
    by: str | None = _opt()


class LeaderExited(Event):
    KIND: ClassVar[EventKind] = EventKind.LEADER_EXITED
    pid: int | None = None
    exit_status: int | None = None
    exit_signal: int | None = None


class Reaped(Event):
    KIND: ClassVar[EventKind] = EventKind.REAPED
    pid: int | None = None
    exit_status: int | None = None
    exit_signal: int | None = None


class TreeEnded(Event):
    KIND: ClassVar[EventKind] = EventKind.TREE_ENDED
    escaped_alive: int = _strict(0)
    gave_up: bool | None = _opt()
    pids: tuple[int, ...] | None = _opt()
    runner_cpu_s: float | None = None


class RunnerSignal(Event):
    """A stop signal received outside supervision (never makes a verdict interrupted)."""

    KIND: ClassVar[EventKind] = EventKind.RUNNER_SIGNAL
    signal: int | None = None
    name: str | None = None
    phase: str | None = None
    action: str | None = None


class FinishingCutShort(Event):
    KIND: ClassVar[EventKind] = EventKind.FINISHING_CUT_SHORT
    signal: int | None = None
    name: str | None = None
    verdict_written: bool | None = None


class Finished(Event):
    KIND: ClassVar[EventKind] = EventKind.FINISHED
    state: State | None = None
    cause: str | None = None
    runner_cpu_s: float | None = None
    runner_maxrss_kb: int | None = None
    #: The final files (``verdict.json`` among them) the runner found already written when
    #: it came to write its own: another process wrote them while the run ran. The runner
    #: overwrote nothing, wrote none of its final files and left the attempt unsealed; its
    #: verdict is this record's ``state`` alone, and every reader answers ``unknown``
    #: (C2.5: evidence its runner did not write decides nothing).
    disowned: tuple[str, ...] | None = _opt()


class VerdictHash(Event):
    """The sha256 of the ``verdict.json`` its runner (or ``skgate recover``) is about to
    link, journalled before the link. An attempt that is not sealed yet has no other
    record of which verdict is its own: one whose runner is gone and whose ``verdict.json``
    no record of this kind names (copied from another attempt, edited, or written by
    hand) is never read as its verdict (C2.5; skgate.evidence.recorded.foreign_verdict)."""

    KIND: ClassVar[EventKind] = EventKind.VERDICT_HASH
    sha256: str | None = None


class Recovered(Event):
    """``skgate recover`` finished the attempt after its runner died (issue 12)."""

    KIND: ClassVar[EventKind] = EventKind.RECOVERED
    #: One of ``RECOVERED_WHEN`` (model.records), or None when the verdict was kept.
    when: str | None = None
    by: str | None = None
    note: str | None = _opt()
    made: tuple[str, ...] | None = _opt()
    census_late: bool | None = _opt()


class Adopted(Event):
    """``skgate recover --adopt`` holds the live tree of an attempt whose runner died, and
    will finish it at natural return or at the frozen deadline (issue 21 s1)."""

    KIND: ClassVar[EventKind] = EventKind.ADOPTED
    by_pid: int | None = None
    pids: tuple[int, ...] | None = None
    sources: tuple[str, ...] | None = None
    cgroup: str | None = None
    #: Every held process by pidfd (else by pid and start time).
    pidfds: bool | None = None
    deadline_wall: float | None = None
    grace: float | None = None
    note: str | None = None


class AdoptedTreeEnded(Event):
    """The adopted tree ended: ``how`` is ``natural`` or ``deadline``."""

    KIND: ClassVar[EventKind] = EventKind.ADOPTED_TREE_ENDED
    how: str | None = None
    still_alive: tuple[int, ...] | None = _opt()


class VerdictLine(Event):
    """The last line of a live stream: the verdict in the event envelope (never
    journalled). ``outcome``: ``final``, ``in_progress`` or ``runner_gone``."""

    KIND: ClassVar[EventKind] = EventKind.VERDICT
    attempt: str | None = None
    outcome: str | None = None
    state: State | None = None
    exit_code: int | None = None
    verdict: Mapping[str, Any] = kw_field(default_factory=dict)


class UnknownEvent(Event):
    """A record this version cannot type: kept whole, never an error of the reader."""

    KIND: ClassVar[EventKind] = EventKind.VERDICT  # unused: event_name reads the raw record
    raw: Mapping[str, Any] = kw_field(default_factory=dict)
    #: The known kind whose field is damaged (None: a kind this version does not know).
    kind: EventKind | None = None
    #: What is damaged, e.g. ``"escaped_alive" (None)``; None for an unknown kind.
    problem: str | None = None

    @property
    def event_name(self) -> str:
        return str(self.raw.get("event"))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)


EVENT_TYPES: dict[EventKind, type[Event]] = {
    cls.KIND: cls
    for cls in (
        Created,
        SignalsIgnored,
        Preflight,
        ForeignWait,
        ForeignWaitEnd,
        Blocked,
        Launched,
        StageSeen,
        Observation,
        SignalReceived,
        SignalSent,
        Timeout,
        LeaderExited,
        Reaped,
        TreeEnded,
        RunnerSignal,
        FinishingCutShort,
        VerdictHash,
        Finished,
        Recovered,
        Adopted,
        AdoptedTreeEnded,
        VerdictLine,
    )
}


def _payload(cls: type[Event]) -> tuple[KwField, ...]:
    return tuple(f for f in cls.__record_specs__ if f.name not in ("t", "mono"))


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


#: The names a field's annotation may use beyond its module's (see :func:`field_hints`).
_HINT_NAMES: dict[str, Any] = {"Any": ANY_HINT}
#: Annotation text -> its evaluated hint (many fields share one text: ``int | None``).
_HINT_CACHE: dict[str, Any] = {}


#: Per kind: (field name, its reader, strict) in declared order; built on first use.
_READERS: dict[type[Event], tuple[tuple[str, Reader, bool], ...]] = {}


def field_hints(cls: type[Event]) -> dict[str, Any]:
    """The evaluated annotation of every field of ``cls`` (its bases' first), as
    ``typing.get_type_hints`` gives them save ``Any`` (:data:`ANY_HINT` here), without
    ``typing`` (3 ms to import, 4 ms for these hints: issue 29). The annotations are
    this module's own strings (``from __future__ import annotations``), evaluated in its
    namespace once per distinct text; ``ClassVar`` lines are not fields and are skipped.
    tests/model/test_journal_events.py holds the result equal to ``get_type_hints``."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        # Since 3.10 a class's ``__annotations__`` are its own, never a base's.
        for name, text in getattr(klass, "__annotations__", {}).items():
            if text.startswith("ClassVar["):
                continue
            hint = _HINT_CACHE.get(text)
            if hint is None:
                # Our own source text, never input: the evaluation get_type_hints does.
                hint = eval(text, {**globals(), **_HINT_NAMES})  # noqa: S307
                _HINT_CACHE[text] = hint
            hints[name] = hint
    return hints


def _readers(cls: type[Event]) -> tuple[tuple[str, Reader, bool], ...]:
    got = _READERS.get(cls)
    if got is None:
        hints = field_hints(cls)
        got = tuple(
            (f.name, reader_of(hints[f.name]), bool(f.metadata.get("strict")))
            for f in _payload(cls)
            if f.name != "details"
        )
        _READERS[cls] = got
    return got


def _num(value: Any) -> bool:
    return type(value) in (int, float)


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """The typed event of one journal record; never raises (see the module doc)."""
    t = data.get("t") if _num(data.get("t")) else None
    mono = data.get("mono") if _num(data.get("mono")) else None
    name = data.get("event")
    kind = _KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        return UnknownEvent(t=t, mono=mono, raw=dict(data))
    cls = EVENT_TYPES[kind]
    values: dict[str, Any] = {}
    if cls is Preflight:  # a preflight step's own fields, in their order
        values["details"] = {k: v for k, v in data.items() if k not in (*_ENVELOPE, "step")}
    for name, read, strict in _readers(cls):
        if name not in data:
            continue  # its default: a field this version of the writer did not write
        value = read(data[name])
        if value is not BAD:
            values[name] = value
        elif strict:
            problem = f"{name!r} ({data[name]!r})"
            return UnknownEvent(t=t, mono=mono, raw=dict(data), kind=kind, problem=problem)
        # else: read as its default (an older reader ignored it too)
    return cls(t=t, mono=mono, **values)


_KINDS: dict[str, EventKind] = {k.value: k for k in EventKind}
