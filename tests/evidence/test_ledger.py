"""Ledger: atomic ids, the append-only hash-chained index, concurrency under flock."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skgate.evidence import digest, ledger, ledger_tail
from skgate.evidence.files import CONTROL, SEAL, write_json_new
from skgate.evidence.seal_problem import Flaw
from skgate.model.records import Cause, State, Verdict


def make_attempt(root: Path) -> Path:
    attempt = ledger.allocate(root)
    write_json_new(attempt / CONTROL, {"schema": "skgate.control/1", "attempt": attempt.name})
    return attempt


def test_allocate_gives_distinct_ids_under_concurrency(tmp_path: Path) -> None:
    got: list[Path] = []
    lock = threading.Lock()

    def take() -> None:
        p = ledger.allocate(tmp_path)
        with lock:
            got.append(p)

    threads = [threading.Thread(target=take) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({p.name for p in got}) == 16


def test_record_start_end_chain(tmp_path: Path) -> None:
    a = make_attempt(tmp_path)
    ledger.record_start(tmp_path, a, None)
    (a / SEAL).write_text("{}", encoding="utf-8")
    verdict = Verdict(state=State.INTERRUPTED, cause=Cause.TIMEOUT, reasons=("x",))
    ledger.record_end(tmp_path, a, verdict)
    entries = ledger.read_ledger(tmp_path)
    assert [e["event"] for e in entries] == ["start", "end"]
    assert entries[0]["prev"] == ledger.GENESIS
    assert entries[0]["path"] == "attempts/0001"
    assert entries[0]["parent"] is None
    raw_first = (tmp_path / ledger.LEDGER).read_bytes().split(b"\n")[0]
    assert entries[1]["prev"] == digest.sha256_bytes(raw_first)
    assert entries[1]["state"] == "interrupted"
    assert entries[1]["cause"] == "timeout"
    assert entries[1]["seal_sha256"] == digest.sha256_file(a / SEAL)
    assert all(e["schema"] == ledger.SCHEMA_LEDGER for e in entries)
    assert ledger.check_chain(tmp_path) == []


def test_chain_names_an_edited_line(tmp_path: Path) -> None:
    for _ in range(3):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    path = tmp_path / ledger.LEDGER
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"attempt":"0002"', b'"attempt":"0009"')
    path.write_bytes(b"\n".join(lines))
    problems = ledger.check_chain(tmp_path)
    assert len(problems) == 1
    assert "line 3 breaks the hash chain" in str(problems[0])
    assert problems[0].flaw is Flaw.LEDGER_CHAIN_BROKEN and not problems[0].unfinished


def test_chain_detects_a_removed_line(tmp_path: Path) -> None:
    for _ in range(3):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    path = tmp_path / ledger.LEDGER
    lines = path.read_bytes().split(b"\n")
    del lines[0]
    path.write_bytes(b"\n".join(lines))
    assert any("line 1 breaks" in str(p) for p in ledger.check_chain(tmp_path))


TORN = b'{"schema":"skgate.ledger/1","seq":2,"ev'


def test_a_torn_last_line_is_unfinished_and_the_next_append_cuts_it_back(tmp_path: Path) -> None:
    """A writer killed mid-write (or a full disk) leaves a partial last line that no entry
    depends on: unfinished, not a change (C4). Before issue 29's leftover it read "not a
    JSON entry (torn or edited)", a change, and the next append chained onto it, so the
    root failed verify forever. Now the next append cuts it back and records the cut."""
    a = make_attempt(tmp_path)
    ledger.record_start(tmp_path, a, None)
    whole = (tmp_path / ledger.LEDGER).read_bytes()
    with (tmp_path / ledger.LEDGER).open("ab") as fh:
        fh.write(TORN)
    (torn,) = ledger.check_chain(tmp_path)
    assert torn.flaw is Flaw.LEDGER_TORN and torn.unfinished
    assert str(torn) == (
        f"{tmp_path / ledger.LEDGER}: line 2 is torn: an append stopped before its line end "
        "(its writer was killed or the disk filled) and no entry depends on it; run "
        f"'skgate recover {tmp_path}' to cut it back"
    )
    ledger.record_start(tmp_path, make_attempt(tmp_path), "attempts/0001")
    assert ledger.check_chain(tmp_path) == []
    text = (tmp_path / ledger.LEDGER).read_bytes()
    assert text.startswith(whole)  # every whole line as it was
    assert [json.loads(line)["seq"] for line in text.splitlines()] == [1, 2]  # no torn bytes
    last = ledger.read_ledger(tmp_path)[-1]
    assert last["parent"] == "attempts/0001" and last["seq"] == 2
    assert last["torn_cut"] == {"bytes": len(TORN), "sha256": digest.sha256_bytes(TORN)}


def _torn_root(root: Path) -> bytes:
    """A root whose ledger ends with :data:`TORN`; its bytes."""
    ledger.record_start(root, make_attempt(root), None)
    with (root / ledger.LEDGER).open("ab") as fh:
        fh.write(TORN)
    return (root / ledger.LEDGER).read_bytes()


def _torn_cut_is_recorded_next(root: Path) -> None:
    """Space is back: the next append writes over the torn line and records it (C4)."""
    ledger.record_start(root, make_attempt(root), None)
    assert ledger.check_chain(root) == []
    last = ledger.read_ledger(root)[-1]
    assert last["torn_cut"] == {"bytes": len(TORN), "sha256": digest.sha256_bytes(TORN)}


def test_an_append_that_finds_no_room_over_a_torn_line_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C7: the cut and its record are one act. Before, the append cut the torn line and
    then its own write failed (the disk still full): the torn bytes were gone and no
    ``torn_cut`` recorded them anywhere. Now, without room for the entry, nothing is cut."""
    before = _torn_root(tmp_path)

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError, match="No space left"):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    with pytest.raises(OSError, match="No space left"):
        ledger.repair(tmp_path)  # recover cannot either ...
    monkeypatch.undo()
    assert (tmp_path / ledger.LEDGER).read_bytes() == before  # ... and leaves it too
    assert [p.flaw for p in ledger.check_chain(tmp_path)] == [Flaw.LEDGER_TORN]
    _torn_cut_is_recorded_next(tmp_path)


