"""Ray executor benchmarks (issue 15), run by hand: ``python bench/bench_ray.py [--quick]``.

Starts its own local cluster (``ray.cluster_utils.Cluster`` on 127.0.0.1: a head with no
CPUs for arms and three worker nodes of one CPU and ``NPU: 2`` each, object stores of
100 MiB, no dashboard) and shuts it down at the end.

1. overhead: one ~1 s simulator arm through the ray executor against the local one,
   interleaved, median of ``--runs`` (target: <= 1.5 s extra, evidence transfer included);
2. scale: 12 units of ~10 s simulator arms, the ray executor on the 3-node cluster against
   the local executor (one after the other): wall time ratio;
3. transfer: one arm whose run log is 1 GiB, in a separate driver process so its peak RSS
   is the transfer's own: throughput of the evidence coming home (from the task's first
   streamed file to the attempt renamed into the driver's root) and the driver's peak RSS
   (target: <= 256 MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from skgate.model.request import RunRequest
from skgate.regress.executor import ArmStatus, Board, Executor, LocalExecutor, Unit
from skgate.regress.ray_exec import RayExecutor

LOOPBACK = "127.0.0.1"
# Loopback only: without this Ray replaces 127.0.0.1 by the host's routable address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

NODE = {"num_cpus": 1, "resources": {"NPU": 2}, "object_store_memory": 100 << 20}


def sim_request(root: Path, cwd: Path, opc_seconds: float) -> RunRequest:
    return RunRequest(
        argv=(sys.executable, "-m", "skgate.sim.launcher", "--inputs", "1", "--steps", "1"),
        cwd=str(cwd),
        root=str(root),
        timeout=600,
        grace=5,
        jobs="1",
        env={"SKGATE_SIM_OPC_SECONDS": str(opc_seconds)},
        completion_marker="skgate-sim: inference completed",
        quiet=True,
    )


def run_units(executor: Executor, base: Path, n: int, opc: float) -> tuple[float, list[str]]:
    session = base / f"s-{time.monotonic_ns()}"
    units = []
    for k in range(n):
        cwd = session / "cwd" / str(k)
        cwd.mkdir(parents=True)
        units.append(Unit(f"u{k}", 1, sim_request(session / "runs" / f"u{k}", cwd, opc)))
    board = Board([u.key for u in units])
    t0 = time.monotonic()
    results = executor.run(units, session, board)
    wall = time.monotonic() - t0
    states = [r.verdict.state.value if r.verdict else (r.lost or r.error or "?") for r in results]
    return wall, states


def start_cluster() -> Any:
    from ray.cluster_utils import Cluster  # noqa: PLC0415 - optional dependency

    c = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": 100 << 20,
            "include_dashboard": False,
            "node_ip_address": LOOPBACK,
        },
    )
    for _ in range(3):
        c.add_node(**NODE, node_ip_address=LOOPBACK)
    c.wait_for_nodes()
    return c


def transfer_child(address: str, base: str, size: int) -> None:
    """Part 3, in its own process: one arm writing ``size`` bytes of log, brought home."""
    base_p = Path(base)
    writer = (
        "import sys\nline = (b'x' * 1023) + b'\\n'\nblock = line * 1024\n"
        f"left = {size}\n"
        "while left > 0:\n    n = min(len(block), left)\n    sys.stdout.buffer.write(block[:n])\n"
        "    left -= n\n"
    )
    cwd = base_p / "cwd"
    cwd.mkdir(parents=True)
    req = RunRequest(
        argv=(sys.executable, "-c", writer),
        cwd=str(cwd),
        root=str(base_p / "runs" / "big"),
        timeout=1800,
        grace=5,
        jobs="1",
        quiet=True,
    )
    stamps: dict[str, float] = {}

    def hear(arm: ArmStatus, now: float) -> None:
        stamps.setdefault(arm.state, now)

    ex = RayExecutor(address, node_base=str(base_p / "node"))
    unit = Unit("big", 1, req)
    result = ex.run([unit], base_p, Board([unit.key], [hear]))[0]
    ex.close()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    moved = sum(p.stat().st_size for p in (base_p / "runs" / "big").rglob("*") if p.is_file())
    end = max(stamps.values())
    began = stamps.get("transferring", end)
    print(
        json.dumps(
            {
                "state": result.verdict.state.value if result.verdict else result.lost,
                "bytes": moved,
                "transfer_s": end - began,
                "peak_rss_mib": rss_mib,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smoke run: small sizes, no targets (CI)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--transfer-child", nargs=3, metavar=("ADDRESS", "BASE", "SIZE"))
    args = ap.parse_args()
    if args.transfer_child:
        transfer_child(args.transfer_child[0], args.transfer_child[1], int(args.transfer_child[2]))
        return
    try:
        import ray  # noqa: PLC0415 - optional dependency
    except ImportError:
        print("ray is not installed (pip install 'skgate[ray]'): nothing measured")
        return

    base = Path(tempfile.mkdtemp(prefix="skgate-bench-ray-"))
    c = start_cluster()
    try:
        ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
        local, remote = LocalExecutor(), RayExecutor(node_base=str(base / "node"))
        runs = 2 if args.quick else args.runs
        # 1. per-arm overhead, interleaved (a warm-up of each first: worker start-up).
        run_units(remote, base, 1, 0.5)
        lw: list[float] = []
        rw: list[float] = []
        states: set[str] = set()
        pairs: tuple[tuple[Executor, list[float]], ...] = ((local, lw), (remote, rw))
        for _ in range(runs):
            for ex, walls in pairs:
                wall, st = run_units(ex, base, 1, 0.5)
                walls.append(wall)
                states.update(f"{ex.name}:{x}" for x in st)
        ml, mr = statistics.median(lw), statistics.median(rw)
        print(f"overhead: local median {ml:.2f} s, ray median {mr:.2f} s, extra {mr - ml:.2f} s")
        print(f"  local {[round(x, 2) for x in lw]} ray {[round(x, 2) for x in rw]}; {states}")
        # 2. 12 units of ~10 s.
        n, opc = (2, 1.0) if args.quick else (12, 10.0)
        wl, sl = run_units(local, base, n, opc)
        wr, sr = run_units(remote, base, n, opc)
        print(
            f"scale: {n} units of opc {opc} s: local {wl:.1f} s, ray {wr:.1f} s, "
            f"ratio local/ray {wl / wr:.2f}; states local {set(sl)} ray {set(sr)}"
        )
        ray.shutdown()
        # 3. 1 GiB run log, in a separate driver process.
        size = (16 << 20) if args.quick else (1 << 30)
        out = subprocess.run(
            [sys.executable, __file__, "--transfer-child", c.address, str(base / "t"), str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        t = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"transfer: {t['bytes'] / 2**20:.0f} MiB in {t['transfer_s']:.1f} s = "
            f"{t['bytes'] / 2**20 / max(t['transfer_s'], 1e-9):.0f} MiB/s; driver peak RSS "
            f"{t['peak_rss_mib']:.0f} MiB; state {t['state']}"
        )
    finally:
        ray.shutdown()
        c.shutdown()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
