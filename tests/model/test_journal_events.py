"""The typed journal (issue 22 s1): every kind round-trips, validates against the shipped
schema, and a record this version cannot type is kept, never an error of the reader."""

from __future__ import annotations

import json
import types
import typing
from importlib import resources
from typing import Any

import jsonschema
import pytest

from skgate.model import events
from skgate.model.events import (
    EVENT_TYPES,
    Adopted,
    AdoptedTreeEnded,
    Blocked,
    Created,
    Event,
    EventKind,
    Finished,
    FinishingCutShort,
    ForeignWait,
    ForeignWaitEnd,
    Launched,
    LeaderExited,
    Observation,
    Preflight,
    PreflightStep,
    Reaped,
    Recovered,
    RunnerSignal,
    SignalReceived,
    SignalSent,
    SignalsIgnored,
    StageSeen,
    Timeout,
    TreeEnded,
    UnknownEvent,
    VerdictHash,
    VerdictLine,
    event_from_dict,
)
from skgate.model.hint_read import ANY_HINT
from skgate.model.running import State

T = 1764633600.125

#: One filled-in example of every kind (the test below checks none is left out).
EXAMPLES: tuple[Event, ...] = (
    Created(
        t=T,
        mono=5.0,
        attempt="/r/attempts/0001",
        argv=("python3", "x.py"),
        cwd="/w",
        runner={"pid": 10, "start_ticks": 99},
        boot_id="b",
    ),
    SignalsIgnored(t=T, mono=5.0, signals=("SIGHUP",), note="inherited ignored"),
    Preflight(
        t=T, mono=5.0, step="lease_wait", details={"device": 3, "holder": None, "timeout": 30.0}
    ),
    ForeignWait(
        t=T,
        mono=5.0,
        blockers=({"pid": 7, "start_ticks": 8, "name": "opc"},),
        ages_s=(None, 2.5),
        timeout=60.0,
        policy="wait",
    ),
    ForeignWaitEnd(
        t=T,
        outcome="cleared",
        waited_s=1.5,
        blockers=({"pid": 7, "start_ticks": 8},),
        alive_at_end=0,
    ),
    Blocked(t=T, mono=5.0, reasons=("no devices",)),
    Launched(
        t=T,
        mono=5.0,
        pid=11,
        pgid=11,
        sid=11,
        start_ticks=None,
        deadline_wall=T + 100,
        timeout=100,
        grace=5.0,
        subreaper=True,
        ownership_sources=("events", "scan"),
        sources_unavailable={"cgroup": "not delegated"},
        cgroup=None,
        runner_cpu_s=0.25,
    ),
    StageSeen(t=T, pid=12, start_ticks=3, inputs=4, params_dir="/p", output="/o", jobs=2),
    Observation(
        t=T,
        owned_alive=2,
        counts={"error_logs": 1, "succ_logs": 0, "run_packages": 0},
        provisional=True,
        stages=({"pid": 12, "inputs": 4, "done": 1},),
    ),
    SignalReceived(t=T, signal=15, name="SIGTERM", stop_request={"reason": "x"}),
    SignalSent(
        t=T, signal=9, name="SIGKILL", target="process group 11", reason="grace", delivered=True
    ),
    Timeout(t=T, timeout=100.0),
    LeaderExited(t=T, pid=11, exit_status=None, exit_signal=9),
    Reaped(t=T, pid=13, exit_status=0, exit_signal=None),
    TreeEnded(t=T, escaped_alive=2, gave_up=True, pids=(20, 21), runner_cpu_s=0.5),
    RunnerSignal(t=T, signal=2, name="SIGINT", phase="finishing", action="recorded"),
    FinishingCutShort(t=T, signal=2, name="SIGINT", verdict_written=False),
    VerdictHash(t=T, sha256="ab" * 32),
    Finished(t=T, state=State.FAILED, cause=None, runner_cpu_s=0.75, runner_maxrss_kb=20480),
    Recovered(t=T, when="before launch", by="skgate recover", made=("census.json",)),
    Adopted(
        t=T,
        mono=6.0,
        by_pid=30,
        pids=(12, 13),
        sources=("cgroup", "manifest"),
        cgroup="/sys/fs/cgroup/x/skgate-10-99",
        pidfds=True,
        deadline_wall=T + 100,
        grace=5.0,
        note=None,
    ),
    AdoptedTreeEnded(t=T, mono=7.0, how="deadline", still_alive=(13,)),
    SignalSent(
        t=T,
        signal=15,
        name="SIGTERM",
        reason="timeout",
        delivered=True,
        pid=13,
        start_ticks=4,
        by="skgate recover --adopt",
    ),
    VerdictLine(t=T, attempt="/a", outcome="final", state=State.SUCCEEDED, exit_code=0, verdict={}),
)


