"""Runner benchmarks (issue 2), run by hand: ``python bench/bench_runner.py [--quick]``.

1. overhead: the runner's own CPU time (``/proc/<pid>/stat`` utime+stime of the
   ``skgate run`` process, which is the runner) over the whole run's wall time, while it
   supervises a simulated compile with ``--opc`` concurrent ``opc`` processes for
   ``--seconds`` (issue 29 target: <= 0.5 % of the whole run), and how often it slept
   (its loop's wakes); ``--overhead-runs`` runs (with ``--against PYTHON``, each followed
   by one under that interpreter's skgate: two trees side by side in one run);
2. latency: from the last owned process's exit to ``verdict.json`` written (issue 29
   target: median <= 10 ms). The workload lives ``--settle`` seconds, then writes
   ``time.monotonic()`` as its very last act; the runner's ``finished`` event (journalled
   right after verdict.json is durable) carries its own monotonic stamp: both clocks are
   the same system-wide CLOCK_MONOTONIC;
3. start-up: ``skgate run -- true`` against ``timeout 60 true``, interleaved, median of
   ``--runs`` (target, issue 29: <= 100 ms slower). The hook probes' answer is cached
   per user (``preflight/hooks/cache.py``): the line says how many runs used it.
   ``skgate`` is the command a person types, the console script beside the interpreter
   (``skgate_cmd.py``; every part runs it); ``python -m skgate run`` is timed beside it,
   watched;
4. root size: ``skgate run -- true`` into one root that grows to ``--root-attempts``
   attempts, each run paired with one into a fresh root, in alternating order
   (interleaved: the machine's speed drifts more than the growth within a minute); the
   difference of the pair's times, in the first and the last fifth of the runs, and
   their slope per attempt of the root (C5 compares each run's jobs value with every
   earlier attempt's; an agent's auto-tune puts hundreds of runs into one root). No
   target: it is watched.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skgate_cmd import skgate_argv  # bench/ is sys.path[0] when run as a script

#: ``skgate`` as a person types it: the console script beside this interpreter.
SKGATE = skgate_argv()
#: The simulated compilers' name prefix, this bench's own: another bench running at the
#: same time on this shared machine is then no foreign compiler to wait for (a wait pads
#: the wall time the CPU is divided by), and this one none of its.
PREFIX = f"skb{os.getpid() % 100000}_"


def last_event(attempt: Path, name: str) -> dict[str, object]:
    lines = (attempt / "events.jsonl").read_text().splitlines()
    found: list[dict[str, object]] = [json.loads(x) for x in lines if f'"event":"{name}"' in x]
    return found[-1]


def _runner_cpu(pid: int) -> float:
    """The runner's own user+system CPU seconds (children excluded), from its
    ``/proc/<pid>/stat`` (fields 14 and 15) while it is a zombie: dead, not yet reaped."""
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    fields = raw[raw.rfind(b")") + 2 :].split()  # fields[0] is field 3 (state)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _runner_sleeps(pid: int) -> int:
    """How often the runner's main thread went to sleep (``voluntary_ctxt_switches`` of
    its ``/proc/<pid>/status``, readable while it is a zombie): one per wait that was not
    answered at once, nearly all of them the supervision loop's, counted exactly whatever
    the machine's load (its CPU time is read in 10 ms ticks)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    return -1


