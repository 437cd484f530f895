"""Seals and verify: every evidence file hashed; any change named; chain cross-checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skgate.evidence import digest, ledger, seal
from skgate.evidence.files import CONTROL, EVENTS, RUN_LOG, SEAL, VERDICT, write_json_new
from skgate.model.errors import EvidenceError
from skgate.model.records import State, Verdict


def ended_attempt(root: Path, *, record: bool = True) -> Path:
    a = ledger.allocate(root)
    write_json_new(a / CONTROL, {"schema": "skgate.control/1", "attempt": a.name})
    if record:
        ledger.record_start(root, a, None)
    (a / EVENTS).write_text('{"schema":"skgate.event/1","event":"created"}\n', encoding="utf-8")
    (a / RUN_LOG).write_bytes(b"[summary] stage=a inputs=1 succeeded=1 failed=0\n" * 100)
    (a / "extra").mkdir()
    (a / "extra" / "sk_fused_nodes.log").write_text("SK Function: f\n", encoding="utf-8")
    v = Verdict(state=State.SUCCEEDED, cause=None, reasons=("ok",))
    write_json_new(a / VERDICT, v.to_dict())
    seal.seal_attempt(a)
    if record:
        ledger.record_end(root, a, v)
    return a


def test_seal_lists_every_file_with_hash_and_size(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    data = json.loads((a / SEAL).read_text(encoding="utf-8"))
    assert data["schema"] == "skgate.seal/1"
    assert data["attempt"] == "0001"
    assert isinstance(data["sealed_at"], float)
    names = [f["name"] for f in data["files"]]
    assert names == sorted([CONTROL, EVENTS, RUN_LOG, VERDICT, "extra/sk_fused_nodes.log"])
    log = next(f for f in data["files"] if f["name"] == RUN_LOG)
    assert log["size"] == (a / RUN_LOG).stat().st_size
    assert log["sha256"] == digest.sha256_file(a / RUN_LOG)
    assert seal.verify(a) == []
    assert seal.verify(tmp_path) == []


def test_seal_is_never_rewritten(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    before = (a / SEAL).read_bytes()
    with pytest.raises(EvidenceError, match="never rewritten"):
        seal.seal_attempt(a)
    assert (a / SEAL).read_bytes() == before


def test_verify_names_changed_removed_added_and_linked_files(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    with (a / RUN_LOG).open("r+b") as fh:
        fh.write(b"X")  # same size, different content
    (a / EVENTS).unlink()
    (a / "note.txt").write_text("added", encoding="utf-8")
    (a / "extra" / "sk_fused_nodes.log").unlink()
    os.symlink("/etc/passwd", a / "extra" / "sk_fused_nodes.log")
    problems = "\n".join(seal.verify(a))
    assert f"0001/{RUN_LOG}: changed after sealing (sha256 differs)" in problems
    assert f"0001/{EVENTS}: removed after sealing" in problems
    assert "0001/note.txt: added after sealing" in problems
    assert "0001/extra/sk_fused_nodes.log: replaced by a non-regular file" in problems


def test_verify_reports_a_resized_file(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    with (a / RUN_LOG).open("ab") as fh:
        fh.write(b"more\n")
    assert any("changed after sealing (size" in p for p in seal.verify(tmp_path))


def test_hostile_seal_is_reported_not_followed(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    (a / SEAL).unlink()
    (a / SEAL).write_text(
        json.dumps(
            {
                "schema": "skgate.seal/1",
                "attempt": "0001",
                "files": [{"name": "../../etc/passwd", "sha256": "0" * 64, "size": 1}],
                "sealed_at": 1.0,
            }
        ),
        encoding="utf-8",
    )
    problems = seal.verify(a)
    assert "not a plain relative path" in problems[0]
    assert problems[1:] == [f"0001/{SEAL}: differs from the one the ledger recorded"]
    (a / SEAL).unlink()
    (a / SEAL).write_text('{"schema": "skgate.seal/1", "files": [', encoding="utf-8")
    assert "not valid JSON" in seal.verify(a)[0]


def test_rewritten_seal_is_caught_by_the_ledger(tmp_path: Path) -> None:
    # Someone edits run.log and re-makes seal.json to match: the seal alone looks fine,
    # but the ledger recorded the hash of the original seal.
    a = ended_attempt(tmp_path)
    (a / RUN_LOG).write_bytes(b"edited\n")
    (a / SEAL).unlink()
    seal.seal_attempt(a)
    problems = seal.verify(tmp_path)
    assert problems == [f"0001/{SEAL}: differs from the one the ledger recorded"]
    assert seal.verify(a) == problems


def test_unindexed_attempt_and_missing_seal_are_reported(tmp_path: Path) -> None:
    ended_attempt(tmp_path)
    b = ended_attempt(tmp_path, record=False)
    (b / SEAL).unlink()
    problems = seal.verify(tmp_path)
    # The ledger chained its seal's hash: the missing seal was removed (tampering).
    assert "0002/seal.json: removed (the ledger recorded it)" in problems
    assert "0002: not in the ledger (added by hand?)" in problems
    assert not any("interrupted" in p for p in problems)


def live_control(a: Path, runner_pid: int, start_ticks: int) -> None:
    from skgate.model.request import RunRequest

    request = RunRequest(argv=("true",), cwd=str(a), root=str(a.parent.parent)).to_dict()
    write_json_new(
        a / CONTROL,
        {
            "schema": "skgate.control/1",
            "attempt": a.name,
            "request": request,
            "runner": {"pid": runner_pid, "start_ticks": start_ticks, "boot_id": ""},
        },
    )


def test_in_progress_attempt_has_nothing_to_verify(tmp_path: Path) -> None:
    from skgate.proc.observe import self_stat

    a = ledger.allocate(tmp_path)
    me = self_stat()
    live_control(a, me.pid, me.start_ticks)  # this test process plays the live runner
    ledger.record_start(tmp_path, a, None)
    assert seal.verify(tmp_path) == []


def test_unfinished_attempts_are_named_apart_from_tampering(tmp_path: Path) -> None:
    """Issue 12: a dead runner's attempt fails verify as unfinished, by name."""
    from skgate.proc.observe import self_stat

    me = self_stat()
    a = ledger.allocate(tmp_path)
    live_control(a, me.pid, me.start_ticks + 1)  # same pid, other start: a dead runner
    ledger.record_start(tmp_path, a, None)
    b = ledger.allocate(tmp_path)  # a runner killed before freezing its controls
    (b / EVENTS).write_text('{"schema":"skgate.event/1","event":"created"}\n')
    c = ledger.allocate(tmp_path)
    (c / CONTROL).write_bytes(b"")  # 0 bytes (an old, non-atomic writer)
    d = ledger.allocate(tmp_path)
    (d / CONTROL).write_text("{garbage")
    e = ended_attempt(tmp_path, record=False)  # sealed, chained, no end in the ledger...
    problems = seal.verify(tmp_path)
    found = seal.find_problems(tmp_path)
    assert [str(p) for p in found] == problems
    kinds = {p.where.split("/")[0]: "unfinished" if p.unfinished else "changed" for p in found}
    assert any(p.startswith("0001: never finished") for p in problems), problems
    assert any(p.startswith("0002: unfinished: no control.json") for p in problems), problems
    assert any(p.startswith("0003/control.json: damaged") for p in problems), problems
    assert any(p.startswith("0004/control.json: damaged") for p in problems), problems
    assert kinds["0001"] == kinds["0002"] == "unfinished"
    assert kinds["0003"] == kinds["0004"] == "changed"
    assert e.name not in kinds or kinds[e.name] == "changed"  # not recorded: hand-made


