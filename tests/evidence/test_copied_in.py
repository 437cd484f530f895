"""An attempt directory replaced by another attempt's evidence, copied in from another root
(C2.5, C4).

Reproducer (measured on d18624a): ``skgate run --root r1 ... -- true`` (succeeded), then
``skgate start --root r2 -- sleep 20`` and, while it ran, ``rm -rf r2/attempts/0001 && cp
-a r1/attempts/0001 r2/attempts/0001``. ``skgate status r2`` answered SUCCEEDED (exit 0)
while r2's command still ran; ``skgate verify r2`` called it "interrupted while sealing"
and advised ``skgate recover``, which would have chained the copy's seal into r2's
ledger; and once r2's runner ended, it recorded in r2's ledger the seal hash of the copy
it found at its attempt's path, so that the copy read as r2's success for good.

Now the ledger's ``start`` entry names the attempt's runner (pid, start time, boot), as
the attempt's journal does in its first entry: a directory whose journal names another
runner holds another attempt's evidence, and is read as a removed attempt, with what
became of its run (the runner the ledger names). A runner whose directory was taken from
it chains no seal hash. A stand-in process plays the runner; the real run is in
tests/test_lifecycle.py (slow).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_removed_runner import STAND_IN, identity, started

from skgate.api import lifecycle
from skgate.evidence import digest, files, ledger, ledger_seals, lookup, seal, sealed
from skgate.evidence.files import CONTROL, EVENTS, SEAL, VERDICT, write_json_new
from skgate.evidence.seal_problem import Flaw
from skgate.model.errors import EvidenceError
from skgate.model.phrases import Lang
from skgate.model.records import State, Verdict
from skgate.model.running import COPIED_IN
from skgate.read.liveness import current_verdict
from skgate.verdict.words import state_words
from skgate.workdir.recover import recover_attempt

COPIED = (
    "another attempt's evidence stands in its place (its journal names another runner: "
    "copied from another root?)"
)
COPIED_ZH = "原处是另一个尝试的证据（其日志记录的是另一个运行器：从另一个根目录复制而来？）"
#: A runner of another root: never running here (pid 1 never has this start time).
ELSEWHERE = {"pid": 1, "start_ticks": 7, "boot_id": "another-boot"}


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sealed._CACHE.clear()  # each test builds its own roots at the same tmp paths


@pytest.fixture
def stand_in() -> Iterator[subprocess.Popen[str]]:
    with started(STAND_IN) as proc:
        yield proc


def created_line(runner: dict[str, object] | None) -> str:
    """The journal's first entry as the runner writes it: its pid and start time, and
    the boot beside them."""
    entry: dict[str, object] = {"schema": "skgate.event/1", "event": "created", "argv": ["true"]}
    if runner is not None:
        entry["runner"] = {"pid": runner["pid"], "start_ticks": runner["start_ticks"]}
        entry["boot_id"] = runner["boot_id"]
    return json.dumps(entry) + "\n"


def sealed_attempt(
    root: Path,
    runner: dict[str, object] | None,
    journal: dict[str, object] | bool | None = True,
) -> Path:
    """A succeeded attempt of ``root``, indexed as run by ``runner`` (None: its ``start``
    entry names none), its journal naming ``journal`` (True: ``runner``; None: none),
    sealed and chained into the root's ledger."""
    a = ledger.allocate(root)
    write_json_new(a / CONTROL, {"schema": "skgate.control/1", "attempt": a.name})
    named = runner if journal is True else journal if isinstance(journal, dict) else None
    (a / EVENTS).write_text(created_line(named), encoding="utf-8")
    ledger.record_start(root, a, None, runner)
    v = Verdict(state=State.SUCCEEDED, cause=None, reasons=("ok",))
    write_json_new(a / VERDICT, v.to_dict())
    seal.seal_attempt(a, chain=False)
    ledger.record_end(root, a, v)
    return a


def running_attempt(root: Path, runner: dict[str, object]) -> Path:
    """An attempt of ``root`` indexed as run by ``runner``, still running (no seal)."""
    a = ledger.allocate(root)
    (a / EVENTS).write_text(created_line(runner), encoding="utf-8")
    ledger.record_start(root, a, None, runner)
    return a


