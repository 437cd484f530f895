"""The simulated inference launcher: static-compiles its operators, installs, infers.

``python -m skgate.sim.launcher [--workdir DIR] [--steps N] [--inputs N] [--jobs N]
[--soc SOC] [--fault SPEC]... [--opc-seconds S] [--rank N]``

It behaves like torchair's ``compile_static_kernel`` path (see
``docs/cann-static-compile.md``):

1. "CANN env setup": the Ascend home is ``$ASCEND_HOME_PATH`` or the sandbox
   ``<workdir>/sim_ascend_home`` (never a real system directory).
2. At that normal initialization point it reads ``SKGATE_PROFILER_SCHEDULE`` through the
   ``skgate.preflight.profiler`` helper, as a real launcher would (C6: the schedule goes through the
   launcher's own path, not an interpreter start-up hook). This is the one place the
   simulator uses skgate code: the helper is meant for launchers.
3. Dumps N operator JSONs into ``static_kernel_compile_outputs/ts<ts>_pid<pid>_outputs/
   <pid>_opcompile/`` (deduplicated copies in ``<pid>_opcompile_selected/``), prints
   ``Starting static kernel compilation, the build directory is <result_root>``.
4. Jobs: ``NPU_STATIC_KERNEL_COMPILE_JOBS`` (how the contract freezes them, C5), else
   ``--jobs``, else ``os.cpu_count()`` (the host-derived default C5 warns about); it prints
   which one it used.
5. Runs ``op_compiler`` as a child like torchair (``subprocess.run``, no timeout). On a
   non-zero exit it prints ``execute op_compiler error, msg: <stderr>`` and exits 1.
6. Installs the ``.run`` into the sandbox, prints the install lines and the
   ``Warning: If the process exits abnormally ...`` line, writes
   ``.static_kernel_records.json`` and, with ``ASCEND_OP_COMPILE_SAVE_KERNEL_META=1``,
   ``sk_meta/<pid>/model_0_0/*.log``.
7. Runs ``--steps`` inference steps and prints ``skgate-sim: inference completed (steps=N)``.

Exit status: 0 success, 1 compile failure, 2 bad arguments / faults / environment.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from skgate.model.errors import UsageError
from skgate.preflight.profiler import (
    ProfilerSchedule,
    build_schedule,
    find_framework_schedule,
    schedule_from_env,
)

from . import common, faults, install

#: The framework default the simulator applies when no schedule is handed over.
DEFAULT_SCHEDULE = ProfilerSchedule(wait=0, warmup=0, active=1)

ROLE = "launcher"
COMPLETION = "skgate-sim: inference completed (steps={steps})"
OP_TYPES = ("HcPre", "MatMulV3", "AddRmsNorm", "GroupedMatmul", "SwiGlu", "HcPost")
LOG_LEVELS = {"0": "debug", "1": "info", "2": "warning", "3": "error", "4": "null"}


class LauncherError(Exception):
    """Bad arguments or environment: one line on stderr, exit 2."""


def recorded_steps(sched: ProfilerSchedule | None, steps: int) -> list[int]:
    """Steps (0-based) the profiler records, with torch's schedule semantics.

    The simulator stands in for the framework here: with torch installed the launcher
    also builds the real schedule object through ``skgate.preflight.profiler.build_schedule``.
    """
    s = sched or DEFAULT_SCHEDULE
    out: list[int] = []
    cycle = s.wait + s.warmup + s.active
    for step in range(steps):
        if step < s.skip_first:
            continue
        k = step - s.skip_first
        if s.repeat and k // cycle >= s.repeat:
            continue
        if k % cycle >= s.wait + s.warmup:
            out.append(step)
    return out


def _schedule_line(s: ProfilerSchedule) -> str:
    return (
        f"skgate-sim: profiler schedule wait={s.wait} warmup={s.warmup} "
        f"active={s.active} repeat={s.repeat} skip_first={s.skip_first}"
    )


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m skgate.sim.launcher",
        description="Simulated inference process that static-compiles SuperKernel operators.",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="working directory (default: cwd)")
    ap.add_argument("--steps", type=int, default=3, help="inference steps after compiling")
    ap.add_argument("--inputs", type=int, default=4, help="operator JSONs to compile")
    ap.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="jobs when NPU_STATIC_KERNEL_COMPILE_JOBS is unset (default: os.cpu_count())",
    )
    ap.add_argument("--soc", default="Ascend910B1", help="SoC version passed as -v")
    ap.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="fault items (see skgate.sim.faults); added to SKGATE_SIM_FAULTS for children",
    )
    ap.add_argument("--opc-seconds", type=float, default=None, help="seconds each opc takes")
    ap.add_argument("--rank", type=int, default=None, help="prefix lines with 'Rank N: '")
    ap.add_argument("--deterministic", action="store_true", help="d1 input names")
    ns = ap.parse_args(argv)
    check_common(ns)
    if ns.jobs is not None and ns.jobs < 1:
        raise LauncherError("--jobs must be >= 1")
    return ns


def check_common(ns: argparse.Namespace) -> None:
    """The checks every simulated launcher flavour shares (bad values: exit 2)."""
    if ns.steps < 0 or ns.inputs < 0:
        raise LauncherError("--steps and --inputs must be >= 0")
    if ns.opc_seconds is not None and not 0.0 <= ns.opc_seconds < float("inf"):
        raise LauncherError("--opc-seconds must be finite and >= 0")


def choose_jobs(env_value: str | None, flag: int | None) -> tuple[int, str]:
    """The compile jobs in use and where they came from (C5 wants this recorded)."""
    if env_value is not None and env_value.strip():
        text = env_value.strip()
        if not text.isdigit() or int(text) < 1:
            raise LauncherError(f"{common.ENV_JOBS}={env_value!r}: expected a whole number >= 1")
        return int(text), common.ENV_JOBS
    if flag is not None:
        return flag, "--jobs"
    return os.cpu_count() or 1, "os.cpu_count() (host-derived default)"


def dump_inputs(result_root: Path, pid: int, count: int, deterministic: bool) -> Path:
    """Write operator JSONs and the deduplicated selection; return the selected dir."""
    dumped = result_root / f"{pid}_opcompile"
    selected = result_root / f"{pid}_opcompile_selected"
    blacklist = result_root / f"{pid}_opcompile_blacklist"
    for d in (dumped, selected, blacklist):
        d.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for i in range(count):
        op = OP_TYPES[i % len(OP_TYPES)]
        shape = [16, 128 * (i + 1)]
        body = json.dumps(
            {
                "op_type": op,
                "deterministic": deterministic,
                "inputs": [{"dtype": "float16", "format": "ND", "shape": shape}],
            },
            sort_keys=True,
        )
        digest = hashlib.sha256(body.encode()).hexdigest()
        # Named as real dumps are: <OpType>_<dtype>_<format>_<shape...>_<n>.json (the
        # compile logs are not named after the input: see op_compiler).
        name = f"{op}_float16_ND_{'_'.join(map(str, shape))}_{i}.json"
        (dumped / name).write_text(body + "\n", encoding="utf-8")
        if digest not in seen:
            seen.add(digest)
            (selected / name).write_text(body + "\n", encoding="utf-8")
    return selected


def _die_by(sig: int) -> None:
    """Fault ``die_signal``: end this process by ``sig`` like a crash would (no core file)."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    # The signal is delivered before kill() returns for a fatal default action.
    os._exit(128 + sig)


