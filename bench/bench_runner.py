"""Runner benchmarks (issue 2), run by hand: ``python bench/bench_runner.py [--quick]``.

1. overhead: the runner's own CPU time while it supervises a simulated compile with
   ``--opc`` concurrent ``opc`` processes for ``--seconds`` (target: <= 1 % of wall time);
2. latency: from the last owned process's exit to ``verdict.json`` written (target:
   median <= 50 ms). The workload writes ``time.monotonic()`` as its very last act; the
   runner's ``finished`` event (journalled right after verdict.json) carries its own
   monotonic stamp: both clocks are the same system-wide CLOCK_MONOTONIC;
3. start-up: ``skgate run -- true`` against ``timeout 60 true``, interleaved, median of
   ``--runs`` (target, issue 29: <= 100 ms slower). The hook probes' answer is cached
   per user (``preflight/hooks/cache.py``): the line says how many runs used it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKGATE = [sys.executable, "-m", "skgate"]


def last_event(attempt: Path, name: str) -> dict[str, object]:
    lines = (attempt / "events.jsonl").read_text().splitlines()
    found: list[dict[str, object]] = [json.loads(x) for x in lines if f'"event":"{name}"' in x]
    return found[-1]


def overhead(opc: int, seconds: float) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    cmd = [
        *SKGATE,
        "run",
        "--root",
        "r",
        "--quiet",
        "--jobs",
        str(opc),
        "--",
        sys.executable,
        "-m",
        "skgate.sim.launcher",
        "--inputs",
        str(opc),
    ]
    env = {**os.environ, "SKGATE_SIM_OPC_SECONDS": str(seconds)}
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    att = work / "r" / "attempts" / "0001"
    launched = last_event(att, "launched")
    ended = last_event(att, "tree_ended")
    fin = last_event(att, "finished")
    own = json.loads((att / "ownership.json").read_text())
    supervised_wall = float(ended["mono"]) - float(launched["mono"])  # type: ignore[arg-type]
    supervised_cpu = float(ended["runner_cpu_s"]) - float(launched["runner_cpu_s"])  # type: ignore[arg-type]
    total_cpu = float(fin["runner_cpu_s"])  # type: ignore[arg-type]
    return {
        "wall_s": wall,
        "supervised_wall_s": supervised_wall,
        "supervised_cpu_s": supervised_cpu,
        "supervised_pct": 100 * supervised_cpu / supervised_wall,
        "total_cpu_s": total_cpu,
        "total_pct": 100 * total_cpu / wall,
        "opc_seen": sum(1 for p in own["owned"] if p["name"] == "opc"),
    }


LAST_ACT = (
    "import time, sys\n"
    "print('[summary] stage=compile inputs=1 succeeded=1 failed=0', flush=True)\n"
    "import os\n"
    "open(sys.argv[1], 'w').write(repr(time.monotonic()))\n"
    "os._exit(0)  # the stamp is the last act: no interpreter teardown after it\n"
)


def latency(runs: int) -> list[float]:
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    (work / "w.py").write_text(LAST_ACT)
    out = []
    for i in range(1, runs + 1):
        stamp = work / f"t{i}"
        subprocess.run(
            [*SKGATE, "run", "--root", "r", "--quiet", "--", sys.executable, "w.py", str(stamp)],
            cwd=work,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        fin = last_event(work / "r" / "attempts" / f"{i:04d}", "finished")
        out.append(float(fin["mono"]) - float(stamp.read_text()))  # type: ignore[arg-type]
    return out


def approvals(python: str, work: Path) -> list[str]:
    """``--approve-hook FP`` for each start-up hook this machine's interpreters carry.

    A hook ``skgate preflight`` names blocks the run (C6), and a blocked run is no
    start-up figure: this machine's pyenv interpreter has a sandbox ``.pth`` since
    2026-12. The approvals are what a user who vetted the hook would pass."""
    approve: list[str] = []
    for _ in range(8):  # a hook's own import can be a hook of its own: ask again
        out = subprocess.run(
            [python, "-m", "skgate", "preflight", "--root", "r-preflight", *approve,
             "--json", "--", "true"],
            cwd=work, capture_output=True, text=True, check=False, env=QUIET_ENV,
        )  # fmt: skip
        new = [
            fp
            for fp in dict.fromkeys(re.findall(r"--approve-hook ([0-9a-f]{64})", out.stdout))
            if fp not in approve
        ]
        if not new:
            return approve
        approve += [arg for fp in new for arg in ("--approve-hook", fp)]
    return approve


#: The foreign-compiler scan runs (its cost counts) but matches no process: another
#: user's compile on a shared machine makes a run wait, which is no start-up figure.
#: PATH as after ``. .venv/bin/activate`` (README): the hook scan probes the ``python3``
#: a workload would start, and this machine's pyenv shim is a bash script that costs
#: about 150 ms per start-up, several times per scan.
QUIET_ENV = {
    **os.environ,
    "SKGATE_COMPILER_NAMES": "skgate-bench-no-such-compiler",
    "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
}


def _timed_run(python: str, work: Path, root: str, approve: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [python, "-m", "skgate", "run", "--root", root, "--quiet", *approve,
         "--verdict-from", "exit-status", "--", "true"],
        cwd=work,
        check=True,  # a blocked or failed run is no start-up figure
        stdout=subprocess.DEVNULL,
        env=QUIET_ENV,
    )  # fmt: skip
    return time.perf_counter() - t0


def startup(runs: int, against: str | None = None) -> tuple[list[float], list[float], list[float]]:
    """(skgate run, timeout, skgate run under ``against``) wall times, interleaved.

    The bytecode of each skgate timed is compiled first, as ``pip install`` leaves it:
    with ``PYTHONDONTWRITEBYTECODE=1`` (this machine) an editable install would compile
    every changed module from source on every start."""
    for python in (sys.executable, *([against] if against else [])):
        subprocess.run(
            [python, "-c", "import compileall, os, skgate; "
             "compileall.compile_dir(os.path.dirname(skgate.__file__), quiet=1)"],
            check=True,
        )  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    approve = approvals(sys.executable, work)
    gate, ref, other = [], [], []
    for _ in range(runs):
        gate.append(_timed_run(sys.executable, work, "r", approve))
        t0 = time.perf_counter()
        subprocess.run(["timeout", "60", "true"], check=True)
        ref.append(time.perf_counter() - t0)
        if against:
            other.append(_timed_run(against, work, "r-against", approve))
    answers = [
        json.loads(c.read_text())["controls"]["hooks"].get("probe_answer", "probed")
        for c in sorted((work / "r" / "attempts").glob("*/control.json"))
    ]
    print(f"start-up: hook probe answers of the timed runs: {answers.count('cached')} cached, "
          f"{len(answers) - answers.count('cached')} probed")  # fmt: skip
    return gate, ref, other


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opc", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument(
        "--against",
        metavar="PYTHON",
        help="start-up: also time 'skgate run' under this interpreter (another skgate)",
    )
    ap.add_argument(
        "--only",
        choices=["overhead", "latency", "startup"],
        action="append",
        help="run only these parts (repeatable; default: all)",
    )
    a = ap.parse_args()
    if a.quick:
        a.opc, a.seconds, a.runs = 8, 1.0, 3
    parts = set(a.only or ["overhead", "latency", "startup"])
    if "overhead" in parts:
        report_overhead(a.opc, a.seconds)
    if "latency" in parts:
        report_latency(a.runs)
    if "startup" in parts:
        report_startup(a.runs, a.against)


def report_overhead(opc: int, seconds: float) -> None:
    o = overhead(opc, seconds)
    print(
        f"overhead: {opc} opc for {seconds}s: supervising {o['supervised_wall_s']:.2f}s "
        f"cost the runner {o['supervised_cpu_s']:.3f}s CPU = {o['supervised_pct']:.3f}% "
        f"(whole run incl. start-up, preflight, census: {o['total_cpu_s']:.3f}s CPU = "
        f"{o['total_pct']:.3f}% of {o['wall_s']:.2f}s wall); opc in the manifest: "
        f"{o['opc_seen']:.0f}; target <= 1%"
    )


def report_latency(runs: int) -> None:
    lat = latency(runs)
    print(
        f"latency last exit -> verdict.json: median {1000 * statistics.median(lat):.1f} ms, "
        f"min {1000 * min(lat):.1f}, max {1000 * max(lat):.1f} over {len(lat)} runs; "
        "target median <= 50 ms"
    )


def report_startup(runs: int, against: str | None) -> None:
    gate, ref, other = startup(runs, against)
    mg, mr = statistics.median(gate), statistics.median(ref)
    print(
        f"start-up: skgate run -- true median {1000 * mg:.0f} ms, timeout 60 true median "
        f"{1000 * mr:.1f} ms: {1000 * (mg - mr):.0f} ms slower ({mg / mr:.0f}x) over "
        f"{runs} interleaved runs; target <= 100 ms slower"
    )
    if other:
        mo = statistics.median(other)
        print(
            f"start-up under --against {against}: median {1000 * mo:.0f} ms; "
            f"ratio this / against {mg / mo:.2f}"
        )


if __name__ == "__main__":
    main()
