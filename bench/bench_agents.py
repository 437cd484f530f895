"""start / wait benchmarks (issue 13), run by hand: ``python bench/bench_agents.py``.

1. ``skgate start`` returning to its caller: wall time of the whole command (interpreter
   start-up, imports, the attempt recorded, preflight, the command launched by the
   detached runner) against ``setsid -f true`` (util-linux: detaching a command and
   nothing else), interleaved. Target: median <= 150 ms.
2. natural return to ``skgate wait`` returning: the workload writes ``time.monotonic()``
   as its very last act and ``os._exit``s; a ``skgate wait`` process, started before
   the release, is timed to its exit in this process (all on the system-wide
   CLOCK_MONOTONIC). It covers the runner's finishing (census, verdict, seal, ledger,
   exit) and the waiter's wake-up (inotify, pidfd) and exit. Reference in the same run:
   the same workload under a foreground ``skgate run``, timed from natural return to
   ``run`` returning (the latency an agent had before, when it could not detach).
   Target: median <= 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKGATE = [sys.executable, "-m", "skgate"]
ENV = {**os.environ, "SKGATE_COMPILER_NAMES": "skgate-bench-no-foreign-compiler"}

WORKLOAD = """\
import os, sys, time
from pathlib import Path
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.002)
print("[summary] stage=compile inputs=1 succeeded=1 failed=0", flush=True)
Path(sys.argv[2]).write_text(repr(time.monotonic()))
os._exit(0)
"""


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    return (
        f"median {statistics.median(xs) * 1000:.1f} ms (min {xs[0] * 1000:.1f}, "
        f"max {xs[-1] * 1000:.1f}, n={len(xs)})"
    )


def one(work: Path, i: int) -> tuple[float, float]:
    """(start wall, natural return -> wait returned)."""
    go, stamp = work / f"go{i}", work / f"stamp{i}"
    cmd = [*SKGATE, "start", "--root", "r", "--json", "--", sys.executable, "w.py", str(go)]
    t0 = time.monotonic()
    out = subprocess.run(
        [*cmd, str(stamp)], cwd=work, env=ENV, capture_output=True, text=True, check=True
    )
    start_wall = time.monotonic() - t0
    started = json.loads(out.stdout)
    waiter = subprocess.Popen(
        [*SKGATE, "wait", started["attempt"], "--quiet"],
        cwd=work,
        env=ENV,
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.5)  # let the waiter reach its inotify wait: the bench measures the wake
    go.write_text("")
    waiter.wait()
    ended = time.monotonic()
    if waiter.returncode != 0:
        raise SystemExit(f"wait exited {waiter.returncode}")
    return start_wall, ended - float(stamp.read_text())


def foreground(work: Path, i: int) -> float:
    """Natural return -> a foreground ``skgate run`` returning (the reference)."""
    go, stamp = work / f"fgo{i}", work / f"fstamp{i}"
    cmd = [*SKGATE, "run", "--root", "r", "--quiet", "--", sys.executable, "w.py"]
    run = subprocess.Popen(
        [*cmd, str(go), str(stamp)],
        cwd=work,
        env=ENV,
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    go.write_text("")
    run.wait()
    return time.monotonic() - float(stamp.read_text())


def reference_detach(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(["setsid", "-f", "true"], check=True)
        out.append(time.monotonic() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    if not shutil.which("setsid"):
        raise SystemExit("needs setsid (util-linux)")
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-agents-"))
    (work / "w.py").write_text(WORKLOAD)
    starts: list[float] = []
    waits: list[float] = []
    fgs: list[float] = []
    refs: list[float] = []
    print(f"load average at start: {os.getloadavg()}")
    try:
        one(work, -1)  # warm the page cache and bytecode
        for i in range(args.runs):
            s, w = one(work, i)
            starts.append(s)
            waits.append(w)
            fgs.append(foreground(work, i))
            refs.extend(reference_detach(1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()}")
    print(f"skgate start returning:          {ms(starts)}")
    print(f"setsid -f true (reference):      {ms(refs)}")
    print(f"natural return -> skgate wait:   {ms(waits)}")
    print(f"natural return -> foreground skgate run returning (reference): {ms(fgs)}")


if __name__ == "__main__":
    main()
