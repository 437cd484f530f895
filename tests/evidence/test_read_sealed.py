"""Every read of a sealed attempt checks what it reads against its seal (issue 28 s3/s4).

Reproducer of problem 4: ``skgate run --verdict-from exit-status -- false``, then
``verdict.json`` rewritten to ``state: succeeded, exit_status: 0``. Before the shared
reader (``skgate.evidence.sealed``), ``status`` printed SUCCEEDED with exit 0 and the
report said "1 succeeded". Now every command that shows an attempt answers unknown,
exit 5, its first line "evidence changed after sealing: FILE (sealed sha256 ..., now
...)" (C2.5), in English and Chinese; an unsealed attempt is read as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import as_if_runner_died, gated_run, run_skgate, unrecord_end
from skgate.evidence import files, sealed
from skgate.model.exits import EXIT_UNKNOWN

# One real run per module, then copies: seconds in all.
pytestmark = pytest.mark.slow

CHANGED = "evidence changed after sealing: "


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sealed root whose only attempt failed by its declared exit status 1."""
    tmp = tmp_path_factory.mktemp("sealed")
    run = gated_run(tmp, ["false"], "--verdict-from", "exit-status")
    assert run.verdict()["state"] == "failed", run.output
    return run.root


def copy_of(root: Path, tmp: Path) -> Path:
    dest = tmp / "r"
    shutil.copytree(root, dest, symlinks=True)
    return dest / "attempts" / "0001"


def forge_success(attempt: Path) -> None:
    path = attempt / files.VERDICT
    data = json.loads(path.read_text())
    data.update(state="succeeded", exit_status=0)
    path.write_text(json.dumps(data))


def test_a_rewritten_verdict_is_never_believed(finished: Path, tmp_path: Path) -> None:
    attempt = copy_of(finished, tmp_path)
    forge_success(attempt)
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    assert status.returncode == EXIT_UNKNOWN, status
    first = status.stdout.splitlines()[0]
    assert first.startswith("UNKNOWN: " + CHANGED + "verdict.json (sealed sha256 "), status
    assert ", now sha256 " in first and "SUCCEEDED" not in status.stdout, status
    for command in (("classify",), ("wait", "--max", "5")):
        got = run_skgate(*command, str(attempt), "--json", cwd=tmp_path)
        assert got.returncode == EXIT_UNKNOWN, got
        answer = json.loads(got.stdout)
        answer = answer.get("verdict", answer)  # wait wraps the verdict in its record
        assert answer["reasons"][0].startswith(CHANGED + "verdict.json"), got
    root = attempt.parent.parent
    listed = run_skgate("status", "--all", str(root), cwd=tmp_path)
    assert CHANGED + "verdict.json" in listed.stdout and "SUCCEEDED" not in listed.stdout, listed
    report = run_skgate("report", str(root), cwd=tmp_path)
    screen = "\n".join(report.stdout.splitlines()[:12])
    assert "1 unknown" in screen and CHANGED + "verdict.json" in screen, report
    assert "succeeded" not in screen, report
    zh = run_skgate("report", "--lang", "zh", str(attempt), cwd=tmp_path)
    assert "封存后证据被改动：verdict.json（封存时 sha256 " in zh.stdout, zh
    assert "evidence changed" not in zh.stdout and "as sealed" not in zh.stdout, zh
    assert "封存时的 verdict.json" in zh.stdout and "skgate verify" in zh.stdout, zh
    # The next step points at verify, never at a retry that refuses such an attempt.
    assert f"skgate verify {attempt}" in report.stdout or "skgate verify" in screen, report
    html = run_skgate("report", "--format", "html", str(attempt), cwd=tmp_path)
    assert CHANGED + "verdict.json" in html.stdout, html.stderr


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 2)])


def _garbage(p: Path) -> None:
    with p.open("ab") as f:
        f.write(b'\x00{"not":')


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _delete(p: Path) -> None:
    p.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "garbage": _garbage,
    "empty": _empty,
    "deleted": _delete,
}


@pytest.mark.parametrize("name", [files.VERDICT, files.CONTROL, files.EVENTS, files.OWNERSHIP])
@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_or_missing_sealed_file_makes_status_unknown(
    finished: Path, tmp_path: Path, name: str, how: str
) -> None:
    attempt = copy_of(finished, tmp_path)
    DAMAGE[how](attempt / name)
    status = run_skgate("status", str(attempt), "--json", cwd=tmp_path)
    assert status.returncode == EXIT_UNKNOWN, status
    got = json.loads(status.stdout)
    assert got["state"] == "unknown", got
    assert got["reasons"][0].startswith(f"{CHANGED}{name} (sealed sha256 "), got
    if how == "deleted":
        assert got["reasons"][0].endswith("now missing)"), got
    assert got["extra"]["evidence_changed"]["file"] == name, got