def test_a_write_over_a_torn_line_that_fails_part_way_puts_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _torn_root(tmp_path)
    real = os.pwrite
    calls: list[int] = []

    def partial(fd: int, data: bytes | memoryview, at: int) -> int:
        calls.append(at)
        if len(calls) == 1:
            return real(fd, bytes(data)[:10], at)  # part of the entry over the torn bytes
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, at)  # putting the torn bytes back

    monkeypatch.setattr(os, "pwrite", partial)
    with pytest.raises(OSError, match="No space left"):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    monkeypatch.undo()
    assert len(calls) >= 3
    assert (tmp_path / ledger.LEDGER).read_bytes() == before
    _torn_cut_is_recorded_next(tmp_path)


def test_a_torn_line_longer_than_the_entry_is_written_over_and_cut_to_it(
    tmp_path: Path,
) -> None:
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    long = ledger.ENTRY_HEAD + b"9" * 5000
    with (tmp_path / ledger.LEDGER).open("ab") as fh:
        fh.write(long)
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    assert ledger.check_chain(tmp_path) == []
    assert ledger.read_ledger(tmp_path)[-1]["torn_cut"]["bytes"] == len(long)
    assert (tmp_path / ledger.LEDGER).read_bytes().endswith(b"}\n")


_LONG_TORN = ledger.ENTRY_HEAD + b"9" * 5000


# An entry longer than the torn line cuts nothing, so ``ftruncate`` is killed only where
# the torn line is the longer one.
@pytest.mark.parametrize(
    ("torn", "where"),
    [(t, w) for t in (TORN, _LONG_TORN) for w in (0, 5, 60, "fsync")] + [(_LONG_TORN, "ftruncate")],
)
def test_a_writer_killed_while_writing_over_a_torn_line_leaves_a_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, torn: bytes, where: int | str
) -> None:
    """C7: a crash at any step of the write over leaves the ledger torn (unfinished: the
    next append or recover finishes it) or whole, never changed. The writer dies part-way
    through its write (after ``where`` bytes), at its cut or at the sync: whatever the
    reserve, the cut or the write did before stays (nothing is put back)."""
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    with (tmp_path / ledger.LEDGER).open("ab") as fh:
        fh.write(torn)
    real = os.pwrite

    def write(fd: int, data: bytes | memoryview, at: int) -> int:
        real(fd, bytes(data)[: int(where)], at)
        raise KeyboardInterrupt  # the writer dies here: no put-back below

    def killed(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ledger_tail, "_back", lambda *a: None)
    monkeypatch.setattr(os, *((where, killed) if isinstance(where, str) else ("pwrite", write)))
    with pytest.raises(KeyboardInterrupt):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    monkeypatch.undo()
    flaws = [p.flaw for p in ledger.check_chain(tmp_path)]
    assert flaws in ([Flaw.LEDGER_TORN], []), flaws
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    assert ledger.check_chain(tmp_path) == []


def test_recover_writes_its_repair_entry_over_the_torn_line(tmp_path: Path) -> None:
    before = _torn_root(tmp_path)
    entry = ledger.repair(tmp_path)
    assert entry is not None and entry["event"] == "repair"
    text = (tmp_path / ledger.LEDGER).read_bytes()
    whole = before[: -len(TORN)]
    assert text.startswith(whole) and text[len(whole) :].count(b"\n") == 1
    assert json.loads(text[len(whole) :])["torn_cut"]["bytes"] == len(TORN)
    assert ledger.check_chain(tmp_path) == []


