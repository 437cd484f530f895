#!/usr/bin/env python3
"""An independent stand-in for torchair npugraph_ex ``compile_static_kernel``.

Written from public facts about the torchair / CANN static kernel compile, not from
skgate's simulator. Standard library only. What it does, in order:

1. prints the start line as a Python ``UserWarning`` on stderr (before anything else);
2. dumps one JSON per operator input into ``<result_root>/<pid>_opcompile/``;
3. (multi-card) local rank 0 gathers every rank's JSONs into ``<pid>_opcompile_gathered/``;
4. looks the inputs up in the static kernel cache (``--cache``); a hit prints nothing
   unless ``TORCH_COMPILE_DEBUG=1`` (``--debug``) and installs the cached ``.run``;
5. on a miss copies the chosen inputs (deduplicated by sha256) into
   ``<pid>_opcompile_selected/`` and runs ``op_compiler`` (next to this file) with
   ``subprocess.run(check=True)``, no timeout;
6. installs the package into ``<cwd>/fake_ascend`` (never a system path);
7. a failing op_compiler is swallowed: one ``execute op_compiler error`` warning, nothing
   installed, exit status 0. No ``[summary]`` line is ever printed.

Options that only a stand-in has (``--fail``, ``--d1``) reach op_compiler through the
environment (``STANDIN_FAIL_OPTYPE``, ``STANDIN_D1``) so its argv looks like the real one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import hashlib
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
OP_COMPILER = HERE / "op_compiler"
SOC = "Ascend910_9391"
CANN_VERSIONS = {"8": "8.5.0", "9": "9.0.0"}
DEFAULT_INPUTS = "HcPre:3,MatMulV2:2"
#: dtype and base shape of the operator types the examples name; others get float16.
OP_TEMPLATES: dict[str, tuple[str, list[int]]] = {
    "HcPre": ("bfloat16", [32, 4, 5120]),
    "MatMulV2": ("float", [1, 2048]),
}
DEFAULT_TEMPLATE = ("float16", [8, 1024])
SUPER_KERNEL_OPTIMIZE = True
DETERMINISTIC = False
#: op_compiler's log level; ``-l`` is passed only when it differs from the default 4.
LOG_LEVEL = 4
RANK_WAIT_S = 3600.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--inputs", default=DEFAULT_INPUTS, help="OPTYPE[:COUNT],... (default %(default)s)"
    )
    p.add_argument("--fail", metavar="OPTYPE", help="that op type's first input fails in opc")
    p.add_argument("--cache", action="store_true", help="use and populate the static kernel cache")
    p.add_argument("--debug", action="store_true", help="behave as TORCH_COMPILE_DEBUG=1")
    p.add_argument("--ranks", type=int, default=1, help="multi-card: N rank processes")
    p.add_argument("--d1", action="store_true", help="op_compiler writes _d0 and _d1 logs")
    p.add_argument("--cann", choices=sorted(CANN_VERSIONS), default="8")
    # Internal: one rank of a multi-card run (set by the parent launcher).
    p.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--rdzv", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def parse_inputs(spec: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        name, _, count = item.partition(":")
        out.append((name, int(count) if count else 1))
    return out


def debug_on(args: argparse.Namespace) -> bool:
    return bool(args.debug) or os.environ.get("TORCH_COMPILE_DEBUG") == "1"


def log_info(message: str) -> None:
    """A torchair logger.info line (printed only when TORCH_COMPILE_DEBUG=1)."""
    now = dt.datetime.now()
    stamp = (
        now.strftime("%Y-%m-%d-%H:%M:%S.")
        + f"{now.microsecond // 1000:03d}.{now.microsecond % 1000:03d}"
    )
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    line = caller.f_lineno if caller is not None else 0
    name = Path(sys.argv[0]).name
    where = f"[{Path(__file__).name}:{line}]"
    print(
        f"[INFO] NPUGRAPH_EX({os.getpid()},{name}):{stamp} {where} {message}",
        file=sys.stderr,
        flush=True,
    )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_result_root(cwd: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d%H%M%S%f")
    return cwd / "static_kernel_compile_outputs" / f"ts{stamp}_pid{os.getpid()}_outputs"


def dump_inputs(result_root: Path, spec: list[tuple[str, int]]) -> list[Path]:
    """One JSON per operator input, ``<OpType>_<dtype>_<format>_<dims>_<n>.json``."""
    dump_dir = result_root / f"{os.getpid()}_opcompile"
    dump_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    n = 0
    for op_type, count in spec:
        dtype, base = OP_TEMPLATES.get(op_type, DEFAULT_TEMPLATE)
        for j in range(count):
            shape = [base[0] * (j + 1), *base[1:]]
            tensor = {"dtype": dtype, "format": "ND", "shape": shape}
            content = {
                "op_type": op_type,
                "op_name": f"{op_type}_{n}",
                "inputs": [tensor],
                "outputs": [tensor],
                "attrs": [],
            }
            dims = "_".join(str(d) for d in shape)
            path = dump_dir / f"{op_type}_{dtype}_ND_{dims}_{n}.json"
            path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
            paths.append(path)
            n += 1
    return paths


def select_inputs(result_root: Path, candidates: list[Path]) -> Path:
    """Copy the chosen inputs, deduplicated by sha256 of their content."""
    selected = result_root / f"{os.getpid()}_opcompile_selected"
    selected.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for path in candidates:
        digest = sha256_bytes(path.read_bytes())
        if digest in seen:
            continue
        seen.add(digest)
        name = path.name
        if (selected / name).exists():
            name = f"{path.stem}_{digest[:8]}{path.suffix}"
        shutil.copyfile(path, selected / name)
    return selected


def cache_key(inputs: list[Path]) -> str:
    hashes = sorted({sha256_bytes(p.read_bytes()) for p in inputs})
    material = "|".join(
        [
            *hashes,
            f"super_kernel_optimize={SUPER_KERNEL_OPTIMIZE}",
            f"deterministic={DETERMINISTIC}",
        ]
    )
    return sha256_bytes(material.encode())


def cache_path(cwd: Path, cann: str) -> Path:
    return (
        cwd
        / "static_kernel_compile_outputs"
        / "static_kernel_cache"
        / f"CANN-{CANN_VERSIONS[cann]}_{SOC}.json"
    )


@contextmanager
def locked(path: Path) -> Iterator[None]:
    lock = path.with_suffix(".lock")  # CANN-<ver>_<device>.lock (docs fact 5a)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_cache(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def cache_lookup(cwd: Path, cann: str, key: str, debug: bool) -> Path | None:
    path = cache_path(cwd, cann)
    with locked(path):
        entries = read_cache(path)
    run = entries.get(key)
    if run is not None and Path(run).is_file():
        if debug:
            log_info(f"Static kernel cache hit: {run}")
        return Path(run)
    # A cached .run that has gone missing is a miss like any other.
    if debug:
        log_info(f"No matching cache found for key : {key}")
    return None


def cache_store(cwd: Path, cann: str, key: str, run: Path) -> None:
    path = cache_path(cwd, cann)
    with locked(path):
        entries = read_cache(path)
        entries[key] = str(run)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)


def run_op_compiler(args: argparse.Namespace, selected: Path, result_root: Path) -> Path | None:
    """Run op_compiler; return the generated .run, or None when it failed (swallowed)."""
    cmd = [
        str(OP_COMPILER),
        "-p",
        str(selected),
        "-v",
        SOC,
        "-j",
        str(os.cpu_count()),
        "-o",
        str(result_root),
    ]
    if SUPER_KERNEL_OPTIMIZE:
        cmd.append("--enable_super_kernel")
    if LOG_LEVEL != 4:
        cmd += ["-l", str(LOG_LEVEL)]
    if args.cann == "9":
        cmd += ["-f", "true"]
    env = dict(os.environ)
    env.pop("STANDIN_FAIL_OPTYPE", None)
    env.pop("STANDIN_D1", None)
    if args.fail:
        env["STANDIN_FAIL_OPTYPE"] = args.fail
    if args.d1:
        env["STANDIN_D1"] = "1"
    before = set(result_root.glob("static_kernel_*.run"))
    try:
        subprocess.run(cmd, check=True, stderr=subprocess.PIPE, text=True, env=env)
    except subprocess.CalledProcessError as exc:
        # Printed by Python as "<file>:<line>: UserWarning: ..." plus the source line.
        msg = (exc.stderr or "").strip()
        warnings.warn(f"execute op_compiler error, msg: {msg}", stacklevel=1)
        return None
    runs = sorted(
        set(result_root.glob("static_kernel_*.run")) - before, key=lambda p: p.stat().st_mtime
    )
    return runs[-1] if runs else None


def install(run: Path, cwd: Path, quiet: bool) -> None:
    """Install the package under ``<cwd>/fake_ascend`` (never a system path)."""
    install_root = cwd / "fake_ascend"
    target = install_root / "opp" / "static_kernel" / "ai_core" / run.stem
    done = subprocess.run(
        [str(run), f"--install-path={install_root}"],
        check=False,
        capture_output=quiet,
        text=True,
    )
    if done.returncode != 0:
        if not quiet:
            warnings.warn(f"install static kernel package failed: {run}", stacklevel=1)
        return
    if not quiet:
        print(
            "Warning: If the process exits abnormally, you must manually uninstall the static "
            f"kernel package by executing: {target}/uninstall.sh",
            flush=True,
        )


def compile_inputs(
    args: argparse.Namespace, cwd: Path, result_root: Path, inputs: list[Path]
) -> bool:
    """Cache lookup, then op_compiler, then install. True when a package was installed."""
    debug = debug_on(args)
    key = cache_key(inputs) if args.cache else ""
    if args.cache:
        hit = cache_lookup(cwd, args.cann, key, debug)
        if hit is not None:
            install(hit, cwd, quiet=not debug)
            return True
    selected = select_inputs(result_root, inputs)
    run = run_op_compiler(args, selected, result_root)
    if run is None:
        return False
    if args.cache:
        cache_store(cwd, args.cann, key, run)
    install(run, cwd, quiet=False)
    return True


def single_card(args: argparse.Namespace, cwd: Path) -> int:
    result_root = make_result_root(cwd)
    # Printed before the JSON dump and before the cache lookup.
    start = f"Starting static kernel compilation, the build directory is {result_root}"
    warnings.warn(start, stacklevel=1)
    inputs = dump_inputs(result_root, parse_inputs(args.inputs))
    compile_inputs(args, cwd, result_root, inputs)
    return 0


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def wait_file(path: Path) -> str:
    deadline = time.monotonic() + RANK_WAIT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank rendezvous: {path} never appeared")
        time.sleep(0.02)
    return path.read_text()


def one_rank(args: argparse.Namespace, cwd: Path) -> int:
    rank = int(args.rank)
    rdzv = Path(args.rdzv)
    result_root = make_result_root(cwd)
    start = (
        f"Rank {rank}: starting static kernel compilation for multi card, "
        f"the build directory is {result_root}"
    )
    warnings.warn(start, stacklevel=1)
    inputs = dump_inputs(result_root, parse_inputs(args.inputs))
    write_atomic(rdzv / f"rank{rank}.ready", json.dumps([str(p) for p in inputs]))
    if rank != 0:
        # Other ranks wait for local rank 0 to compile once.
        wait_file(rdzv / "done")
        return 0
    gathered = result_root / f"{os.getpid()}_opcompile_gathered"
    gathered.mkdir(parents=True, exist_ok=True)
    all_inputs: list[Path] = []
    for r in range(args.ranks):
        for name in json.loads(wait_file(rdzv / f"rank{r}.ready")):
            src = Path(name)
            dst = gathered / f"rank{r}_{src.name}"
            shutil.copyfile(src, dst)
            all_inputs.append(dst)
    ok = compile_inputs(args, cwd, result_root, all_inputs)
    write_atomic(rdzv / "done", "installed" if ok else "not installed")
    return 0


def multi_card(args: argparse.Namespace, argv: list[str]) -> int:
    """Start N rank processes (like torchrun) and wait for all of them."""
    rdzv = Path(tempfile.mkdtemp(prefix="standin-rdzv-"))
    try:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    *argv,
                    "--rank",
                    str(r),
                    "--rdzv",
                    str(rdzv),
                ],
                stdin=subprocess.DEVNULL,
            )
            for r in range(args.ranks)
        ]
        codes = [p.wait() for p in procs]
    finally:
        shutil.rmtree(rdzv, ignore_errors=True)
    return max(codes)


def main(argv: list[str] | None = None) -> int:
    # Children (op_compiler, opc, ranks) get the default dispositions of these signals,
    # whatever this process inherited.
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(raw)
    cwd = Path.cwd()
    if args.rank is not None:
        return one_rank(args, cwd)
    if args.ranks > 1:
        return multi_card(args, raw)
    return single_card(args, cwd)


if __name__ == "__main__":
    sys.exit(main())