def copy_in(source: Path, target: Path) -> None:
    """What an agent does: ``rm -rf target && cp -a source target``."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)


def copied_over_a_live_run(tmp_path: Path, runner: dict[str, object]) -> Path:
    """r2's attempt, run by ``runner``, replaced by r1's succeeded attempt."""
    source = sealed_attempt(tmp_path / "r1", ELSEWHERE)
    target = running_attempt(tmp_path / "r2", runner)
    assert target.name == source.name  # the same id: no seal names another attempt
    copy_in(source, target)
    return target


def test_a_copy_over_a_live_run_is_never_its_success(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    target = copied_over_a_live_run(tmp_path, identity(stand_in))
    v = current_verdict(target)
    assert v.state is State.UNKNOWN  # was SUCCEEDED, from the copy
    assert v.reasons[0] == (
        "evidence removed: the attempt directory is gone (the root's ledger indexed it); "
        f"{COPIED}; its runner (pid {stand_in.pid}) still runs, and its command may too"
    )
    changed = v.to_dict()["extra"]["evidence_changed"]  # what --json says
    assert (changed["now"], changed["runner_pid"]) == (COPIED_IN, stand_in.pid)
    zh = state_words(v, Lang.ZH)
    assert zh.startswith("未知：证据被删除：尝试目录已不存在（根目录的账本登记过该尝试）")
    assert f"；{COPIED_ZH}；它的运行器（pid {stand_in.pid}）仍在运行" in zh
    # The root's newest attempt is that one, whatever stands at its path.
    assert lookup.latest(tmp_path / "r2") == target
    assert lookup.is_removed(target)


def test_wait_and_stop_reach_the_runner_the_ledger_names(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    target = copied_over_a_live_run(tmp_path, identity(stand_in))
    early = lifecycle.wait(target, max_seconds=0.2)
    assert (early.outcome, early.exit_code) == ("in_progress", lifecycle.EXIT_IN_PROGRESS)
    assert stand_in.poll() is None  # waiting signals nothing (C1)
    result = lifecycle.stop(target, "a copied-over attempt")
    assert (result.action, result.exit_code) == ("requested", 0), result.message
    assert f"its runner (pid {stand_in.pid}" in result.message
    assert stand_in.wait(timeout=10) == 7  # SIGTERM, through its checked pidfd (C4)
    assert lifecycle.wait(target).verdict.state is State.UNKNOWN


@pytest.mark.parametrize("field", ["pid", "start_ticks", "boot_id"])
def test_any_fact_of_another_runner_tells(tmp_path: Path, field: str) -> None:
    ours = {"pid": 4321, "start_ticks": 99, "boot_id": "this-boot"}
    theirs = {**ours, field: "other-boot" if field == "boot_id" else 1234}
    source = sealed_attempt(tmp_path / "r1", theirs)
    target = running_attempt(tmp_path / "r2", ours)
    copy_in(source, target)
    assert ledger_seals.journal_runner(str(target)) == tuple(theirs.values())
    assert ledger_seals.holds_another(str(target), str(tmp_path / "r2"), target.name)
    assert ledger_seals.removed(str(target)) == (str(tmp_path / "r2"), target.name)
    breach = current_verdict(target).breach
    assert breach is not None and breach.now == COPIED_IN


def test_its_own_evidence_restored_from_a_backup_is_itself(tmp_path: Path) -> None:
    """The next step of a removed attempt says to restore it from an intact copy: a copy
    of its own directory names its own runner, and reads as it did."""
    ours = {"pid": 4321, "start_ticks": 99, "boot_id": "this-boot"}
    a = sealed_attempt(tmp_path, ours)
    shutil.copytree(a, tmp_path / "backup", symlinks=True)
    copy_in(tmp_path / "backup", a)
    sealed._CACHE.clear()
    assert ledger_seals.removed(str(a)) is None
    assert current_verdict(a).state is State.SUCCEEDED
    assert seal.verify(tmp_path) == []


@pytest.mark.parametrize("case", ["indexed without a runner", "journal without a runner"])
def test_nothing_to_compare_reads_the_directory_as_it_is(tmp_path: Path, case: str) -> None:
    """An attempt brought home from another node, or indexed by ``skgate recover``, has no
    runner in its ``start`` entry; a journal of an older skgate names none: nothing tells
    the directory apart, and it is read as before (its seal and the ledger's hash)."""
    ours = {"pid": 4321, "start_ticks": 99, "boot_id": "this-boot"}
    if case == "indexed without a runner":
        target = sealed_attempt(tmp_path, None, journal=ELSEWHERE)
        assert ledger_seals.started_by(str(tmp_path), target.name) is None
        assert ledger_seals.journal_runner(str(target)) == tuple(ELSEWHERE.values())
    else:
        target = sealed_attempt(tmp_path, ours, journal=None)
        assert ledger_seals.started_by(str(tmp_path), target.name) == tuple(ours.values())
        assert ledger_seals.journal_runner(str(target)) is None
    assert not ledger_seals.holds_another(str(target), str(tmp_path), target.name)
    assert ledger_seals.removed(str(target)) is None
    assert current_verdict(target).breach is None


@pytest.mark.parametrize(
    "first",
    [
        b"",  # empty journal
        b"not json\n",
        b'{"event":"created","runner":{"pid":4321,"start_ticks":99}}',  # no newline: torn
        b'{"event":"created","runner":{"pid":true,"start_ticks":99},"boot_id":"b"}\n',
        b'{"event":"created","runner":{"pid":4321,"start_ticks":"99"},"boot_id":"b"}\n',
        b'{"event":"created","runner":{"pid":4321,"start_ticks":99},"boot_id":7}\n',
        b'{"event":"created","runner":[4321,99],"boot_id":"b"}\n',
        b"[1, 2]\n",
        b'{"argv":["' + b"x" * (ledger_seals.FIRST_LINE_LIMIT + 1) + b'"]}\n',  # too long
    ],
)
def test_a_first_entry_the_writer_never_writes_names_no_runner(
    tmp_path: Path, first: bytes
) -> None:
    a = running_attempt(tmp_path, {"pid": 4321, "start_ticks": 99, "boot_id": "b"})
    (a / EVENTS).write_bytes(first)
    assert ledger_seals.journal_runner(str(a)) is None
    assert not ledger_seals.holds_another(str(a), str(tmp_path), a.name)


def test_a_linked_journal_is_not_read(tmp_path: Path) -> None:
    """Evidence is read as regular files only, never through a link (issue 21)."""
    ours = {"pid": 4321, "start_ticks": 99, "boot_id": "b"}
    a = running_attempt(tmp_path, ours)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(created_line(ELSEWHERE), encoding="utf-8")
    (a / EVENTS).unlink()
    (a / EVENTS).symlink_to(elsewhere)
    assert ledger_seals.journal_runner(str(a)) is None


def test_verify_names_it_and_recover_refuses_it(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    target = copied_over_a_live_run(tmp_path, identity(stand_in))
    stand_in.send_signal(signal.SIGTERM)  # ours, by its pid: the runner is gone
    assert stand_in.wait(timeout=10) == 7
    root = tmp_path / "r2"
    problems = seal.find_problems(root)
    flaws = [p.flaw for p in problems]
    assert Flaw.INDEXED_OTHER in flaws
    assert Flaw.LEDGER_NO_END not in flaws  # never "interrupted while sealing"
    assert not any(p.unfinished for p in problems)  # nothing for recover to finish
    book = (root / ledger.LEDGER).read_bytes()
    with pytest.raises(EvidenceError, match="holds another attempt's evidence"):
        recover_attempt(target)
    assert (root / ledger.LEDGER).read_bytes() == book  # the copy's seal never chained


def test_a_runner_killed_between_seal_and_end_is_still_recovered(tmp_path: Path) -> None:
    """Its own journal names the runner its ``start`` entry names: interrupted, not
    copied; recover finishes it as before."""
    ours = {"pid": 4321, "start_ticks": 99, "boot_id": "b"}
    a = running_attempt(tmp_path, ours)
    write_json_new(a / CONTROL, {"schema": "skgate.control/1", "attempt": a.name})
    v = Verdict(state=State.SUCCEEDED, cause=None, reasons=("ok",))
    write_json_new(a / VERDICT, v.to_dict())
    seal.seal_attempt(a, chain=False)  # and the runner died before its end entry
    flaws = [p.flaw for p in seal.find_problems(tmp_path)]
    assert flaws == [Flaw.LEDGER_NO_END]
    assert not ledger_seals.holds_another(str(a), str(tmp_path), a.name)


def test_a_runner_whose_directory_was_taken_chains_no_seal(tmp_path: Path) -> None:
    """The runner's end entry of a removed attempt (``sealed=False``) never carries the
    hash of a ``seal.json`` it did not write, whatever stands at its path."""
    source = sealed_attempt(tmp_path / "r1", ELSEWHERE)
    target = running_attempt(tmp_path / "r2", {"pid": 4321, "start_ticks": 99, "boot_id": "b"})
    copy_in(source, target)
    v = Verdict(state=State.UNKNOWN, cause=None, reasons=("removed",))
    ledger.record_end(tmp_path / "r2", target, v, {"removed": "gone"}, sealed=False)
    ledger.record_end(tmp_path / "r2", target, v)  # the default chains it
    ends = [e for e in ledger.read_ledger(tmp_path / "r2") if e["event"] == "end"]
    assert ends[0]["seal_sha256"] is None
    assert ends[1]["seal_sha256"] == digest.sha256_file(target / SEAL)


def test_a_report_asks_the_whole_ledger_once_and_answers_the_same(tmp_path: Path) -> None:
    """A report asks about every attempt: from the third ask on, the runners of the whole
    ledger are read at once (as its seal hashes are), with the same answers."""
    runners = [{"pid": 100 + k, "start_ticks": k, "boot_id": "b"} for k in range(5)]
    attempts = [running_attempt(tmp_path, r) for r in runners]
    unnamed = running_attempt(tmp_path / "other", runners[0])  # another root's
    for a, r in zip(attempts, runners, strict=True):
        assert ledger_seals.started_by(str(tmp_path), a.name) == tuple(r.values())
    assert ledger_seals.started_by(str(tmp_path), "0009") is None
    assert ledger_seals.started_by(str(tmp_path / "other"), unnamed.name) == tuple(
        runners[0].values()
    )
    # A ledger that changed is read again.
    late = running_attempt(tmp_path, {"pid": 999, "start_ticks": 1, "boot_id": "b"})
    assert ledger_seals.started_by(str(tmp_path), late.name) == (999, 1, "b")


@pytest.mark.parametrize("sealed_copy", [True, False], ids=["sealed", "in progress"])
def test_no_file_of_it_is_read_as_this_attempts(tmp_path: Path, sealed_copy: bool) -> None:
    """Every evidence read of such a directory is the breach (C2.5), sealed or not, so
    that no command acts on the copy's files either (``retry`` ran the copy's command and
    could move the working directory's outputs into it: tests/test_lifecycle.py)."""
    ours = {"pid": 4321, "start_ticks": 99, "boot_id": "b"}
    if sealed_copy:
        source = sealed_attempt(tmp_path / "r1", ELSEWHERE)
    else:
        source = running_attempt(tmp_path / "r1", ELSEWHERE)
        write_json_new(source / CONTROL, {"schema": "skgate.control/1", "attempt": "0001"})
    target = running_attempt(tmp_path / "r2", ours)
    copy_in(source, target)
    with pytest.raises(sealed.SealBreachError) as caught:
        files.read_json(target / CONTROL)
    assert caught.value.breach.now == COPIED_IN
    assert "another attempt's evidence stands in its place" in str(caught.value)
    # The attempt itself, and the source it was copied from, read as they are.
    sealed._CACHE.clear()
    assert files.read_json(source / CONTROL)["attempt"] == "0001"