def test_a_whole_entry_that_lost_only_its_line_end_is_kept(tmp_path: Path) -> None:
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    path = tmp_path / ledger.LEDGER
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert ledger.check_chain(tmp_path) == []
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    entries = ledger.read_ledger(tmp_path)
    assert [e["attempt"] for e in entries] == ["0001", "0002"]
    assert "torn_cut" not in entries[1] and ledger.check_chain(tmp_path) == []


def test_a_last_line_someone_else_wrote_stays_a_change_and_is_never_cut(tmp_path: Path) -> None:
    # Only the beginning of an entry cut short is an interrupted append; bytes that begin
    # otherwise (or parse) were written whole by someone: a change, kept as they are.
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    with (tmp_path / ledger.LEDGER).open("ab") as fh:
        fh.write(b"hello")
    (problem,) = ledger.check_chain(tmp_path)
    assert problem.flaw is Flaw.LEDGER_NOT_JSON and not problem.unfinished
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    assert b"\nhello\n" in (tmp_path / ledger.LEDGER).read_bytes()
    assert [p.flaw for p in ledger.check_chain(tmp_path)] == [Flaw.LEDGER_NOT_JSON]
    assert "torn_cut" not in ledger.read_ledger(tmp_path)[-1]


def test_every_entry_begins_as_a_torn_line_is_recognised(tmp_path: Path) -> None:
    for parent in (None, "attempts/0001", "目录"):
        ledger.record_start(tmp_path, make_attempt(tmp_path), parent)
    lines = (tmp_path / ledger.LEDGER).read_bytes().splitlines()
    assert all(line.startswith(ledger.ENTRY_HEAD) for line in lines)
    last = lines[-1]
    # Every cut of an entry short of its end is torn; the whole entry is not.
    assert all(ledger.is_torn(last[:n]) for n in range(1, len(last)))
    assert not ledger.is_torn(last)


def test_a_torn_line_in_the_middle_stays_a_change(tmp_path: Path) -> None:
    # An earlier version chained the next entry onto a torn line: it is mid-file now,
    # and a damaged line that an entry depends on is never cut (append-only, C4).
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    with (tmp_path / ledger.LEDGER).open("ab") as fh:
        fh.write(TORN + b"\n")
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    (problem,) = ledger.check_chain(tmp_path)
    assert problem.flaw is Flaw.LEDGER_NOT_JSON and not problem.unfinished
    assert str(problem).endswith("line 2 is not a JSON entry (torn or edited)")
    assert TORN in (tmp_path / ledger.LEDGER).read_bytes()