def test_a_1gib_line_appended_is_refused_without_reading_it(finished: Path, tmp_path: Path) -> None:
    attempt = copy_of(finished, tmp_path)
    procs = attempt / files.PROCS
    with procs.open("r+b") as f:  # a sparse 1 GiB line: nothing of it is ever read
        f.truncate(procs.stat().st_size + (1 << 30))
    status = run_skgate("status", str(attempt), cwd=tmp_path, timeout=30)
    assert status.returncode == EXIT_UNKNOWN, status
    assert status.stdout.startswith(f"UNKNOWN: {CHANGED}procs.jsonl (sealed sha256 "), status
    assert "bytes, sealed" in status.stdout.splitlines()[0], status
    checked = run_skgate("verify", str(attempt.parent.parent), cwd=tmp_path, timeout=30)
    assert checked.returncode == 1 and "procs.jsonl: changed after sealing" in checked.stdout


def test_an_unsealed_attempt_with_an_overlong_record_is_noticed(
    finished: Path, tmp_path: Path
) -> None:
    attempt = copy_of(finished, tmp_path)
    as_if_runner_died(attempt)  # killed after the natural return: nothing sealed
    procs = attempt / files.PROCS
    with procs.open("r+b") as f:
        f.truncate(procs.stat().st_size + (1 << 30))
    assert sealed.first_overlong(procs) is not None
    checked = run_skgate("verify", str(attempt), cwd=tmp_path, timeout=60)
    assert "procs.jsonl: line " in checked.stdout and "refused and never read" in checked.stdout
    recovered = run_skgate("recover", str(attempt), cwd=tmp_path, timeout=60)
    assert recovered.returncode != 0, recovered
    assert "procs.jsonl: line " in recovered.stderr, recovered
    assert not (attempt / files.SEAL).exists(), "recover sealed a damaged record"


def test_an_unsealed_attempt_is_read_as_before(finished: Path, tmp_path: Path) -> None:
    # Its seal and the ledger's end entry both gone, as a runner killed before them
    # leaves it: read as it is (a seal removed after the ledger chained it is not).
    attempt = copy_of(finished, tmp_path)
    (attempt / files.SEAL).unlink()
    unrecord_end(attempt)
    status = run_skgate("status", str(attempt), "--json", cwd=tmp_path)
    assert json.loads(status.stdout)["state"] == "failed", status
    assert status.returncode == 1, status


def test_a_seal_remade_or_removed_is_caught_through_the_ledger(
    finished: Path, tmp_path: Path
) -> None:
    # The forged success of this module's reproducer, with seal.json re-made to match
    # it (or removed): every file matched, and status said SUCCEEDED, exit 0. The
    # ledger chained the seal's hash: now unknown, exit 5, as verify says.
    for how in ("remade", "removed"):
        attempt = copy_of(finished, tmp_path / how)
        forge_success(attempt)
        seal_path = attempt / files.SEAL
        if how == "removed":
            seal_path.unlink()
        else:
            body = (attempt / files.VERDICT).read_bytes()
            data = json.loads(seal_path.read_text())
            for entry in data["files"]:
                if entry["name"] == files.VERDICT:
                    entry.update(sha256=hashlib.sha256(body).hexdigest(), size=len(body))
            seal_path.write_text(json.dumps(data))
        tail = ", not the seal the ledger recorded)" if how == "remade" else ", now missing)"
        status = run_skgate("status", str(attempt), cwd=tmp_path)
        assert status.returncode == EXIT_UNKNOWN, status
        first = status.stdout.splitlines()[0]
        assert first.startswith(f"UNKNOWN: {CHANGED}seal.json (sealed sha256 "), status
        assert first.endswith(tail) and "SUCCEEDED" not in status.stdout, status
        for command in (("classify",), ("wait", "--max", "5")):
            got = run_skgate(*command, str(attempt), "--json", cwd=tmp_path)
            assert got.returncode == EXIT_UNKNOWN, got
        root = attempt.parent.parent
        listed = run_skgate("status", "--all", str(root), cwd=tmp_path)
        assert f"{CHANGED}seal.json" in listed.stdout and "SUCCEEDED" not in listed.stdout
        zh = run_skgate("report", "--lang", "zh", str(attempt), cwd=tmp_path)
        assert "封存后证据被改动：seal.json（封存时 sha256 " in zh.stdout, zh
        assert "evidence changed" not in zh.stdout and "ledger" not in zh.stdout, zh
        checked = run_skgate("verify", str(root), cwd=tmp_path)
        assert checked.returncode == 1 and "0001/seal.json" in checked.stdout, checked


