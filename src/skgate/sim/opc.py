"""``opc``: the simulated per-input compile worker.

``opc INPUT.json --soc_version=SOC --output=DIR --log=FILE --index=I --jobs=J``

Takes ``SKGATE_SIM_OPC_SECONDS`` (default 0.05 s), appends its log lines to FILE (the
``<stem>_compile_error.log`` that ``op_compiler`` created before starting it, C1), writes
``<stem>.o`` / ``<stem>.json`` into DIR and exits 0, or 1 with error text when a fault
says this input fails. Faults come from ``SKGATE_SIM_FAULTS`` (see ``faults.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time

from . import common, faults

ROLE = "opc"


class OpcArgs:
    """The worker's command line (plain class: no dataclasses import per worker)."""

    __slots__ = ("enable_super_kernel", "index", "input", "jobs", "log", "output", "soc_version")

    def __init__(
        self,
        *,
        input: str,
        output: str,
        log: str,
        soc_version: str = "Ascend910B1",
        index: int = 0,
        jobs: int = 1,
        enable_super_kernel: bool = False,
    ) -> None:
        self.input = input
        self.output = output
        self.log = log
        self.soc_version = soc_version
        self.index = index
        self.jobs = jobs
        self.enable_super_kernel = enable_super_kernel


class OpcUsage(Exception):
    """Bad command line (one line, exit 2)."""


def parse_args(argv: list[str]) -> OpcArgs:
    """``INPUT --key=value...`` by hand: argparse would cost every worker ~15 ms at start."""
    opts: dict[str, str] = {}
    inputs: list[str] = []
    for arg in argv:
        if arg == "--enable_super_kernel":
            opts["enable_super_kernel"] = "1"
        elif arg.startswith("--") and "=" in arg:
            key, _, value = arg[2:].partition("=")
            if key not in ("soc_version", "output", "log", "index", "jobs"):
                raise OpcUsage(f"unknown option {arg!r}")
            opts[key] = value
        elif arg.startswith("-"):
            raise OpcUsage(f"unknown option {arg!r}")
        else:
            inputs.append(arg)
    if len(inputs) != 1 or "output" not in opts or "log" not in opts:
        raise OpcUsage(
            "usage: opc INPUT.json --output=DIR --log=FILE [--soc_version=SOC] "
            "[--index=I] [--jobs=J] [--enable_super_kernel]"
        )
    try:
        index = int(opts.get("index", "0"))
        jobs = int(opts.get("jobs", "1"))
    except ValueError:
        raise OpcUsage("--index and --jobs take whole numbers") from None
    return OpcArgs(
        input=inputs[0],
        output=opts["output"],
        log=opts["log"],
        soc_version=opts.get("soc_version", "Ascend910B1"),
        index=index,
        jobs=jobs,
        enable_super_kernel="enable_super_kernel" in opts,
    )


def _log(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def hook_loaded() -> str | None:
    """Name the start-up hook this interpreter loaded (C6), or None."""
    for name in ("sitecustomize", "usercustomize"):
        if name in sys.modules:
            return name
    if os.environ.get(common.ENV_HOOK_LOADED) == "1":
        return f"{common.ENV_HOOK_LOADED}=1"
    return None


def failure_reason(f: faults.Faults, index: int, jobs: int) -> str | None:
    """Why this input fails under the injected faults, or None when it compiles."""
    if index in f.fail:
        return f"injected fault fail={index}"
    if index != 0:
        return None
    if f.fail_with_hook:
        hook = hook_loaded()
        if hook is not None:
            return f"injected fault fail_with_hook: Python start-up hook loaded ({hook})"
    if f.fail_above_jobs is not None and jobs > f.fail_above_jobs:
        return f"injected fault fail_above_jobs={f.fail_above_jobs}: jobs in use {jobs}"
    seed = os.environ.get(common.ENV_CACHE_SEED)
    if f.fail_seed is not None and seed == f.fail_seed:
        return f"injected fault fail_seed={f.fail_seed}: {common.ENV_CACHE_SEED}={seed}"
    return None


def _escape(seconds: float) -> None:
    """Leave a descendant that outlives this opc in its own session (fault ``escape``).

    Double fork so the survivor is re-parented away from us; ``setsid`` in the survivor so
    it also leaves the process group the runner created (it must be found as "escaped").
    """
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if os.fork() == 0:
                os.setsid()
                # Daemon-like: stdio to /dev/null so no pipe of the run stays open.
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                common.write_marker("escaped", "started", {"seconds": seconds})
                time.sleep(seconds)
                common.write_marker("escaped", "finished")
        except BaseException:
            code = 1
        os._exit(code)
    os.waitpid(pid, 0)


def _write_kernel(src: str, out: str, stem: str, soc: str) -> str:
    # os.path rather than pathlib: one import less in every worker.
    with open(src, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{stem}.o"), "wb") as fh:
        revision = os.environ.get(common.ENV_KERNEL_REVISION, "")
        extra = b"\0" + revision.encode() if revision else b""
        fh.write(b"SKGATE-SIM-KERNEL\0" + digest.encode() + extra)
    meta = {"kernelName": stem, "sha256": digest, "soc": soc}
    with open(os.path.join(out, f"{stem}.json"), "w", encoding="utf-8") as fh:
        fh.write(json.dumps(meta) + "\n")
    return digest


def main(argv: list[str] | None = None) -> int:
    common.set_comm(ROLE)
    # A C worker has no KeyboardInterrupt: die by the signal, quietly.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except OpcUsage as exc:
        common.say(f"opc: {exc}", err=True)
        return 2
    common.write_marker(ROLE, "started", {"index": args.index, "input": args.input})
    try:
        f = faults.from_env()
    except faults.FaultSpecError as exc:
        common.say(f"opc: {exc}", err=True)
        return 2
    if f.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        common.write_marker(ROLE, "ignoring-sigterm")
    stem = os.path.splitext(os.path.basename(args.input))[0]
    _log(args.log, f"[INFO] opc: compile {stem} start (soc={args.soc_version}, pid={os.getpid()})")
    if f.escape is not None and args.index == 0:
        _escape(f.escape)
    if args.index in f.hang:
        _log(args.log, f"[INFO] opc: compile {stem} waiting (injected fault hang={args.index})")
        while True:
            signal.pause()
    time.sleep(common.opc_seconds())
    reason = failure_reason(f, args.index, args.jobs)
    if reason is not None:
        _log(args.log, f"[ERROR] opc: compile {stem} failed: {reason}")
        common.say(f"[ERROR] opc: compile {stem} failed: {reason}", err=True)
        common.write_marker(ROLE, "finished", {"index": args.index, "exit": 1})
        return 1
    try:
        digest = _write_kernel(args.input, args.output, stem, args.soc_version)
    except OSError as exc:
        _log(args.log, f"[ERROR] opc: compile {stem} failed: {exc}")
        common.say(f"[ERROR] opc: compile {stem} failed: {exc}", err=True)
        common.write_marker(ROLE, "finished", {"index": args.index, "exit": 1})
        return 1
    _log(args.log, f"[INFO] opc: compile {stem} succ, kernel {stem}.o sha256 {digest}")
    common.write_marker(ROLE, "finished", {"index": args.index, "exit": 0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
