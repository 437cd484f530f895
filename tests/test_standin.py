"""skgate against an independent stand-in for a torchair / CANN static kernel compile.

The stand-in (``tests/standin/``) was written from public facts about torchair's
``compile_static_kernel`` and CANN's ``op_compiler`` / ``opc``, not from ``skgate.sim``.
Every assertion here follows from those facts, not from what skgate prints today:

- the launcher swallows a failing op_compiler and exits 0, and never prints ``[summary]``;
- compile logs are named ``static_kernel_<OpType>_<sha256>_<pid>_d0_compile_error.log``
  (renamed ``..._compile_succ.log`` on success), not after the input's file name;
- a cache hit prints nothing beyond the start line and runs no op_compiler.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import skip_beside_other_compilers

# End-to-end runs of seconds each: left out of the fast selection (README, Development).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def not_beside_other_compilers() -> None:
    """Issue 28 s10: beside another user's real-named compiler these runs would only wait
    for it (C4); they skip with one line instead of hanging or failing."""
    skip_beside_other_compilers()


STANDIN = Path(__file__).resolve().parent / "standin"
LAUNCHER = STANDIN / "launcher.py"
#: What the default ``--inputs`` (``HcPre:3,MatMulV2:2``) gives: five distinct inputs.
DEFAULT_INPUTS = 5
RUN_TIMEOUT_S = 60.0

#: Resets SIGHUP and SIGTERM to their default dispositions, then execs the command, so
#: skgate and everything it starts begin with default dispositions whatever pytest
#: inherited (no preexec_fn: exec keeps SIG_DFL, an ignored signal stays ignored).
_DEFAULT_SIGNALS_EXEC = (
    "import os, signal, sys\n"
    "for s in (signal.SIGHUP, signal.SIGTERM):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def skgate_argv() -> list[str]:
    exe = Path(sys.executable).parent / "skgate"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "skgate"]


def gate_env(debug: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    # The real compiler names: they make the stages and the foreign-compiler check.
    env["SKGATE_COMPILER_NAMES"] = "opc,op_compiler"
    env.pop("TORCH_COMPILE_DEBUG", None)
    if debug:
        env["TORCH_COMPILE_DEBUG"] = "1"
    return env


@dataclass
class Gated:
    """One ``skgate run`` of the stand-in and the verdict ``skgate status --json`` reads."""

    returncode: int
    output: str
    status_returncode: int
    verdict: dict[str, Any]

    @property
    def state(self) -> str:
        return str(self.verdict.get("state"))

    @property
    def reasons(self) -> str:
        return "\n".join(str(r) for r in self.verdict.get("reasons") or [])

    @property
    def attempt(self) -> Path:
        return Path(str(self.verdict["attempt"]))

    def explain(self) -> str:
        return (
            f"run exit {self.returncode}, state {self.state}\nreasons:\n{self.reasons}\n"
            f"missing: {self.verdict.get('missing')}\n--- output (tail) ---\n{self.output[-3000:]}"
        )

    def stage_censuses(self) -> list[dict[str, Any]]:
        """The per-stage census of ``stages.json`` (README: every observed op_compiler)."""
        try:
            data = json.loads((self.attempt / "stages.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return []
        return [s["census"] for s in data.get("stages", []) if isinstance(s.get("census"), dict)]


@dataclass
class Gate:
    """Runs the stand-in under skgate in ``work``; ends what it started at teardown."""

    tmp: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def work(self) -> Path:
        return self.tmp / "work"

    @property
    def root(self) -> Path:
        return self.tmp / "runs"

    def run(self, *launcher_args: str, debug: bool = False) -> Gated:
        self.work.mkdir(parents=True, exist_ok=True)
        options = ["--root", str(self.root), "--cwd", str(self.work), "--timeout", "120"]
        # Seconds, not the default ten minutes, if a compiler this run does not own runs
        # elsewhere on the machine (C4: waited for, never touched).
        options += ["--lease-timeout", "30"]
        if "PYTHONPATH" in os.environ:
            options += ["--unset-env", "PYTHONPATH"]  # the launcher is stdlib only
        command = [sys.executable, str(LAUNCHER), *launcher_args]
        argv = [sys.executable, "-c", _DEFAULT_SIGNALS_EXEC, *skgate_argv(), "run"]
        argv += [*options, "--", *command]
        proc = subprocess.Popen(
            argv,
            cwd=self.work,
            env=gate_env(debug),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.procs.append(proc)
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        status = subprocess.run(
            [*skgate_argv(), "status", str(self.root), "--json"],
            cwd=self.work,
            env=gate_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            start_new_session=True,
            check=False,
        )
        try:
            verdict = json.loads(status.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"skgate status --json gave no JSON:\n{status.stdout}\n{status.stderr}")
        return Gated(proc.returncode, out, status.returncode, verdict)

    def cleanup(self) -> None:
        """End whatever is still alive, by process group only (never by name)."""
        for proc in self.procs:
            if proc.poll() is None:
                # skgate's runner, told to stop, ends its own group and records it.
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        # The workload runs in a session of skgate's making: any group with a member
        # still working inside this test's directory is ended as a group.
        for pgid in _groups_working_in(self.tmp):
            _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    if pgid <= 1 or pgid == os.getpgrp():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _groups_working_in(directory: Path) -> set[int]:
    groups: set[int] = set()
    base = str(directory.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            pgid = os.getpgid(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
        if cwd == base or cwd.startswith(base + os.sep):
            groups.add(pgid)
    return groups


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    g = Gate(tmp_path)
    try:
        yield g
    finally:
        g.cleanup()


def ts_roots(work: Path) -> list[Path]:
    """The launcher's result roots, oldest first (their names start with a timestamp)."""
    return sorted((work / "static_kernel_compile_outputs").glob("ts*_pid*_outputs"))


