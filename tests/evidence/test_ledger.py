"""Ledger: atomic ids, the append-only hash-chained index, concurrency under flock."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skgate.evidence import digest, ledger
from skgate.evidence.files import CONTROL, SEAL, write_json_new
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
    assert "line 3 breaks the hash chain" in problems[0]


def test_chain_detects_a_removed_line(tmp_path: Path) -> None:
    for _ in range(3):
        ledger.record_start(tmp_path, make_attempt(tmp_path), None)
    path = tmp_path / ledger.LEDGER
    lines = path.read_bytes().split(b"\n")
    del lines[0]
    path.write_bytes(b"\n".join(lines))
    assert any("line 1 breaks" in p for p in ledger.check_chain(tmp_path))


def test_torn_last_line_is_reported_and_appends_continue(tmp_path: Path) -> None:
    # A writer killed mid-write leaves a partial line; later writers must not glue onto
    # it, and the chain must still cover the torn bytes.
    a = make_attempt(tmp_path)
    ledger.record_start(tmp_path, a, None)
    with (tmp_path / ledger.LEDGER).open("ab") as fh:
        fh.write(b'{"schema":"skgate.ledger/1","seq":2,"ev')
    ledger.record_start(tmp_path, make_attempt(tmp_path), "attempts/0001")
    problems = ledger.check_chain(tmp_path)
    assert len(problems) == 1
    assert "line 2 is not a JSON entry" in problems[0]
    last = ledger.read_ledger(tmp_path)[-1]
    assert last["parent"] == "attempts/0001"


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
