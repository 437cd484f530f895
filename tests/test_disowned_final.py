"""A ``verdict.json`` another process wrote into an attempt while its run ran (C2.1, C2.4, C2.5).

Reproducer (measured on 1f34d91): ``skgate start --root r -- sleep 15``; while it ran, an
agent wrote ``r/attempts/0001/verdict.json`` saying ``succeeded``.

* ``skgate status r`` answered "SUCCEEDED: the compiler returned naturally and every
  input succeeded" (exit 0) while ``sleep`` still ran;
* ``skgate stop r`` said "already_final: the attempt is final; nothing was changed", and
  the command ran on;
* the runner, coming to write its final files, stopped at "verdict.json: already exists;
  evidence is never overwritten" (exit 2) and left the attempt unsealed, so ``status``
  went on answering the forged SUCCEEDED; ``verify`` called it "interrupted while
  sealing" and ``skgate recover`` sealed the forged verdict: "recovered (succeeded)".

Now an unsealed attempt whose runner lives is never final, whatever files stand in it
(``status`` says in progress, ``stop`` stops it); the runner that finds its final names
taken writes none of its own, seals nothing, records its verdict in its journal's
``finished`` record with the names it found (``disowned``) and in the ledger's end entry
(no seal hash), and ends with exit 5 and one line; every reader answers ``unknown``,
``verify`` calls it a change and ``recover`` refuses it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import FORGED, run_skgate, start_skgate, unknown_everywhere, wait_for
from skgate.model.running import DISOWNED

#: The workload writes the forged verdict into its own attempt (an agent's script beside
#: the compile), says so, then waits for ``go`` (or ends at once with ``now``) and fails.
WORKLOAD = (
    "import json, sys, time\n"
    "from pathlib import Path\n"
    f"Path('r/attempts/0001/verdict.json').write_text(json.dumps({FORGED!r}))\n"
    "Path('forged').write_text('yes')\n"
    "end = time.monotonic() + 60\n"
    "while sys.argv[1] != 'now' and not Path('go').exists() and time.monotonic() < end:\n"
    "    time.sleep(0.02)\n"
    "sys.exit(1)\n"
)
LINE = (
    "evidence written by another process while the run ran: verdict.json (its runner found "
    "them at its final names, overwrote nothing and left the attempt unsealed; its own "
    "verdict is in its journal's finished record)"
)
LINE_ZH = (
    "证据在运行期间被其他进程写入：verdict.json（其运行器在写最终文件时发现它们已存在，"
    "未覆盖任何文件，也未封存该尝试；它自己的结论记录在日志的 finished 记录中）"
)
RUN = ("run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--")


def _journal(attempt: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (attempt / "events.jsonl").read_text().splitlines()]


def test_the_runner_overwrites_nothing_seals_nothing_and_every_reader_says_unknown(
    tmp_path: Path,
) -> None:
    (tmp_path / "wl.py").write_text(WORKLOAD)
    run = run_skgate(*RUN, sys.executable, "wl.py", "now", cwd=tmp_path)
    attempt = tmp_path / "r" / "attempts" / "0001"
    assert run.returncode == 5, run
    assert LINE in run.stderr and "Traceback" not in run.stderr, run.stderr
    # Nothing overwritten, nothing of the runner's final files written, nothing sealed.
    assert json.loads((attempt / "verdict.json").read_text()) == FORGED
    for name in ("seal.json", "summary.txt", "census.json", "logscan.json"):
        assert not (attempt / name).exists(), name
    finished = [e for e in _journal(attempt) if e["event"] == "finished"]
    assert len(finished) == 1 and finished[0]["disowned"] == ["verdict.json"]
    assert finished[0]["state"] == "failed"  # the runner's own: the workload exited 1
    end = json.loads((tmp_path / "r" / "ledger.jsonl").read_text().splitlines()[-1])
    assert (end["event"], end["state"], end["seal_sha256"], end["disowned"]) == (
        "end",
        "failed",
        None,
        ["verdict.json"],
    )
    unknown_everywhere(
        tmp_path,
        LINE,
        LINE_ZH,
        {"file": "verdict.json", "sealed_sha256": None, "now": DISOWNED},
        ("status", "r"),
        ("status", "r", "--all"),
        ("wait", "r"),
    )
    checked = run_skgate("verify", "r", cwd=tmp_path)
    assert checked.returncode == 1 and "CHANGED: 0001: verdict.json written by another" in (
        checked.stdout
    )
    refused = run_skgate("recover", "r", cwd=tmp_path)
    assert refused.returncode == 2 and "not recovered" in refused.stderr, refused
    assert not (attempt / "seal.json").exists()


def test_while_its_runner_lives_the_attempt_is_in_progress_and_stop_stops_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "wl.py").write_text(WORKLOAD)
    proc = start_skgate(*RUN, sys.executable, "wl.py", "wait", cwd=tmp_path)
    try:
        wait_for((tmp_path / "forged").exists, "the forged verdict", timeout=60)
        status = run_skgate("status", "r", cwd=tmp_path)
        assert status.returncode == 6, status  # in progress, never the forged success
        assert status.stdout.startswith("IN PROGRESS"), status.stdout
        stop = run_skgate("stop", "r", "--reason", "forged verdict seen", cwd=tmp_path)
        assert stop.returncode == 0 and "requested" in stop.stdout, stop
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()  # ours, by its pid
            proc.communicate()
    assert proc.returncode == 5 and LINE in err, (proc.returncode, err)
    attempt = tmp_path / "r" / "attempts" / "0001"
    finished = [e for e in _journal(attempt) if e["event"] == "finished"]
    # The stop reached the runner: its own verdict, on record in the journal alone.
    assert (finished[0]["state"], finished[0]["cause"]) == ("interrupted", "external")
    final = run_skgate("status", "r", cwd=tmp_path)
    assert final.returncode == 5 and LINE in final.stdout, final