def test_a_failed_append_takes_its_partial_line_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC after a partial write: the writer's own bytes are taken back under the lock,
    so the ledger is exactly as it was (test_disk_full does this on a real full tmpfs)."""
    ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    before = (tmp_path / ledger.LEDGER).read_bytes()
    real = os.write
    calls: list[int] = []

    def write(fd: int, data: bytes | memoryview) -> int:
        calls.append(fd)
        if len(calls) == 1:
            return real(fd, bytes(data)[:20])  # a short write: the disk filled part-way
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError, match="No space left"):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    monkeypatch.undo()
    assert len(calls) == 2
    assert (tmp_path / ledger.LEDGER).read_bytes() == before
    assert ledger.check_chain(tmp_path) == []


def test_concurrent_writers_in_many_processes_keep_one_chain(tmp_path: Path) -> None:
    # Why processes, not threads: flock must serialise separate writers, as two skgate
    # runs in the same root would be.
    code = (
        "import sys; from pathlib import Path; from skgate.evidence import ledger\n"
        "root = Path(sys.argv[1])\n"
        "for i in range(25):\n"
        "    ledger.record_start(root, root / 'attempts' / sys.argv[2], None)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), f"{n:04d}"])
        for n in range(1, 7)
    ]
    for p in procs:
        assert p.wait(timeout=60) == 0
    entries = ledger.read_ledger(tmp_path)
    assert len(entries) == 150
    assert sorted(e["seq"] for e in entries) == list(range(1, 151))
    assert ledger.check_chain(tmp_path) == []


def test_ledger_entries_are_one_json_object_per_line(tmp_path: Path) -> None:
    ledger.record_start(tmp_path, make_attempt(tmp_path), "a\nb")
    text = (tmp_path / ledger.LEDGER).read_text(encoding="utf-8")
    assert text.count("\n") == 1
    assert json.loads(text)["parent"] == "a\nb"


def test_resolve_and_latest(tmp_path: Path) -> None:
    first = make_attempt(tmp_path)
    second = make_attempt(tmp_path)
    assert ledger.resolve(tmp_path) == [first, second]
    assert ledger.latest(tmp_path) == second
    assert ledger.root_of(second) == tmp_path
    with pytest.raises(Exception, match="no such attempt"):
        ledger.resolve(tmp_path / "nope")


def test_one_atomic_replace_helper_flushes_the_directory_when_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Why (quality item 6): the ownership snapshot was the one atomic replace that never
    # fsync'd its directory (a crash could lose the rename). replace_json, the report's
    # -o and the uninstall record now share attempt.replace_text.
    from skgate.evidence import files

    synced: list[Path] = []
    real = files.fsync_dir

    def fsync_dir(path: Path) -> None:
        synced.append(path)
        real(path)

    monkeypatch.setattr(files, "fsync_dir", fsync_dir)
    target = tmp_path / "ownership.json"
    files.replace_json(target, {"schema": "x/1", "n": 1})
    assert synced == [tmp_path]
    files.replace_json(target, {"schema": "x/1", "n": 2}, sync=False)
    assert synced == [tmp_path]  # the caller flushes (the runner's final batch)
    assert json.loads(target.read_text(encoding="utf-8"))["n"] == 2
    # only_new never replaces what is there, and no temp file is left either way.
    with pytest.raises(FileExistsError):
        files.replace_text(target, "other", only_new=True)
    assert json.loads(target.read_text(encoding="utf-8"))["n"] == 2
    files.replace_text(tmp_path / "new.txt", "fresh\n", only_new=True)
    assert (tmp_path / "new.txt").read_text(encoding="utf-8") == "fresh\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt", "ownership.json"]
    # Exclusive create refuses an existing file (evidence is never overwritten).
    with pytest.raises(FileExistsError):
        files.create_exclusive(target, "x")


@pytest.mark.parametrize("target", ["root", "attempt"])
def test_verify_calls_a_torn_line_unfinished_and_recover_cuts_it_back(
    tmp_path: Path, target: str
) -> None:
    """The CLI's side: ``verify`` says UNFINISHED with what to do (it said CHANGED, and
    ``recover`` found "nothing to recover": a dead end), ``recover`` of the root or of
    one of its attempts cuts the line back and says so, and ``verify`` passes."""
    from test_seal import ended_attempt

    from conftest import run_skgate

    root = tmp_path / "r"
    a = ended_attempt(root)
    with (root / ledger.LEDGER).open("ab") as fh:
        fh.write(TORN)
    checked = run_skgate("verify", "r", cwd=tmp_path)
    assert checked.returncode == 1, checked
    assert checked.stdout.splitlines() == [
        "UNFINISHED: r/ledger.jsonl: line 4 is torn: an append stopped before its line end "
        "(its writer was killed or the disk filled) and no entry depends on it; run "
        "'skgate recover r' to cut it back"
    ]
    rec = run_skgate("recover", "r" if target == "root" else str(a), cwd=tmp_path)
    assert rec.returncode == 0, rec
    assert (
        f"{root / ledger.LEDGER if target == 'attempt' else 'r/ledger.jsonl'}: repaired"
        in rec.stdout
    )
    assert f"cut back a torn last line ({len(TORN)} bytes, sha256 " in rec.stdout, rec.stdout
    ok = run_skgate("verify", "r", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith("OK: 1 attempt(s)"), ok
    repair = ledger.read_ledger(root)[-1]
    assert repair["event"] == "repair" and repair["torn_cut"]["bytes"] == len(TORN)
    again = run_skgate("recover", "r", "--json", cwd=tmp_path)
    assert json.loads(again.stdout) == [
        {"attempt": "r/attempts/0001", "done": [], "state": "succeeded"}
    ]


def test_the_next_run_after_a_torn_line_leaves_a_root_that_verifies(tmp_path: Path) -> None:
    """``skgate run`` in a root whose ledger ends torn: its start entry is never glued onto
    the torn bytes nor chained on them (at d3788b1 the root then failed verify for ever,
    "line N is not a JSON entry"); the cut is on record in that entry."""
    from test_seal import ended_attempt

    from conftest import run_skgate

    root = tmp_path / "r"
    ended_attempt(root)
    with (root / ledger.LEDGER).open("ab") as fh:
        fh.write(TORN)
    ran = run_skgate(
        "run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--", "true", cwd=tmp_path
    )
    assert ran.returncode == 0, ran
    checked = run_skgate("verify", "r", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("OK: 2 attempt(s)"), checked
    entries = ledger.read_ledger(root)
    assert [(e["event"], e.get("attempt")) for e in entries[3:]] == [
        ("start", "0002"),
        ("end", "0002"),
    ]
    assert entries[3]["torn_cut"]["sha256"] == digest.sha256_bytes(TORN)
