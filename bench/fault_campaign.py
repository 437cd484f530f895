"""Fault campaign: seeded attempts whose runner is SIGKILLed at a random moment, or whose
evidence disk is full, then recovered; counts wrong verdicts and harmed compiles.

Run by hand (not part of the test suite; issue 21's closing figures):

    .venv/bin/python bench/fault_campaign.py --attempts 200 --seed 1
    .venv/bin/python bench/fault_campaign.py --attempts 20 --disk   # root only: tmpfs mounts

Each attempt runs a workload that knows its own truth: it writes an error-named log first
(provisional, C1), starts one to three children, exits 0 or 1 as the seed says, and, as
its very last act, records its natural exit in a marker file outside the evidence root.

* **harmed compile**: the workload never wrote its marker, i.e. something ended it before
  its natural return (C4: skgate signals only at a frozen timeout or on a stop request,
  and neither happens here);
* **wrong verdict**: after ``skgate recover`` (retried while it refuses with exit 6
  because something owned still lives), ``skgate status`` gives a final state that
  contradicts the workload's truth (``succeeded`` for exit 1, ``failed`` for exit 0,
  ``not_started`` for a workload that ran). ``unknown`` is honest and counted apart;
* ``verify`` must pass once recovery is done.

Faults: none, or SIGKILL of the runner a uniform delay in [0, 0.6) s after its attempt
appears (landing anywhere from preflight to the seal). With ``--disk`` (root needed),
the evidence root is a 2 MiB tmpfs that a filler file has left nearly full, and the
workload prints 4 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SKGATE = [sys.executable, "-m", "skgate"]
FINAL = {"succeeded", "failed", "interrupted", "not_started"}
#: The SIGKILL lands this long at most after the attempt appears: a whole run here takes
#: about half a second, so the kills spread over preflight, launch, supervision and seal.
DELAY_MAX = 0.6

WORKLOAD = """\
import os, subprocess, sys, time
here, code, kids, noise = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = os.path.join(here, "static_kernel_compile_outputs", "ts1_pid1_outputs", "x_compile_log")
os.makedirs(out, exist_ok=True)
err = os.path.join(out, "a_compile_error.log")
open(err, "w").write("provisional")
nap = "import time; time.sleep(%s)"
children = [subprocess.Popen([sys.executable, "-c", nap % (0.05 * (i + 1))]) for i in range(kids)]
for _ in range(noise):
    sys.stdout.write("x" * 1023 + "\\n")
sys.stdout.flush()
for c in children:
    c.wait()
if code == 0:
    os.rename(err, os.path.join(out, "a_compile_succ.log"))
    pkg = os.path.join(here, "static_kernel_compile_outputs", "static_kernel_1_1.run")
    open(pkg, "w").write("p")
    print("[summary] stage=compile inputs=1 succeeded=1 failed=0", flush=True)
else:
    print("[summary] stage=compile inputs=1 succeeded=0 failed=1", flush=True)