def test_an_intact_attempt_reads_as_recorded(finished: Path, tmp_path: Path) -> None:
    attempt = copy_of(finished, tmp_path)
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    assert status.returncode == 1 and status.stdout.startswith("FAILED"), status
    assert "evidence changed" not in status.stdout, status


def test_a_damaged_seal_is_said_and_the_report_still_renders(
    finished: Path, tmp_path: Path
) -> None:
    attempt = copy_of(finished, tmp_path)
    (attempt / files.SEAL).write_text("garbage")
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    assert status.returncode == EXIT_UNKNOWN, status
    assert status.stdout.startswith(f"UNKNOWN: {CHANGED}seal.json (damaged: "), status
    for target in (attempt, attempt.parent.parent):
        report = run_skgate("report", str(target), cwd=tmp_path)
        assert report.returncode == 0 and f"{CHANGED}seal.json" in report.stdout, report


@pytest.mark.parametrize("name", [files.SEAL, files.VERDICT, files.CONTROL])
def test_a_record_cut_inside_a_string_reads_unknown(
    finished: Path, tmp_path: Path, name: str
) -> None:
    """Cut inside a JSON string (a torn write, ``truncate``): status names the damage,
    exit 5, never "internal error" (the C scanner's SystemError on Python 3.11, where
    status has not loaded ``json.decoder``)."""
    attempt = copy_of(finished, tmp_path)
    path = attempt / name
    text = path.read_bytes()
    path.write_bytes(text[: text.index(b'"', text.index(b":")) + 3])  # inside a value
    for command in (("status", str(attempt)), ("status", "--all", str(attempt.parent.parent))):
        status = run_skgate(*command, cwd=tmp_path)
        assert status.returncode == EXIT_UNKNOWN, status
        assert "internal error" not in status.stdout + status.stderr, status
        assert f"{CHANGED}{name}" in status.stdout, status


def _unmake_control(attempt: Path, kind: str) -> None:
    path = attempt / files.CONTROL
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to("/etc/passwd")


@pytest.mark.parametrize("kind", ["removed", "directory", "fifo", "link"])
def test_a_sealed_attempt_without_its_controls_is_changed_for_verify(
    finished: Path, tmp_path: Path, kind: str
) -> None:
    """control.json gone (or no longer a file) from a sealed attempt: ``verify`` of the
    attempt and of its root name the change, exit 1. It said "OK: seals match": without
    control.json the directory read as an attempt still in preflight, with nothing to
    check yet. ``classify`` answers unknown with the change (it said "not an attempt
    directory"), as ``status`` did, and so does the attempt's report (it exited 2)."""
    attempt = copy_of(finished, tmp_path)
    _unmake_control(attempt, kind)
    for target in (attempt, attempt.parent.parent):
        checked = run_skgate("verify", str(target), cwd=tmp_path, timeout=30)
        assert checked.returncode == 1, checked
        assert checked.stdout.startswith("CHANGED: 0001/control.json: "), checked
        assert "OK" not in checked.stdout, checked
    if kind == "removed":
        got = run_skgate("classify", str(attempt), cwd=tmp_path)
        assert got.returncode == EXIT_UNKNOWN, got
        assert got.stdout.startswith(f"UNKNOWN: {CHANGED}control.json (sealed sha256 "), got
        # The report of the attempt itself shows it so (it stopped at "exit 2" on it).
        shown = run_skgate("report", str(attempt), cwd=tmp_path)
        assert shown.returncode == 0, shown
        assert f"**verdict: unknown: {CHANGED}control.json (sealed sha256 " in shown.stdout


def test_controls_and_seal_both_gone_are_caught_through_the_ledger(
    finished: Path, tmp_path: Path
) -> None:
    attempt = copy_of(finished, tmp_path)
    (attempt / files.CONTROL).unlink()
    (attempt / files.SEAL).unlink()
    for target in (attempt, attempt.parent.parent):
        checked = run_skgate("verify", str(target), cwd=tmp_path, timeout=30)
        assert checked.returncode == 1, checked
        assert "0001/seal.json: removed (the ledger recorded it)" in checked.stdout, checked
