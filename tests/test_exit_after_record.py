"""One exit code per record (issue 28, C2.4): a stop signal after ``finished`` never
changes ``skgate run``'s exit status away from the recorded verdict's.

Reproducer of the issue: a second SIGTERM after the ``finished`` event (while the seal
is written) made ``run`` exit 5 ("received twice while finishing ... unfinished") while
``verdict.json`` and ``status`` said succeeded (exit 0), 20 of 20; ``verify`` called the
attempt unfinished until ``recover``. The signals are sent by the runner to itself at
the start of the seal, so they land after ``finished`` every time (an outside sender
lands there only when the seal is slow enough).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ENV, events, run_skgate

#: ``skgate run`` that receives two SIGTERMs (each handled before the next is sent)
#: right after its ``finished`` event, as the seal begins.
TWICE_AFTER_FINISHED = """\
import os, signal, sys
from skgate.evidence import seal
from skgate.cli.main import entry

orig = seal.seal_attempt


def signalled(*args, **kwargs):
    for _ in range(2):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):
            pass  # the handler runs between two bytecodes: the second is a new signal
    return orig(*args, **kwargs)


seal.seal_attempt = signalled
sys.argv = ["skgate", "run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--",
            sys.executable, "-c", "pass"]
entry()
"""


def test_two_stop_signals_after_finished_keep_the_verdicts_exit_status(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", TWICE_AFTER_FINISHED],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    attempt = tmp_path / "r" / "attempts" / "0001"
    assert json.loads((attempt / "verdict.json").read_text())["state"] == "succeeded"
    assert done.returncode == 0, done.stderr  # the verdict's, never 5
    said = [ln for ln in done.stderr.splitlines() if ln.startswith("skgate:")]
    assert said == [
        "skgate: SIGTERM, SIGTERM received after the attempt was recorded; "
        "its verdict and exit status stand"
    ], done.stderr
    # Recorded where the record still could take them: the ledger's end entry.
    end = json.loads((tmp_path / "r" / "ledger.jsonl").read_text().splitlines()[-1])
    assert end["event"] == "end" and end["signals_while_sealing"] == ["SIGTERM", "SIGTERM"]
    assert "finishing_cut_short" not in [e["event"] for e in events(attempt)]
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    assert status.returncode == done.returncode == 0, status
    assert run_skgate("verify", "r", cwd=tmp_path).returncode == 0