def _newest_run(result_root: Path) -> Path | None:
    runs = sorted(result_root.glob("static_kernel_*.run"), key=lambda p: p.stat().st_mtime)
    return runs[-1] if runs else None


def run(ns: argparse.Namespace, f: faults.Faults, fault_env: str) -> int:
    workdir = (ns.workdir or Path.cwd()).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    prefix = f"Rank {ns.rank}: " if ns.rank is not None else ""
    pid = os.getpid()

    # 1. CANN env setup.
    home, sandbox = install.resolve_home(workdir, os.environ.get(common.ENV_ASCEND_HOME))
    try:
        install.check_sandbox(home)
    except install.InstallRefused as exc:
        raise LauncherError(str(exc)) from None
    kind = "sandbox" if sandbox else "from ASCEND_HOME_PATH"
    common.say(f"skgate-sim: CANN env setup done (ASCEND_HOME_PATH={home}, {kind})")

    # 2. Profiler configuration at the launcher's normal initialization point (C6).
    sched_text = os.environ.get(common.ENV_PROFILER_SCHEDULE)
    profile = os.environ.get(common.ENV_PROFILE) == "1"
    sched: ProfilerSchedule | None = None
    if sched_text is not None:
        # The skgate.preflight.profiler helper, exactly as a real launcher would use it (C6).
        try:
            sched = schedule_from_env()
        except UsageError as exc:
            raise LauncherError(f"{common.ENV_PROFILER_SCHEDULE}: {exc}") from None
    if sched is not None:
        common.say(_schedule_line(sched))
        if find_framework_schedule() is not None:
            _, limitations = build_schedule(sched)
            for note in limitations:
                common.say(f"skgate-sim: profiler limitation: {note}")
    if profile:
        common.say(f"skgate-sim: profiler enabled ({common.ENV_PROFILE}=1)")

    # 3. Dump inputs.
    stamp = datetime.now().strftime("%Y%m%d%H%M%S%f")
    result_root = workdir / "static_kernel_compile_outputs" / f"ts{stamp}_pid{pid}_outputs"
    selected = dump_inputs(result_root, pid, ns.inputs, ns.deterministic)
    common.say(f"{prefix}Starting static kernel compilation, the build directory is {result_root}")

    # 4. Jobs (C5).
    jobs, source = choose_jobs(os.environ.get(common.ENV_JOBS), ns.jobs)
    common.say(f"skgate-sim: compile jobs={jobs} (source: {source})")

    # 5. op_compiler, as torchair runs it.
    level = LOG_LEVELS.get(os.environ.get("ASCEND_GLOBAL_LOG_LEVEL", "3"), "error")
    cargs = ["-p", str(selected), "-v", ns.soc, "-j", str(jobs), "-o", str(result_root)]
    cargs += ["--enable_super_kernel", "-l", level]
    argv = common.program_argv("op_compiler", "op_compiler", cargs)
    env = dict(os.environ)
    if fault_env:
        env[faults.ENV_FAULTS] = fault_env
    if ns.opc_seconds is not None:
        env[common.ENV_OPC_SECONDS] = repr(ns.opc_seconds)
    exe = common.python_executable()
    t0 = time.monotonic()
    if f.leader_exit_early or f.die_signal is not None:
        rfd, wfd = os.pipe()
        env[common.ENV_READY_FD] = str(wfd)
        # stderr is not captured: nobody would read the pipe once this process is gone.
        child = subprocess.Popen(
            argv, executable=exe, env=env, stdin=subprocess.DEVNULL, pass_fds=(wfd,)
        )
        os.close(wfd)
        os.read(rfd, 1)  # returns when the first opc runs, or at EOF when op_compiler ends
        os.close(rfd)
        if f.die_signal is not None:
            common.say(f"skgate-sim: launcher dying by signal {f.die_signal} (fault die_signal)")
            _die_by(f.die_signal)
        common.say("skgate-sim: launcher exiting early while op_compiler runs (leader_exit_early)")
        common.write_marker(ROLE, "finished", {"exit": 0, "early": True, "child": child.pid})
        os._exit(0)
    proc = subprocess.run(
        argv, executable=exe, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    stderr = proc.stderr.decode("utf-8", "backslashreplace")
    if stderr:
        # torchair keeps the compiler's stderr for its message; the log keeps it too.
        sys.stderr.write(stderr)
        sys.stderr.flush()
    if proc.returncode != 0:
        msg = stderr.strip() or f"op_compiler exited with status {proc.returncode}"
        common.say(f"{prefix}execute op_compiler error, msg: {msg}", err=True)
        return 1
    common.say(f"skgate-sim: op_compiler returned 0 after {time.monotonic() - t0:.2f}s")

    # 6. Install.
    run_pkg = _newest_run(result_root)
    kernels: list[str] = []
    if run_pkg is not None:
        common.say("Verifying archive integrity...  100%   SHA256 checksums are OK. All good.")
        common.say("Uncompressing STATIC KERNEL RUN PACKAGE  100%")
        try:
            uninstall = install.install_package(home, run_pkg, ns.soc)
        except install.InstallRefused as exc:
            raise LauncherError(str(exc)) from None
        common.say(
            "Warning: If the process exits abnormally, you must manually uninstall the "
            f"static kernel package by executing: {uninstall}"
        )
        install.write_record(workdir, run_pkg, uninstall, pid, common.start_ticks(pid))
        kernels = [
            p.name[: -len("_compile_succ.log")]
            for p in sorted(result_root.glob("*_compile_log/*_compile_succ.log"))
        ]
        cache = workdir / "static_kernel_compile_outputs" / "static_kernel_cache"
        cache.mkdir(parents=True, exist_ok=True)
        (cache / f"CANN-{install.SIM_CANN_VERSION}_{ns.soc}.json").write_text(
            json.dumps({"run_packages": [str(run_pkg)]}) + "\n", encoding="utf-8"
        )
    if os.environ.get(common.ENV_SAVE_KERNEL_META) == "1":
        meta = install.write_sk_meta(workdir, pid, kernels)
        common.say(f"skgate-sim: SK fusion evidence in {meta}")

    # 7. Inference.
    recorded = recorded_steps(sched, ns.steps) if profile else []
    for step in range(ns.steps):
        common.say(f"skgate-sim: step {step + 1}/{ns.steps}")
    if profile:
        prof_dir = workdir / "profiling" / f"skgate_sim_{pid}"
        prof_dir.mkdir(parents=True, exist_ok=True)
        (prof_dir / "profiler_info.json").write_text(
            json.dumps(
                {
                    "pid": pid,
                    "steps": ns.steps,
                    "recorded_steps": recorded,
                    "schedule": (sched or DEFAULT_SCHEDULE).as_kwargs(),
                }
            )
            + "\n",
            encoding="utf-8",
        )
        common.say(f"skgate-sim: profiler data in {prof_dir}")
    sk_kb = os.environ.get(common.ENV_PROF_SK)
    if sk_kb:
        trace = workdir / "sk_prof_device_0.json"
        trace.write_text(
            json.dumps({"buffer_kb": sk_kb, "kernels": kernels}) + "\n", encoding="utf-8"
        )
        common.say(f"skgate-sim: SK trace ({common.ENV_PROF_SK}={sk_kb}) in {trace}")
    common.say(COMPLETION.format(steps=ns.steps))
    common.write_marker(ROLE, "finished", {"exit": 0})
    return 0


def main(argv: list[str] | None = None) -> int:
    common.write_marker(ROLE, "started")
    try:
        ns = _parse(sys.argv[1:] if argv is None else argv)
        fault_env = faults.combine(os.environ.get(faults.ENV_FAULTS, ""), *ns.fault)
        f = faults.parse(fault_env)
        return run(ns, f, fault_env)
    except (faults.FaultSpecError, LauncherError) as exc:
        common.say(f"skgate-sim launcher: {exc}", err=True)
        return 2
    except OSError as exc:
        common.say(f"skgate-sim launcher: {exc}", err=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
