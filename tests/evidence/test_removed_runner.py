"""The runner of an attempt whose directory was removed while it ran (issue 28, C1, C4).

Reproducer (measured on 5312471): ``skgate start --root r -- CMD``, ``rm -rf
r/attempts/0001`` while CMD runs. ``skgate wait r`` answered ``unknown`` at once (exit 5)
though the command was still running, and ``skgate stop r`` said ``runner_gone`` (exit 5)
and signalled nothing: the one way left to end the compile was a kill by hand.

Now the runner names itself in the ledger's ``start`` entry (as in its ``control.json``),
so ``wait`` waits for that runner and ``stop`` signals it, each only once its boot and
start time match. A stand-in process plays the runner here: these tests need no run; a
real one is in test_removed_run.py (slow).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skgate.api import lifecycle
from skgate.evidence import files, ledger, ledger_seals, seal, sealed, unsealed
from skgate.evidence.seal_problem import Flaw
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.proc.observe import boot_id, read_stat
from skgate.read.liveness import current_verdict
from skgate.verdict.words import headline, state_words

#: The stand-in runner: ends with 7 on SIGTERM (its own handler, set before it says so),
#: and otherwise waits for a signal (teardown SIGKILLs it by its pid).
STAND_IN = (
    "import signal, sys\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    signal.pause()\n"
)


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sealed._CACHE.clear()  # each test builds its own roots at the same tmp paths


@contextlib.contextmanager
def started(*args: str) -> Iterator[subprocess.Popen[str]]:
    """A stand-in runner (``python -c ARGS...``) once it said it is ready; ended at exit
    by its pid whatever happened (ours alone)."""
    proc = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()  # ours, by its pid
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.fixture
def stand_in() -> Iterator[subprocess.Popen[str]]:
    with started(STAND_IN) as proc:
        yield proc


def removed_attempt(root: Path, runner: dict[str, object] | None) -> Path:
    """An attempt indexed with ``runner`` in its start entry, then its directory removed."""
    attempt = ledger.allocate(root)
    ledger.record_start(root, attempt, None, runner)
    shutil.rmtree(attempt)
    return attempt


def identity(proc: subprocess.Popen[str], **changed: object) -> dict[str, object]:
    st = read_stat(proc.pid)
    assert st is not None
    return {"pid": proc.pid, "start_ticks": st.start_ticks, "boot_id": boot_id(), **changed}


def test_the_start_entry_names_its_runner(tmp_path: Path) -> None:
    named = removed_attempt(tmp_path, {"pid": 4321, "start_ticks": 99, "boot_id": "b"})
    unnamed = removed_attempt(tmp_path, None)  # as ``skgate recover`` indexes one
    assert ledger_seals.started_by(str(tmp_path), named.name) == (4321, 99, "b")
    assert ledger_seals.started_by(str(tmp_path), unnamed.name) is None
    assert ledger_seals.started_by(str(tmp_path), "0009") is None  # never indexed


@pytest.mark.parametrize(
    "runner",
    [
        {"pid": True, "start_ticks": 1, "boot_id": "b"},
        {"pid": 0, "start_ticks": 1, "boot_id": "b"},
        {"pid": 12, "start_ticks": "1", "boot_id": "b"},
        {"pid": 12, "start_ticks": -1, "boot_id": "b"},
        {"pid": 12, "start_ticks": 1},
        "12",
    ],
)
def test_a_runner_the_writer_never_writes_names_none(tmp_path: Path, runner: object) -> None:
    attempt = ledger.allocate(tmp_path)
    ledger.append_entry(
        tmp_path,
        ledger.LedgerEvent.START.value,
        {"attempt": attempt.name, "path": f"attempts/{attempt.name}", "runner": runner},
    )
    assert ledger_seals.started_by(str(tmp_path), attempt.name) is None


def test_wait_waits_for_the_runner_the_ledger_names(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    attempt = removed_attempt(tmp_path, identity(stand_in))
    lines: list[str] = []
    early = lifecycle.wait(tmp_path, max_seconds=0.3, on_progress=lines.append)
    assert (early.outcome, early.exit_code) == ("in_progress", lifecycle.EXIT_IN_PROGRESS)
    assert early.waited_s >= 0.3
    assert lines and f"its runner (pid {stand_in.pid}, named by the root's ledger)" in lines[0]
    assert stand_in.poll() is None  # waiting signals nothing (C1)
    stand_in.send_signal(signal.SIGTERM)  # ours, by its pid: the runner ends
    done = lifecycle.wait(attempt)
    assert (done.outcome, done.verdict.state) == ("final", State.UNKNOWN)
    assert done.exit_code == 5
    assert stand_in.wait() == 7


def test_stop_signals_the_runner_the_ledger_names(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    removed_attempt(tmp_path, identity(stand_in))
    result = lifecycle.stop(tmp_path, "a removed attempt")
    assert (result.action, result.exit_code, result.state) == ("requested", 0, "unknown")
    assert f"its runner (pid {stand_in.pid}" in result.message
    # Its end is the acknowledgement: stop returned once it had ended (it recorded none).
    assert stand_in.poll() == 7  # its SIGTERM handler ran: the signal was ours
    assert result.message.endswith(
        "and it has ended; the root's ledger holds no record of how its command ended"
    )
    again = lifecycle.stop(tmp_path)  # ended: nothing is named any more
    assert (again.action, again.exit_code) == ("runner_gone", 5)


@pytest.mark.parametrize(
    "changed", [{"start_ticks": 5}, {"start_ticks": -1}, {"boot_id": "another-boot"}]
)
def test_a_process_that_is_not_that_runner_is_never_signalled(
    tmp_path: Path, stand_in: subprocess.Popen[str], changed: dict[str, object]
) -> None:
    """The ledger's pid alive now with another start time (the pid recycled, either way)
    or from another boot: nothing is signalled, nothing is waited for (C4)."""
    named = identity(stand_in)
    if "start_ticks" in changed:
        named["start_ticks"] = int(str(named["start_ticks"])) + int(str(changed["start_ticks"]))
    else:
        named.update(changed)
    removed_attempt(tmp_path, named)
    result = lifecycle.stop(tmp_path)
    assert (result.action, result.exit_code) == ("runner_gone", 5)
    assert "nothing was signalled" in result.message
    waited = lifecycle.wait(tmp_path, max_seconds=5)
    assert (waited.outcome, waited.exit_code) == ("final", 5)
    assert waited.waited_s < 1  # answered at once: no runner of it runs
    assert stand_in.poll() is None  # untouched


# ------------------------------------------------------------------ what a reader says
# Measured on 534a65e: ``skgate status`` of an attempt removed while its runner ran said
# "evidence removed: the attempt directory is gone" alone, the same words while the runner
# still ran its command as after it had ended: an agent reading "unknown" then took the
# run for over (and started it again beside the live one). The first line now says which.


def recorded_end(root: Path, attempt: Path, ended: object) -> None:
    """The ``end`` entry a runner writes once it has supervised a removed attempt's command
    to its end (``runner.watch.finish_removed``), with ``ended`` as given."""
    ledger.append_entry(
        root,
        ledger.LedgerEvent.END.value,
        {
            "attempt": attempt.name,
            "path": f"attempts/{attempt.name}",
            "state": "unknown",
            "cause": None,
            "seal_sha256": None,
            "removed": "the attempt directory ... was removed while its runner ran",
            "ended": ended,
        },
    )


def test_every_answer_says_its_runner_still_runs(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    attempt = removed_attempt(tmp_path, identity(stand_in))
    verdict = current_verdict(attempt)
    runs = f"; its runner (pid {stand_in.pid}) still runs, and its command may too"
    assert verdict.state is State.UNKNOWN and verdict.exit_code == 5
    assert verdict.breach is not None and verdict.breach.runner == stand_in.pid
    assert headline(verdict).endswith(runs)
    assert verdict.reasons[0].endswith(runs)
    changed = verdict.to_dict()["extra"]["evidence_changed"]
    assert (changed["runner_pid"], "ended" in changed) == (stand_in.pid, False)
    zh = state_words(verdict, Lang.ZH)
    assert zh.endswith(f"；它的运行器（pid {stand_in.pid}）仍在运行，它的命令也可能仍在运行")
    assert "runner" not in zh and "still" not in zh
    # Ended without recording how (a runner killed by SIGKILL, the OOM killer): never
    # "still runs", and never an end either: its command may run on, unsupervised
    # (measured on b21a9c8: the removal alone was said, while the killed runner's
    # ``sleep 30`` still ran).
    stand_in.send_signal(signal.SIGTERM)
    assert stand_in.wait(timeout=10) == 7
    after = current_verdict(attempt)
    assert after.breach is not None
    assert (after.breach.runner, after.breach.ended, after.breach.lost) == (
        None,
        None,
        stand_in.pid,
    )
    lost = (
        f"; its runner (pid {stand_in.pid}) died without recording how its command ended: "
        "the command may still run, unsupervised"
    )
    assert headline(after) == (
        "UNKNOWN: evidence removed: the attempt directory is gone (the root's ledger indexed "
        f"it){lost}"
    )
    assert after.to_dict()["extra"]["evidence_changed"]["runner_lost_pid"] == stand_in.pid
    assert state_words(after, Lang.ZH).endswith(
        f"；它的运行器（pid {stand_in.pid}）在记录命令如何结束之前已终止："
        "该命令可能仍在运行，无人监管"
    )


def test_a_runner_the_ledger_does_not_name_or_that_sealed_is_never_said_lost(
    tmp_path: Path,
) -> None:
    # No runner in its start entry (an older skgate, one recover indexed): nothing known.
    unnamed = removed_attempt(tmp_path, None)
    assert current_verdict(unnamed).breach.lost is None  # type: ignore[union-attr]
    # A runner that sealed had seen its tree end: the seal the ledger recorded is said.
    gone = ledger.allocate(tmp_path)
    ledger.record_start(tmp_path, gone, None, {"pid": 1, "start_ticks": 7, "boot_id": "b"})
    files.write_json_new(gone / files.CONTROL, {"schema": "skgate.control/1"})
    seal.seal_attempt(gone)
    shutil.rmtree(gone)
    verdict = current_verdict(gone)
    assert verdict.breach is not None and verdict.breach.sealed is not None
    assert verdict.breach.lost is None and "died" not in headline(verdict)


@pytest.mark.parametrize(
    "changed", [{"start_ticks": 5}, {"start_ticks": -1}, {"boot_id": "another-boot"}]
)
def test_a_process_that_is_not_its_runner_is_never_said_to_run_it(
    tmp_path: Path, stand_in: subprocess.Popen[str], changed: dict[str, object]
) -> None:
    named = identity(stand_in)
    if "start_ticks" in changed:
        named["start_ticks"] = int(str(named["start_ticks"])) + int(str(changed["start_ticks"]))
    else:
        named.update(changed)
    attempt = removed_attempt(tmp_path, named)
    verdict = current_verdict(attempt)
    assert verdict.breach is not None and verdict.breach.runner is None
    assert "still runs" not in headline(verdict)


@pytest.mark.parametrize(
    ("ended", "en", "zh"),
    [
        (
            {"timeout_fired": True, "exit_status": None, "exit_signal": 9},
            "the frozen timeout fired",
            "冻结的超时已触发",
        ),
        (
            {"timeout_fired": False, "exit_status": None, "exit_signal": 15},
            "its command ended by SIGTERM",
            "它的命令被 SIGTERM 结束",
        ),
        (
            {"timeout_fired": False, "exit_status": None, "exit_signal": 99},
            "its command ended by signal 99",
            "它的命令被信号 99 结束",
        ),
        (
            {"timeout_fired": False, "exit_status": 3, "exit_signal": None},
            "its command returned with exit status 3",
            "它的命令以退出码 3 返回",
        ),
    ],
)
def test_the_end_its_runner_recorded_is_quoted_never_adopted(
    tmp_path: Path, ended: dict[str, object], en: str, zh: str
) -> None:
    attempt = removed_attempt(tmp_path, {"pid": 4321, "start_ticks": 99, "boot_id": "b"})
    other = removed_attempt(tmp_path, None)
    recorded_end(tmp_path, attempt, ended)
    verdict = current_verdict(attempt)
    assert verdict.state is State.UNKNOWN  # C2.5: quoted, never a verdict
    assert headline(verdict).endswith(
        f"; its runner recorded in the root's ledger how it ended: {en}"
    )
    assert verdict.to_dict()["extra"]["evidence_changed"]["ended"] == en
    assert state_words(verdict, Lang.ZH).endswith(
        f"；它的运行器在根目录的账本中记录了结束方式：{zh}"
    )
    # Another attempt's end says nothing of this one.
    assert ledger_seals.ended_after_removal(str(tmp_path), other.name) is None


@pytest.mark.parametrize(
    "ended",
    [
        {"timeout_fired": 1, "exit_status": 0, "exit_signal": None},
        {"timeout_fired": False, "exit_status": True, "exit_signal": None},
        {"timeout_fired": False, "exit_status": 256, "exit_signal": None},
        {"timeout_fired": False, "exit_status": -1, "exit_signal": None},
        {"timeout_fired": False, "exit_status": None, "exit_signal": 0},
        {"timeout_fired": False, "exit_status": None, "exit_signal": "15"},
        {"timeout_fired": False, "exit_status": None, "exit_signal": None},
        {"exit_status": 0},
        "its command returned with exit status 0",
    ],
)
def test_an_end_the_writer_never_writes_is_not_quoted(tmp_path: Path, ended: object) -> None:
    attempt = removed_attempt(tmp_path, None)
    recorded_end(tmp_path, attempt, ended)
    assert ledger_seals.ended_after_removal(str(tmp_path), attempt.name) is None
    verdict = current_verdict(attempt)
    assert verdict.breach is not None and verdict.breach.ended is None
    assert "how it ended" not in headline(verdict)


def test_a_report_never_offers_recover_for_a_removed_attempt(tmp_path: Path) -> None:
    """Measured on 534a65e: the seal section of ``skgate report`` of a removed attempt said
    "unfinished: no control.json ...; run 'skgate recover ...'", and that recover failed
    ("no such attempt directory"). It names the removal, as ``verify`` does."""
    attempt = removed_attempt(tmp_path, None)
    found = [str(p) for p in seal.attempt_findings(attempt)]
    assert found == [
        f"{tmp_path / ledger.LEDGER}: attempt {attempt.name} is indexed but its directory is gone"
    ]
    assert unsealed.unfinished_problem(attempt) is None


#: A stand-in runner that, on SIGTERM, records its end in the root's ledger as a runner of
#: a removed attempt does (``runner.watch.finish_removed``) before it exits; or one that
#: ignores SIGTERM (a runner still in its grace). argv: mode, root, attempt name.
RECORDING_STAND_IN = """
import signal, sys
from pathlib import Path
from skgate.evidence import ledger
mode, root, name = sys.argv[1:4]
def end(*_):
    ledger.append_entry(Path(root), "end", {
        "attempt": name, "path": "attempts/" + name, "state": "unknown", "cause": None,
        "seal_sha256": None, "removed": "...",
        "ended": {"timeout_fired": False, "exit_status": None, "exit_signal": 15}})
    sys.exit(0)
