"""The one journal reader and follower (issue 22 s1): typed events, bounded regular-file
reads, torn last lines skipped, over-long lines refused (issue 21)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from skgate.evidence import files, regular
from skgate.evidence.journal import JournalFollower, read_journal
from skgate.model.errors import EvidenceError
from skgate.model.events import (
    Created,
    Event,
    Finished,
    ForeignWait,
    Launched,
    Observation,
    Preflight,
    Recovered,
    SignalReceived,
    SignalSent,
    TreeEnded,
    UnknownEvent,
)
from skgate.model.frozen import replace
from skgate.model.running import State
from skgate.model.schema import SCHEMA_EVENT

COUNTS = {"error_logs": 1, "succ_logs": 0, "run_packages": 0}


def line(event: str, **fields: object) -> bytes:
    return (
        json.dumps({"schema": SCHEMA_EVENT, "t": 100.0, "event": event, **fields}) + "\n"
    ).encode()


def test_the_reader_types_each_record_and_skips_a_torn_last_line(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(line("created") + line("newer_kind", x=1) + line("launched", pid=3)[:20])
    got = read_journal(journal)
    assert [type(e) for e in got] == [Created, UnknownEvent]
    assert read_journal(tmp_path / "missing.jsonl") == []


def test_the_reader_refuses_a_damaged_complete_line_a_link_and_a_long_line(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(line("created") + b"{not json\n" + line("launched"))
    with pytest.raises(EvidenceError, match="line 2 is not a JSON event"):
        read_journal(journal)
    journal.write_bytes(b'{"schema": "other/1"}\n')
    with pytest.raises(EvidenceError, match=r"is not a 'skgate\.event/1' event"):
        read_journal(journal)
    linked = tmp_path / "linked.jsonl"
    linked.symlink_to("/dev/zero")
    with pytest.raises(EvidenceError, match="symbolic link"):
        read_journal(linked)
    long = tmp_path / "long.jsonl"
    with long.open("wb") as fh:
        fh.truncate(regular.LINE_LIMIT + 10)
    with pytest.raises(EvidenceError, match="longer than"):
        read_journal(long)


def test_the_follower_takes_complete_lines_as_typed_events(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    follower = JournalFollower(journal)
    assert follower.poll() == []
    part = line("launched", pid=1, pgid=1)
    journal.write_bytes(line("created") + b"{damaged\n" + part[:10])
    assert [type(e) for e in follower.poll()] == [Created]
    with journal.open("ab") as fh:
        fh.write(part[10:])
    got = follower.poll()
    assert got == [Launched(t=100.0, pid=1, pgid=1)]


def test_an_over_long_line_is_reported_once_then_skipped_to_its_end(tmp_path: Path) -> None:
    """A follower that met one hostile line goes on with the next one (the Ray task's
    progress never stops), and never holds the long line in memory."""
    journal = tmp_path / "events.jsonl"
    with journal.open("wb") as fh:
        fh.write(line("created"))
        fh.write(b"x" * (regular.LINE_LIMIT + 10))
    follower = JournalFollower(journal)
    assert [type(e) for e in follower.poll()] == [Created]  # one bound per look
    with pytest.raises(EvidenceError, match="longer than"):
        follower.poll()
    with journal.open("ab") as fh:
        fh.write(b"x" * 100)
    assert follower.poll() == []
    with journal.open("ab") as fh:
        fh.write(b"\n" + line("launched", pid=2))
    assert [type(e) for e in follower.poll()] == [Launched]


#: Lines the journal wrote before the typed events (generated with the code of 9aa8da8:
#: ``files.Journal.emit(name, mono=..., **fields)`` with ``time.time`` fixed): the bytes
#: of events.jsonl must not change with the types (C3; issue 22 s1).
BEFORE_TYPES = Path(__file__).parent.parent / "golden" / "journal_before_types.jsonl"


def test_the_typed_journal_writes_the_bytes_it_always_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time", lambda: 1764633600.125)
    m = 1234.5
    events: list[Event] = [
        Created(
            mono=m,
            attempt="/r/attempts/0001",
            argv=("python3", "x.py"),
            cwd="/w",
            runner={"pid": 10, "start_ticks": 99},
            boot_id="b-1",
        ),
        Preflight(
            mono=m, step="lease_wait", details={"device": 3, "holder": None, "timeout": 30.0}
        ),
        Preflight(mono=m, step="lease_acquired", details={"devices": [0, 3], "waited_s": 1.5}),
        Launched(
            mono=m,
            pid=11,
            pgid=11,
            sid=11,
            start_ticks=None,
            deadline_wall=1764633700.5,
            timeout=100,
            grace=5.0,
            subreaper=True,
            ownership_sources=("events", "scan"),
            sources_unavailable={"cgroup": "not delegated"},
            cgroup=None,
            runner_cpu_s=0.25,
        ),
        Observation(mono=m, owned_alive=2, counts=COUNTS, provisional=True),
        Observation(
            mono=m,
            owned_alive=2,
            counts=COUNTS,
            provisional=True,
            stages=({"pid": 12, "inputs": 4, "done": 1},),
        ),
        SignalReceived(mono=m, signal=15, name="SIGTERM"),
        SignalReceived(
            mono=m,
            signal=15,
            name="SIGTERM",
            stop_request={"reason": "x", "requested_by_pid": 5, "requested_at": 1.5},
        ),
        SignalSent(
            mono=m,
            signal=15,
            name="SIGTERM",
            target="process group 11",
            reason="timeout",
            delivered=True,
        ),
        TreeEnded(mono=m, escaped_alive=0, runner_cpu_s=0.5),
        TreeEnded(mono=m, escaped_alive=2, gave_up=True, pids=(20, 21), runner_cpu_s=0.5),
        Finished(mono=m, state=State.FAILED, cause=None, runner_cpu_s=0.75, runner_maxrss_kb=20480),
        Recovered(when=None, by="skgate recover", note="verdict kept"),
        Recovered(
            when="before natural return",
            by="skgate recover",
            made=("census.json",),
            census_late=True,
        ),
        ForeignWait(
            mono=m,
            blockers=({"pid": 7, "start_ticks": 8, "name": "opc"},),
            ages_s=(None, 2.5),
            timeout=60.0,
            policy="wait",
        ),
    ]
    path = tmp_path / "events.jsonl"
    with files.Journal(path) as journal:
        for event in events:
            journal.emit(event)
    assert path.read_bytes() == BEFORE_TYPES.read_bytes()
    # and what is read back is what was written
    assert [replace(e, t=1764633600.125) for e in events] == read_journal(path)


#: Where a record's ``event`` string may be read: the journal's one reader, the codec of
#: the typed events, and the ledger's own reader and writer (ledger.jsonl is another
#: file, with entry kinds of its own: ``ledger_seals.entry_kind``).
EVENT_STRING_HOMES = {
    Path("evidence/journal.py"),
    Path("model/events.py"),
    Path("evidence/ledger.py"),
    Path("evidence/ledger_seals.py"),
}
EVENT_STRING_MATCH = re.compile(
    r"""get\(\s*["']event["']"""  # ev.get("event")
    r"""|\[\s*["']event["']\s*\]"""  # ev["event"]
    r"""|["']event["']\s*:\s*["']"""  # {"event": "launched"} (a match or a lookup)
    r"""|\.event_name\s*(==|!=|in\b|not\s+in\b)"""  # the display name, compared
)


def test_no_event_string_is_matched_outside_the_journal_reader() -> None:
    """Issue 22 s1: consumers match event types, never the ``event`` string (a renamed
    kind must be a type error, not a silent miss)."""
    src = Path(files.__file__).resolve().parent.parent
    found = [
        f"{path.relative_to(src)}:{n}: {text.strip()}"
        for path in sorted(src.rglob("*.py"))
        if path.relative_to(src) not in EVENT_STRING_HOMES
        for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if EVENT_STRING_MATCH.search(text)
    ]
    assert found == []
    # the pattern does find what it is meant to find
    assert EVENT_STRING_MATCH.search('if ev.get("event") == "launched":')
    assert EVENT_STRING_MATCH.search("name = e['event']")
    assert EVENT_STRING_MATCH.search('if e.event_name == "finished":')
