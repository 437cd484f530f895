"""Following a journal: complete lines only, woken by inotify, progress in C1 words."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skgate.api.lifecycle import find_attempt
from skgate.evidence import regular
from skgate.evidence.follow import DirWatch, Progress, wait_readable
from skgate.evidence.journal import JournalFollower
from skgate.model.errors import EvidenceError
from skgate.model.events import Event, event_from_dict
from skgate.model.schema import SCHEMA_EVENT


def line(event: str, **fields: object) -> bytes:
    return (
        json.dumps({"schema": SCHEMA_EVENT, "t": 100.0, "event": event, **fields}) + "\n"
    ).encode()


def ev(event: str, **fields: object) -> Event:
    return event_from_dict(json.loads(line(event, **fields)))


def test_the_follower_takes_only_complete_lines(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    follower = JournalFollower(journal)
    assert follower.poll() == []  # no journal yet: nothing, no error
    whole = line("created")
    part = line("launched", pid=1, pgid=1)
    journal.write_bytes(whole + part[:10])
    assert [e.event_name for e in follower.poll()] == ["created"]
    with journal.open("ab") as fh:
        fh.write(part[10:])
    assert [e.event_name for e in follower.poll()] == ["launched"]
    assert follower.poll() == []


def test_the_watch_wakes_on_an_appended_line_and_not_before(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(line("created"))
    watch = DirWatch(tmp_path)
    try:
        assert watch.active, "inotify is available on the test hosts"
        assert wait_readable([watch.fd], 0) == []
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND)
        os.write(fd, line("launched", pid=1, pgid=1))
        os.close(fd)
        assert wait_readable([watch.fd], 10) == [watch.fd]
        watch.drain()
        assert wait_readable([watch.fd], 0) == []
    finally:
        watch.close()


def test_progress_phases_and_provisional_counts() -> None:
    p = Progress()
    p.update(ev("created"))
    assert p.phase == "preflight"
    p.update(ev("preflight", step="foreign_wait", processes=[{"pid": 7, "name": "opc"}]))
    assert p.phase == "waiting_for_blockers"
    assert p.waiting == ["foreign opc[7] (never signalled, C4)"]
    p.update(ev("foreign_wait_end", outcome="cleared"))
    assert p.phase == "preflight" and p.waiting == []
    p.update(ev("launched", pid=1, pgid=1, deadline_wall=160.0))
    p.update(ev("stage_seen", pid=9, start_ticks=1, inputs=8))
    p.update(ev("observation", owned_alive=3, counts={"error_logs": 2, "succ_logs": 5}))
    assert p.phase == "running"
    d = p.to_dict(now=110.0)
    assert d["elapsed_s"] == 10.0 and d["deadline_remaining_s"] == 50.0
    assert d["provisional"]["inputs_done"] == 5  # succ logs only: error-named ones are C1
    assert d["provisional"]["inputs_total"] == 8 and d["stage"] == "op_compiler pid 9 (8 inputs)"
    text = p.line(110.0)
    assert "2 provisional error-named files (C1)" in text and "deadline in 50 s" in text
    assert "inputs done 5 of 8 (provisional, C1)" in text
    p.update(ev("tree_ended"))
    assert p.phase == "finishing"
    p.update(ev("finished", state="succeeded"))
    assert p.phase == "final" and p.to_dict(200.0)["deadline_remaining_s"] is None


def test_wait_and_stop_find_attempts_still_in_preflight(tmp_path: Path) -> None:
    for name, files in (("0001", ["control.json", "events.jsonl"]), ("0002", ["events.jsonl"])):
        d = tmp_path / "attempts" / name
        d.mkdir(parents=True)
        for f in files:
            (d / f).write_text("")
    (tmp_path / "attempts" / "0003").mkdir()  # allocated, nothing written: not listed
    assert find_attempt(tmp_path).name == "0002"


def test_progress_counts_each_op_compiler_invocation_once() -> None:
    """Issue 19: one stage per op_compiler invocation, inputs done of total from that
    stage's succ logs as observed (provisional, C1), never summed over its opc workers."""
    p = Progress()
    p.update(ev("launched", pid=1, pgid=1))
    for _ in range(3):  # a repeated announcement of the same invocation counts once
        p.update(ev("stage_seen", pid=9, start_ticks=1, inputs=6))
    assert p.inputs_total == 6
    obs = {"error_logs": 4, "succ_logs": 9}  # 9: two succ logs per input (_d0, _d1)
    p.update(
        ev("observation", owned_alive=3, counts=obs, stages=[{"pid": 9, "inputs": 6, "done": 2}])
    )
    d = p.to_dict(now=1.0)["provisional"]
    assert (d["inputs_done"], d["inputs_total"]) == (2, 6)
    assert p.stage == "op_compiler pid 9: 2 of 6 inputs done"
    p.update(ev("stage_seen", pid=12, start_ticks=1, inputs=4))
    assert (p.inputs_done, p.inputs_total) == (2, 10)


def test_follower_never_reads_a_journal_through_a_link_or_without_a_bound(tmp_path: Path) -> None:
    """A journal linked to /dev/zero, or one endless line, ends the follow with one
    error instead of filling memory (issue 21: evidence files cannot hang or exhaust)."""
    linked = tmp_path / "linked.jsonl"
    linked.symlink_to("/dev/zero")
    with pytest.raises(EvidenceError, match="symbolic link"):
        JournalFollower(linked).poll()
    endless = tmp_path / "endless.jsonl"
    with endless.open("wb") as fh:
        fh.truncate(regular.LINE_LIMIT + 10)  # sparse: one line of NULs, no newline
    with pytest.raises(EvidenceError, match="longer than"):
        JournalFollower(endless).poll()
