"""Benchmark: ``take_census`` vs ``find`` counting the same names over a generated tree.

Run by hand (not part of the test suite):

    /work/venv/bin/python bench/bench_census.py --files 200000 --repeat 5

The tree (result roots with ``*_compile_succ.log``, ``*_compile_error.log``, ``*.run``
and other files, like a real ``static_kernel_compile_outputs``) is generated under /tmp
and deleted afterwards. ``find`` runs as ``find DIR -type f ( -name ... -o ... )`` and its
output lines are counted; both run warm (dentry cache filled by an unmeasured pass).
Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skgate.evidence.census import take_census


def generate(top: Path, files: int) -> None:
    per_dir = 1000
    n = 0
    root_i = 0
    while n < files:
        root = top / f"ts2026113006{root_i:02d}00000001_pid{4000 + root_i}_outputs"
        for d in range(10):
            sub = root / f"r{d}_compile_log"
            sub.mkdir(parents=True, exist_ok=True)
            for _ in range(per_dir):
                if n >= files:
                    return
                k = n % 10
                if k < 6:
                    name = f"static_kernel_HcPre_{n:012x}_{4000 + root_i}_d0_compile_succ.log"
                elif k < 8:
                    name = f"static_kernel_HcPre_{n:012x}_{4000 + root_i}_d0_compile_error.log"
                else:
                    name = f"op_{n:012x}.json"
                (sub / name).touch()
                n += 1
            if n < files:
                (root / f"static_kernel_2026113006{d:02d}_{4000 + root_i}.run").touch()
                n += 1
        root_i += 1


def run_find(top: Path) -> tuple[float, int]:
    argv = [
        "find",
        str(top),
        "-type",
        "f",
        "(",
        "-name",
        "*_compile_error.log",
        "-o",
        "-name",
        "*_compile_succ.log",
        "-o",
        "-name",
        "*.run",
        ")",
    ]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, check=True)
    dt = time.perf_counter() - t
    return dt, proc.stdout.count(b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.files, args.repeat = 2000, 2
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-census-", dir=args.dir))
    try:
        top = work / "static_kernel_compile_outputs"
        t = time.perf_counter()
        generate(top, args.files)
        gen = time.perf_counter() - t
        run_find(top)
        take_census(top, live=False)
        finds, cens = [], []
        found = counted = 0
        for _ in range(args.repeat):
            f, found = run_find(top)
            finds.append(f)
            t = time.perf_counter()
            c = take_census(top, live=False)
            cens.append(time.perf_counter() - t)
            counted = c.error_logs + c.succ_logs + c.run_packages
        f_med, c_med = statistics.median(finds), statistics.median(cens)
        result = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
            f"python {platform.python_version()}",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "files": args.files,
            "generate_s": round(gen, 2),
            "find_s_median": round(f_med, 4),
            "census_s_median": round(c_med, 4),
            "census_over_find_time": round(c_med / f_med, 3),
            "find_matches": found,
            "census_matches": counted,
            "runs": {"find": [round(x, 4) for x in finds], "census": [round(x, 4) for x in cens]},
        }
        print(json.dumps(result, indent=2))
        ok = counted == found and result["census_over_find_time"] <= 1.5
        print(f"target (same count, <= 1.5x find's time): {'met' if ok else 'NOT met'}")
        return 0 if ok or (args.quick and counted == found) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
