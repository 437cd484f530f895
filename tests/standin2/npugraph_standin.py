#!/usr/bin/env python3
"""A second stand-in for torchair's static-kernel compile (issue 19), standard library only.

Written from Ascend/torchair ``npugraph_ex/npugraph_ex/_acl_concrete_graph/static_kernel.py``
and ``npugraph_ex/core/utils.py`` (commit fced884, README.md of this directory lists each
fact and its source), not from skgate's simulator or census. One ``--graph`` is one
``compile_static_kernel`` call: a fresh ``ts<%Y%m%d%H%M%S%f>_pid<pid>_outputs`` root, the
start line (a UserWarning) before the dump and before the cache lookup, the dump, the
selection, the cache lookup, ``op_compiler`` with torchair's argv, the cache update, the
install. A failing op_compiler is swallowed (a warning, exit 0), as torchair does.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path

DEVICE = "Ascend910B1"
CACHE_NOTICE = (
    "The current version now supports caching run packages from static kernel compilation, "
    "it is recommended to delete the compilation cache and recompile "
    "when you use `torch.npu.npugraph_ex.inference.cache_compile` and do not use force_eager=True."
)


def _logger() -> logging.Logger:
    """npugraph_ex's logger: ERROR unless TORCH_COMPILE_DEBUG=1, to stdout (core/utils.py)."""
    log = logging.getLogger("npugraph_ex")
    handler = logging.StreamHandler(sys.stdout)
    fmt = (
        f"[%(levelname)s] NPUGRAPH_EX({os.getpid()},{os.path.basename(sys.executable)}):"
        f"%(asctime)s [%(filename)s:%(lineno)d]{threading.get_native_id()} %(message)s"
    )
    handler.setFormatter(logging.Formatter(fmt))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if os.getenv("TORCH_COMPILE_DEBUG") == "1" else logging.ERROR)
    return log


logger = _logger()
_compiled_op_set: set[str] = set()
_installed_run_pkgs: set[str] = set()
_uninstall_paths: list[str] = []


def op_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def result_root_for(base: Path) -> Path:
    out = base / "static_kernel_compile_outputs"
    out.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d%H%M%S%f")
    root = out / f"ts{stamp}_pid{os.getpid()}_outputs"
    root.mkdir(exist_ok=True)
    return root


_dumped: set[str] = set()
_counters = {"": 0, "_debug": 0, "_opcompile": 0}
#: opbase op_info_serialize.cpp: white-listed op types also go to ``<pid>/``; op types of
#: its own black list never reach ``<pid>_opcompile/`` (only ``_debug/``).
WHITE = {"MatMulV2", "MatMul", "BatchMatMulV2", "BatchMatMul", "Transpose", "LayerNorm"}
BLACK = {"ReduceSum", "ReduceMin", "ReduceMax", "GatherV2", "GatherV3", "ArgMaxWithValue"}


def dump(root: Path, graph: str, per_process: bool) -> None:
    """What torch_npu's dump writes (opbase ``DumpJsonToFile``): ``<pid>_opcompile/``,
    ``<pid>_debug/`` and ``<pid>/``, one counter per directory and process, identical
    JSONs once per dump session (the sets are cleared by ``OpInfoDump``; ``per_process``:
    once per process, the reading the source does not support, kept as a variant)."""
    seen: set[str] = _dumped if per_process else set()
    for spec in graph.split(","):
        op_type, dtype, shape, *rest = spec.split(":")
        attr = rest[0] if rest else ""
        fmt = rest[1] if len(rest) > 1 else "ND"
        dims = [int(d) for d in shape.split("x")] if shape != "-" else []
        tensor = {"dtype": dtype, "format": fmt, "name": "x", "shape": dims}
        body = {
            "attrs": [{"name": "variant", "value": attr}],
            "deterministic": "false",
            "inputs": [tensor] if dims else [],
            "op_type": op_type,
            "outputs": [tensor],
        }
        text = json.dumps(body, indent=2, sort_keys=True)
        if text in seen:
            continue
        seen.add(text)
        # <OpType>_<dtype>_<format>_<dims of inputs[0]>_<n>.json; no inputs: <OpType>_<n>.json
        mid = f"_{dtype}_{fmt}_{'_'.join(map(str, dims))}" if dims else ""
        targets = [("_debug", {"bin_type": "static", "bin_info": f"{op_type}.o"})]
        if op_type not in BLACK:
            targets.append(("_opcompile", {}))
        if op_type in WHITE:
            targets.append(("", {"bin_type": "static", "bin_info": f"{op_type}.o"}))
        for sub, extra in targets:
            d = root / f"{os.getpid()}{sub}"
            d.mkdir(exist_ok=True)
            name = f"{op_type}{mid}_{_counters[sub]}.json"
            _counters[sub] += 1
            (d / name).write_text(json.dumps({**body, **extra}, indent=2, sort_keys=True))


