"""``skgate stop`` reaches a foreground ``skgate run`` too (C2.4).

Reproducer (measured on 1f34d91): ``skgate run --root r -- sleep 30`` in one terminal,
``skgate stop r --reason R`` in another. The run ended ``interrupted`` ("the runner
received SIGTERM from outside"), the reason nowhere, and ``stop`` said "already_final:
the attempt finished before the request arrived; nothing was changed": it had changed
everything. Only a detached runner (``skgate start``, api.run's child) read the request.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_skgate, start_skgate, wait_for

RUN = ("run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--", "sleep", "30")


def test_stop_reaches_a_foreground_run_and_its_reason_is_recorded(tmp_path: Path) -> None:
    proc = start_skgate(*RUN, cwd=tmp_path)
    journal = tmp_path / "r" / "attempts" / "0001" / "events.jsonl"
    try:
        wait_for(
            lambda: journal.is_file() and '"launched"' in journal.read_text(),
            "the launch",
            timeout=60,
        )
        stop = run_skgate("stop", "r", "--reason", "from another terminal", cwd=tmp_path)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()  # ours, by its pid
            proc.communicate()
    assert stop.returncode == 0 and "requested" in stop.stdout, stop
    assert proc.returncode == 4, out  # interrupted
    assert "C2.4: stopped through skgate stop: from another terminal" in out, out
    received = [json.loads(x) for x in journal.read_text().splitlines()]
    asked = [e for e in received if e["event"] == "signal_received"]
    assert asked and asked[0]["stop_request"]["reason"] == "from another terminal", asked