def test_scene_after_sealing_is_checked_against_its_manifest(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    scene = a / seal.SCENE_DIR / "01"
    (scene / "kernel_meta").mkdir(parents=True)
    (scene / "kernel_meta" / "k.o").write_bytes(b"\x7fELF")
    entries = seal.manifest_entries(scene)
    write_json_new(
        scene / seal.SCENE_MANIFEST,
        {"schema": seal.SCHEMA_SCENE, "files": [e.to_dict() for e in entries]},
    )
    ledger.record_scene(tmp_path, a, scene / seal.SCENE_MANIFEST)
    assert seal.verify(tmp_path) == []
    forged = a / seal.SCENE_DIR / "02"
    forged.mkdir()
    write_json_new(forged / seal.SCENE_MANIFEST, {"schema": seal.SCHEMA_SCENE, "files": []})
    assert seal.verify(tmp_path) == [
        "0001/scene/02/manifest.json: not in the ledger (added by hand?)"
    ]
    (forged / seal.SCENE_MANIFEST).unlink()
    forged.rmdir()
    (scene / "kernel_meta" / "k.o").write_bytes(b"other")
    assert seal.verify(tmp_path) == [
        "0001/scene/01/kernel_meta/k.o: changed after preserving (size 5, sealed 4)"
    ]


def test_scene_without_manifest_is_added_after_sealing(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    (a / seal.SCENE_DIR / "01").mkdir(parents=True)
    (a / seal.SCENE_DIR / "01" / "x").write_text("x", encoding="utf-8")
    problems = seal.verify(a)
    assert "0001/scene/01: scene added after sealing has no manifest.json" in problems
    assert "0001/scene/01/x: added after sealing" in problems


def test_verify_bad_target_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(EvidenceError, match="no such attempt"):
        seal.verify(tmp_path / "missing")


def test_seal_is_chained_in_the_ledger(tmp_path: Path) -> None:
    ended_attempt(tmp_path)
    events = [e["event"] for e in ledger.read_ledger(tmp_path)]
    assert events == ["start", "seal", "end"]


def test_cli_verify_exit_status_names_the_change(tmp_path: Path) -> None:
    from conftest import run_skgate

    a = ended_attempt(tmp_path / "runs")
    ok = run_skgate("verify", "runs", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK: 1 attempt(s)")
    (a / RUN_LOG).write_bytes(b"rewritten\n")
    bad = run_skgate("verify", str(a), "--json", cwd=tmp_path)
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["problems"] == [
        f"0001/{RUN_LOG}: changed after sealing (size 10, sealed 4800)"
    ]
    missing = run_skgate("verify", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2
    assert "no such attempt directory or evidence root" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_seal_temp_left_by_a_kill_while_sealing_is_unfinished_not_tampering(
    tmp_path: Path,
) -> None:
    """The seal is linked into place from a dot-named temporary file that is removed next;
    a SIGKILL in between leaves both (found by the finishing-window campaign). Without
    the ledger's end entry that is an interrupted seal, which recover finishes; once the
    ledger records the seal, the same file is something added after sealing."""
    a = ended_attempt(tmp_path, record=False)  # sealed by ended_attempt
    os.link(a / SEAL, a / f".{SEAL}.4242.0a1b2c3d.tmp")
    (problem,) = seal.attempt_problems(a, recorded=False)
    assert "interrupted while sealing" in str(problem) and problem.unfinished
    (changed,) = seal.verify_attempt(a, recorded=True)
    assert changed.endswith("added after sealing")
    (a / "x.tmp").write_text("")  # not the seal's temporary name: always a change
    assert any(p.endswith("x.tmp: added after sealing") for p in seal.verify_attempt(a))