def chosen_dir(root: Path, blacklist: list[str]) -> Path | None:
    """get_compile_dir: blacklisted copies aside, the rest copied once per process."""
    opcompile = root / f"{os.getpid()}_opcompile"
    if not opcompile.is_dir():  # TA l.473-479: no _opcompile dir, the _debug dir is used
        debug = root / f"{os.getpid()}_debug"
        return debug if debug.is_dir() and any(debug.glob("*.json")) else None
    selected = root / f"{os.getpid()}_opcompile_selected"
    selected.mkdir(exist_ok=True)
    for op_json in sorted(opcompile.glob("*.json")):
        if any(b in op_json.name for b in blacklist):
            black = root / f"{os.getpid()}_opcompile_blacklist"
            black.mkdir(exist_ok=True)
            shutil.copy2(op_json, black / op_json.name)
            logger.info(f"Operator {op_json.name} is in blacklist, moved to {black}")
            continue
        h = op_hash(op_json)
        if h in _compiled_op_set:
            logger.debug(f"Operator described in {op_json.name} was already compiled, skipping")
            continue
        shutil.copy2(op_json, selected / op_json.name)
        _compiled_op_set.add(h)
    if not any(selected.iterdir()):
        logger.debug(f"Static compilation skipped: no operators in {selected}")
        return None
    return selected


def cache_key(chosen: Path) -> str:
    key = hashlib.sha256()
    for h in sorted(op_hash(p) for p in chosen.glob("*.json")):
        key.update(h.encode())
    key.update(b"False")  # super_kernel_optimize
    key.update(b"0")  # torch.are_deterministic_algorithms_enabled()
    return key.hexdigest()


def cache_file(root: Path, cann: str) -> Path:
    cache_dir = root.parent / "static_kernel_cache"
    cache_dir.mkdir(exist_ok=True)
    return cache_dir / f"CANN-{cann}_{DEVICE}.json"


def cache_query(cfile: Path, key: str, prefix: str) -> Path | None:
    if not cfile.exists():
        return None
    with open(cfile.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        data = json.loads(cfile.read_text() or "{}")
        cached = data.get(key)
        if cached and os.path.exists(cached):
            logger.info(f"{prefix}Static kernel cache hit: {cached}")
            return Path(cached).parent
    return None


def cache_update(cfile: Path, key: str, root: Path, prefix: str) -> None:
    runs = list(root.glob("*.run"))
    if not runs:
        return
    with open(cfile.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(cfile.read_text() or "{}") if cfile.exists() else {}
        data[key] = str(runs[0].resolve())
        tmp = cfile.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=4))
        tmp.replace(cfile)
        logger.info(f"{prefix}Static kernel cache updated, key: {key}, value: {data[key]}")


def static_compile(root: Path, chosen: Path, cann: str, prefix: str) -> bool:
    jobs = str(os.cpu_count() or 16)
    cmd = ["op_compiler", "-p", str(chosen), "-v", DEVICE, "-j", jobs, "-o", str(root)]
    level = {"0": "debug", "1": "info", "2": "warning", "3": "error", "4": None}.get(
        os.getenv("ASCEND_GLOBAL_LOG_LEVEL", "3"), "error"
    )
    if level is not None:
        cmd += ["-l", level]
    is_gte = tuple(int(x) for x in cann.split(".")[:2]) >= (9, 0)
    if is_gte:
        cmd += ["-f", "true"]
    logger.debug(f"{prefix}the cmd is {cmd}")
    try:
        res = subprocess.run(cmd, check=True, capture_output=not is_gte, text=True)
        logger.debug(f"{prefix}execute op_compiler, msg: {res.stdout}")
    except subprocess.CalledProcessError as e:
        warnings.warn(f"{prefix}execute op_compiler error, msg: {e.stderr}", stacklevel=1)
        return False
    return True


