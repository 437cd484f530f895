"""Evidence files that cannot lie, hang or exhaust memory (issue 21, section 3).

An attempt directory may sit where someone else can write. Each test puts one hostile
file where the runner's evidence belongs (a link to a forged file, a FIFO, a link to
``/dev/zero``, a line of 300 MB) and checks that every reader refuses it in one line,
promptly, in bounded memory, and never writes through a link (C2, C3, C4).

Commands that could hang or exhaust memory before the fix run in a child process with a
timeout and an address-space limit, so a regression fails the test instead of the host.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ENV, FAILING, SKGATE, as_if_runner_died, failed_attempt, gated_run, run_skgate
from skgate.evidence import files, ledger, regular
from skgate.model.errors import EvidenceError

# End-to-end runs of seconds each: left out of the fast selection (README, Development).
pytestmark = pytest.mark.slow

FORGED_SUMMARY = b"[summary] stage=compile inputs=1 succeeded=1 failed=0\n"
#: Generous for a one-attempt read on a loaded two-core host; a hang is forever.
PROMPT = 30.0
#: Address space of a child reader: far above what skgate needs, far below "read it all".
CHILD_AS = 1 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS, CHILD_AS))


def skgate_bounded(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``skgate ARGS`` with a timeout and an address-space limit (see the module doc)."""
    return subprocess.run(
        [*SKGATE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PROMPT,
        env=ENV,
        check=False,
        preexec_fn=_limited,
    )


def state_of(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)["state"]


def test_symlinked_verdict_to_a_forged_file_is_never_read_as_the_verdict(tmp_path: Path) -> None:
    attempt = failed_attempt(tmp_path)
    forged = json.loads((attempt / files.VERDICT).read_text())
    forged.update(state="succeeded", reasons=["forged"])
    outside = tmp_path / "forged-verdict.json"
    outside.write_text(json.dumps(forged))
    (attempt / files.VERDICT).unlink()
    (attempt / files.VERDICT).symlink_to(outside)

    # Issue 28: the attempt is sealed, so a verdict.json replaced by a link is a change
    # after sealing: unknown, saying so first, never recomputed around nor followed.
    status = run_skgate("status", str(attempt), "--json", cwd=tmp_path)
    assert state_of(status) == "unknown", status
    assert json.loads(status.stdout)["reasons"][0].startswith(
        "evidence changed after sealing: verdict.json"
    ), status
    report = run_skgate("report", str(attempt), "--format", "json", cwd=tmp_path)
    assert json.loads(report.stdout)["attempts"][0]["state"] == "unknown", report
    assert "forged" not in report.stdout, report
    checked = run_skgate("verify", str(attempt), cwd=tmp_path)
    assert checked.returncode == 1 and "verdict.json" in checked.stdout, checked


def test_run_log_linked_outside_never_makes_recover_seal_success(tmp_path: Path) -> None:
    attempt = failed_attempt(tmp_path)
    as_if_runner_died(attempt)
    outside = tmp_path / "outside.log"
    outside.write_bytes(FORGED_SUMMARY)
    (attempt / files.RUN_LOG).unlink()
    (attempt / files.RUN_LOG).symlink_to(outside)
    before = sorted(p.name for p in attempt.iterdir())

    rec = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert rec.returncode == 2, rec
    assert "run.log" in rec.stderr and "symbolic link" in rec.stderr, rec
    assert "Traceback" not in rec.stderr
    assert sorted(p.name for p in attempt.iterdir()) == before  # nothing written
    assert outside.read_bytes() == FORGED_SUMMARY


def test_attempt_dir_linked_outside_is_refused_by_recover_and_named_by_verify(
    tmp_path: Path,
) -> None:
    attempt = failed_attempt(tmp_path)  # r/attempts/0001, intact
    second = gated_run(tmp_path, FAILING).attempt  # r/attempts/0002
    as_if_runner_died(second)
    elsewhere = tmp_path / "elsewhere"
    second.rename(elsewhere)
    linked = attempt.parent / "0003"
    linked.symlink_to(elsewhere)
    book = attempt.parent.parent / ledger.LEDGER
    ledger_before = book.read_bytes()
    inside_before = sorted(p.name for p in elsewhere.iterdir())

    rec = run_skgate("recover", str(linked), cwd=tmp_path)
    assert rec.returncode == 2 and "symbolic link" in rec.stderr, rec
    rec_root = run_skgate("recover", str(attempt.parent.parent), cwd=tmp_path)
    assert rec_root.returncode == 2 and "0003" in rec_root.stderr, rec_root
    assert sorted(p.name for p in elsewhere.iterdir()) == inside_before
    assert book.read_bytes() == ledger_before
    checked = run_skgate("verify", str(attempt.parent.parent), cwd=tmp_path)
    assert checked.returncode == 1, checked
    assert "attempts/0003: is a symbolic link" in checked.stdout, checked


def test_an_attempt_reached_through_a_linked_attempts_dir_is_named_by_its_own_verify(
    tmp_path: Path,
) -> None:
    # Measured on f0f0c5d: ``verify r`` said "CHANGED: attempts: is a symbolic link" and
    # ``verify r/attempts/0001`` said "OK": the same attempt, two answers.
    attempt = failed_attempt(tmp_path)
    root = attempt.parent.parent
    (root / "attempts").rename(root / "moved")
    (root / "attempts").symlink_to("moved")
    for target in ("r", "r/attempts/0001"):
        checked = run_skgate("verify", target, cwd=tmp_path)
        assert checked.returncode == 1, (target, checked)
        assert "CHANGED: attempts: is a symbolic link (to moved)" in checked.stdout, checked


def test_ledger_linked_outside_is_never_appended_through(tmp_path: Path) -> None:
    attempt = failed_attempt(tmp_path)
    root = attempt.parent.parent
    outside = tmp_path / "outside.jsonl"
    (root / ledger.LEDGER).rename(outside)
    (root / ledger.LEDGER).symlink_to(outside)
    before = outside.read_bytes()

    with pytest.raises(EvidenceError, match="symbolic link"):
        ledger.record_start(root, attempt, None)
    assert outside.read_bytes() == before
    checked = run_skgate("verify", str(root), cwd=tmp_path)
    assert checked.returncode == 1, checked
    assert "ledger.jsonl: is a symbolic link" in checked.stdout, checked
    assert outside.read_bytes() == before


def test_fifo_in_place_of_ownership_hangs_no_reader(tmp_path: Path) -> None:
    attempt = failed_attempt(tmp_path)
    as_if_runner_died(attempt)
    (attempt / files.OWNERSHIP).unlink()
    os.mkfifo(attempt / files.OWNERSHIP)

    for args in (("report", str(attempt)), ("classify", str(attempt)), ("recover", str(attempt))):
        got = skgate_bounded(*args, cwd=tmp_path)  # TimeoutExpired before the fix
        assert got.returncode == 2, (args, got)
        assert "ownership.json: is a FIFO" in got.stderr, (args, got)
        assert "Traceback" not in got.stderr
    assert not (attempt / files.SEAL).exists()


def test_events_linked_to_dev_zero_makes_one_attempt_unreadable_not_the_root(
    tmp_path: Path,
) -> None:
    first = failed_attempt(tmp_path)
    attempt = gated_run(tmp_path, FAILING).attempt
    as_if_runner_died(attempt)
    (attempt / files.EVENTS).unlink()
    (attempt / files.EVENTS).symlink_to("/dev/zero")

    got = skgate_bounded("status", "--all", str(first.parent.parent), cwd=tmp_path)
    assert f"{first}: FAILED" in got.stdout, got  # the other attempt is still listed
    assert f"{attempt}: damaged evidence" in got.stdout, got
    assert "events.jsonl: is a symbolic link" in got.stdout, got
    assert got.returncode == 2 and "MemoryError" not in got.stderr, got


def _sparse_journal(path: Path, line_bytes: int) -> None:
    """A journal whose second line is ``line_bytes`` long, written sparse (no 300 MB of
    real writes): a valid event, then a hole of NULs, then a newline."""
    head = json.dumps({"schema": "skgate.event/1", "event": "created", "t": 1.0}) + "\n"
    with path.open("wb") as fh:
        fh.write(head.encode())
        fh.truncate(len(head) + line_bytes)
        fh.seek(0, os.SEEK_END)
        fh.write(b"\n")


def test_a_300_mb_journal_line_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    journal = tmp_path / files.EVENTS
    _sparse_journal(journal, 300 << 20)
    probe = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from skgate.evidence.journal import read_journal\n"
        "from skgate.model.errors import EvidenceError\n"
        "try:\n"
        "    read_journal(Path(sys.argv[1]))\n"
        "    outcome = 'read'\n"
        "except EvidenceError as exc:\n"
        "    outcome = str(exc)\n"
        "except MemoryError:\n"
        "    outcome = 'MemoryError'\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(peak, outcome)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe, str(journal)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=True,
        preexec_fn=_limited,
    )
    peak_kib, outcome = got.stdout.strip().split(" ", 1)
    assert "line 2 is longer than" in outcome, got
    # The bound (16 MiB) plus one chunk plus the interpreter, never the line itself.
    assert int(peak_kib) < 120 * 1024, got.stdout


