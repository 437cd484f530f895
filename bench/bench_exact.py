"""Is "exact" true when it is said (issue 21 s1)? By hand: ``python bench/bench_exact.py``.

A small fault campaign of seeded attempts, ``--parallel`` at once (as a loaded host runs
them), each a leader that forks ``--forks`` direct children of about 1 ms and logs their
pids; kinds, in turn:

* ``wait``: the leader reaps its children, then exits 0 (expected: succeeded);
* ``orphans``: the leader exits 0 at once, its children outlive it and are re-parented
  to the runner (expected: succeeded);
* ``fail``: as ``wait``, then exit 3 (expected: failed);
* ``timeout``: as ``wait``, then the leader outlives ``--timeout 1`` (expected:
  interrupted).

Per attempt it counts: a wrong verdict (state other than expected), a harmed compile
(a child that did not write its done-marker, in every kind but ``timeout``), and the
direct forks of the leader that ``ownership.json`` does not list with the leader as
``ppid``; and whether the C3 line claimed exactness ("every fork, exec and exit") while
a fork was missing. Nothing is killed by name: the runs end on their own or at their
frozen timeout.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SKGATE = [sys.executable, "-m", "skgate"]
KINDS = ("wait", "orphans", "fail", "timeout")
EXPECTED = {"wait": "succeeded", "orphans": "succeeded", "fail": "failed", "timeout": "interrupted"}
EXACT = "every fork, exec and exit of the owned tree is on record"

LEADER = r"""
import os, sys, time
kind, n, out, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
pids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.001 * (1 + (seed + i) % 3):
            pass
        open(f"{out}.done.{os.getpid()}", "w").close()
        if i % 2:
            os.execv("/bin/true", ["true"])
        os._exit(0)
    pids.append(pid)
with open(out, "w") as fh:
    fh.write(" ".join(map(str, pids)))
if kind != "orphans":
    for pid in pids:
        os.waitpid(pid, 0)
print("[summary] stage=compile inputs=1 succeeded=1 failed=0", flush=True)
if kind == "timeout":
    time.sleep(30)
sys.exit(3 if kind == "fail" else 0)
"""


def one(work: Path, i: int, kind: str, forks: int, seed: int) -> dict[str, Any]:
    d = work / f"a{i:04d}"
    d.mkdir()
    pids_file = d / "pids.txt"
    res = subprocess.run(
        [
            *SKGATE, "run", "--root", str(d / "root"), "--quiet", "--json",
            "--verdict-from", "exit-status", "--timeout", "1" if kind == "timeout" else "60",
            "--grace", "1", "--python", sys.executable, "--",
            sys.executable, str(work / "leader.py"), kind, str(forks), str(pids_file), str(seed),
        ],
        cwd=d, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    verdict = json.loads(res.stdout)
    pids = set(map(int, pids_file.read_text().split())) if pids_file.exists() else set()
    att = Path(verdict["attempt"])
    own = json.loads((att / "ownership.json").read_text())
    leader = own["leader"]["pid"]
    direct = {p["pid"] for p in own["owned"] if p["ppid"] == leader}
    listed = {p["pid"] for p in own["owned"]}
    done = {int(p.name.rsplit(".", 1)[1]) for p in d.glob("pids.txt.done.*")}
    line = next((r for r in verdict["reasons"] if r.startswith("C3:")), "")
    missing = len(pids - direct)
    return {
        "kind": kind,
        "wrong": verdict["state"] != EXPECTED[kind],
        "state": verdict["state"],
        "harmed": 0 if kind == "timeout" else len(pids - done),
        "forks": len(pids),
        "missing_by_ppid": missing,
        "missing_at_all": len(pids - listed),
        "exact_claimed": EXACT in line,
        "false_exact": EXACT in line and missing > 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--attempts", type=int, default=40)
    ap.add_argument("--parallel", type=int, default=3)
    ap.add_argument("--forks", type=int, default=10)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    a = ap.parse_args()
    if a.quick:
        a.attempts, a.parallel, a.forks = 3, 2, 3
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory(prefix="skgate-bench-exact-") as tmp:
        work = Path(tmp)
        (work / "leader.py").write_text(LEADER)
        plan = [(i, KINDS[i % len(KINDS)], rng.randrange(1000)) for i in range(a.attempts)]
        t0 = time.monotonic()
        with ThreadPoolExecutor(a.parallel) as pool:
            rows = list(pool.map(lambda p: one(work, p[0], p[1], a.forks, p[2]), plan))
        wall = time.monotonic() - t0
    forks = sum(r["forks"] for r in rows)
    print(
        f"{len(rows)} attempts ({a.parallel} at once, {a.forks} forks each, seed {a.seed}) "
        f"in {wall:.0f} s: wrong verdicts {sum(r['wrong'] for r in rows)}, harmed compiles "
        f"{sum(r['harmed'] for r in rows)}, direct forks missing by ppid "
        f"{sum(r['missing_by_ppid'] for r in rows)}/{forks} "
        f"({sum(1 for r in rows if r['missing_by_ppid'])} attempts), missing at all "
        f"{sum(r['missing_at_all'] for r in rows)}, 'exact' claimed "
        f"{sum(r['exact_claimed'] for r in rows)} times, falsely "
        f"{sum(r['false_exact'] for r in rows)}"
    )
    for r in rows:
        if r["wrong"] or r["harmed"] or r["missing_by_ppid"]:
            print("  ", json.dumps(r))


if __name__ == "__main__":
    main()
