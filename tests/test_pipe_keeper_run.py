"""A runner that dies does not take the compile with it (C4; skgate.proc.keeper).

The compile's stdout is a pipe that the runner drains. Before the pipe keeper, a runner
killed by SIGKILL left that pipe without a reader, and the compile's next print ended it:
``BrokenPipeError`` for Python (torchair's own prints), SIGPIPE for a C program. Every
step here waits on observable state (a file the workload writes, the keeper's lock).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from conftest import Reaper, events, run_skgate, start_skgate, wait_file, wait_for
from skgate.evidence import files
from skgate.evidence.stops import SCHEMA_STOP_REQUEST, stop_request_path
from skgate.proc.keeper import KEPT_LOG, keeper_draining

#: Waits for ``go``, prints one line (Python: a dead reader is BrokenPipeError), then a C
#: program's way of writing (``os.write`` with SIGPIPE at its default), and records how
#: both went, as its very last act.
WORKLOAD = """\
import os, signal, sys, time
from pathlib import Path
here = Path(sys.argv[1])
while not (here / "go").exists():
    time.sleep(0.01)
try:
    print("printed after the runner died", flush=True)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.write(1, b"written with SIGPIPE at its default\\n")
    how = "ok"
except BaseException as exc:
    how = repr(exc)
(here / "natural.tmp").write_text(how + "\\n")
os.rename(here / "natural.tmp", here / "natural")
"""


def _start(
    tmp_path: Path, reaper: Reaper, workload: str = WORKLOAD
) -> tuple[subprocess.Popen[str], Path]:
    (tmp_path / "w.py").write_text(workload)
    runner = reaper.popen(
        start_skgate(
            "run", "--root", "r", "--quiet", "--", sys.executable, str(tmp_path / "w.py"),
            str(tmp_path), cwd=tmp_path,
        )
    )  # fmt: skip
    return runner, tmp_path / "r" / "attempts" / "0001"


def launched(attempt: Path) -> bool:
    journal = attempt / files.EVENTS
    return journal.exists() and any(e["event"] == "launched" for e in events(attempt))


def test_the_compile_outlives_a_sigkilled_runner_and_its_output_is_kept(
    tmp_path: Path, reaper: Reaper
) -> None:
    runner, attempt = _start(tmp_path, reaper)
    wait_for(lambda: launched(attempt), "the launch")
    wait_for(lambda: keeper_draining(attempt), "the keeper to hold its lock")
    runner.send_signal(signal.SIGKILL)  # our own child, by its Popen handle
    runner.wait(timeout=30)
    (tmp_path / "go").write_text("")
    # The compile ran to its natural return: neither write met a closed pipe.
    assert wait_file(tmp_path / "natural", timeout=60) == "ok\n"
    wait_for(lambda: not keeper_draining(attempt), "the keeper to finish draining")
    kept = (attempt / KEPT_LOG).read_text()
    assert kept == "printed after the runner died\nwritten with SIGPIPE at its default\n"
    rec = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert rec.returncode == 0, rec
    sealed = (attempt / files.SEAL).read_text()
    assert KEPT_LOG in sealed  # the kept output is evidence, sealed with the rest
    ok = run_skgate("verify", str(tmp_path / "r"), cwd=tmp_path)
    assert ok.returncode == 0, ok


def test_while_the_keeper_drains_nothing_is_recovered(tmp_path: Path, reaper: Reaper) -> None:
    runner, attempt = _start(tmp_path, reaper)
    # The keeper holds its lock from before the fork: the launch is what makes it drain.
    wait_for(lambda: launched(attempt), "the launch")
    wait_for(lambda: keeper_draining(attempt), "the keeper to hold its lock")
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=30)
    refused = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert refused.returncode == 6, refused
    assert "pipe keeper" in refused.stderr
    (tmp_path / "go").write_text("")
    assert wait_file(tmp_path / "natural", timeout=60) == "ok\n"
    wait_for(lambda: not keeper_draining(attempt), "the keeper to finish draining")
    assert run_skgate("recover", str(attempt), cwd=tmp_path).returncode == 0


def test_a_normal_run_leaves_no_kept_log(tmp_path: Path) -> None:
    (tmp_path / "go").write_text("")
    (tmp_path / "w.py").write_text(WORKLOAD)
    res = run_skgate(
        "run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--",
        sys.executable, str(tmp_path / "w.py"), str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res
    attempt = tmp_path / "r" / "attempts" / "0001"
    assert not (attempt / KEPT_LOG).exists()
    assert (attempt / files.RUN_LOG).read_text().startswith("printed after the runner died")


#: Prints its own summary only after ``go``, that is after the runner died.
SUMMARY_LATE = """\
import sys, time
from pathlib import Path
here = Path(sys.argv[1])
print("before the runner died", flush=True)
while not (here / "go").exists():
    time.sleep(0.01)
print("[summary] stage=compile inputs=2 succeeded=2 failed=0", flush=True)
(here / "natural").write_text("ok\\n")
"""


def test_recover_reads_the_summary_the_compile_printed_after_the_runner_died(
    tmp_path: Path, reaper: Reaper
) -> None:
    # Before, recover scanned run.log only: the summary, in run.kept.log, was missed and
    # the recovered verdict said "no summary" of a compile that printed one.
    runner, attempt = _start(tmp_path, reaper, SUMMARY_LATE)
    wait_for(lambda: launched(attempt), "the launch")
    wait_for(
        lambda: (attempt / files.RUN_LOG).read_text() == "before the runner died\n",
        "the first line in run.log",
    )
    runner.send_signal(signal.SIGKILL)  # our own child, by its Popen handle
    runner.wait(timeout=30)
    (tmp_path / "go").write_text("")
    assert wait_file(tmp_path / "natural", timeout=60) == "ok\n"
    wait_for(lambda: not keeper_draining(attempt), "the keeper to finish draining")
    summary = "[summary] stage=compile inputs=2 succeeded=2 failed=0"
    assert summary not in (attempt / files.RUN_LOG).read_text()
    assert summary in (attempt / KEPT_LOG).read_text()
    # A stop request that came too late for the dead runner: recover ends the attempt,
    # so the request goes too, as at the runner's own end.
    request = stop_request_path(attempt)
    request.parent.mkdir(exist_ok=True)
    request.write_text(json.dumps({"schema": SCHEMA_STOP_REQUEST, "reason": "test"}))
    rec = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert rec.returncode == 0, rec
    assert not request.exists() and "removed the attempt's stop request" in rec.stdout
    assert (attempt / files.SUMMARY).read_text() == summary + "\n"
    scan = json.loads((attempt / files.LOGSCAN).read_text())
    assert scan["summary"]["lines"] == [summary]
    assert f"scanned run.log and then {KEPT_LOG}" in rec.stdout + rec.stderr
