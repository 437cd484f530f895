"""CLI start-up benchmark (issues 22 s5, 29), run by hand: ``python bench/bench_cli.py``.

Times, side by side and interleaved (one of each per round, so a change in the host's
speed touches all of them alike), the wall time of:

- ``python -c pass`` under the same interpreter (the reference: interpreter start-up);
- ``python -c 'import re, sys'``: what the wrapper pip writes for an entry-point console
  script imports before any of skgate's code runs (1.5x on its own here; skgate installs
  its own ``scripts/skgate`` instead, which does not: a reference, issue 29);
- ``python -c 'import enum, errno, math, collections.abc, _json'``: the standard modules
  ``skgate status`` keeps (``enum`` for the verdict's states and the report's language,
  the C scanner that reads the evidence's JSON). Its common command lines are parsed
  without argparse (skgate.cli.quick), its evidence is read without ``json``
  (skgate.model.jsonread) and its paths are text (skgate.evidence.pathtext), so
  argparse, ``gettext``, ``locale``, ``json``, ``re`` and ``pathlib`` (with ``fnmatch``,
  ``urllib.parse``, ``ipaddress``) are no longer part of it;
- ``skgate --help`` (the static command table, no parser: skgate.cli.top);
- ``skgate status ROOT`` of a finished attempt (the ledger and the recorded verdict's
  reader, nothing of the parser, the runner or the classifier).

Targets (issue 29): ``--help`` within 1.5x and ``status`` within 2x of ``python -c pass``
(medians of the wall time); the reference row says what pip's wrapper alone would take,
the floor row what the standard modules status keeps take before skgate does anything.
The console script timed
is the one installed beside this interpreter: after a change to ``scripts/skgate`` or
pyproject's ``script-files``, reinstall (``pip install -e .``) before timing.
The bytecode of skgate is compiled first (``compileall``), as ``pip install`` leaves it:
this machine sets ``PYTHONDONTWRITEBYTECODE=1``, and an editable install would otherwise
compile every module from source on every run.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import skgate
from skgate_cmd import skgate_argv  # bench/ is sys.path[0] when run as a script

#: Issue 29's targets: medians of the wall time, as a multiple of ``python -c pass``.
HELP_TARGET = 1.5
STATUS_TARGET = 2.0


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall time, and the child's CPU time (user + system: what it cost, whatever else
    shares the cores)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="rounds (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print the medians as JSON")
    ap.add_argument(
        "--against",
        metavar="SRC",
        default=None,
        help="also time another skgate source tree (its src/ directory, put first on "
        "PYTHONPATH under the same console script), interleaved",
    )
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.runs = 3
    compileall.compile_dir(os.path.dirname(skgate.__file__), quiet=1)
    if args.against:
        compileall.compile_dir(args.against, quiet=1)
    skg = skgate_argv()
    with tempfile.TemporaryDirectory(prefix="skgate-bench-cli-") as tmp:
        work = Path(tmp)
        root = work / "root"
        # Any finished attempt will do (one blocked by an unapproved start-up hook of this
        # machine too): status reads its recorded verdict either way.
        subprocess.run(
            [*skg, "run", "--root", str(root), "--verdict-from", "exit-status", "--", "true"],
            cwd=work,
            check=False,
            capture_output=True,
        )
        if not (root / "attempts" / "0001" / "verdict.json").is_file():
            sys.exit(f"bench: no finished attempt under {root}; check 'skgate run' here")
        kept = "import enum, errno, math, collections.abc, _json"
        cases: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "ref: pip wrapper re": ([sys.executable, "-c", "import re, sys"], None),
            "floor: status stdlib": ([sys.executable, "-c", kept], None),
            "skgate --help": ([*skg, "--help"], None),
            "skgate status ROOT": ([*skg, "status", str(root)], None),
        }
        if args.against:
            other = {**os.environ, "PYTHONPATH": args.against}
            cases["against: --help"] = ([*skg, "--help"], other)
            cases["against: status ROOT"] = ([*skg, "status", str(root)], other)
        for argv, env in cases.values():  # warm the page cache, untimed
            timed(argv, work, env)
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (argv, env) in cases.items():
                wall, cpu = timed(argv, work, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    med = {name: statistics.median(xs) * 1000 for name, xs in walls.items()}
    cpu_med = {name: statistics.median(xs) * 1000 for name, xs in cpus.items()}
    floor, cpu_floor = med["python -c pass"], cpu_med["python -c pass"]
    if args.json:
        print(json.dumps({"median_ms": med, "cpu_median_ms": cpu_med, "runs": args.runs}))
        return 0
    print(f"{sys.version.split()[0]} {sys.executable}; {args.runs} interleaved rounds")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, xs in walls.items():
        print(
            f"{name:22} wall median {med[name]:6.1f} ms (min {min(xs) * 1000:.1f}, max "
            f"{max(xs) * 1000:.1f}) {med[name] / floor:5.2f}x;  CPU median "
            f"{cpu_med[name]:6.1f} ms {cpu_med[name] / cpu_floor:5.2f}x"
        )
    ok_help = med["skgate --help"] <= HELP_TARGET * floor
    ok_status = med["skgate status ROOT"] <= STATUS_TARGET * floor
    print(f"wall: --help within {HELP_TARGET}x: {'PASS' if ok_help else 'NOT met'}; ", end="")
    print(f"status within {STATUS_TARGET}x: {'PASS' if ok_status else 'NOT met'}")
    return 0 if (ok_help and ok_status) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
