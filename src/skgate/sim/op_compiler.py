"""``op_compiler``: the simulated static-compile driver that fans out into ``opc`` workers.

``op_compiler -p DIR -v SOC -j JOBS -o OUT [--enable_super_kernel] [-l LEVEL] [-f true]``

For each ``*.json`` in DIR (sorted; the fault indexes are positions in this order) it
creates ``OUT/<pid>_compile_log/static_kernel_<OpType>_<sha256>_<pid>_d0_compile_error.log``
*before* it starts the ``opc`` child for that input (C1: an error-named file beside a
live, healthy compiler), at most JOBS children at once, reaped with ``os.waitpid`` (no
polling). As on a real host the log is not named after the input: ``<OpType>`` is the
JSON's ``"op_type"``, the hash the sha256 of the input's bytes, the pid op_compiler's.
With ``SKGATE_SIM_LOG_VARIANTS=2`` each input gets a ``_d0`` and a ``_d1`` log (the
op_compiler documentation's installed tree shows both). A child that exits 0 gets its
log(s) renamed to ``..._compile_succ.log``; any other end leaves the error log(s) with the
error text. Then, if any input compiled, it writes ``OUT/static_kernel_<ts>_<pid>.run`` and
prints ``generate run package <name> success``; then one
``[summary] stage=<name> inputs=N succeeded=S failed=F`` line per stage (``compile``,
``package``); exit 0 only when nothing failed, else the error on stderr and exit 1.

With ``ASCEND_PROCESS_LOG_PATH`` set it writes CANN's process logs as the documentation
lays them out: ``$ASCEND_PROCESS_LOG_PATH/debug/plog/plog-<pid>_<timestamp>.log`` and
``.../debug/device-0/device-<pid>_<timestamp>.log`` (the real error of a failure is there
too). A working directory so deep that a name derived from it (the path with ``/``
replaced, then a log name) passes NAME_MAX fails with ENAMETOOLONG, exit 1, before any
input starts: the flattening is the one skgate's preflight estimates.

When ``SKGATE_SIM_READY_FD`` names an inherited pipe, one byte is written to it (and it is
closed) once the first ``opc`` runs: the launcher's "mid-compile" faults wait on it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from . import common, faults

ROLE = "op_compiler"
ENV_LOG_VARIANTS = "SKGATE_SIM_LOG_VARIANTS"


def log_bases(path: Path, variants: int) -> list[str]:
    """The real log name bases of one input (one per ``_d<n>`` variant)."""
    data = path.read_bytes()
    try:
        op = str(json.loads(data).get("op_type") or path.stem.split("_", 1)[0])
    except (ValueError, AttributeError):
        op = path.stem.split("_", 1)[0]
    digest = hashlib.sha256(data).hexdigest()
    return [f"static_kernel_{op}_{digest}_{os.getpid()}_d{v}" for v in range(variants)]


LEVELS = ("debug", "info", "warning", "error", "null")


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="op_compiler")
    ap.add_argument("-p", dest="params", required=True, help="directory of op JSON inputs")
    ap.add_argument("-v", dest="soc", required=True, help="SoC version, e.g. Ascend910B1")
    ap.add_argument("-j", dest="jobs", type=int, default=16, help="parallel opc workers")
    ap.add_argument("-o", dest="out", required=True, help="result root")
    ap.add_argument("--enable_super_kernel", action="store_true")
    ap.add_argument("-l", dest="level", default="error", choices=LEVELS)
    ap.add_argument("-f", dest="force", default="false", choices=("true", "false"))
    return ap.parse_args(argv)


class _Ready:
    """The launcher's "compile has started" pipe (optional)."""

    def __init__(self) -> None:
        self.fd: int | None = None
        raw = os.environ.pop(common.ENV_READY_FD, "")
        if raw.isdigit():
            self.fd = int(raw)
            try:
                # Our opc children must not hold the launcher's pipe open.
                os.set_inheritable(self.fd, False)
            except OSError:
                self.fd = None

    def fire(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(self.fd, b"1")
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None


ENV_PLOG = "ASCEND_PROCESS_LOG_PATH"


class _Plog:
    """CANN's process log of this op_compiler (and its device log), when asked for."""

    def __init__(self) -> None:
        base = os.environ.get(ENV_PLOG)
        self.paths: list[Path] = []
        if not base:
            return
        stamp = time.strftime("%Y%m%d%H%M%S", time.localtime()) + "000"
        pid = os.getpid()
        for sub, name in (
            ("plog", f"plog-{pid}_{stamp}.log"),
            ("device-0", f"device-{pid}_{stamp}.log"),
        ):
            d = Path(base) / "debug" / sub
            d.mkdir(parents=True, exist_ok=True)
            self.paths.append(d / name)

    def write(self, level: str, text: str) -> None:
        for path in self.paths:
            _append(path, f"[{level}] OP_COMPILER({os.getpid()}):{time.time():.6f} {text}")


def _flat_name_fits(log_dir: Path, base: str) -> OSError | None:
    """Create, then remove, the longest name derived from the working directory."""
    flat = str(Path.cwd()).strip("/").replace("/", "_")
    probe = log_dir / f"{flat}_{base}_compile_error.log"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        return exc
    os.close(fd)
    os.unlink(probe)
    return None


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by signal {sig} ({name})"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def write_package(out: Path, kernels: list[str], soc: str) -> Path:
    """Write the small ``.run`` package listing the compiled kernels (terminal artifact, C8)."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())
    path = out / f"static_kernel_{stamp}_{os.getpid()}.run"
    lines = [
        "#!/bin/sh",
        "# skgate-sim STATIC KERNEL RUN PACKAGE (a simulator artifact, not a CANN package)",
        f"# soc: {soc}",
    ]
    for stem in kernels:
        obj = out / "kernel" / f"{stem}.o"
        digest = hashlib.sha256(obj.read_bytes()).hexdigest() if obj.exists() else "-"
        lines.append(f"# kernel: {stem} {digest}")
    lines.append("exit 0")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def summary_lines(
    n: int, ok: int, bad: int, pkg: tuple[int, int, int], contradict: bool
) -> list[str]:
    """The final aggregate summary lines (or a self-contradicting set under the fault)."""
    if contradict:
        # Both contradictions a parser must catch: counts that do not add up, and the
        # same stage reported twice with different numbers (C2.5: unknown, never failed).
        return [
            f"[summary] stage=compile inputs={n} succeeded={n} failed={max(1, bad)}",
            f"[summary] stage=package inputs={pkg[0]} succeeded={pkg[1]} failed={pkg[2]}",
            f"[summary] stage=package inputs={pkg[0] + 1} succeeded=0 failed={pkg[0] + 1}",
        ]
    return [
        f"[summary] stage=compile inputs={n} succeeded={ok} failed={bad}",
        f"[summary] stage=package inputs={pkg[0]} succeeded={pkg[1]} failed={pkg[2]}",
    ]


def main(argv: list[str] | None = None) -> int:
    common.set_comm(ROLE)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    ready = _Ready()
    common.write_marker(ROLE, "started")
    args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        f = faults.from_env()
    except faults.FaultSpecError as exc:
        common.say(f"op_compiler: {exc}", err=True)
        return 2
    params = Path(args.params)
    if not params.is_dir():
        common.say(f"op_compiler: -p {params}: no such directory", err=True)
        return 2
    if args.jobs < 1:
        common.say(f"op_compiler: -j {args.jobs}: jobs must be >= 1", err=True)
        return 2
    out = Path(args.out)
    log_dir = out / f"{os.getpid()}_compile_log"
    kernel_dir = out / "kernel"
    log_dir.mkdir(parents=True, exist_ok=True)
    kernel_dir.mkdir(parents=True, exist_ok=True)
    verbose = args.level in ("debug", "info")
    inputs = sorted(p for p in params.iterdir() if p.suffix == ".json" and p.is_file())
    n = len(inputs)
    if verbose:
        common.say(f"[INFO] op_compiler: {n} inputs, jobs={args.jobs}, soc={args.soc}")

    exe = common.python_executable()
    env = dict(os.environ)
    variants = 2 if os.environ.get(ENV_LOG_VARIANTS) == "2" else 1
    bases = [log_bases(p, variants) for p in inputs]
    plog = _Plog()
    plog.write("INFO", f"op_compiler start: {n} inputs, jobs={args.jobs}, soc={args.soc}")
    longest = max((b for bs in bases for b in bs), key=len, default="")
    too_long = _flat_name_fits(log_dir, longest) if longest else None
    if too_long is not None:
        text = f"cannot create a file in {log_dir}: {too_long.strerror or too_long}"
        plog.write("ERROR", text)
        common.say(f"[ERROR] op_compiler: {text}", err=True)
        return 1
    running: dict[int, int] = {}
    results: dict[int, str | None] = {}  # index -> None (succ) or error text
    # Fault stop_after: the inputs after the first N are never started (a partial stage).
    pending = list(range(n if f.stop_after is None else min(n, f.stop_after)))
    pending.reverse()
    while pending or running:
        while pending and len(running) < args.jobs:
            idx = pending.pop()
            err_logs = [log_dir / f"{b}_compile_error.log" for b in bases[idx]]
            for err_log in err_logs:
                # C1: the error-named file exists before the worker does.
                err_log.touch()
            opc_args = [
                str(inputs[idx]),
                f"--soc_version={args.soc}",
                f"--output={kernel_dir}",
                f"--log={err_logs[0]}",
                f"--index={idx}",
                f"--jobs={args.jobs}",
            ]
            if args.enable_super_kernel:
                opc_args.append("--enable_super_kernel")
            pid = os.posix_spawn(exe, common.program_argv("opc", "opc", opc_args), env)
            running[pid] = idx
            ready.fire()
        pid, status = os.waitpid(-1, 0)
        idx_done = running.pop(pid, None)
        if idx_done is None:
            continue
        stem = inputs[idx_done].stem
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            for base in bases[idx_done]:
                succ = log_dir / f"{base}_compile_succ.log"
                os.replace(log_dir / f"{base}_compile_error.log", succ)
                _append(succ, f"[INFO] op_compiler: {stem} compile succ")
            results[idx_done] = None
            if verbose:
                common.say(f"[INFO] op_compiler: {stem} compile succ")
        else:
            text = f"opc for {stem} ended with {_describe(status)}"
            plog.write("ERROR", text)
            for base in bases[idx_done]:
                _append(log_dir / f"{base}_compile_error.log", f"[ERROR] op_compiler: {text}")
            results[idx_done] = text
        if idx_done in f.lose_log:
            # Fault lose_log: this input ends with no compile log at all.
            for base in bases[idx_done]:
                for suffix in ("_compile_succ.log", "_compile_error.log"):
                    with contextlib.suppress(OSError):
                        (log_dir / f"{base}{suffix}").unlink()
    ready.fire()

    ok = sorted(i for i, r in results.items() if r is None)
    bad = sorted(i for i, r in results.items() if r is not None)
    if f.quiet > 0:
        # Fault "quiet": silence is not hang evidence (C1); the summary still comes.
        time.sleep(f.quiet)
    pkg = (0, 0, 0)
    if ok:
        pkg = (1, 1, 0)
        run = write_package(out, [inputs[i].stem for i in ok], args.soc)
        common.say(f"generate run package {run.name} success")
    elif n:
        pkg = (1, 0, 1)
    if not f.no_summary:
        ok_n, bad_n, pkg_said = len(ok), len(bad), pkg
        if f.false_summary:
            # Fault false_summary: a summary that lies about the per-input outcome.
            ok_n, bad_n, pkg_said = n, 0, ((1, 1, 0) if n else pkg)
        for line in summary_lines(n, ok_n, bad_n, pkg_said, f.contradict_summary):
            common.say(line)
    common.write_marker(ROLE, "finished", {"succeeded": len(ok), "failed": len(bad)})
    plog.write("INFO", f"op_compiler end: {len(ok)} succeeded, {len(bad)} failed")
    if bad or pkg[2]:
        first = results[bad[0]] if bad else "nothing to package"
        common.say(
            f"[ERROR] op_compiler: {len(bad)} of {n} inputs failed "
            f"(logs in {log_dir}); first: {first}",
            err=True,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
