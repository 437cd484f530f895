"""Ownership-source benchmarks (issue 11), by hand: ``python bench/bench_ownership.py``.

Every part runs each source combination side by side in one invocation (forced with
``SKGATE_OWNERSHIP_SOURCES``), so the figures share the machine's load:

1. overhead: the runner's CPU while ``--opc`` concurrent simulated ``opc`` run for
   ``--seconds`` (target <= 1 % of wall with each source);
2. burst: ``--burst`` processes of 1 ms each (``/bin/sleep 0.001`` exec'ed as ``opc``,
   8 at a time, reaped by their own parent): runner CPU, the runner's peak RSS (its
   ``finished`` event), and the fraction of them in ``ownership.json`` (listed or counted
   when folded) (targets with events: 100 %, <= 64 MiB);
3. latency: the last owned process is an escape (``setsid``) that stamps
   ``time.monotonic()`` as its very last act; the runner's ``finished`` event (journalled
   right after ``verdict.json``) carries its own stamp (target with the cgroup source:
   median <= 20 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SKGATE = [sys.executable, "-m", "skgate"]
COMBOS = {
    "scan": "scan",
    "events": "events,scan",
    "cgroup": "cgroup,scan",
    "events+cgroup": "events,cgroup,scan",
}


def last_event(attempt: Path, name: str) -> dict[str, Any]:
    lines = (attempt / "events.jsonl").read_text().splitlines()
    found: list[dict[str, Any]] = [json.loads(x) for x in lines if f'"event":"{name}"' in x]
    return found[-1]


def run(
    work: Path,
    combo: str,
    argv: list[str],
    env: dict[str, str] | None = None,
    jobs: int | None = None,
) -> Path:
    # One root per part and source: attempts compared in a root share one jobs value (C5).
    root = work / f"{argv[-1].rsplit('/', 1)[-1][:12]}-{combo.replace('+', '_')}"
    before = len(list((root / "attempts").glob("*"))) if root.exists() else 0
    subprocess.run(
        [
            *SKGATE,
            "run",
            "--root",
            str(root),
            "--quiet",
            "--timeout",
            "3600",
            *(["--jobs", str(jobs)] if jobs else []),
            "--",
            *argv,
        ],
        cwd=work,
        env={
            **os.environ,
            "SKGATE_OWNERSHIP_SOURCES": COMBOS[combo],
            # Other work on this shared machine runs simulated compilers: not foreign
            # compilers for this benchmark (as in the tests).
            "SKGATE_COMPILER_NAMES": "skgate-bench-no-foreign-compiler",
            **(env or {}),
        },
        check=False,
        stdout=subprocess.DEVNULL,
    )
    return root / "attempts" / f"{before + 1:04d}"


def used(att: Path) -> list[str]:
    own = json.loads((att / "ownership.json").read_text())
    return list(own["coverage"]["sources"])


def overhead(work: Path, combo: str, opc: int, seconds: float) -> dict[str, Any]:
    att = run(
        work,
        combo,
        [sys.executable, "-m", "skgate.sim.launcher", "--inputs", str(opc)],
        {"SKGATE_SIM_OPC_SECONDS": str(seconds)},
        jobs=opc,  # the frozen concurrency (C5): all opc at once
    )
    launched, ended = last_event(att, "launched"), last_event(att, "tree_ended")
    wall = float(ended["mono"]) - float(launched["mono"])
    cpu = float(ended["runner_cpu_s"]) - float(launched["runner_cpu_s"])
    own = json.loads((att / "ownership.json").read_text())
    return {
        "wall": wall,
        "cpu": cpu,
        "pct": 100 * cpu / wall,
        "opc": sum(1 for p in own["owned"] if p["name"] == "opc"),
        "sources": used(att),
    }


FANOUT = """
import os, sys
n, jobs, running = int(sys.argv[1]), 8, 0
for _ in range(n):
    if running == jobs:
        os.wait()
        running -= 1
    if os.fork() == 0:
        os.execv("/bin/sleep", ["opc", "0.001"])
    running += 1
while running:
    os.wait()
    running -= 1