signal.signal(signal.SIGTERM, end if mode == "records" else signal.SIG_IGN)
print("ready", flush=True)
while True:
    signal.pause()
"""


@pytest.mark.parametrize("mode", ["records", "ignores"])
def test_stop_returns_once_the_runner_has_ended_quoting_its_end(tmp_path: Path, mode: str) -> None:
    attempt = ledger.allocate(tmp_path)
    with started(RECORDING_STAND_IN, mode, str(tmp_path), attempt.name) as proc:
        ledger.record_start(tmp_path, attempt, None, identity(proc))
        shutil.rmtree(attempt)
        result = lifecycle.stop(tmp_path, "a removed attempt", ack_timeout=1.0)
        assert (result.action, result.exit_code, result.state) == ("requested", 0, "unknown")
        if mode == "records":
            assert proc.poll() == 0
            assert result.message.endswith(
                "it recorded in the root's ledger how it ended: its command ended by SIGTERM"
            )
            assert "how it ended: its command ended by SIGTERM" in headline(
                current_verdict(attempt)
            )
        else:  # still in its grace when the acknowledgement timeout ran out
            assert proc.poll() is None
            assert "still under way after 1 s" in result.message
            assert "`skgate wait` returns once it has ended" in result.message


# ------------------------------------------------------- another directory in its place
# Measured on cc83fb3: ``rm -rf r/attempts/0001 && mkdir r/attempts/0001`` under a live
# runner. ``status`` and ``stop`` failed ("control.json: missing", exit 2): the runner
# could be ended only by hand; and the runner's next manifest went into the new directory.


def test_a_directory_put_in_its_place_reads_as_removed_and_its_runner_is_reached(
    tmp_path: Path, stand_in: subprocess.Popen[str]
) -> None:
    attempt = removed_attempt(tmp_path, identity(stand_in))
    attempt.mkdir()  # empty, as ``mkdir`` leaves it
    verdict = current_verdict(attempt)
    assert verdict.breach is not None and verdict.breach.now == "replaced"
    assert headline(verdict) == (
        "UNKNOWN: evidence removed: the attempt directory is gone (the root's ledger indexed "
        "it); a directory without its evidence stands in its place; its runner (pid "
        f"{stand_in.pid}) still runs, and its command may too"
    )
    assert "；原处是一个不含其证据的目录；它的运行器" in state_words(verdict, Lang.ZH)
    found = [p.flaw for p in seal.find_problems(tmp_path)]
    assert found == [Flaw.INDEXED_GONE]  # never "unfinished: run skgate recover"
    result = lifecycle.stop(tmp_path, "replaced")
    assert (result.action, result.exit_code) == ("requested", 0)
    assert stand_in.poll() == 7
    assert list(attempt.iterdir()) == []  # stop wrote nothing into it


@pytest.mark.parametrize("first", [files.EVENTS, files.CONTROL, files.SEAL])
def test_a_directory_with_any_first_file_is_read_as_the_attempt(tmp_path: Path, first: str) -> None:
    """Its journal alone (in preflight), or what remains of a damaged one: read as the
    attempt it is, its changes named file by file, never as a removed attempt."""
    attempt = removed_attempt(tmp_path, None)
    attempt.mkdir()
    (attempt / first).write_text("")
    assert ledger_seals.holds_attempt(str(attempt))
    assert ledger_seals.removed(str(attempt)) is None
    assert sealed.removed_attempt(attempt) is None