def _validate(record: dict[str, Any]) -> None:
    text = resources.files("skgate").joinpath("schemas/event.json").read_text("utf-8")
    jsonschema.Draft202012Validator(json.loads(text)).validate(record)


def test_every_kind_has_an_example() -> None:
    assert {type(e) for e in EXAMPLES} == set(EVENT_TYPES.values())
    assert set(EVENT_TYPES) == set(EventKind)


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.event_name)
def test_each_kind_validates_and_round_trips(event: Event) -> None:
    record = event.to_dict()
    _validate(record)
    assert record["event"] == event.KIND.value
    back = event_from_dict(json.loads(json.dumps(record)))
    assert back == event
    assert type(back) is type(event)


def test_a_kind_this_version_does_not_know_is_kept_whole() -> None:
    raw = {"schema": "skgate.event/1", "t": 5.0, "event": "from_the_future", "x": [1]}
    ev = event_from_dict(raw)
    assert isinstance(ev, UnknownEvent)
    assert (ev.kind, ev.problem, ev.event_name, ev.t) == (None, None, "from_the_future", 5.0)
    assert ev.to_dict() == raw


def test_a_damaged_field_is_named_not_raised() -> None:
    ev = event_from_dict({"schema": "skgate.event/1", "event": "tree_ended", "escaped_alive": None})
    assert isinstance(ev, UnknownEvent)
    assert ev.kind is EventKind.TREE_ENDED
    assert ev.problem is not None and "escaped_alive" in ev.problem
    # bool is never a number
    assert isinstance(event_from_dict({"event": "signal_sent", "signal": True}), UnknownEvent)


def test_a_damaged_field_the_verdict_does_not_use_reads_as_its_default() -> None:
    # as every earlier reader took it: a launch with an odd cgroup is still a launch
    ev = event_from_dict({"event": "launched", "pid": 3, "cgroup": 5, "timeout": True})
    assert ev == Launched(pid=3)
    assert event_from_dict({"event": "finished", "state": "fine"}) == Finished()


def test_a_field_an_older_writer_left_out_takes_its_default() -> None:
    ev = event_from_dict({"schema": "skgate.event/1", "t": 1, "event": "tree_ended"})
    assert ev == TreeEnded(t=1, escaped_alive=0)


def test_preflight_keeps_its_step_fields_in_order() -> None:
    raw = {
        "schema": "skgate.event/1",
        "t": T,
        "event": "preflight",
        "step": "lease_acquired",
        "devices": [0, 3],
        "waited_s": 1.5,
    }
    ev = event_from_dict(raw)
    assert isinstance(ev, Preflight) and ev.step_kind is PreflightStep.LEASE_ACQUIRED
    assert list(ev.to_dict().items()) == list(raw.items())
    assert Preflight(step="a_new_step").step_kind is None


def _shape(hint: Any) -> Any:
    """A hint with ``Any`` (typing's or the readers' own) as one marker, a union as the
    set of its arms, a generic as its origin and arguments."""
    if hint is Any or hint is ANY_HINT:
        return "Any"
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return ("union", frozenset(_shape(a) for a in typing.get_args(hint)))
    if typing.get_origin(hint) is not None:
        return (typing.get_origin(hint), tuple(_shape(a) for a in typing.get_args(hint)))
    return hint


@pytest.mark.parametrize("cls", [*EVENT_TYPES.values(), UnknownEvent], ids=lambda c: c.__name__)
def test_the_readers_hints_are_typings(cls: type[Event]) -> None:
    """The readers evaluate the annotations without ``typing`` (issue 29): for every kind
    they are what ``typing.get_type_hints`` says, field by field, ``ClassVar`` aside."""
    expected = typing.get_type_hints(cls, localns={"Any": Any, "ClassVar": typing.ClassVar})
    fields = {
        name: _shape(hint)
        for name, hint in expected.items()
        if typing.get_origin(hint) is not typing.ClassVar
    }
    got = events.field_hints(cls)
    assert {name: _shape(hint) for name, hint in got.items()} == fields
    assert list(got) == list(fields)  # declared order, the bases' first