def install(root: Path, prefix: str) -> None:
    for run_pkg in sorted(root.glob("*.run")):
        h = op_hash(run_pkg)
        if h in _installed_run_pkgs:
            continue
        try:
            res = subprocess.run([str(run_pkg)], check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as e:
            logger.warning(f"{prefix}{run_pkg.name} install failed, msg: {e.stderr}")
            continue
        logger.debug(f"{prefix}{run_pkg.name} install success, msg: {res.stdout}")
        _installed_run_pkgs.add(h)
        pattern = f"*/opp/static_kernel/ai_core/{run_pkg.stem}/uninstall.sh"
        match = next(Path(os.environ["ASCEND_HOME_PATH"]).parent.glob(pattern), None)
        if match is not None:
            _uninstall_paths.append(str(match))
            warnings.warn(
                "Warning: If the process exits abnormally, "
                f"you must manually uninstall the static kernel package by executing: {match}",
                stacklevel=1,
            )


def uninstall_all() -> None:
    for script in _uninstall_paths:
        subprocess.run([script], check=False, capture_output=True)


def compile_graph(args: argparse.Namespace, graph: str, rank: int | None = None) -> None:
    prefix = f"Rank {rank}: " if rank is not None else ""
    root = result_root = result_root_for(Path(args.build_dir or Path.cwd()).resolve())
    # One source line, as torchair's l.242: the warning's indented source line then holds
    # the unformatted text "... the build directory is {result_root}", as on a real host.
    if rank is None:
        warnings.warn(f"Starting static kernel compilation, the build directory is {result_root}", stacklevel=1)  # noqa: E501  # fmt: skip
    else:
        warnings.warn(
            f"Rank {rank}: starting static kernel compilation for multi card, the build directory is {result_root}",  # noqa: E501
            stacklevel=1,
        )
    if rank is not None and args.gloo_fail:  # torchair l.294-299: before the dump
        warnings.warn(
            f"Rank {rank}: skipping static kernel compilation for multi card: local Gloo probe "
            "failed or timed out (probe timeout 180s).",
            stacklevel=1,
        )
        return
    dump(root, graph, args.dump_dedup == "process")
    if args.p_opcompile:  # as in the cache_compile path: -p is <pid>_opcompile itself
        chosen: Path | None = root / f"{os.getpid()}_opcompile"
    else:
        chosen = chosen_dir(root, args.blacklist)
    if rank is not None:
        chosen = gather(root, chosen, rank)
    if chosen is None:
        return
    cfile = None if args.disable_cache else cache_file(root, args.cann)
    key = cache_key(chosen)
    if cfile is not None:
        hit = cache_query(cfile, key, prefix)
        if hit is not None:
            logger.info("Installing the cached run package")
            install(hit, prefix)
            return
        logger.info(f"No matching cache found for key : {key}")
    if not static_compile(root, chosen, args.cann, prefix):
        return
    if cfile is not None:
        cache_update(cfile, key, root, prefix)
    install(root, prefix)


def gather(root: Path, chosen: Path | None, rank: int) -> Path | None:
    """Rank 0 merges every rank's chosen dir (``_merge_dump_json``); the others hand theirs
    to the parent (the Gloo gather) and wait on the barrier (EOF of a pipe)."""
    if rank != 0:
        with os.fdopen(int(os.environ["STANDIN2_GATHER_FD"]), "w") as out:
            out.write(f"{chosen or ''}\n")
        with os.fdopen(int(os.environ["STANDIN2_BARRIER_FD"])) as barrier:
            barrier.read()
        return None
    dirs = [chosen, *(Path(d) for d in os.environ.get("STANDIN2_GATHERED", "").split(":") if d)]
    merged = root / f"{os.getpid()}_opcompile_gathered"
    merged.mkdir(exist_ok=True)
    seen: set[str] = set()
    names: set[str] = set()
    for d in dirs:
        for f in sorted(d.glob("*.json")) if d else []:
            h = op_hash(f)
            if h in seen:
                continue
            seen.add(h)
            name, n = f.name, 0
            while name in names:
                n += 1
                name = f"{f.stem}_{n}{f.suffix}"
            names.add(name)
            shutil.copy2(f, merged / name)
    return merged if any(merged.iterdir()) else None


def multicard(argv: list[str], ranks: int) -> int:
    """torchrun's part: start the ranks; hand rank 0 the others' chosen dirs."""
    others: list[tuple[subprocess.Popen[bytes], int]] = []
    gathered: list[str] = []
    for rank in range(1, ranks):
        g_read, g_write = os.pipe()
        b_read, b_write = os.pipe()
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank))
        env.update(STANDIN2_GATHER_FD=str(g_write), STANDIN2_BARRIER_FD=str(b_read))
        proc = subprocess.Popen(
            [sys.executable, __file__, *argv, "--as-rank", str(rank)],
            env=env,
            pass_fds=(g_write, b_read),
        )
        os.close(g_write)
        os.close(b_read)
        with os.fdopen(g_read) as got:
            gathered.append(got.readline().strip())
        others.append((proc, b_write))
    env = dict(os.environ, RANK="0", LOCAL_RANK="0", STANDIN2_GATHERED=":".join(gathered))
    rank0 = [sys.executable, __file__, *argv, "--as-rank", "0"]
    code = subprocess.run(rank0, check=False, env=env).returncode
    for proc, b_write in others:
        os.close(b_write)
        code = max(code, proc.wait())
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="append", default=[], help="Op:dtype:AxB[:attr],...")
    parser.add_argument("--cann", default="8.5.0")
    parser.add_argument("--blacklist", action="append", default=[])
    parser.add_argument("--disable-cache", action="store_true")
    parser.add_argument("--capture-warnings", action="store_true", help="logging.captureWarnings")
    parser.add_argument("--build-dir", help="torchair's build_dir option (default: cwd)")
    parser.add_argument("--gloo-fail", action="store_true", help="multi-card probe fails")
    parser.add_argument("--dump-dedup", choices=("session", "process"), default="session")
    parser.add_argument("--p-opcompile", action="store_true", help="-p <pid>_opcompile")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--as-rank", type=int, default=None)
    parser.add_argument("--fail-after", action="store_true", help="inference raises at the end")
    parser.add_argument("--segfault-after", action="store_true", help="dies of SIGSEGV at the end")
    parser.add_argument("--then-again", action="store_true", help="a second process after this")
    args = parser.parse_args()
    graphs = args.graph or ["HcPre:bfloat16:32x4x5120,MatMulV2:float:1x2048"]
    if args.ranks > 1 and args.as_rank is None:
        os.environ["LOCAL_WORLD_SIZE"] = os.environ["WORLD_SIZE"] = str(args.ranks)
        return multicard(sys.argv[1:], args.ranks)
    if args.capture_warnings:  # as vLLM-style launchers do: warnings through logging
        logging.captureWarnings(True)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter(
                "%(levelname)s %(asctime)s [warnings.py:110] %(message)s", "%m-%d %H:%M:%S"
            )
        )
        logging.getLogger("py.warnings").addHandler(handler)
    atexit.register(uninstall_all)
    warnings.warn(CACHE_NOTICE, stacklevel=1)
    warnings.filterwarnings("ignore", message=CACHE_NOTICE)
    if args.as_rank is not None:  # rank r runs graph r (the last one for the rest)
        graphs = [graphs[min(args.as_rank, len(graphs) - 1)]]
    for graph in graphs:
        compile_graph(args, graph, args.as_rank)
    if args.segfault_after:  # a crash at teardown, after a good compile
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if args.fail_after:
        raise RuntimeError("stand-in inference failed after the static kernel compile")
    print("stand-in inference finished", flush=True)
    if args.then_again:  # a second inference process, after this one's compile
        again = [a for a in sys.argv[1:] if a != "--then-again"]
        return subprocess.run([sys.executable, __file__, *again], check=False).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