def cached_runs(work: Path) -> list[Path]:
    files = (work / "static_kernel_compile_outputs" / "static_kernel_cache").glob("CANN-*.json")
    runs: list[Path] = []
    for f in files:
        runs += [Path(v) for v in json.loads(f.read_text()).values()]
    return runs


NO_COMPILE_WORDS = re.compile(r"no compile ran|without compil|nothing was compiled", re.I)


@pytest.mark.parametrize("cann", ["8", "9"])
def test_success_with_real_log_names(gate: Gate, cann: str) -> None:
    g = gate.run("--cann", cann)
    assert g.state == "succeeded", g.explain()
    assert g.returncode == 0, g.explain()
    assert g.status_returncode == 0, g.explain()
    assert g.verdict.get("compiled") is True, g.explain()
    censuses = g.stage_censuses()
    assert len(censuses) == 1, f"one op_compiler stage expected: {censuses}\n{g.explain()}"
    assert censuses[0].get("inputs") == DEFAULT_INPUTS, g.explain()
    assert censuses[0].get("succeeded") == DEFAULT_INPUTS, g.explain()
    assert censuses[0].get("failed", 0) == 0, g.explain()


def test_multicard_success(gate: Gate) -> None:
    g = gate.run("--ranks", "2")
    assert g.state == "succeeded", g.explain()
    assert g.returncode == 0, g.explain()
    assert g.verdict.get("compiled") is True, g.explain()


def test_swallowed_failure_is_failed(gate: Gate) -> None:
    g = gate.run("--fail", "HcPre")
    # The stand-in itself: the launcher swallowed it, the failing input's log stays error-named.
    assert "execute op_compiler error, msg:" in g.output
    assert g.verdict.get("exit_status") == 0, g.explain()
    error_logs = sorted(gate.work.glob("static_kernel_compile_outputs/*/*_compile_log/*_error.log"))
    assert [p.name.split("_")[2] for p in error_logs] == ["HcPre"], error_logs
    # The gate.
    assert g.state == "failed", g.explain()
    assert g.returncode == 1, g.explain()
    assert g.status_returncode == 1, g.explain()
    assert "HcPre" in g.reasons, g.explain()
    assert error_logs[0].name in g.reasons, g.explain()


def test_silent_cache_hit_is_not_a_compile(gate: Gate) -> None:
    first = gate.run("--cache")
    assert first.verdict.get("compiled") is not False, first.explain()
    assert len(cached_runs(gate.work)) == 1
    second = gate.run("--cache")
    # The stand-in itself: the second root holds only the dumped JSONs, nothing compiled.
    latest = ts_roots(gate.work)[-1]
    pid = re.fullmatch(r"ts\d+_pid(\d+)_outputs", latest.name)
    assert pid is not None, latest
    assert [p.name for p in latest.iterdir()] == [f"{pid.group(1)}_opcompile"]
    assert "generate run package" not in second.output
    # The gate.
    assert second.state != "failed", second.explain()
    assert second.returncode != 1, second.explain()
    assert second.state == "succeeded", second.explain()
    assert second.returncode == 0, second.explain()
    assert second.verdict.get("compiled") is False, second.explain()
    assert NO_COMPILE_WORDS.search(second.reasons), second.explain()


def test_cached_run_gone_recompiles(gate: Gate) -> None:
    first = gate.run("--cache")
    (run,) = cached_runs(gate.work)
    run.unlink()
    second = gate.run("--cache")
    assert "generate run package" in second.output  # the stand-in recompiled (silent miss)
    assert second.state == "succeeded", f"first: {first.explain()}\nsecond: {second.explain()}"
    assert second.returncode == 0, second.explain()
    assert second.verdict.get("compiled") is True, second.explain()


def test_d0_and_d1_logs_succeed(gate: Gate) -> None:
    g = gate.run("--d1")
    succ = list(gate.work.glob("static_kernel_compile_outputs/*/*_compile_log/*_succ.log"))
    assert len(succ) == 2 * DEFAULT_INPUTS  # the stand-in wrote a _d0 and a _d1 log each
    assert g.state == "succeeded", g.explain()
    assert g.returncode == 0, g.explain()


def test_debug_cache_hit_is_not_a_compile(gate: Gate) -> None:
    """With TORCH_COMPILE_DEBUG=1 the hit is printed; still no compile, never failed."""
    gate.run("--cache")
    second = gate.run("--cache", "--debug", debug=True)
    assert "Static kernel cache hit:" in second.output
    assert second.state == "succeeded", second.explain()
    assert second.verdict.get("compiled") is False, second.explain()
