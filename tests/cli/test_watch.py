"""The live view (``status --watch``): read-only, follows the attempt to its end."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from conftest import (
    Reaper,
    events,
    pid_alive,
    run_skgate,
    script,
    start_skgate,
    wait_file,
    wait_for,
)
from skgate.cli.watch import render, snapshot, watch
from skgate.model.records import State

WORKLOAD = """\
import os, sys, time
from pathlib import Path
M = Path(sys.argv[1])
(M / "leader.tmp").write_text(f"{os.getpid()}\\n"); (M / "leader.tmp").rename(M / "leader.pid")
while not (M / "go").exists():
    time.sleep(0.01)
print("[summary] stage=compile inputs=1 succeeded=1 failed=0")
"""


def test_watch_shows_live_processes_then_follows_to_the_verdict(
    tmp_path: Path, reaper: Reaper
) -> None:
    cmd = script(tmp_path, "w.py", WORKLOAD)
    proc = reaper.popen(
        start_skgate("run", "--root", "r", "--quiet", "--", *cmd, str(tmp_path), cwd=tmp_path)
    )
    leader = reaper.add(int(wait_file(tmp_path / "leader.pid")))
    att = tmp_path / "r" / "attempts" / "0001"
    wait_for(lambda: any(e["event"] == "launched" for e in events(att)), what="launch")
    wait_for((att / "ownership.json").exists, what="manifest")

    view = snapshot(att)
    assert view.verdict.state is State.IN_PROGRESS
    assert leader in [p.pid for p in view.live]
    out = io.StringIO()
    Console(file=out, width=120).print(render(view))
    assert "IN PROGRESS" in out.getvalue()
    assert "kill nothing" in out.getvalue()

    polls: list[float] = []

    def release_after_first_poll(_interval: float) -> None:
        # The view polled once while live; now let the workload finish and wait for it.
        polls.append(_interval)
        (tmp_path / "go").write_text("")
        proc.wait(timeout=30)

    final = watch(
        att,
        interval=0.5,
        console=Console(file=io.StringIO(), width=120),
        sleep=release_after_first_poll,
    )
    assert polls == [0.5]
    assert final.state is State.SUCCEEDED
    assert not pid_alive(leader)


def test_status_watch_on_finished_attempt_exits_with_its_code(tmp_path: Path) -> None:
    cmd = script(tmp_path, "ok.py", 'print("[summary] stage=c inputs=1 succeeded=1 failed=0")\n')
    assert run_skgate("run", "--root", "r", "--quiet", "--", *cmd, cwd=tmp_path).returncode == 0
    res = run_skgate("status", "r", "--watch", cwd=tmp_path)
    assert res.returncode == 0
    assert "SUCCEEDED" in res.stdout
    # Piped, the view is a text file: its last line ends with a newline (issue 30).
    assert res.stdout.endswith("\n") and not res.stdout.endswith("\n\n"), repr(res.stdout[-40:])


def test_sampler_shows_cpu_only_from_the_second_reading(tmp_path: Path, reaper: Reaper) -> None:
    import subprocess
    import sys

    from skgate.cli.watch import Sampler
    from skgate.proc.observe import read_stat

    marker = tmp_path / "spun"
    code = (
        "import sys, time\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.2: pass\n"  # burn CPU, then say so
        "open(sys.argv[1], 'w').write('x\\n')\n"
        "import signal; signal.pause()\n"
    )
    proc = reaper.popen(subprocess.Popen([sys.executable, "-c", code, str(marker)]))
    st = read_stat(proc.pid)
    assert st is not None
    sampler = Sampler()
    first_cpu, first_rss = sampler.stats(proc.pid, st.start_ticks)
    assert first_cpu is None  # a rate needs two readings: never a false 0 %
    assert first_rss is not None and first_rss > 0
    wait_file(marker)
    second_cpu, _ = sampler.stats(proc.pid, st.start_ticks)
    assert second_cpu is not None and second_cpu > 0


def test_watch_ends_on_the_final_census_not_the_last_observation(
    tmp_path: Path, reaper: Reaper
) -> None:
    """Issue 12: after the tree ended, the view shows census.json's counts, not the last
    provisional observation (which saw an error-named file that later became a success)."""
    out_dir = tmp_path / "static_kernel_compile_outputs" / "ts1_pid1_outputs" / "x_compile_log"
    body = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "M = Path(sys.argv[1])\n"
        f"out = Path({str(out_dir)!r}); out.mkdir(parents=True)\n"
        "(out / 'a_compile_error.log').write_text('provisional')\n"
        "(M / 'made.tmp').write_text('x\\n'); (M / 'made.tmp').rename(M / 'made')\n"
        "while not (M / 'go').exists():\n"
        "    time.sleep(0.01)\n"
        "(out / 'a_compile_error.log').rename(out / 'a_compile_succ.log')\n"
        "(out.parent / 'static_kernel_1_1.run').write_text('pkg')\n"
        "print('[summary] stage=compile inputs=1 succeeded=1 failed=0')\n"
    )
    cmd = script(tmp_path, "w2.py", body)
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--scan-interval",
            "0.02",
            "--",
            *cmd,
            str(tmp_path),
            cwd=tmp_path,
        )
    )
    wait_file(tmp_path / "made")
    att = tmp_path / "r" / "attempts" / "0001"
    after = len(events(att))
    wait_for(
        lambda: [e for e in events(att)[after:] if e["event"] == "observation"],
        what="an observation of the error-named file",
    )
    live = snapshot(att)
    assert live.counts is not None and live.counts["error_logs"] == 1 and not live.counts_final
    (tmp_path / "go").write_text("")
    proc.wait(timeout=30)
    final = snapshot(att)
    assert final.verdict.state is State.SUCCEEDED
    assert final.counts_final
    assert final.counts == {"error_logs": 0, "succ_logs": 1, "run_packages": 1}
    text = io.StringIO()
    Console(file=text, width=160).print(render(final))
    assert "final artifact census" in text.getvalue()
    assert "provisional" not in text.getvalue()
