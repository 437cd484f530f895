"""The simulated torchair launcher: npugraph_ex's ``compile_static_kernel`` path, as it is.

``python -m skgate.sim.torchair [--workdir DIR] [--steps N] [--inputs N] [--soc SOC]
[--fault SPEC]... [--opc-seconds S] [--cache] [--cpu-count N] [--cann 8|9]
[--nproc N] [--op-compiler-summary] [--op-compiler-from-path]``

Unlike :mod:`skgate.sim.launcher` (which prints ``[summary]`` lines and fails loudly),
this flavour behaves like torchair's public ``static_kernel.py`` (see
``docs/cann-static-compile.md``, "What the real launcher does"):

- the start line comes first, before the dump and before the cache lookup, as a Python
  ``UserWarning`` on stderr (``file:line: UserWarning: ...`` and the indented source
  line), ``Rank N: `` prefixed multi-card;
- it dumps op JSONs (``<OpType>_<dtype>_<format>_<shape...>_<n>.json``) into
  ``static_kernel_compile_outputs/ts<ts>_pid<pid>_outputs/<pid>_opcompile/`` and
  ``<pid>_opcompile_selected/``;
- it runs ``op_compiler -p DIR -v SOC -j $(os.cpu_count()) -o ROOT [-l LEVEL] [-f true]
  [--enable_super_kernel]`` with ``subprocess.run(check=True)`` and no timeout: it never
  reads ``NPU_STATIC_KERNEL_COMPILE_JOBS`` (``--cpu-count`` stands in for the host's CPU
  count; Python >= 3.13 would also honour ``PYTHON_CPU_COUNT``; ``--op-compiler-from-path``
  looks ``op_compiler`` up on PATH, as torchair does, where ``python -m skgate.sim.bin DIR``
  puts the sim's); ``-f true`` only with
  ``--cann 9``; ``-l`` follows ``ASCEND_GLOBAL_LOG_LEVEL`` and is omitted at level 4
  (none, also when unset); ``--log-variants 2`` makes op_compiler write ``_d0`` and
  ``_d1`` logs per input;
- op_compiler's output is captured (``--cann 8``, the default: shown only on failure) or
  goes to the terminal (``--cann 9``); op_compiler prints no ``[summary]`` line unless
  ``--op-compiler-summary`` (a runtime that does);
- a failing op_compiler is swallowed: ``UserWarning: execute op_compiler error, msg:
  <stderr>``, no package installed, inference carries on, **exit 0**;
- ``--cache``: a compile cache ``static_kernel_cache/CANN-<version>_<soc>.json`` (a flat
  ``{key: run_path}``, plus a ``.lock``) keyed by the selected inputs' hashes, the
  super-kernel config and deterministic mode and level (2.14's key): a hit installs the
  cached ``.run`` and runs no op_compiler; a miss compiles and adds the entry; a cached
  entry whose ``.run`` is gone is a silent miss and a recompile. The hit and miss lines
  (``Static kernel cache hit: PATH``, ``No matching cache found for key : KEY``) are
  logger INFO lines, printed only with ``TORCH_COMPILE_DEBUG=1``: **by default a cache
  hit prints nothing** but the start line;
- ``--nproc N`` (a torchrun stand-in) starts N ranks with ``LOCAL_RANK`` /
  ``LOCAL_WORLD_SIZE``; every rank dumps its JSONs, local rank 0 gathers them into
  ``<pid>_opcompile_gathered/``, compiles once and installs, the others wait.

Exit status: 0 (also when the compile failed: that is the point), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from datetime import datetime
from pathlib import Path

from . import common, faults, install
from .launcher import COMPLETION, LOG_LEVELS, LauncherError, check_common, dump_inputs
from .op_compiler import ENV_LOG_VARIANTS

ROLE = "torchair"
ENV_RANK_DIR = "SKGATE_SIM_RANK_DIR"
#: torchair waits at a Gloo barrier with this timeout (seconds).
BARRIER_TIMEOUT = 1800.0
CACHE_DIRNAME = "static_kernel_cache"
CACHING_NOTICE = (
    "The current version now supports caching run packages from static kernel compilation, "
    "it is recommended to delete the compilation cache and recompile when you use "
    "`torch.npu.npugraph_ex.inference.cache_compile` and do not use force_eager=True."
)
#: torchair's logger prints INFO lines only in debug mode (its default level is ERROR).
ENV_DEBUG = "TORCH_COMPILE_DEBUG"
#: ``1``: the SuperKernel JIT leaves ``kernel_meta/<name>.o`` in the working directory,
#: as graph-autofusion's ``compile()`` does (fact 8a); a later run finds it stale.
ENV_SK_JIT = "SKGATE_SIM_SK_JIT"
SK_KERNEL_NAME = "ascendc_super_kernel_plus"
#: torchair's warning when a multi-card context has no LOCAL_WORLD_SIZE (fact 6f).
LOCAL_WORLD_SIZE_WARNING = (
    "Environment variables 'LOCAL_WORLD_SIZE' is not set in a multi-card context. "
    "As a result, the static kernel feature will be disabled. "
    "To resolve this, please either launch the process via torchrun,"
    "or manually configure the 'LOCAL_WORLD_SIZE' environment variables. "
)


def _warn(message: str) -> None:
    # A real Python warning, so the log shows "file:line: UserWarning: ..." and the
    # indented source line exactly as torchair's warnings do.
    warnings.warn(message, UserWarning, stacklevel=1)
    sys.stderr.flush()


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m skgate.sim.torchair",
        description="Simulated torchair (npugraph_ex) launcher that static-compiles operators.",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="working directory (default: cwd)")
    ap.add_argument("--steps", type=int, default=3, help="inference steps")
    ap.add_argument("--inputs", type=int, default=4, help="operator JSONs to dump")
    ap.add_argument("--soc", default="Ascend910B1", help="SoC version passed as -v")
    ap.add_argument("--fault", action="append", default=[], metavar="SPEC", help="fault items")
    ap.add_argument("--opc-seconds", type=float, default=None, help="seconds each opc takes")
    ap.add_argument("--cache", action="store_true", help="turn the compile cache on")
    ap.add_argument(
        "--cpu-count", type=int, default=None, help="stand-in for os.cpu_count() (the -j)"
    )
    ap.add_argument("--cann", choices=("8", "9"), default="8", help="CANN major version")
    ap.add_argument("--nproc", type=int, default=None, help="start N local ranks (torchrun)")
    ap.add_argument(
        "--op-compiler-summary",
        action="store_true",
        help="let op_compiler print its [summary] lines (real torchair runtimes do not)",
    )
    ap.add_argument("--no-super-kernel", action="store_true", help="omit --enable_super_kernel")
    ap.add_argument(
        "--log-variants",
        type=int,
        choices=(1, 2),
        default=1,
        help="per-input logs op_compiler writes (2: _d0 and _d1)",
    )
    ap.add_argument("--deterministic", action="store_true", help="deterministic mode")
    ap.add_argument(
        "--op-compiler-from-path",
        action="store_true",
        help="find op_compiler on PATH, as a real launcher does (see python -m skgate.sim.bin)",
    )
    ns = ap.parse_args(argv)
    check_common(ns)
    if ns.cpu_count is not None and ns.cpu_count < 1:
        raise LauncherError("--cpu-count must be >= 1")
    if ns.nproc is not None and ns.nproc < 1:
        raise LauncherError("--nproc must be >= 1")
    return ns


def _rank_info() -> tuple[int, int]:
    """(local rank, local world size) from the environment torchrun sets."""
    try:
        world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        rank = int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        raise LauncherError("LOCAL_RANK / LOCAL_WORLD_SIZE must be whole numbers") from None
    if world < 1 or not 0 <= rank < world:
        raise LauncherError(f"LOCAL_RANK={rank} is not within LOCAL_WORLD_SIZE={world}")
    return rank, world


def _multi_card_without_local_world_size() -> bool:
    """A multi-card context (the sim's stand-in: ``WORLD_SIZE`` > 1) with no
    ``LOCAL_WORLD_SIZE``: torchair disables the static compile there (fact 6f)."""
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return False
    return world > 1 and not os.environ.get("LOCAL_WORLD_SIZE")


def _info(message: str) -> None:
    """A torchair logger INFO line: printed only under ``TORCH_COMPILE_DEBUG=1``."""
    if os.environ.get(ENV_DEBUG) != "1":
        return
    stamp = datetime.now().strftime("%Y-%m-%d-%H:%M:%S.%f")[:-3]
    common.say(f"[INFO] NPUGRAPH_EX({os.getpid()},python):{stamp} [static_kernel.py] {message}")


def _cache_key(selected: Path, super_kernel: bool, deterministic: bool) -> str:
    """Over the ops' hashes, the super-kernel config, deterministic mode and level, as
    torch-npu 2.14.0 computes it (static_kernel.py l.1087-1132; the sim sets no
    super-kernel options and level 0): a changed kernel ``.o`` does not change it (C6)."""
    h = hashlib.sha256()
    for digest in sorted(
        hashlib.sha256(p.read_bytes()).hexdigest() for p in selected.glob("*.json")
    ):
        h.update(digest.encode())
    config = 'True{"debug_options":null,"optimize_options":null}' if super_kernel else "False"
    h.update(config.encode())
    h.update(b"1" if deterministic else b"0")
    h.update(b"0")  # str(torch_npu.npu._get_deterministic_level())
    return h.hexdigest()


def _cache_file(workdir: Path, soc: str) -> Path:
    d = workdir / "static_kernel_compile_outputs" / CACHE_DIRNAME
    return d / f"CANN-{install.SIM_CANN_VERSION}_{soc}.json"


def _read_cache(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def _write_cache(path: Path, entries: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # torchair: cache_file.with_suffix(".lock") (fact 5a).
    path.with_suffix(".lock").touch()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _install(
    workdir: Path, home: Path, run_pkg: Path, soc: str, prefix: str, *, fault_env: str = ""
) -> None:
    if faults.parse(fault_env).install_fail:
        # torch-npu 2.14 npugraph_ex static_kernel.py line 760: the CalledProcessError is
        # caught and only warned about; nothing is installed and inference carries on.
        _warn(f"{prefix}{run_pkg.name} install failed, msg: None\nsim: install refused")
        return
    # torchair captures the package's own output: shown only as a debug line.
    _info(
        f"{run_pkg.name} install success, msg: Verifying archive integrity...  100%   "
        "SHA256 checksums are OK. All good. Uncompressing STATIC KERNEL RUN PACKAGE  100%"
    )
    try:
        uninstall = install.install_package(home, run_pkg, soc)
    except install.InstallRefused as exc:
        raise LauncherError(str(exc)) from None
    common.say(
        f"{prefix}Warning: If the process exits abnormally, you must manually uninstall the "
        f"static kernel package by executing: {uninstall}"
    )


def _compile(
    ns: argparse.Namespace, params: Path, result_root: Path, prefix: str, env: dict[str, str]
) -> Path | None:
    """Run op_compiler as torchair does; the newest .run on success, None if it failed."""
    jobs = ns.cpu_count if ns.cpu_count is not None else (os.cpu_count() or 16)
    level = os.environ.get("ASCEND_GLOBAL_LOG_LEVEL", "3")
    cargs = ["-p", str(params), "-v", ns.soc, "-j", str(jobs), "-o", str(result_root)]
    if level != "4":
        cargs += ["-l", LOG_LEVELS.get(level, "error")]
    if ns.cann == "9":
        cargs += ["-f", "true"]
    if not ns.no_super_kernel:
        cargs.append("--enable_super_kernel")
    if ns.op_compiler_from_path:
        # As torchair does: the name, looked up on the PATH of the launcher's environment
        # (a shim put first on it is what runs).
        argv, executable = ["op_compiler", *cargs], None
    else:
        argv = common.program_argv("op_compiler", "op_compiler", cargs)
        executable = common.python_executable()
    capture = ns.cann == "8"
    try:
        subprocess.run(
            argv,
            executable=executable,
            env=env,
            stdin=subprocess.DEVNULL,
            check=True,
            capture_output=capture,
            text=True,
        )
    except subprocess.CalledProcessError as exc:
        # torchair catches it, warns and carries on without static kernels (exit 0).
        # From CANN 9 stderr is not captured: the message reads "msg: None".
        _warn(f"{prefix}execute op_compiler error, msg: {exc.stderr}")
        return None
    runs = sorted(result_root.glob("static_kernel_*.run"), key=lambda p: p.stat().st_mtime)
    # op_compiler's own "generate run package" line was captured before CANN 9 (shown
    # only in debug mode); from CANN 9 it reached the log directly.
    return runs[-1] if runs else None


def _barrier(rank_dir: Path, name: str) -> None:
    """Wait for ``rank_dir/name`` (the sim's stand-in for the Gloo barrier)."""
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not (rank_dir / name).exists():
        if time.monotonic() > deadline:
            raise LauncherError(f"barrier {name}: timed out after {BARRIER_TIMEOUT:.0f} s")
        time.sleep(0.02)


def _mark(rank_dir: Path, name: str, text: str = "") -> None:
    tmp = rank_dir / f".{name}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, rank_dir / name)


def rank_main(ns: argparse.Namespace, fault_env: str) -> int:
    workdir = (ns.workdir or Path.cwd()).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    rank, world = _rank_info()
    multi = world > 1
    prefix = f"Rank {rank}: " if multi else ""
    pid = os.getpid()
    home, _ = install.resolve_home(workdir, os.environ.get(common.ENV_ASCEND_HOME))
    try:
        install.check_sandbox(home)
    except install.InstallRefused as exc:
        raise LauncherError(str(exc)) from None

    if _multi_card_without_local_world_size():
        # torchair turns static kernels off with only a UserWarning and carries on.
        _warn(LOCAL_WORLD_SIZE_WARNING)
        return _infer(ns, prefix)
    stamp = datetime.now().strftime("%Y%m%d%H%M%S%f")
    result_root = workdir / "static_kernel_compile_outputs" / f"ts{stamp}_pid{pid}_outputs"
    # The start line comes first: before the dump and before the cache lookup, so a
    # cache hit leaves it, a root holding only JSONs, and nothing else.
    if not multi:
        _warn(CACHING_NOTICE)
    if multi:
        _warn(
            f"{prefix}starting static kernel compilation for multi card, the build directory "
            f"is {result_root}"
        )
    else:
        _warn(f"Starting static kernel compilation, the build directory is {result_root}")
    # Rank r > 0 holds one operator the others do not, so gathering has work to do.
    selected = dump_inputs(result_root, pid, ns.inputs + rank, ns.deterministic)

    env = dict(os.environ)
    child_faults = fault_env if ns.op_compiler_summary else faults.combine(fault_env, "no_summary")
    if child_faults:
        env[faults.ENV_FAULTS] = child_faults
    if ns.opc_seconds is not None:
        env[common.ENV_OPC_SECONDS] = repr(ns.opc_seconds)
    if ns.log_variants == 2:
        env[ENV_LOG_VARIANTS] = "2"

    rank_dir = Path(os.environ.get(ENV_RANK_DIR) or (workdir / ".skgate_sim_ranks"))
    if multi:
        rank_dir.mkdir(parents=True, exist_ok=True)
        _mark(rank_dir, f"rank{rank}.dumped", str(selected))
        if rank != 0:
            common.say(f"skgate-sim: {prefix}waiting for local rank 0 to compile static kernels")
            _barrier(rank_dir, "rank0.done")
            return _infer(ns, prefix)
        for r in range(1, world):
            _barrier(rank_dir, f"rank{r}.dumped")
        gathered = result_root / f"{pid}_opcompile_gathered"
        gathered.mkdir(exist_ok=True)
        seen: set[str] = set()
        for r in range(world):
            src = Path((rank_dir / f"rank{r}.dumped").read_text(encoding="utf-8"))
            for p in sorted(src.glob("*.json")):
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
                if digest not in seen:
                    seen.add(digest)
                    (gathered / p.name).write_bytes(p.read_bytes())
        params = gathered
    else:
        params = selected

    try:
        run_pkg = _cached_or_compiled(ns, workdir, params, result_root, prefix, env, multi)
        if run_pkg is not None:
            _install(workdir, home, run_pkg, ns.soc, prefix, fault_env=fault_env)
            if os.environ.get(ENV_SK_JIT) == "1" and not ns.no_super_kernel:
                meta = workdir / "kernel_meta"
                meta.mkdir(exist_ok=True)
                obj = meta / f"{SK_KERNEL_NAME}.o"
                # graph-autofusion's compile() returns early when it exists (fact 8a).
                if not obj.exists():
                    obj.write_bytes(b"\x7fELF skgate-sim super kernel\n")
    finally:
        if multi:
            _mark(rank_dir, "rank0.done")
    return _infer(ns, prefix)


def _cached_or_compiled(  # noqa: PLR0917 - one private step of rank_main
    ns: argparse.Namespace,
    workdir: Path,
    params: Path,
    result_root: Path,
    prefix: str,
    env: dict[str, str],
    multi: bool,
) -> Path | None:
    cache_path = _cache_file(workdir, ns.soc)
    key = _cache_key(params, not ns.no_super_kernel, ns.deterministic)
    entries = _read_cache(cache_path) if ns.cache else {}
    cached = Path(entries[key]) if ns.cache and key in entries else None
    if cached is not None and cached.is_file():
        _info(f"Static kernel cache hit: {cached}")
        return cached
    # A cached .run gone missing is a silent miss: it compiles again.
    if ns.cache:
        _info(f"No matching cache found for key : {key}")
    run_pkg = _compile(ns, params, result_root, prefix, env)
    if ns.cache and run_pkg is not None:
        entries[key] = str(run_pkg)
        _write_cache(cache_path, entries)
    return run_pkg


def _infer(ns: argparse.Namespace, prefix: str) -> int:
    for step in range(ns.steps):
        common.say(f"skgate-sim: {prefix}step {step + 1}/{ns.steps}")
    common.say(COMPLETION.format(steps=ns.steps))
    common.write_marker(ROLE, "finished", {"exit": 0})
    return 0


def torchrun(ns: argparse.Namespace, argv: list[str]) -> int:
    """``--nproc N``: start N ranks like torchrun and wait for all of them."""
    workdir = (ns.workdir or Path.cwd()).resolve()
    rank_dir = workdir / f".skgate_sim_ranks_{os.getpid()}"
    rank_dir.mkdir(parents=True, exist_ok=True)
    rest: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--nproc":
            next(words, None)  # its value
        elif not word.startswith("--nproc="):
            rest.append(word)
    procs = []
    for rank in range(ns.nproc):
        env = dict(os.environ)
        env["LOCAL_RANK"] = str(rank)
        env["LOCAL_WORLD_SIZE"] = str(ns.nproc)
        env[ENV_RANK_DIR] = str(rank_dir)
        procs.append(
            subprocess.Popen(
                [common.python_executable(), "-m", "skgate.sim.torchair", *rest],
                env=env,
                stdin=subprocess.DEVNULL,
            )
        )
    codes = [p.wait() for p in procs]
    return max(codes)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    common.write_marker(ROLE, "started")
    try:
        ns = _parse(args)
        fault_env = faults.combine(os.environ.get(faults.ENV_FAULTS, ""), *ns.fault)
        faults.parse(fault_env)
        if ns.nproc is not None and ns.nproc > 1:
            return torchrun(ns, args)
        return rank_main(ns, fault_env)
    except (faults.FaultSpecError, LauncherError, OSError) as exc:
        common.say(f"skgate-sim torchair: {exc}", err=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
