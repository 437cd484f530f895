"""Same-process A/B of two versions of the stage census on issue 19's bench tree.

Run by hand (not part of the test suite), e.g. against the version before a change:

    git show HEAD~1:src/skgate/evidence/stage_census.py > /tmp/census_old.py
    .venv/bin/python bench/ab_stage_census.py /tmp/census_old.py --repeat 15

Both versions census the same tree, interleaved with ``find`` (as in
``bench_stages.py``); their ``StageCensus`` records must be equal before any time counts.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bench_stages  # bench/ is sys.path[0] when run as a script
from skgate.evidence import stage_census as new


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", nargs="?", help="path of the other stage_census.py (--quick: this one)")
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.inputs, args.repeat = 300, 2
    if args.old is None:
        if not args.quick:
            print("error: give the path of the other stage_census.py")
            return 2
        args.old = new.__file__  # the smoke run compares this version with itself
    spec = importlib.util.spec_from_file_location("census_old", args.old)
    if spec is None or spec.loader is None:
        print(f"error: cannot load {args.old}; give the path of a stage_census.py")
        return 2
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    work = Path(tempfile.mkdtemp(prefix="skgate-ab-stages-"))
    try:
        root = work / "static_kernel_compile_outputs" / "ts20261201000000000000_pid4242_outputs"
        params, _ = bench_stages.generate(root, args.inputs)
        p, r = str(params), str(root)
        times: dict[str, list[float]] = {"old": [], "new": [], "find": []}
        for _ in range(args.repeat):
            t = time.perf_counter()
            a = old.stage_census(p, r, after_return=True)
            times["old"].append(time.perf_counter() - t)
            t = time.perf_counter()
            b = new.stage_census(p, r, after_return=True)
            times["new"].append(time.perf_counter() - t)
            times["find"].append(bench_stages.run_find(root)[0])
            if a != b:
                print("error: the two versions give different censuses; no timing counts")
                return 1
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"old {med['old'] * 1000:.1f} ms, new {med['new'] * 1000:.1f} ms, "
            f"find {med['find'] * 1000:.1f} ms; new/find {med['new'] / med['find']:.2f}, "
            f"old/find {med['old'] / med['find']:.2f} (medians of {args.repeat})"
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
