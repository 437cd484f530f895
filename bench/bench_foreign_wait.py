"""Benchmark: last foreign blocker's exit to launch (issue 13, section 5).

A process named like a compiler (the "foreign" blocker, started here and ended by
itself) is alive when ``skgate``'s runner starts an attempt, so the runner waits for it
(C4: never signalled). The blocker waits until the attempt's journal shows the
``foreign_wait`` event, writes ``time.time()`` and exits. The figure is the journal's
``launched`` time minus that exit time: everything from the blocker's exit to the command
running, through the rest of preflight (leases, environment) and the launch itself.

Reference, in the same run: the loop skgate used before, a 0.5 s ``sleep`` between
process-table scans, timed from the same kind of blocker exit to the loop's return.

Target: median <= 50 ms over >= 20 runs.

Run by hand:  .venv/bin/python bench/bench_foreign_wait.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from skgate.model.request import RunRequest
from skgate.proc.observe import compiler_processes
from skgate.runner.run import run_here

#: The blocker: named like a compiler (prctl comm), it exits once the runner is waiting.
BLOCKER = r"""
import ctypes, glob, os, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
open(sys.argv[3], "w").write("up")
while True:
    if sys.argv[2] == "-" or any(
        "foreign_wait" in open(p).read() for p in glob.glob(sys.argv[2])
    ):
        break
    time.sleep(0.002)
open(sys.argv[4], "w").write(repr(time.time()))
os._exit(0)
"""


def start_blocker(tmp: Path, name: str, journal_glob: str) -> tuple[subprocess.Popen[bytes], Path]:
    up = tmp / f"{name}.up"
    out = tmp / f"{name}.exit"
    proc = subprocess.Popen(
        [name, "-c", BLOCKER, name, journal_glob, str(up), str(out)], executable=sys.executable
    )
    while not up.exists():
        time.sleep(0.001)
    return proc, out


def one_skgate(tmp: Path) -> tuple[float, float]:
    """(blocker exit -> launched, blocker exit -> foreign_wait_end journalled)."""
    name = "opc" + uuid.uuid4().hex[:6]
    root = tmp / ("runs-" + name)
    proc, out = start_blocker(tmp, name, str(root / "attempts" / "*" / "events.jsonl"))
    try:
        request = RunRequest(
            argv=(sys.executable, "-c", "pass"),
            cwd=str(tmp),
            root=str(root),
            jobs="1",
            compiler_names=(name,),
            lease_timeout=60.0,
            quiet=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
            unset_env=tuple(k for k in os.environ if k.startswith("PYTHON")),
        )
        verdict = run_here(request)
        assert verdict.attempt, verdict
    finally:
        proc.wait()
    events = [
        json.loads(x) for x in (Path(verdict.attempt) / "events.jsonl").read_text().splitlines()
    ]
    assert any(e["event"] == "foreign_wait" for e in events), "the runner did not wait"
    launched = next(e["t"] for e in events if e["event"] == "launched")
    ended = next(e["t"] for e in events if e["event"] == "foreign_wait_end")
    exited = float(out.read_text())
    return float(launched) - exited, float(ended) - exited


def one_reference(tmp: Path) -> float:
    """The previous loop: scan, sleep 0.5 s, scan again, until no blocker is left."""
    name = "opc" + uuid.uuid4().hex[:6]
    go = tmp / f"{name}.go"
    proc, out = start_blocker(tmp, name, str(go))
    # Exit at a random moment of the polling period, as a real blocker would.
    delay = random.uniform(0.05, 0.55)  # timing jitter only
    threading.Timer(delay, lambda: go.write_text("foreign_wait")).start()
    while compiler_processes((name,), exclude=(os.getpid(),)):
        time.sleep(0.5)
        proc.poll()  # reap it as its parent would
    done = time.time()
    proc.wait()
    return done - float(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.runs = 2
    sk: list[float] = []
    woke: list[float] = []
    ref: list[float] = []
    with tempfile.TemporaryDirectory(prefix="skgate-bench-wait-") as t:
        tmp = Path(t)
        for _ in range(args.runs):  # interleaved: both see the same machine load
            launch, end = one_skgate(tmp)
            sk.append(launch)
            woke.append(end)
            ref.append(one_reference(tmp))
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.node()}  {platform.platform()}")
    print(f"# cpus={os.cpu_count()} python={platform.python_version()} runs={args.runs}")
    print(f"# load average {os.getloadavg()[0]:.2f}")
    print(f"{'what':44} {'median ms':>9} {'min ms':>7} {'max ms':>7}")
    rows = (
        ("skgate: blocker exit -> launched", sk),
        ("skgate: blocker exit -> foreign_wait_end", woke),
        ("0.5 s poll loop (before): exit -> noticed", ref),
    )
    for label, xs in rows:
        print(
            f"{label:44} {statistics.median(xs) * 1e3:9.1f} {min(xs) * 1e3:7.1f} "
            f"{max(xs) * 1e3:7.1f}"
        )
    med = statistics.median(sk)
    print(f"ratio poll / skgate: {statistics.median(ref) / med:.1f}x")
    print(f"target median <= 50 ms: {'PASS' if med <= 0.05 else 'FAIL'} ({med * 1e3:.1f} ms)")
    return 0 if med <= 0.05 or args.quick else 1


if __name__ == "__main__":
    raise SystemExit(main())
