"""Ledger benchmarks (issue 5), run by hand: ``python bench/bench_ledger.py [--quick]``.

1. seal: ``seal.seal_attempt`` over ``--gb`` GiB of evidence files against ``sha256sum``
   on the same files, interleaved, page cache warm for both, median of ``--runs``
   (target: at least half of sha256sum's throughput);
2. cleanup: ``artifacts.cleanup`` of an outputs tree of N files on one file system, for
   N in ``--counts``: the clear phase (renames) must not grow with N and stay under 1 s.
   The total (including the hashed scene manifest) and upstream's ``rm -rf`` of the same
   tree are reported beside it.
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

from bench_runner import QUIET_ENV, approvals  # bench/ is sys.path[0] when run as a script
from skgate.evidence import seal
from skgate.workdir import cleanup as artifacts


def real_attempt(work: Path, root: Path) -> Path:
    """A finished attempt made by ``skgate run`` itself (its own writers: control.json,
    journal, ledger, seal), never evidence written by hand: a hand-made ``control.json``
    rots as its schema grows (this bench crashed on a missing ``runner``, issue 29)."""
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "skgate", "run", "--root", str(root), "--quiet",
         *approvals(sys.executable, work), "--verdict-from", "exit-status", "--", "true"],
        cwd=work, check=True, stdout=subprocess.DEVNULL, env=QUIET_ENV,
    )  # fmt: skip
    (attempt,) = sorted((root / "attempts").iterdir())
    return attempt


def make_evidence(attempt: Path, total: int, files: int) -> list[Path]:
    block = os.urandom(1 << 20)
    per = total // files
    paths = []
    for i in range(files):
        p = attempt / "extra" / f"part{i:02d}.bin"
        p.parent.mkdir(exist_ok=True)
        with p.open("wb") as fh:
            for _ in range(per >> 20):
                fh.write(block)
        paths.append(p)
    return paths


def bench_seal(base: Path, gib: float, runs: int) -> dict[str, object]:
    attempt = real_attempt(base / "seal-work", base / "runs")
    paths = make_evidence(attempt, int(gib * (1 << 30)), 8)
    size = sum(p.stat().st_size for p in paths)
    subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)  # warm
    ours: list[float] = []
    ref: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(["sha256sum", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)
        ref.append(time.perf_counter() - t)
        (attempt / "seal.json").unlink(missing_ok=True)
        t = time.perf_counter()
        seal.seal_attempt(attempt)
        ours.append(time.perf_counter() - t)
    m_ours, m_ref = statistics.median(ours), statistics.median(ref)
    return {
        "bytes": size,
        "seal_s_median": round(m_ours, 3),
        "sha256sum_s_median": round(m_ref, 3),
        "seal_MBps": round(size / m_ours / 1e6, 1),
        "sha256sum_MBps": round(size / m_ref / 1e6, 1),
        "throughput_ratio": round(m_ref / m_ours, 3),
        "target": ">= 0.5",
    }


def make_tree(out: Path, count: int) -> None:
    per_dir = 1000
    for d in range((count + per_dir - 1) // per_dir):
        sub = out / f"ts2026_pid{d}_outputs" / "x_compile_log"
        sub.mkdir(parents=True)
        for i in range(min(per_dir, count - d * per_dir)):
            fd = os.open(sub / f"in{i}_compile_succ.log", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"ok\n")
            os.close(fd)


def bench_cleanup(base: Path, count: int) -> dict[str, object]:
    case = base / f"cleanup{count}"
    work = case / "work"
    root = case / "runs"
    real_attempt(work, root)
    make_tree(work / "static_kernel_compile_outputs", count)
    res = artifacts.cleanup(work, root)
    ref_tree = case / "ref"
    make_tree(ref_tree, count)
    t = time.perf_counter()
    subprocess.run(["rm", "-rf", str(ref_tree)], check=True)
    rm_s = time.perf_counter() - t
    manifest = json.loads(Path(res.scene or "", "manifest.json").read_text())
    assert len(manifest["files"]) == count
    shutil.rmtree(case)
    return {
        "files": count,
        "clear_s": round(res.clear_seconds, 4),
        "total_with_manifest_s": round(res.total_seconds, 3),
        "rm_rf_s": round(rm_s, 3),
        "target": "clear_s independent of files, < 1 s",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--counts", default="1000,10000,100000")
    ap.add_argument("--quick", action="store_true", help="smoke run: 0.05 GiB, 1000 files, 1 run")
    args = ap.parse_args()
    if args.quick:
        args.gb, args.counts, args.runs = 0.05, "1000", 1
    with tempfile.TemporaryDirectory(prefix="skgate-bench-", dir=os.environ.get("TMPDIR")) as d:
        base = Path(d)
        result = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": f"{platform.node()} {platform.machine()} cpus={os.cpu_count()} "
            f"python={platform.python_version()}",
            "seal": bench_seal(base, args.gb, args.runs),
            "cleanup": [bench_cleanup(base, int(n)) for n in args.counts.split(",")],
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
