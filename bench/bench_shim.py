"""Benchmark: what ``--enforce-jobs``'s op_compiler shim adds to one op_compiler call.

Run by hand (not part of the test suite):

    .venv/bin/python bench/bench_shim.py --calls 200

A stand-in op_compiler (``#!/bin/sh`` ``exit 0``) is run N times directly and N times
through the shim skgate ships (``skgate/data/op_compiler.sh``: PATH lookup, two argv
records, ``-j`` rewrite, ``exec``), interleaved in blocks, with torchair's argv. Prints
the mean per call and the difference. Everything lives in a temporary directory that is
removed afterwards (its own files only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

ARGV = ["-p", "/x", "-v", "Ascend910B1", "-j", "192", "-o", "/y", "-l", "error"]


def _time(cmd: list[str], env: dict[str, str], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        subprocess.run(cmd, env=env, check=True)
    return (time.perf_counter() - start) / n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    ns = ap.parse_args()
    if ns.quick:
        ns.calls = 8
    tmp = Path(tempfile.mkdtemp(prefix="skgate-bench-shim-"))
    try:
        real, shim_dir, calls = tmp / "real", tmp / "shim", tmp / "calls"
        for d in (real, shim_dir, calls):
            d.mkdir()
        (real / "op_compiler").write_text("#!/bin/sh\nexit 0\n")
        (real / "op_compiler").chmod(0o755)
        shim = shim_dir / "op_compiler"
        shim.write_bytes(resources.files("skgate").joinpath("data/op_compiler.sh").read_bytes())
        shim.chmod(0o755)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "SKGATE_SHIM_JOBS": "2",
            "SKGATE_SHIM_DIR": str(shim_dir),
            "SKGATE_SHIM_CALLS": str(calls),
            "SKGATE_SHIM_PATH": f"{shim_dir}:{real}:/usr/bin:/bin",
        }
        direct = through = 0.0
        blocks = 4
        for _ in range(blocks):
            direct += _time([str(real / "op_compiler"), *ARGV], env, ns.calls // blocks)
            through += _time([str(shim), *ARGV], env, ns.calls // blocks)
        direct, through = direct / blocks * 1000, through / blocks * 1000
        print(
            json.dumps(
                {
                    "calls": ns.calls,
                    "direct_ms": round(direct, 2),
                    "through_shim_ms": round(through, 2),
                    "overhead_ms": round(through - direct, 2),
                },
                indent=2,
            )
        )
    finally:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
