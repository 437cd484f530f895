"""A stop signal at any instant of ``skgate run``'s start-up (issue 28 s5, C4).

Each case starts ``skgate run ... -- true`` and sends SIGINT or SIGTERM at one instant of
its start-up (an instant is a delay, not a wait for a state). Whatever the instant:

* no traceback and no "Exception ignored" on stderr;
* either the run ends at once with 128 + n (or, for SIGTERM before skgate's handlers are
  in, killed by it as the shell's 143) and nothing was launched;
* or an attempt is recorded, the run's exit status is its recorded verdict's, and the
  signal is on record (the attempt's journal, or "received after the attempt was
  recorded"): a signal is never swallowed (issue 28: 4 of 801 were, and the compile ran).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ENV, SKGATE, wait_for
from skgate.model.exits import STATE_CODES

#: (what to wait for, then a delay in seconds): dense at first, where imports and parsing
#: run (from the start for SIGTERM, from skgate's handlers being in for SIGINT), then from
#: the attempt's first record (preflight) and from its launch (the ordinary path).
INSTANTS = (
    *(("start", d) for d in (0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.07, 0.12, 0.2)),
    *(("created", d) for d in (0.0, 0.01, 0.03)),
    ("launched", 0.0),
)


def _caught(pid: int) -> int:
    """The process's caught-signal mask (``SigCgt`` of /proc/PID/status), 0 once gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


def _handlers_in(proc: subprocess.Popen[str]) -> bool:
    # SIGTERM is caught only once skgate's own handlers are installed (the interpreter
    # leaves it at its default); before that, SIGINT would meet CPython's default handler.
    return proc.poll() is not None or bool(_caught(proc.pid) & (1 << (signal.SIGTERM - 1)))


def _journal(attempt: Path) -> list[dict[str, object]]:
    path = attempt / "events.jsonl"
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _recorded(proc: subprocess.Popen[str], root: Path, event: str) -> bool:
    journal = root / "attempts" / "0001" / "events.jsonl"
    return proc.poll() is not None or (journal.is_file() and f'"{event}"' in journal.read_text())


def _one(work: Path, name: str, sig: int, after: str, delay: float) -> str:
    root = work / name
    proc = subprocess.Popen(
        [*SKGATE, "run", "--root", str(root), "--verdict-from", "exit-status", "--", "sleep", "1"],
        cwd=work,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if sig == signal.SIGINT or after != "start":
            wait_for(lambda: _handlers_in(proc), "skgate's start-up handlers", timeout=60)
        if after != "start":
            wait_for(lambda: _recorded(proc, root, after), f"the {after} record", timeout=60)
        time.sleep(delay)  # the instant of this case, not a wait for a state
        if proc.poll() is not None:
            proc.communicate()
            return "ended before the signal"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()  # our own child, by its pid
            proc.wait()
    assert "Traceback" not in err, err
    assert "Exception ignored" not in err, err
    rc = proc.returncode
    attempts = sorted((root / "attempts").iterdir()) if (root / "attempts").is_dir() else []
    journals = [_journal(a) for a in attempts]
    launched = any(e.get("event") == "launched" for j in journals for e in j)
    if rc in (128 + sig, -sig):
        assert not launched, (rc, err)
        return "ended at once"
    # Recorded: the exit status is the record's, and the signal is on it.
    assert len(attempts) == 1, (rc, err)
    verdict = json.loads((attempts[0] / "verdict.json").read_text())
    assert rc == STATE_CODES[verdict["state"]], (rc, verdict["state"], err)
    names = {str(e.get("name")) for e in journals[0]}
    said = f"{signal.Signals(sig).name} received after the attempt was recorded" in err
    assert said or signal.Signals(sig).name in names, (rc, err, journals[0])
    return "launched, signal recorded" if launched else "not started, signal recorded"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_at_any_instant_of_start_up(tmp_path: Path, sig: int) -> None:
    outcomes = [_one(tmp_path, f"r{i}", sig, *case) for i, case in enumerate(INSTANTS)]
    # The instants reach the start-up window and the phases after the first record.
    assert "ended at once" in outcomes, outcomes
    assert "launched, signal recorded" in outcomes, outcomes