print("[summary] stage=a inputs=1 succeeded=1 failed=0")
"""


def burst(work: Path, combo: str, n: int) -> dict[str, Any]:
    script = work / "fan.py"
    script.write_text(FANOUT)
    t0 = time.monotonic()
    att = run(work, combo, [sys.executable, str(script), str(n)])
    wall = time.monotonic() - t0
    fin = last_event(att, "finished")
    own = json.loads((att / "ownership.json").read_text())
    leader = own["leader"]["pid"]
    listed = sum(1 for p in own["owned"] if p["ppid"] == leader)
    folded = int(own["coverage"].get("folded", {}).get("processes", 0))
    return {
        "wall": wall,
        "cpu": float(fin["runner_cpu_s"]),
        "rss_mib": int(fin.get("runner_maxrss_kb", 0)) / 1024,
        "recorded": listed + folded,
        "folded": folded,
        "pct": 100 * (listed + folded) / n,
        "overruns": own["coverage"]["events_overruns"],
        "sources": used(att),
    }


LAST_ACT = """
import os, sys, time
if os.fork() == 0:
    os.setsid()  # an escape: the last owned process is outside the group
    time.sleep(0.2)
    print("[summary] stage=compile inputs=1 succeeded=1 failed=0", flush=True)
    open(sys.argv[1], "w").write(f"{time.monotonic()!r} {time.time()!r}")
    os._exit(0)  # the stamp is the last act
os._exit(0)
"""


def latency(work: Path, combo: str, runs: int) -> tuple[list[float], list[float], list[float]]:
    """(to tree_ended, to verdict.json's mtime, to the finished event) per run, seconds."""
    script = work / "last.py"
    script.write_text(LAST_ACT)
    ended, verdict, finished = [], [], []
    for i in range(runs):
        stamp = work / f"stamp-{combo}-{i}"
        att = run(work, combo, [sys.executable, str(script), str(stamp)])
        mono, wall = (float(x) for x in stamp.read_text().split())
        ended.append(float(last_event(att, "tree_ended")["mono"]) - mono)
        verdict.append((att / "verdict.json").stat().st_mtime_ns / 1e9 - wall)
        finished.append(float(last_event(att, "finished")["mono"]) - mono)
    return ended, verdict, finished


def ms(xs: list[float]) -> str:
    """Median (min-max) in milliseconds."""
    med, lo, hi = (1000 * statistics.median(xs), 1000 * min(xs), 1000 * max(xs))
    return f"{med:.1f} ({lo:.1f}-{hi:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opc", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--burst", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", choices=["overhead", "burst", "latency"], action="append")
    ap.add_argument("--combos", default=",".join(COMBOS))
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    a = ap.parse_args()
    if a.quick:
        a.opc, a.seconds, a.burst, a.runs = 4, 1.0, 200, 1
    parts = set(a.only or ["overhead", "burst", "latency"])
    combos = a.combos.split(",")
    with tempfile.TemporaryDirectory(prefix="skgate-bench-own-") as tmp:
        report(a, parts, combos, Path(tmp))


def report(a: argparse.Namespace, parts: set[str], combos: list[str], work: Path) -> None:
    """The parts asked for, each combination of sources in turn, all in ``work``."""
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()}")
    if "overhead" in parts:
        print(f"overhead, {a.opc} opc x {a.seconds}s:")
        for c in combos:
            o = overhead(work, c, a.opc, a.seconds)
            print(
                f"  {c:14} sources={','.join(o['sources']):20} runner CPU {o['cpu']:.3f}s "
                f"over {o['wall']:.2f}s = {o['pct']:.3f}% ; opc in manifest {o['opc']}"
            )
    if "burst" in parts:
        print(f"burst, {a.burst} processes of 1 ms:")
        for c in combos:
            b = burst(work, c, a.burst)
            print(
                f"  {c:14} sources={','.join(b['sources']):20} recorded {b['recorded']}/"
                f"{a.burst} = {b['pct']:.1f}% (folded {b['folded']}), overruns "
                f"{b['overruns']}, runner CPU {b['cpu']:.2f}s over {b['wall']:.1f}s wall, "
                f"peak RSS {b['rss_mib']:.1f} MiB"
            )
    if "latency" in parts:
        print(f"latency, last owned exit (an escape) -> verdict.json, {a.runs} runs:")
        for c in combos:
            ended, verdict, fin = latency(work, c, a.runs)

            print(
                f"  {c:14} median (min-max) ms: tree_ended {ms(ended)}, verdict.json "
                f"written {ms(verdict)}, finished event {ms(fin)}"
            )


if __name__ == "__main__":
    main()
