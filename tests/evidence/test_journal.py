"""The one journal reader and follower (issue 22 s1): typed events, bounded regular-file
reads, torn last lines skipped, over-long lines refused (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skgate.evidence import regular
from skgate.evidence.journal import JournalFollower, read_journal
from skgate.model.errors import EvidenceError
from skgate.model.events import Created, Launched, UnknownEvent
from skgate.model.schema import SCHEMA_EVENT


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