def overhead(
    opc: int, seconds: float, python: str = sys.executable, cache: Path | None = None
) -> dict[str, float]:
    """One supervised run; the runner is the ``skgate run`` process itself (it runs the
    attempt in-process). Its whole-run CPU is read from ``/proc/<pid>/stat`` once it has
    exited (``waitid`` with ``WNOWAIT`` leaves it a zombie, whose stat still holds its
    times), over the wall time from its start to its exit; the journal's
    ``runner_cpu_s`` stamps split that CPU into phases."""
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    cmd = [
        *skgate_argv(python),
        "run",
        "--root",
        "r",
        "--quiet",
        "--jobs",
        str(opc),
        "--",
        sys.executable,
        "-m",
        "skgate.sim.launcher",
        "--inputs",
        str(opc),
    ]
    # Its own compiler names: another checkout's ``opc`` on this shared machine is then no
    # foreign compiler to wait for (a wait would pad the wall time), and ours none of theirs.
    env = {
        **os.environ,
        "SKGATE_SIM_OPC_SECONDS": str(seconds),
        "SKGATE_SIM_PROGRAM_PREFIX": PREFIX,
        "SKGATE_COMPILER_NAMES": f"{PREFIX}opc,{PREFIX}op_compiler",
        **({"XDG_CACHE_HOME": str(cache)} if cache is not None else {}),
    }
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - t0
    cpu = _runner_cpu(proc.pid)
    sleeps = _runner_sleeps(proc.pid)
    if proc.wait() != 0:
        raise SystemExit(f"overhead: skgate run exited {proc.returncode} in {work}")
    att = work / "r" / "attempts" / "0001"
    launched = last_event(att, "launched")
    ended = last_event(att, "tree_ended")
    fin = last_event(att, "finished")
    own = json.loads((att / "ownership.json").read_text())
    hooks = json.loads((att / "control.json").read_text())["controls"]["hooks"]
    supervised_wall = float(ended["mono"]) - float(launched["mono"])  # type: ignore[arg-type]
    at_launch = float(launched["runner_cpu_s"])  # type: ignore[arg-type]
    supervised_cpu = float(ended["runner_cpu_s"]) - at_launch  # type: ignore[arg-type]
    finishing_cpu = float(fin["runner_cpu_s"]) - float(ended["runner_cpu_s"])  # type: ignore[arg-type]
    return {
        "wall_s": wall,
        "supervised_wall_s": supervised_wall,
        "supervised_cpu_s": supervised_cpu,
        "supervised_pct": 100 * supervised_cpu / supervised_wall,
        "total_cpu_s": cpu,
        "total_pct": 100 * cpu / wall,
        "startup_cpu_s": at_launch,
        "finishing_cpu_s": finishing_cpu,
        # The total counts 10 ms ticks, the stamps nanoseconds: never below zero.
        "after_cpu_s": max(0.0, cpu - float(fin["runner_cpu_s"])),  # type: ignore[arg-type]
        "sleeps": sleeps,
        "opc_seen": sum(1 for p in own["owned"] if p["name"] == f"{PREFIX}opc"),
        "probed": float(hooks.get("probe_answer") != "cached"),
    }


LAST_ACT = (
    "import time, sys\n"
    "print('[summary] stage=compile inputs=1 succeeded=1 failed=0', flush=True)\n"
    "import os\n"
    "time.sleep(float(sys.argv[2]))\n"
    "open(sys.argv[1], 'w').write(repr(time.monotonic()))\n"
    "os._exit(0)  # the stamp is the last act: no interpreter teardown after it\n"
)


