"""start / wait benchmarks (issue 13), run by hand: ``python bench/bench_agents.py``.

1. ``skgate start`` returning to its caller: wall time of the whole command (interpreter
   start-up, imports, the fork, the detached runner's imports and the attempt recorded:
   since issue 29 ``start`` answers there, and preflight and the launch follow in the
   runner) against ``setsid -f true`` (util-linux: detaching a command and nothing else),
   interleaved. Target (issue 29): median <= 100 ms.
2. natural return to ``skgate wait`` returning: the workload writes ``time.monotonic()``
   as its very last act and ``os._exit``s; a ``skgate wait`` process, started before
   the release, is timed to its exit in this process (all on the system-wide
   CLOCK_MONOTONIC). It covers the runner's finishing (census, verdict, seal, ledger,
   exit) and the waiter's wake-up (inotify, pidfd) and exit. Reference in the same run:
   the same workload under a foreground ``skgate run``, timed from natural return to
   ``run`` returning (the latency an agent had before, when it could not detach).
   Target: median <= 100 ms.

``--against PYTHON`` also times ``start`` under another interpreter with another skgate
installed (an earlier release, say), interleaved with this one in the same run. The
bytecode of every skgate package timed is compiled first (``compileall``), as ``pip
install`` leaves it: this machine sets ``PYTHONDONTWRITEBYTECODE=1``, and an editable
install would otherwise compile every module from source on every start. ``skgate`` is
the command a person types: the console script beside each interpreter
(``skgate_cmd.py``).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skgate_cmd import skgate_argv  # bench/ is sys.path[0] when run as a script

#: ``skgate`` as a person types it: the console script beside this interpreter.
SKGATE = skgate_argv()
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


def compile_skgate(python: str) -> str:
    """Compile the bytecode of the skgate that ``python`` imports; its package dir."""
    where = subprocess.run(
        [python, "-c", "import os, skgate; print(os.path.dirname(skgate.__file__))"],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    ).stdout.strip()
    if python == sys.executable:
        compileall.compile_dir(where, quiet=1)
    else:
        subprocess.run([python, "-m", "compileall", "-q", where], check=True)
    return where


def start_only(python: str, work: Path, tag: str) -> float:
    """Wall time of ``start`` under ``python`` (its workload ends by itself at once)."""
    cmd = [*skgate_argv(python), "start", "--root", f"r-{tag}", "--json", "--"]
    t0 = time.monotonic()
    out = subprocess.run(
        [*cmd, python, "-c", "pass"], cwd=work, env=ENV, capture_output=True, check=True
    )
    took = time.monotonic() - t0
    # Untimed: let that runner finish and seal before the next measurement starts, so
    # no measurement shares the two cores with another attempt's finishing.
    attempt = json.loads(out.stdout)["attempt"]
    subprocess.run(
        [*skgate_argv(python), "wait", attempt, "--quiet"],
        cwd=work,
        env=ENV,
        stdout=subprocess.DEVNULL,
        check=False,  # the verdict of ``-c pass`` is unknown (no summary): exit 5
    )
    return took


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
    ap.add_argument(
        "--against",
        metavar="PYTHON",
        help="also time start under this interpreter (another skgate), interleaved",
    )
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.runs = 2
    if not shutil.which("setsid"):
        raise SystemExit("needs setsid (util-linux)")
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-agents-"))
    (work / "w.py").write_text(WORKLOAD)
    starts: list[float] = []
    waits: list[float] = []
    fgs: list[float] = []
    refs: list[float] = []
    mine: list[float] = []
    theirs: list[float] = []
    for python in (sys.executable, *([args.against] if args.against else [])):
        print(f"{python}: skgate at {compile_skgate(python)} (bytecode compiled)")
    print(f"load average at start: {os.getloadavg()}")
    try:
        one(work, -1)  # warm the page cache and bytecode
        for i in range(args.runs):
            s, w = one(work, i)
            starts.append(s)
            waits.append(w)
            fgs.append(foreground(work, i))
            refs.extend(reference_detach(1))
            if args.against:
                mine.append(start_only(sys.executable, work, "mine"))
                theirs.append(start_only(args.against, work, "theirs"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()}")
    print(f"skgate start returning:          {ms(starts)}")
    print(f"setsid -f true (reference):      {ms(refs)}")
    print(f"natural return -> skgate wait:   {ms(waits)}")
    print(f"natural return -> foreground skgate run returning (reference): {ms(fgs)}")
    print(f"attempts in the timed root at the end: {args.runs + 1}")
    if args.against:
        ratio = statistics.median(mine) / statistics.median(theirs)
        print(f"start, this skgate ({sys.executable}): {ms(mine)}")
        print(f"start, --against ({args.against}): {ms(theirs)}")
        print(f"ratio this / against: {ratio:.2f}")


if __name__ == "__main__":
    main()
