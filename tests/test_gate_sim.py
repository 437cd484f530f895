"""The gate around the CANN simulator, with assertions on the real process table.

Issue 2's functional tests: nothing owned is alive after the runner returns; a foreign
``opc`` is never touched; an ``opc`` that ignores SIGTERM is gone after deadline + grace;
after an early leader exit the runner waits for the orphaned ``opc``; ``status`` from
another process reads ``in_progress`` and the run still succeeds. Synchronisation is by
the simulator's marker files (``SKGATE_SIM_MARKERS``), never by a fixed sleep.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    REAL_COMPILER_NAMES,
    Reaper,
    end_leftover_sim_processes,
    events,
    gated_run,
    pid_alive,
    read_json,
    start_skgate,
    wait_for,
)
from skgate.proc.observe import is_alive

LAUNCHER = [sys.executable, "-m", "skgate.sim.launcher"]


@pytest.fixture(autouse=True)
def end_leftover_sim(tmp_path: Path) -> Iterator[None]:
    yield
    end_leftover_sim_processes(tmp_path / "markers")


def sim_env(tmp: Path, faults: str = "", opc_seconds: str = "0.05") -> dict[str, str]:
    markers = tmp / "markers"
    markers.mkdir(exist_ok=True)
    env = {"SKGATE_SIM_MARKERS": str(markers), "SKGATE_SIM_OPC_SECONDS": opc_seconds}
    if faults:
        env["SKGATE_SIM_FAULTS"] = faults
    return env


def marked(tmp: Path, role: str, suffix: str = "started") -> list[int]:
    found = sorted((tmp / "markers").glob(f"{role}.*.{suffix}"))
    return [int(p.name.split(".")[1]) for p in found]


def attempt(tmp: Path) -> Path:
    return tmp / "r" / "attempts" / "0001"


def nothing_owned_alive(att: Path) -> bool:
    own = read_json(att / "ownership.json")
    return not any(is_alive(p["pid"], p["start_ticks"]) for p in own["owned"])


@pytest.mark.slow
def test_success_on_the_simulator(tmp_path: Path) -> None:
    res = gated_run(
        tmp_path,
        [*LAUNCHER, "--inputs", "6"],
        "--jobs",
        "2",
        "--scan-interval",
        "0.05",
        env=sim_env(tmp_path, opc_seconds="0.2"),
    )
    assert res.returncode == 0, res.output
    att = res.attempt
    census = read_json(att / "census.json")
    assert census["totals"] == {"error_logs": 0, "succ_logs": 6, "run_packages": 1}
    assert (
        "[summary] stage=compile inputs=6 succeeded=6 failed=0" in (att / "summary.txt").read_text()
    )
    assert nothing_owned_alive(att)
    own = read_json(att / "ownership.json")
    assert any(p["name"] == "opc" for p in own["owned"]), "opc children are in the manifest"
    # C5: the frozen value reached the compiler through NPU_STATIC_KERNEL_COMPILE_JOBS.
    assert "-j 2" in (att / "run.log").read_text() or "jobs=2" in (att / "run.log").read_text()


def test_input_failure_is_failed_with_final_error_logs(tmp_path: Path) -> None:
    res = gated_run(
        tmp_path, [*LAUNCHER, "--inputs", "4"], "--jobs", "2", env=sim_env(tmp_path, "fail=1")
    )
    assert res.returncode == 1
    verdict = res.verdict()
    assert verdict["state"] == "failed" and verdict["natural_return"] is True
    assert verdict["census"]["totals"]["error_logs"] == 1


@pytest.mark.slow
def test_ignore_sigterm_opc_is_gone_after_deadline_plus_grace(
    tmp_path: Path, reaper: Reaper
) -> None:
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--jobs",
            "2",
            "--timeout",
            "2",
            "--grace",
            "0.5",
            "--",
            *LAUNCHER,
            "--inputs",
            "2",
            cwd=tmp_path,
            env=sim_env(tmp_path, "hang=0,ignore_sigterm"),
        )
    )
    ignoring = wait_for(
        lambda: marked(tmp_path, "opc", "ignoring-sigterm"), what="an opc ignoring SIGTERM"
    )
    for pid in ignoring:
        reaper.add(pid)
    proc.wait(timeout=60)
    assert proc.returncode == 4
    assert not any(pid_alive(p) for p in ignoring)
    att = attempt(tmp_path)
    sent = [(e["name"], e["reason"]) for e in events(att) if e["event"] == "signal_sent"]
    assert sent == [("SIGTERM", "timeout"), ("SIGKILL", "grace-expired")]
    assert nothing_owned_alive(att)
    verdict = read_json(att / "verdict.json")
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "timeout")
    # C1/C7: whatever error-named files the interrupted compile left are not a failure.
    assert verdict["state"] != "failed"


@pytest.mark.slow
def test_foreign_opc_is_never_touched_by_a_timeout(tmp_path: Path, reaper: Reaper) -> None:
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--jobs",
            "1",
            "--timeout",
            "2",
            "--grace",
            "0.5",
            "--",
            *LAUNCHER,
            "--inputs",
            "1",
            cwd=tmp_path,
            env=sim_env(tmp_path, "hang=0"),
        )
    )
    wait_for(lambda: marked(tmp_path, "opc"), what="the owned opc to start")
    # A foreign opc: same name, not in the attempt's tree (its own session, our child).
    foreign = reaper.popen(
        subprocess.Popen(
            ["opc", "-c", "import signal; signal.pause()"],
            executable=sys.executable,
            start_new_session=True,
        )
    )
    proc.wait(timeout=60)
    assert proc.returncode == 4
    assert foreign.poll() is None and pid_alive(foreign.pid), "a foreign opc was signalled"
    assert nothing_owned_alive(attempt(tmp_path))


def test_foreign_opc_before_launch_refused_and_untouched(tmp_path: Path, reaper: Reaper) -> None:
    foreign = reaper.popen(
        subprocess.Popen(
            ["opc", "-c", "import signal; signal.pause()"],
            executable=sys.executable,
            start_new_session=True,
        )
    )
    wait_for(lambda: pid_alive(foreign.pid), what="the foreign opc")
    canary = tmp_path / "static_kernel_compile_outputs"
    res = gated_run(
        tmp_path,
        [*LAUNCHER, "--inputs", "1"],
        "--foreign",
        "refuse",
        env={**sim_env(tmp_path), **REAL_COMPILER_NAMES},
    )
    assert res.returncode == 3, res.output
    verdict = res.verdict()
    assert verdict["state"] == "not_started"
    # The reason names up to six blockers; other compilers on a shared machine may come
    # first, so the full list of the frozen controls is where this one must be.
    assert any("foreign compiler processes not owned" in r for r in verdict["reasons"])
    seen = read_json(attempt(tmp_path) / "control.json")["controls"]["foreign"]["seen"]
    assert foreign.pid in {p["pid"] for p in seen}
    assert not canary.exists(), "nothing may be launched when blocked"
    assert pid_alive(foreign.pid)


@pytest.mark.slow
def test_leader_exits_early_runner_waits_for_orphaned_opc(tmp_path: Path, reaper: Reaper) -> None:
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--jobs",
            "2",
            "--",
            *LAUNCHER,
            "--inputs",
            "4",
            cwd=tmp_path,
            env=sim_env(tmp_path, "leader_exit_early", opc_seconds="0.5"),
        )
    )
    att = attempt(tmp_path)
    wait_for(
        lambda: (
            (att / "events.jsonl").exists()
            and any(e["event"] == "leader_exited" for e in events(att))
        ),
        what="the leader to exit",
    )
    opcs = marked(tmp_path, "opc")
    for pid in opcs:
        reaper.add(pid)
    proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert all(not pid_alive(p) for p in opcs)
    assert nothing_owned_alive(att)
    names = [e["event"] for e in events(att)]
    assert names.index("leader_exited") < names.index("tree_ended")
    # Every opc ran to its natural end (none was cut off when the leader left) ...
    assert sorted(marked(tmp_path, "opc", "finished")) == sorted(marked(tmp_path, "opc"))
    assert len(marked(tmp_path, "opc")) == 4
    # ... and the op_compiler orphan finished after the leader had already gone.
    leader_exit = next(e["t"] for e in events(att) if e["event"] == "leader_exited")
    op_done = (tmp_path / "markers").glob("op_compiler.*.finished")
    assert all(p.stat().st_mtime >= leader_exit - 0.01 for p in op_done)


def gate(tmp_path: Path, faults: str, *extra: str) -> tuple[int, dict[str, Any]]:
    res = gated_run(
        tmp_path, [*LAUNCHER, "--inputs", "3"], "--jobs", "2", *extra, env=sim_env(tmp_path, faults)
    )
    return res.returncode, res.verdict()


def test_launcher_killed_by_a_signal_is_interrupted_and_its_tree_waited_for(
    tmp_path: Path,
) -> None:
    code, verdict = gate(tmp_path, "die_signal=KILL")
    assert code == 4
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "external")
    assert any("not sent by this runner" in str(r) for r in verdict["reasons"])
    # The orphaned compiler tree was waited for, not abandoned or killed (C4).
    assert marked(tmp_path, "op_compiler", "finished")
    assert nothing_owned_alive(attempt(tmp_path))
    assert not any(e["event"] == "signal_sent" for e in events(attempt(tmp_path)))


def test_exit_zero_without_summary_is_unknown_never_succeeded(tmp_path: Path) -> None:
    code, verdict = gate(tmp_path, "no_summary")
    assert code == 5
    assert verdict["state"] == "unknown"
    assert any("summary" in str(m) for m in verdict["missing"])


def test_self_contradicting_summary_is_unknown_never_failed(tmp_path: Path) -> None:
    code, verdict = gate(tmp_path, "contradict_summary,fail=0")
    assert code == 5
    assert verdict["state"] == "unknown"
    assert any("contradicts itself" in str(r) for r in verdict["reasons"])
