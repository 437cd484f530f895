"""An unsealed attempt's ``verdict.json`` its runner did not record (C2.5, C4).

Reproducer (measured on 45579b3): ``skgate start --root r -- sleep 30``; the runner
SIGKILLed (the OOM killer, a ``kill -9`` by hand); another attempt's ``verdict.json``
(``skgate run --root ok --verdict-from exit-status -- true``) copied into
``r/attempts/0001``: ``skgate status r`` answered "SUCCEEDED: the command returned
naturally with exit status 0" (exit 0) while ``sleep 30`` still ran, orphaned; ``verify``
called it "interrupted while sealing: run skgate recover", and ``recover`` sealed it, so
from then on the seal and the ledger vouched for the copy.

Until an attempt is sealed, nothing else says which ``verdict.json`` is its own: its
runner (and ``skgate recover``) now journal the verdict's sha256 (``verdict_hash``)
before linking it, durable with it. Once the runner is gone, a ``verdict.json`` no such
record names decides nothing: every reader answers ``unknown`` (exit 5), ``verify`` calls
it a change and ``recover`` refuses it. The runner's own verdict, left unsealed by a kill
in the last window (after the link, before the seal), reads as before, and ``recover``
finishes it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import (
    as_if_runner_died,
    env_in,
    failed_attempt,
    run_skgate,
    unknown_everywhere,
    unrecord_end,
    wait_for,
)
from skgate.evidence import files, ledger, seal, sealed, unsealed
from skgate.evidence.digest import sha256_bytes
from skgate.evidence.seal_problem import Flaw
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.model.running import UNRECORDED
from skgate.proc.observe import read_stat
from skgate.read.liveness import current_verdict
from skgate.regress.common import read_reference_verdict
from skgate.verdict.words import state_words
from skgate.workdir.recover import recover_attempt

LINE = (
    "evidence its runner did not record: verdict.json (the attempt is not sealed, its runner "
    "is gone, and its journal records no verdict with this content: copied from another "
    "attempt, edited, or written by hand?)"
)
#: The same line in Chinese, as docs/contract.md gives it.
LINE_ZH = (
    "证据不是其运行器记录的：verdict.json（该尝试未封存，其运行器已不在，且其日志中没有内容与之"
    "相同的结论记录：从其他尝试复制而来、被编辑，还是手工写入的？）"
)
#: Another attempt's success, to copy.
SUCCESS = ("run", "--root", "ok", "--quiet", "--verdict-from", "exit-status", "--", "true")
JOURNAL_LINE = (
    "evidence its runner did not record: verdict.json (the attempt is not sealed, its runner "
    "is gone, and its journal, events.jsonl, which records its verdict, is gone or not a "
    "regular file)"
)
JOURNAL_LINE_ZH = (
    "证据不是其运行器记录的：verdict.json（该尝试未封存，其运行器已不在，且记录其结论的日志 "
    "events.jsonl 已不存在或不是普通文件）"
)
CHANGED: dict[str, object] = {"file": "verdict.json", "sealed_sha256": None, "now": UNRECORDED}


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sealed._CACHE.clear()  # each test builds its own roots at the same tmp paths


def _hashes(attempt: Path) -> list[str]:
    lines = (attempt / files.EVENTS).read_text().splitlines()
    return [r["sha256"] for r in map(json.loads, lines) if r["event"] == "verdict_hash"]


def as_if_killed_before_sealing(attempt: Path) -> None:
    """Leave a finished attempt as a runner SIGKILLed after linking its verdict and
    before sealing leaves it: every final file, no seal, no ``finished`` record, and only
    the ledger's ``start`` entry."""
    (attempt / files.SEAL).unlink()
    journal = attempt / files.EVENTS
    kept = [ln for ln in journal.read_text().splitlines() if '"event":"finished"' not in ln]
    journal.write_text("".join(ln + "\n" for ln in kept))
    unrecord_end(attempt)


def test_the_runner_journals_the_hash_of_the_verdict_it_links(tmp_path: Path) -> None:
    attempt = failed_attempt(tmp_path)
    assert _hashes(attempt) == [sha256_bytes((attempt / files.VERDICT).read_bytes())]
    kinds = [json.loads(x)["event"] for x in (attempt / files.EVENTS).read_text().splitlines()]
    assert kinds.index("verdict_hash") < kinds.index("finished")


