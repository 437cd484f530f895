"""Benchmark: the stage census after natural return vs ``find`` on the same tree.

Run by hand (not part of the test suite):

    .venv/bin/python bench/bench_stages.py --inputs 10000 --repeat 7

One result root like torchair leaves it: ``<pid>_opcompile_selected/`` with N op JSONs,
``<pid>_compile_log/`` with one ``*_compile_succ.log`` (or, for one input in 50, a
``*_compile_error.log``) per input (2N files), and a ``.run``, all with real names (the
log is not named after its input). The stage census
(:func:`skgate.evidence.stage_census.stage_census`: inputs, pairing by op type and count,
per-input outcome, packages)
is timed against ``find ROOT -type f ( -name '*.json' -o -name '*_compile_succ.log' -o
-name '*_compile_error.log' -o -name '*.run' )`` with its output lines counted, which
lists the same files but matches nothing. Both run warm (one unmeasured pass each),
interleaved, medians of ``--repeat`` runs. Targets: census <= 0.5 s and <= 1.5x find.
"""

from __future__ import annotations

import argparse
import hashlib
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

from skgate.evidence.stage_census import stage_census

OP_TYPES = ("HcPre", "MatMulV2", "AddRmsNorm", "GroupedMatmul", "SwiGlu", "HcPost")


def generate(root: Path, inputs: int) -> tuple[Path, int]:
    """Real names (docs/cann-static-compile.md): inputs ``<OpType>_<dtype>_<format>_
    <shape...>_<n>.json``, logs ``static_kernel_<OpType>_<sha256>_<pid>_d0_compile_*.log``."""
    pid = 4242
    params = root / f"{pid}_opcompile_selected"
    logs = root / f"{pid + 1}_compile_log"
    params.mkdir(parents=True)
    logs.mkdir()
    failed = 0
    for i in range(inputs):
        op = OP_TYPES[i % len(OP_TYPES)]
        body = json.dumps({"op_type": op, "inputs": [{"shape": [16, i]}]}).encode()
        (params / f"{op}_float16_ND_16_{i}_{i}.json").write_bytes(body)
        base = f"static_kernel_{op}_{hashlib.sha256(body).hexdigest()}_{pid + 1}_d0"
        if i % 50 == 7:
            (logs / f"{base}_compile_error.log").touch()
            failed += 1
        else:
            (logs / f"{base}_compile_succ.log").touch()
    (root / f"static_kernel_20261201000000_{pid + 1}.run").touch()
    return params, failed


def run_find(root: Path) -> tuple[float, int]:
    argv = ["find", str(root), "-type", "f", "("]
    argv += ["-name", "*.json", "-o", "-name", "*_compile_succ.log", "-o"]
    argv += ["-name", "*_compile_error.log", "-o", "-name", "*.run", ")"]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - t, proc.stdout.count(b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.inputs, args.repeat = 300, 2
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-stages-", dir=args.dir))
    try:
        root = work / "static_kernel_compile_outputs" / "ts20261201000000000000_pid4242_outputs"
        params, failed = generate(root, args.inputs)
        run_find(root)
        stage_census(str(params), str(root), after_return=True)
        finds: list[float] = []
        cens: list[float] = []
        found = 0
        census = None
        for _ in range(args.repeat):
            f, found = run_find(root)
            finds.append(f)
            t = time.perf_counter()
            census = stage_census(str(params), str(root), after_return=True)
            cens.append(time.perf_counter() - t)
        assert census is not None
        f_med, c_med = statistics.median(finds), statistics.median(cens)
        right = (
            census.inputs == args.inputs
            and census.failed == failed
            and census.succeeded == args.inputs - failed
            and census.no_log == census.both_logs == census.unpaired == census.extra_logs == 0
            and len(census.run_packages) == 1
            and found == 2 * args.inputs + 1
        )
        result = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
            f"python {platform.python_version()}",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "inputs": args.inputs,
            "files": found,
            "find_s_median": round(f_med, 4),
            "census_s_median": round(c_med, 4),
            "census_over_find_time": round(c_med / f_med, 3),
            "census_right": right,
            "runs": {"find": [round(x, 4) for x in finds], "census": [round(x, 4) for x in cens]},
        }
        print(json.dumps(result, indent=2))
        ok = right and c_med <= 0.5 and result["census_over_find_time"] <= 1.5
        print(f"target (right counts, <= 0.5 s, <= 1.5x find's time): {'met' if ok else 'NOT met'}")
        return 0 if ok or (args.quick and right) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
