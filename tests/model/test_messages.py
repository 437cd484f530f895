"""The task <-> driver messages of the Ray executor (issue 22 s1): typed on both ends,
plain dicts on the wire, a damaged or unknown item named, never guessed."""

from __future__ import annotations

import pytest

from skgate.model.events import Created, Launched, Observation, TreeEnded
from skgate.model.messages import (
    End,
    FileHeader,
    FileList,
    Message,
    Progress,
    Result,
    Started,
    message_from_dict,
)
from skgate.regress.executor import ArmState
from skgate.regress.ray_node import progress_of

EXAMPLES: tuple[Message, ...] = (
    Started({"hostname": "h", "node_id": "n1"}, "/r/attempts/0001", 42),
    Started({"hostname": "h", "node_id": "n1"}, "/r/attempts/0001", 42, 123456),
    Progress(state="running", note=""),
    Progress(stages={"error_logs": 1}),
    Result(None),
    Result("refused"),
    Result("cancelled before its runner recorded an attempt", nothing_ran=True),
    FileList((("verdict.json", 10), ("run.log", 0))),
    FileHeader("run.log", 0),
    End(),
)


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: m.KIND.value)
def test_each_message_round_trips_through_its_wire_dict(message: Message) -> None:
    wire = message.to_dict()
    assert wire["kind"] == message.KIND.value
    assert all(isinstance(k, str) for k in wire)  # JSON-shaped: two versions read it
    assert message_from_dict(wire) == message


def test_an_unknown_or_damaged_item_is_named() -> None:
    with pytest.raises(ValueError, match="unexpected stream item 'chunk'"):
        message_from_dict({"kind": "chunk"})
    with pytest.raises(ValueError, match="damaged 'file' stream item"):
        message_from_dict({"kind": "file", "name": "x", "size": "big"})


def test_the_driver_sees_journal_events_as_board_states() -> None:
    seen = [
        progress_of(ev)
        for ev in (Created(), Launched(pid=1), Observation(counts={"succ_logs": 2}), TreeEnded())
    ]
    assert [p.state if p else None for p in seen] == ["preflight", "running", None, "sealing"]
    assert all(p is None or p.state is None or ArmState.of(p.state) for p in seen)
    assert seen[2] == Progress(stages={"succ_logs": 2})
    assert ArmState.of("from a newer task") is None
    assert f"{ArmState.NOT_RUN}" == "not run"
