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

import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skgate.api import lifecycle
from skgate.evidence import ledger, ledger_seals, sealed
from skgate.model.records import State
from skgate.proc.observe import boot_id, read_stat

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


@pytest.fixture
def stand_in() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", STAND_IN], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()  # ours, by its pid
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


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
    assert stand_in.wait(timeout=10) == 7  # its SIGTERM handler ran: the signal was ours
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
