"""The reproducer of a removed attempt, end to end through the command line (issue 28).

``skgate run --verdict-from exit-status -- true``, then ``-- false``, then the failed
attempt's directory removed (``rm -rf r/attempts/0002``: an agent "cleaning up" a
failure). On 1d06c40 ``status r`` said SUCCEEDED (0001's verdict) with exit 0, and the
next run, given the id 0002 again, ended with exit 2. See test_removed_attempt.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import gated_run, run_skgate
from skgate.model.exits import EXIT_UNKNOWN

# Three real runs in all, then reads: seconds.
pytestmark = pytest.mark.slow

GONE = "UNKNOWN: evidence changed after sealing: the attempt directory is gone"


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root whose newest attempt (failed) was removed by hand; returns the work dir."""
    tmp = tmp_path_factory.mktemp("removed")
    assert gated_run(tmp, ["true"], "--verdict-from", "exit-status").returncode == 0
    assert gated_run(tmp, ["false"], "--verdict-from", "exit-status").returncode == 1
    shutil.rmtree(tmp / "r" / "attempts" / "0002")
    return tmp


def test_status_of_the_root_never_answers_with_an_older_attempt(cleaned: Path) -> None:
    status = run_skgate("status", "r", cwd=cleaned)
    assert status.returncode == EXIT_UNKNOWN, status
    assert status.stdout.startswith(GONE), status
    assert "SUCCEEDED" not in status.stdout and "evidence: r/attempts/0002" in status.stdout
    assert "skgate verify r" in status.stdout
    named = run_skgate("status", "--json", "r/attempts/0002", cwd=cleaned)
    assert named.returncode == EXIT_UNKNOWN, named
    data = json.loads(named.stdout)
    assert data["state"] == "unknown" and data["extra"]["evidence_changed"]["file"] == "."
    assert data["missing"] == ["the attempt directory"]


def test_every_reader_says_the_same(cleaned: Path) -> None:
    rows = run_skgate("status", "--all", "r", cwd=cleaned)
    assert rows.returncode == EXIT_UNKNOWN, rows
    lines = rows.stdout.splitlines()
    assert lines[0].startswith("r/attempts/0001: SUCCEEDED"), rows
    assert lines[1].startswith(f"r/attempts/0002: {GONE}"), rows
    wait = run_skgate("wait", "--json", "r", cwd=cleaned)
    assert wait.returncode == EXIT_UNKNOWN, wait
    assert json.loads(wait.stdout)["attempt"] == "r/attempts/0002"
    report = run_skgate("report", "r", "--lang", "zh", cwd=cleaned)
    assert report.returncode == 0, report
    assert "0002: 未知：封存后证据被改动：尝试目录已不存在" in report.stdout, report.stdout
    verify = run_skgate("verify", "r", cwd=cleaned)
    assert verify.returncode != 0 and "attempt 0002 is indexed" in verify.stdout, verify


def test_commands_given_the_removed_path_answer_for_it(cleaned: Path) -> None:
    """Never "no such attempt directory" (exit 2) for a path the ledger indexed."""
    classify = run_skgate("classify", "r/attempts/0002", cwd=cleaned)
    assert classify.returncode == EXIT_UNKNOWN and classify.stdout.startswith(GONE), classify
    verify = run_skgate("verify", "r/attempts/0002", cwd=cleaned)
    assert verify.returncode == 1, verify
    assert "attempt 0002 is indexed but its directory is gone" in verify.stdout, verify
    report = run_skgate("report", "r/attempts/0002", cwd=cleaned)
    assert report.returncode == 0 and "# skgate report: attempt 0002" in report.stdout, report
    stop = run_skgate("stop", "--json", "r", cwd=cleaned)
    data = json.loads(stop.stdout)
    assert (data["attempt"], data["action"], data["state"]) == (
        "r/attempts/0002",
        "runner_gone",
        "unknown",
    ), stop
    never = run_skgate("status", "r/attempts/0009", cwd=cleaned)
    assert never.returncode == 2 and "no such attempt directory" in never.stderr, never


def test_the_next_run_takes_a_new_id_and_runs(cleaned: Path) -> None:
    work = cleaned.parent / f"{cleaned.name}-next"
    shutil.copytree(cleaned, work, symlinks=True)
    run = gated_run(work, ["true"], "--verdict-from", "exit-status")
    assert run.returncode == 0, run.output
    assert sorted(p.name for p in (work / "r" / "attempts").iterdir()) == ["0001", "0003"]
    status = run_skgate("status", "r", cwd=work)
    assert status.returncode == 0 and "evidence: r/attempts/0003" in status.stdout, status
    rows = run_skgate("status", "--all", "r", cwd=work).stdout.splitlines()
    assert [r.split(":")[0] for r in rows] == [f"r/attempts/000{n}" for n in (1, 2, 3)]


def test_a_success_copied_over_the_newest_failure_is_not_believed(cleaned: Path) -> None:
    """``cp -r r/attempts/0001 r/attempts/0005``: verify always named it; status now too."""
    work = cleaned.parent / f"{cleaned.name}-copied"
    shutil.copytree(cleaned, work, symlinks=True)
    shutil.copytree(work / "r" / "attempts" / "0001", work / "r" / "attempts" / "0005")
    status = run_skgate("status", "r", cwd=work)
    assert status.returncode == EXIT_UNKNOWN, status
    assert status.stdout.startswith(
        "UNKNOWN: evidence changed after sealing: seal.json (it seals attempt 0001, not this "
        "one: copied from elsewhere?)"
    ), status
    assert "evidence: r/attempts/0005" in status.stdout