def test_the_runners_own_verdict_left_unsealed_reads_as_recorded_and_recovers(
    tmp_path: Path,
) -> None:
    attempt = failed_attempt(tmp_path)
    as_if_killed_before_sealing(attempt)
    assert current_verdict(attempt).state is State.FAILED
    problem = unsealed.unfinished_problem(attempt)
    assert problem is not None and problem.flaw is Flaw.SEALING_INTERRUPTED
    recovered = recover_attempt(attempt)
    assert recovered.verdict is not None and recovered.verdict.state is State.FAILED
    sealed._CACHE.clear()
    assert current_verdict(attempt).state is State.FAILED
    assert run_skgate("verify", "r", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("change", ["edited", "copied", "written"])
def test_a_verdict_its_gone_runner_did_not_record_is_unknown_and_never_recovered(
    tmp_path: Path, change: str
) -> None:
    attempt = failed_attempt(tmp_path)
    own = json.loads((attempt / files.VERDICT).read_text())
    if change == "edited":  # the runner's own, one field changed
        as_if_killed_before_sealing(attempt)
        (attempt / files.VERDICT).write_text(json.dumps({**own, "state": "succeeded"}))
    else:  # another attempt's, or one made by hand, where the runner left none
        as_if_runner_died(attempt)
        (tmp_path / "elsewhere").mkdir()
        other = failed_attempt(tmp_path / "elsewhere")
        data = (other / files.VERDICT).read_bytes() if change == "copied" else b"{}"
        (attempt / files.VERDICT).write_bytes(data)
    book = (tmp_path / "r" / ledger.LEDGER).read_bytes()
    unknown_everywhere(
        tmp_path,
        LINE,
        LINE_ZH,
        CHANGED,
        ("status", "r"),
        ("status", "r", "--all"),
        ("status", "r/attempts/0001"),
    )
    problem = unsealed.unfinished_problem(attempt)
    assert problem is not None and problem.flaw is Flaw.UNRECORDED
    checked = run_skgate("verify", "r", cwd=tmp_path)
    assert checked.returncode == 1 and "is not the verdict its runner recorded" in checked.stdout
    refused = run_skgate("recover", "r/attempts/0001", cwd=tmp_path)
    assert refused.returncode == 2 and LINE in refused.stderr, refused
    assert "Traceback" not in refused.stderr
    assert not (attempt / files.SEAL).exists()
    assert (tmp_path / "r" / ledger.LEDGER).read_bytes() == book  # nothing indexed or ended
    with pytest.raises(UsageError, match="evidence its runner did not record"):
        read_reference_verdict(attempt)  # never a regress reference either


def test_a_verdict_recover_wrote_before_it_was_cut_short_is_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recover killed between writing the verdict and sealing: the next one finishes it."""
    attempt = failed_attempt(tmp_path)
    as_if_runner_died(attempt)

    def cut(*_args: object, **_kw: object) -> None:
        raise EvidenceError("cut short (test)")

    with monkeypatch.context() as m:
        m.setattr(seal, "seal_attempt", cut)  # recover calls it through the module
        with pytest.raises(EvidenceError, match="cut short"):
            recover_attempt(attempt)
    assert (attempt / files.VERDICT).exists() and not (attempt / files.SEAL).exists()
    assert _hashes(attempt)[-1] == sha256_bytes((attempt / files.VERDICT).read_bytes())
    assert current_verdict(attempt).state is State.FAILED
    assert recover_attempt(attempt).verdict is not None
    sealed._CACHE.clear()
    assert current_verdict(attempt).state is State.FAILED


@pytest.mark.parametrize("journal", ["removed", "linked", "emptied", "older"])
def test_a_journal_that_vouches_for_nothing_makes_the_verdict_unknown(
    tmp_path: Path, journal: str
) -> None:
    """``rm events.jsonl`` (measured before this check took control.json's runner: the
    runner's own "failed" replaced by a copied "succeeded" read SUCCEEDED, exit 0); a
    link in its place (to a journal that would name the forged verdict: never read); an
    emptied journal; or an older skgate's, which names no runner and records no hash:
    nothing vouches for the verdict. (Such an older attempt, left unsealed by a kill
    while sealing, reads unknown: a clean retry answers it.)"""
    attempt = failed_attempt(tmp_path)
    as_if_killed_before_sealing(attempt)
    path = attempt / files.EVENTS
    forged = json.dumps({**json.loads((attempt / files.VERDICT).read_text()), "state": "succeeded"})
    (attempt / files.VERDICT).write_text(forged)
    if journal in ("removed", "linked"):
        kept = path.read_text()
        path.unlink()
        if journal == "linked":
            record = {"schema": "skgate.event/1", "t": 1.0, "event": "verdict_hash"}
            record["sha256"] = sha256_bytes(forged.encode())
            (tmp_path / "elsewhere.jsonl").write_text(kept + json.dumps(record) + "\n")
            path.symlink_to(tmp_path / "elsewhere.jsonl")
    elif journal == "emptied":
        path.write_text("")
    else:
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        rows = [{k: v for k, v in r.items() if k != "runner"} for r in rows]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["event"] != "verdict_hash"))
    v = current_verdict(attempt)
    gone = journal in ("removed", "linked")
    assert v.state is State.UNKNOWN and v.reasons[0] == (JOURNAL_LINE if gone else LINE)
    assert v.missing == (
        ("event journal (events.jsonl)",)
        if gone
        else ("the runner's own final files (verdict.json, seal.json)",)
    )
    assert (JOURNAL_LINE_ZH if gone else LINE_ZH) in state_words(v, Lang.ZH)
    problem = unsealed.unfinished_problem(attempt)
    assert problem is not None and problem.flaw is Flaw.UNRECORDED
    # recover refuses it, a linked journal first for being one.
    why = "is a symbolic link" if journal == "linked" else "evidence its runner did not record"
    with pytest.raises(EvidenceError, match=why):
        recover_attempt(attempt)


@pytest.fixture
def workload_groups() -> Iterator[list[tuple[int, int]]]:
    """(process group, its leader's start time) of workloads a test's runner started and
    the test killed the runner of: ended at teardown by group, each only while its
    leader is still that workload (C4: never a recycled pid)."""
    groups: list[tuple[int, int]] = []
    yield groups
    for pgid, ticks in groups:
        st = read_stat(pgid)
        if st is not None and st.start_ticks == ticks:
            os.killpg(pgid, signal.SIGKILL)


def _gone(pid: int) -> bool:
    st = read_stat(pid)
    return st is None or st.zombie


def test_the_reproducer_a_copied_success_while_the_command_runs_on(
    tmp_path: Path, workload_groups: list[tuple[int, int]]
) -> None:
    env = env_in(tmp_path)
    started = run_skgate(
        "start",
        "--root",
        "r",
        "--",
        sys.executable,
        "-c",
        "import time; time.sleep(60)",
        cwd=tmp_path,
        env=env,
    )
    assert started.returncode == 0, started
    attempt = tmp_path / "r" / "attempts" / "0001"

    def launched() -> dict[str, object] | None:
        for line in (attempt / files.EVENTS).read_text().splitlines():
            record: dict[str, object] = json.loads(line)
            if record["event"] == "launched":
                return record
        return None

    command = wait_for(launched, "the launch")
    workload_groups.append((int(str(command["pgid"])), int(str(command["start_ticks"]))))
    runner = json.loads((attempt / files.CONTROL).read_text())["runner"]
    st = read_stat(runner["pid"])
    assert st is not None and st.start_ticks == runner["start_ticks"]  # the one we started
    os.kill(runner["pid"], signal.SIGKILL)
    wait_for(lambda: _gone(runner["pid"]), "the runner's end")
    ok = run_skgate(*SUCCESS, cwd=tmp_path, env=env)
    assert ok.returncode == 0, ok
    (attempt / files.VERDICT).write_bytes((tmp_path / "ok/attempts/0001/verdict.json").read_bytes())
    assert read_stat(int(str(command["pid"]))) is not None  # the command still runs
    unknown_everywhere(tmp_path, LINE, LINE_ZH, CHANGED, ("status", "r"))
    waited = run_skgate("wait", "r", cwd=tmp_path)
    assert waited.returncode == 5 and LINE in waited.stdout and "SUCCEEDED" not in waited.stdout
    # recover first waits for the command, then refuses the verdict it did not record.
    alive = run_skgate("recover", "r/attempts/0001", cwd=tmp_path)
    assert alive.returncode == 6 and not (attempt / files.SEAL).exists(), alive
    os.killpg(workload_groups.pop()[0], signal.SIGKILL)  # ours: its runner started it
    wait_for(lambda: _gone(int(str(command["pid"]))), "the command's end")
    refused = run_skgate("recover", "r/attempts/0001", cwd=tmp_path)
    assert refused.returncode == 2 and LINE in refused.stderr, refused
    assert not (attempt / files.SEAL).exists()