def test_line_reader_never_holds_a_line_over_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"a\n" + b"b" * 100 + b"\nc\n" + b"d" * 50)
    lines = list(regular.iter_lines(path, max_line=10))
    assert [(ln.number, ln.raw, ln.too_long, ln.complete) for ln in lines] == [
        (1, b"a", False, True),
        (2, b"", True, True),
        (3, b"c", False, True),
        (4, b"", True, False),
    ]


def test_oversized_json_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / files.VERDICT
    with path.open("wb") as fh:
        fh.truncate(regular.limit_for(path) + 1)
    with pytest.raises(EvidenceError, match="larger than"):
        files.read_json(path)


def test_a_damaged_journal_field_makes_one_attempt_unreadable_not_the_root(
    tmp_path: Path,
) -> None:
    damaged = failed_attempt(tmp_path)
    other = gated_run(tmp_path, FAILING).attempt
    as_if_runner_died(damaged)
    with (damaged / files.EVENTS).open("a") as fh:
        fh.write('{"schema":"skgate.event/1","event":"blocked","reasons":5}\n')

    got = run_skgate("status", "--all", str(damaged.parent.parent), cwd=tmp_path)
    assert "internal error" not in got.stderr, got  # a TypeError before the fix
    assert f"{other}: FAILED" in got.stdout, got
    assert f"{damaged}: damaged evidence" in got.stdout and "'reasons'" in got.stdout, got
    assert got.returncode == 2, got