tmp = os.path.join(here, "natural.tmp")
open(tmp, "w").write(str(code))
os.rename(tmp, os.path.join(here, "natural"))
sys.exit(code)
"""


@dataclass
class Result:
    seed: int
    fault: str
    code: int
    state: str
    harmed: bool
    wrong: bool
    verify_ok: bool
    note: str = ""


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SKGATE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _wait(check: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.02)
    return False


def one(seed: int, base: Path, disk: bool) -> Result:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix=f"fc{seed}-", dir=base))
    here = work / "ws"
    here.mkdir()
    root = work / "r"
    mounted = False
    if disk:
        root.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(root)], check=True)
        mounted = True
        with open(root / "filler", "wb") as f:
            f.write(b"\0" * (2 * 1024 * 1024 - rng.randrange(4096, 256 * 1024)))
    code = rng.choice((0, 0, 1))
    kids = rng.randrange(1, 4)
    noise = 4096 if disk else 0
    (work / "w.py").write_text(WORKLOAD)
    fault = "none" if disk or rng.random() < 0.2 else "sigkill"
    delay = rng.uniform(0, DELAY_MAX)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [*SKGATE, "run", "--root", str(root), "--quiet", "--timeout", "120", "--"]
    argv += [sys.executable, str(work / "w.py"), str(here), str(code), str(kids), str(noise)]
    # The runner is this campaign's own child: the only process it ever signals.
    runner = subprocess.Popen(
        argv, cwd=here, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    note = ""
    try:
        attempt = root / "attempts" / "0001"
        if fault == "sigkill":
            # The delay counts from the attempt's creation (a loaded host may take a second
            # to get there), so the kill lands anywhere from preflight to the seal.
            _wait(lambda: attempt.exists() or runner.poll() is not None, 60)
            try:
                runner.wait(timeout=delay)
                fault = "sigkill (runner ended first)"
            except subprocess.TimeoutExpired:
                runner.send_signal(signal.SIGKILL)
        natural = here / "natural"
        if disk:
            # The runner waits for space to write its verdict (issue 21 s2): space comes
            # back once the workload has ended, as an operator would free it.
            _wait(lambda: natural.exists() or runner.poll() is not None, 120)
            os.unlink(root / "filler")
        runner.wait(timeout=180)
        launched = attempt.exists() and b'"launched"' in _bytes(attempt / "events.jsonl")
        ended = _wait(natural.exists, 30) if launched or natural.exists() else True
        harmed = launched and not ended
        if not attempt.exists():
            return Result(seed, fault, code, "no attempt", harmed, False, True, "killed early")
        deadline = time.monotonic() + 60
        while True:
            rec = _run(["recover", str(attempt)], cwd=here)
            if rec.returncode != 6 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if rec.returncode not in (0, 6):
            note = f"recover exit {rec.returncode}: {(rec.stderr or rec.stdout).strip()[:200]}"
        st = _run(["status", "--json", str(attempt)], cwd=here)
        try:
            state = json.loads(st.stdout).get("state", "?")
        except ValueError:
            state = f"status exit {st.returncode}"
        ver = _run(["verify", str(root)], cwd=here)
        # By now a forked workload has long finished (it runs well under a second).
        ran = natural.exists() or launched
        truth = "succeeded" if code == 0 else "failed"
        # C2: "nothing ran" is wrong exactly when the workload ran.
        wrong = ran if state == "not_started" else state in FINAL and state != truth
        note = note or ("workload ran" if ran else "workload never ran")
        return Result(seed, fault, code, state, harmed, wrong, ver.returncode == 0, note)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=False)
        shutil.rmtree(work, ignore_errors=True)


def _bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 24)
    except OSError:
        return b""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--disk", action="store_true", help="full-disk cases (root: mounts tmpfs)")
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.attempts = 3
    if args.disk and os.geteuid() != 0:
        print("error: --disk mounts a tmpfs and needs root; run it as root or drop --disk")
        return 2
    base = Path(tempfile.mkdtemp(prefix="skgate-faults-"))
    results: list[Result] = []
    t0 = time.monotonic()
    try:
        for i in range(args.attempts):
            results.append(one(args.seed * 100_000 + i, base, args.disk))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "attempts": len(results),
        "seconds": round(time.monotonic() - t0, 1),
        "faults": dict(Counter(r.fault for r in results)),
        "states": dict(Counter(r.state for r in results)),
        "wrong_verdicts": sum(r.wrong for r in results),
        "harmed_compiles": sum(r.harmed for r in results),
        "verify_failed": sum(not r.verify_ok for r in results),
        "cases": [r.__dict__ for r in results if r.wrong or r.harmed or not r.verify_ok],
    }
    print(json.dumps(summary, indent=2))
    bad = summary["wrong_verdicts"] or summary["harmed_compiles"] or summary["verify_failed"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