def flush_floor(work: Path) -> float:
    """Seconds the runner's two flushes take alone, here and now: one round of fsyncs, all
    at once as the runner makes them (eight new files of about 1 KiB, verdict.json's among
    them, and four appended ones), their links, then one directory fsync
    (``Attempt._write_final``). Python, the wake-up and the reading back are left out:
    what is left is the disk's share of the latency."""
    from skgate.evidence.files import _fsync_all  # noqa: PLC0415 - the runner's own round

    d = Path(tempfile.mkdtemp(dir=work))
    appended = [os.open(d / f"a{i}", os.O_WRONLY | os.O_CREAT | os.O_APPEND) for i in range(4)]
    t0 = time.perf_counter()
    for fd in appended:
        os.write(fd, b"x" * 200)
    new = [os.open(d / f".n{i}.tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL) for i in range(8)]
    for fd in new:
        os.write(fd, b"x" * 1024)
    _fsync_all((*new, *appended))
    for i in range(8):
        os.link(d / f".n{i}.tmp", d / f"n{i}")
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    spent = time.perf_counter() - t0
    for fd in (*new, *appended, dfd):
        os.close(fd)
    return spent


def latency(runs: int, settle: float) -> list[dict[str, float]]:
    """Per run, seconds from the workload's last act to the runner's ``tree_ended`` and
    ``finished`` stamps. ``settle``: how long the workload lives first, so the runner is
    waiting in its loop when it exits (a compile lives minutes; the runner loads its
    finishing modules right after the launch, which a workload of a few ms outruns)."""
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    (work / "w.py").write_text(LAST_ACT)
    out = []
    for i in range(1, runs + 1):
        stamp = work / f"t{i}"
        subprocess.run(
            [*SKGATE, "run", "--root", "r", "--quiet", "--",
             sys.executable, "w.py", str(stamp), str(settle)],
            cwd=work,
            check=True,
            stdout=subprocess.DEVNULL,
            env=QUIET_ENV,  # no wait for another checkout's compile
        )  # fmt: skip
        att = work / "r" / "attempts" / f"{i:04d}"
        last = float(stamp.read_text())
        out.append(
            {
                "tree_ended": float(last_event(att, "tree_ended")["mono"]) - last,  # type: ignore[arg-type]
                "finished": float(last_event(att, "finished")["mono"]) - last,  # type: ignore[arg-type]
                "flushes": flush_floor(work),  # right after, on the same disk
            }
        )
    return out


def approvals(python: str, work: Path) -> list[str]:
    """``--approve-hook FP`` for each start-up hook this machine's interpreters carry.

    A hook ``skgate preflight`` names blocks the run (C6), and a blocked run is no
    start-up figure: this machine's pyenv interpreter has a sandbox ``.pth`` since
    2026-12. The approvals are what a user who vetted the hook would pass."""
    approve: list[str] = []
    for _ in range(8):  # a hook's own import can be a hook of its own: ask again
        out = subprocess.run(
            [python, "-m", "skgate", "preflight", "--root", "r-preflight", *approve,
             "--json", "--", "true"],
            cwd=work, capture_output=True, text=True, check=False, env=QUIET_ENV,
        )  # fmt: skip
        new = [
            fp
            for fp in dict.fromkeys(re.findall(r"--approve-hook ([0-9a-f]{64})", out.stdout))
            if fp not in approve
        ]
        if not new:
            return approve
        approve += [arg for fp in new for arg in ("--approve-hook", fp)]
    return approve


#: The foreign-compiler scan runs (its cost counts) but matches no process: another
#: user's compile on a shared machine makes a run wait, which is no start-up figure.
#: PATH as after ``. .venv/bin/activate`` (README): the hook scan probes the ``python3``
#: a workload would start, and this machine's pyenv shim is a bash script that costs
#: about 150 ms per start-up, several times per scan.
QUIET_ENV = {
    **os.environ,
    "SKGATE_COMPILER_NAMES": "skgate-bench-no-such-compiler",
    "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
}


def _timed_run(
    python: str,
    work: Path,
    root: str,
    approve: list[str],
    cache: Path | None = None,
    *,
    module: bool = False,
) -> float:
    """One ``skgate run -- true`` (the console script beside ``python``; ``module``:
    ``python -m skgate`` instead); ``cache``: a hook-probe cache of its own (the skgate
    under ``--against`` keeps its answers apart: an older one may store them otherwise)."""
    env = QUIET_ENV if cache is None else {**QUIET_ENV, "XDG_CACHE_HOME": str(cache)}
    skgate = [python, "-m", "skgate"] if module else skgate_argv(python)
    t0 = time.perf_counter()
    subprocess.run(
        [*skgate, "run", "--root", root, "--quiet", *approve,
         "--verdict-from", "exit-status", "--", "true"],
        cwd=work,
        check=True,  # a blocked or failed run is no start-up figure
        stdout=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    return time.perf_counter() - t0


class Startup:
    """Wall times of :func:`startup`, in seconds."""

    def __init__(self) -> None:
        self.gate: list[float] = []  # skgate run, always in the same directory
        self.ref: list[float] = []  # timeout 60 true
        self.other: list[float] = []  # skgate run under --against
        self.fresh: list[float] = []  # skgate run in a new directory each time
        self.fresh_other: list[float] = []  # the same under --against
        self.module: list[float] = []  # python -m skgate run, in its own directory
        self.answers: dict[str, list[str]] = {}  # root -> hook probe answer of each run


def _answers(root: Path) -> list[str]:
    return [
        json.loads(c.read_text())["controls"]["hooks"].get("probe_answer", "probed")
        for c in sorted((root / "attempts").glob("*/control.json"))
    ]


def startup(runs: int, against: str | None = None) -> Startup:
    """skgate run, timeout (and skgate run under ``against``) wall times, interleaved;
    skgate also in a new working directory per run, as an auto-tune agent gives each
    compile its own (the hook probes' answer may depend on the directory: C6).

    The bytecode of each skgate timed is compiled first (:func:`compile_bytecode`)."""
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    approve = approvals(sys.executable, work)
    out = Startup()
    for i in range(runs):
        out.gate.append(_timed_run(sys.executable, work, "r", approve))
        t0 = time.perf_counter()
        subprocess.run(["timeout", "60", "true"], check=True)
        out.ref.append(time.perf_counter() - t0)
        # Each part keeps its own hook-probe answers: a cache holds one start-up record
        # per key, and a run in another directory may replace it (C6), so parts that
        # shared one would probe for each other.
        if against:
            out.other.append(
                _timed_run(against, work, "r-against", approve, work / "cache-against")
            )
        # ``python -m skgate``: the same run behind runpy, watched beside the command.
        out.module.append(
            _timed_run(sys.executable, work, "r-module", approve, work / "cache-module",
                       module=True)
        )  # fmt: skip
        for python, into, root, cache in (
            (sys.executable, out.fresh, "r-fresh", work / "cache-fresh"),
            *([(against, out.fresh_other, "r-fresh-against", work / "cache-fresh-against")]
              if against else []),
        ):  # fmt: skip
            new = work / f"{root}-dir-{i}"
            new.mkdir()
            into.append(_timed_run(python, new, str(work / root), approve, cache))
    for root in ("r", "r-fresh", "r-module"):
        out.answers[root] = _answers(work / root)
    print(
        "start-up: hook probe answers of the timed runs: "
        + "; ".join(
            f"{where} {a.count('cached')} cached, {len(a) - a.count('cached')} probed"
            for where, a in (
                ("same directory", out.answers["r"]),
                ("new directory", out.answers["r-fresh"]),
                ("python -m skgate", out.answers["r-module"]),
            )
        )
    )
    return out


def root_size(attempts: int) -> list[tuple[float, float]]:
    """(run into the growing root, run into a fresh root) wall times, one pair per
    attempt the growing root gets (see the module doc, part 4)."""
    work = Path(tempfile.mkdtemp(prefix="skgate-bench-"))
    approve = approvals(sys.executable, work)
    pairs = []
    for k in range(attempts):
        shutil.rmtree(work / "r-fresh", ignore_errors=True)
        if k % 2:  # which of the two goes first alternates: no order effect in the pair
            fresh = _timed_run(sys.executable, work, "r-fresh", approve)
            grown = _timed_run(sys.executable, work, "r-grown", approve)
        else:
            grown = _timed_run(sys.executable, work, "r-grown", approve)
            fresh = _timed_run(sys.executable, work, "r-fresh", approve)
        pairs.append((grown, fresh))
    return pairs


def report_root_size(attempts: int) -> None:
    pairs = root_size(attempts)
    fifth = max(1, attempts // 5)
    first, last = pairs[:fifth], pairs[-fifth:]

    def extra(rows: list[tuple[float, float]]) -> float:
        return 1000 * statistics.median(g - f for g, f in rows)

    # Attempts already in the root at the middle of each fifth.
    span = (attempts - fifth) or 1
    slope = (extra(last) - extra(first)) / span
    print(
        f"root size: skgate run -- true into a root growing to {attempts} attempts, each "
        f"run paired with one into a fresh root: over the fresh root median "
        f"{extra(first):+.1f} ms in the first {fifth} runs, {extra(last):+.1f} ms in the last "
        f"{fifth} (into the grown root median {1000 * statistics.median(g for g, _ in last):.0f}"
        f" ms); {slope:+.3f} ms per attempt of the root; no target (watched)"
    )


def compile_bytecode(pythons: list[str]) -> None:
    """Compile the bytecode of the skgate each interpreter imports, as ``pip install``
    leaves it: with ``PYTHONDONTWRITEBYTECODE=1`` (this machine) an editable install would
    compile every changed module from source on every start of every part timed."""
    for python in pythons:
        subprocess.run(
            [python, "-c", "import compileall, os, skgate; "
             "compileall.compile_dir(os.path.dirname(skgate.__file__), quiet=1)"],
            check=True,
        )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opc", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--overhead-runs", type=int, default=1, help="overhead: runs (each --seconds)")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.5,
        help="latency: seconds the workload lives before its last act (default 0.5)",
    )
    ap.add_argument(
        "--root-attempts",
        type=int,
        default=200,
        help="root size: attempts the growing root gets (default 200)",
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument(
        "--against",
        metavar="PYTHON",
        help="overhead and start-up: also time 'skgate run' under this interpreter (another "
        "skgate), interleaved",
    )
    ap.add_argument(
        "--only",
        choices=["overhead", "latency", "startup", "rootsize"],
        action="append",
        help="run only these parts (repeatable; default: all)",
    )
    a = ap.parse_args()
    if a.quick:
        a.opc, a.seconds, a.runs, a.settle, a.root_attempts = 8, 1.0, 3, 0.2, 5
    parts = set(a.only or ["overhead", "latency", "startup", "rootsize"])
    compile_bytecode([sys.executable, *([a.against] if a.against else [])])
    # Every work directory of every part is made in this one, removed at the end (each
    # overhead run's evidence and simulated outputs would otherwise stay in /tmp).
    with tempfile.TemporaryDirectory(prefix="skgate-bench-runner-") as scratch:
        tempfile.tempdir = scratch
        if "overhead" in parts:
            report_overhead(a.opc, a.seconds, a.overhead_runs, a.against)
        if "latency" in parts:
            report_latency(a.runs, a.settle)
        if "startup" in parts:
            report_startup(a.runs, a.against)
        if "rootsize" in parts:
            report_root_size(a.root_attempts)


def report_overhead(opc: int, seconds: float, runs: int = 1, against: str | None = None) -> None:
    """One line per run, then (more than one run) the medians: the runner's CPU comes in
    10 ms ticks and its start-up alone varies by +-15 ms run to run on this machine, so
    one run is no figure to hold a 0.5 % goal against. With ``against``, each run of
    this skgate is followed by one under that interpreter, and their medians compared."""
    trees = {"": sys.executable, **({" under --against": against} if against else {})}
    # The other skgate keeps its hook-probe answers apart (see _timed_run).
    theirs = Path(tempfile.mkdtemp(prefix="skgate-bench-cache-"))
    done: dict[str, list[dict[str, float]]] = {tag: [] for tag in trees}
    for _ in range(runs):
        for tag, python in trees.items():
            o = overhead(opc, seconds, python, theirs if tag else None)
            done[tag].append(o)
            print(
                f"overhead{tag}: {opc} opc for {seconds}s: the runner's own CPU "
                f"(/proc/<pid>/stat) {o['total_cpu_s']:.3f}s = {o['total_pct']:.3f}% of the "
                f"whole run's {o['wall_s']:.2f}s wall (start-up to launch "
                f"{o['startup_cpu_s']:.3f}s, hook probes {'run' if o['probed'] else 'cached'}; "
                f"supervising {o['supervised_wall_s']:.2f}s {o['supervised_cpu_s']:.3f}s = "
                f"{o['supervised_pct']:.3f}%, finishing to the finished event "
                f"{o['finishing_cpu_s']:.3f}s, seal, ledger and exit {o['after_cpu_s']:.3f}s); "
                f"opc in the manifest: {o['opc_seen']:.0f}; the runner slept {o['sleeps']:.0f} "
                f"times (nearly all its loop's wakes); target <= 0.5% whole run"
            )
    medians: dict[str, float] = {}
    for tag, rows in done.items():
        if len(rows) < 2:
            continue
        pct = sorted(o["total_pct"] for o in rows)
        medians[tag] = statistics.median(pct)

        def med(key: str, rows: list[dict[str, float]] = rows) -> float:
            return statistics.median(o[key] for o in rows)

        print(
            f"overhead{tag}, median of {len(rows)} runs: {medians[tag]:.3f}% of the whole "
            f"run (min {pct[0]:.3f}%, max {pct[-1]:.3f}%); start-up to launch "
            f"{med('startup_cpu_s'):.3f}s, supervising {med('supervised_cpu_s'):.3f}s, "
            f"finishing {med('finishing_cpu_s'):.3f}s; target <= 0.5% whole run"
        )
    if len(medians) == 2:
        this, other = medians.values()
        print(f"overhead: ratio of the medians this / against {this / other:.2f}")


def report_latency(runs: int, settle: float) -> None:
    lat = latency(runs, settle)
    fin = [x["finished"] for x in lat]
    ended = [x["tree_ended"] for x in lat]
    print(
        f"latency last exit -> verdict.json (the finished event, journalled right after it): "
        f"median {1000 * statistics.median(fin):.1f} ms, min {1000 * min(fin):.1f}, "
        f"max {1000 * max(fin):.1f} over {len(lat)} runs (workload settled {settle:g} s); "
        f"of it last exit -> tree_ended median {1000 * statistics.median(ended):.1f} ms; "
        f"the two flushes alone (floor: bench_runner.flush_floor) median "
        f"{1000 * statistics.median(x['flushes'] for x in lat):.1f} ms; target median <= 10 ms"
    )


def report_startup(runs: int, against: str | None) -> None:
    got = startup(runs, against)
    mg, mr = statistics.median(got.gate), statistics.median(got.ref)
    print(
        f"start-up: skgate run -- true median {1000 * mg:.0f} ms, timeout 60 true median "
        f"{1000 * mr:.1f} ms: {1000 * (mg - mr):.0f} ms slower ({mg / mr:.0f}x) over "
        f"{runs} interleaved runs; target <= 100 ms slower"
    )
    mf = statistics.median(got.fresh)
    print(
        f"start-up, a new working directory per run (an agent's per-compile directory): "
        f"median {1000 * mf:.0f} ms, {1000 * (mf - mr):.0f} ms slower than timeout; "
        f"no target (watched)"
    )
    mm = statistics.median(got.module)
    print(
        f"start-up through python -m skgate (runpy before skgate's first line; the command "
        f"above is the console script beside {sys.executable}): median {1000 * mm:.0f} ms, "
        f"{1000 * (mm - mr):.0f} ms slower than timeout; no target (watched)"
    )
    if got.other:
        mo, mfo = statistics.median(got.other), statistics.median(got.fresh_other)
        print(
            f"start-up under --against {against}: median {1000 * mo:.0f} ms, ratio this / "
            f"against {mg / mo:.2f}; a new directory per run median {1000 * mfo:.0f} ms, "
            f"ratio this / against {mf / mfo:.2f}"
        )


if __name__ == "__main__":
    main()
