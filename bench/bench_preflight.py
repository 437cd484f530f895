"""Benchmark: preflight on a virtual environment with 200 installed distributions.

Target (issue 4): ``prepare()`` <= 1.5 s wall. Reference tools timed in the same run, on
the same venv: ``python -X importtime -c pass`` (one interpreter start-up with site) and
``pip list --path SITE`` (reads every distribution's metadata).

Run by hand:  /work/venv/bin/python bench/bench_preflight.py [--dists 200] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from skgate.model.request import RunRequest
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.prepare import prepare

BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def make_env(where: Path, dists: int) -> tuple[Path, Path]:
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(where)], check=True)
    v = sys.version_info
    site = where / "lib" / f"python{v.major}.{v.minor}" / "site-packages"
    for i in range(dists):
        name = f"fakedist{i:03d}"
        pkg = site / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(f"VALUE = {i}\n")
        info = site / f"{name}-1.0.{i}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.{i}\n")
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n")
        (info / "INSTALLER").write_text("pip\n")
        if i % 10 == 0:  # 20 editable-style path .pth files (allowed, no import)
            extra = where / "src" / name
            extra.mkdir(parents=True)
            (site / f"__editable__.{name}-1.0.pth").write_text(f"{extra}\n")
    return where / "bin" / "python", site


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dists", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.dists, args.repeat = 10, 2
    with tempfile.TemporaryDirectory(prefix="skgate-bench-") as tmp:
        python, site = make_env(Path(tmp) / "venv", args.dists)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["SKGATE_COMPILER_NAMES"] = "skgt-bench-none"
        request = RunRequest(
            argv=(str(python), "-c", "pass"),
            cwd=tmp,
            root=str(Path(tmp) / "runs"),
            jobs="auto",
            env=env,
            unset_env=tuple(k for k in os.environ if k.startswith("PYTHON")),
            lease_timeout=0.0,
        )
        check = prepare(request, Path(tmp) / "runs")
        assert check.blocked == (), check.blocked
        findings = len(check.controls["hooks"]["findings"])
        allowances = len(check.controls["hooks"]["allowances"])
        results = {
            "skgate prepare()": timed(lambda: prepare(request, Path(tmp) / "runs"), args.repeat),
            "skgate hooks.scan()": timed(lambda: hooks.scan(str(python), env), args.repeat),
            "python -X importtime -c pass": timed(
                lambda: subprocess.run(
                    [str(python), "-X", "importtime", "-c", "pass"],
                    env=env,
                    capture_output=True,
                    check=True,
                ),
                args.repeat,
            ),
            "pip list --path SITE": timed(
                lambda: subprocess.run(
                    [sys.executable, "-m", "pip", "list", "--path", str(site)],
                    env=env,
                    capture_output=True,
                    check=True,
                ),
                args.repeat,
            ),
        }
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.node()}  {platform.platform()}")
    print(f"# cpus={os.cpu_count()} python={platform.python_version()} dists={args.dists}")
    print(f"# findings={findings} allowances={allowances} repeat={args.repeat}")
    ref = statistics.median(results["pip list --path SITE"])
    print(f"{'what':32} {'median s':>9} {'min s':>7} {'max s':>7} {'vs pip list':>11}")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"{name:32} {med:9.3f} {min(times):7.3f} {max(times):7.3f} {med / ref:10.2f}x")
    target = statistics.median(results["skgate prepare()"])
    print(f"target prepare() <= 1.5 s: {'PASS' if target <= 1.5 else 'FAIL'} ({target:.3f} s)")
    return 0 if target <= 1.5 or args.quick else 1


if __name__ == "__main__":
    raise SystemExit(main())
