"""The CANN static-compile simulator, run directly (no skgate runner).

Every process the sim starts writes a marker (SKGATE_SIM_MARKERS) with its pid and start
ticks; tests wait on those files, never on a fixed sleep, and end leftovers by pid after
checking the start ticks (never by name).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from skgate.sim import faults

LAUNCHER = [sys.executable, "-m", "skgate.sim.launcher"]
SUMMARY_RE = re.compile(r"^\[summary\] stage=(\S+) inputs=(\d+) succeeded=(\d+) failed=(\d+)$")
DEADLINE = 20.0


def stat_fields(pid: int) -> tuple[str, list[str]] | None:
    """(comm, fields after comm) of /proc/<pid>/stat, or None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    comm = raw[raw.find(b"(") + 1 : raw.rfind(b")")].decode()
    return comm, raw[raw.rfind(b")") + 2 :].decode().split()


def alive(pid: int, ticks: int) -> bool:
    """The same process (pid and start ticks), not yet a zombie."""
    st = stat_fields(pid)
    return st is not None and st[1][0] not in ("Z", "X") and int(st[1][19]) == ticks


@dataclass
class Sim:
    workdir: Path
    markers: Path
    env: dict[str, str]

    def launch(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*LAUNCHER, *args],
            cwd=self.workdir,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )

    def start(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        # The child keeps its own copy of the descriptor; ours closes with the block.
        with open(self.workdir / "launcher.out", "wb") as out:
            return subprocess.Popen(
                [*LAUNCHER, *args],
                cwd=self.workdir,
                env={**self.env, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def output(self) -> str:
        return (self.workdir / "launcher.out").read_text()

    def markers_of(self, role: str, event: str = "started") -> list[dict[str, Any]]:
        found = []
        for p in sorted(self.markers.glob(f"{role}.*.{event}")):
            found.append(json.loads(p.read_text()))
        return found

    def wait_marker(self, role: str, event: str = "started", **match: Any) -> dict[str, Any]:
        def look() -> dict[str, Any] | None:
            for m in self.markers_of(role, event):
                if all(m.get(k) == v for k, v in match.items()):
                    return m
            return None

        found: dict[str, Any] = wait_for(look, f"marker {role}.*.{event} {match}")
        return found

    def logs(self, kind: str) -> list[Path]:
        return sorted(self.workdir.glob(f"static_kernel_compile_outputs/*/*_compile_log/*{kind}"))

    def runs(self) -> list[Path]:
        return sorted(self.workdir.glob("static_kernel_compile_outputs/*/*.run"))


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    markers = tmp_path / "markers"
    markers.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SKGATE_", "ASCEND_", "NPU_")) and k != "PYTHONSTARTUP"
    }
    env.update(
        {
            "SKGATE_SIM_MARKERS": str(markers),
            "SKGATE_SIM_OPC_SECONDS": "0.01",
            "NPU_STATIC_KERNEL_COMPILE_JOBS": "2",
        }
    )
    s = Sim(work, markers, env)
    yield s
    # End, by pid + start ticks, every sim process still alive (hang / escape scenarios).
    for p in markers.glob("*.started"):
        m = json.loads(p.read_text())
        if alive(m["pid"], m["start_ticks"]):
            os.kill(m["pid"], signal.SIGKILL)


def summaries(text: str) -> list[tuple[str, int, int, int]]:
    out = []
    for line in text.splitlines():
        m = SUMMARY_RE.match(line)
        if m:
            out.append((m[1], int(m[2]), int(m[3]), int(m[4])))
    return out


# --- the grammar (in-process) ---------------------------------------------------------


def test_fault_grammar_parses_every_item() -> None:
    f = faults.parse(
        "fail=1:3, hang=2,quiet=0.5,ignore_sigterm,escape=1.5,leader_exit_early,"
        "die_signal=SEGV,no_summary,contradict_summary,fail_with_hook,fail_above_jobs=4,"
        "fail_seed=abc,fail=5,"
    )
    assert f.fail == frozenset({1, 3, 5})
    assert f.hang == frozenset({2})
    assert f.quiet == 0.5
    assert f.escape == 1.5
    assert f.die_signal == signal.SIGSEGV
    assert f.fail_above_jobs == 4
    assert f.fail_seed == "abc"
    assert f.ignore_sigterm
    assert f.leader_exit_early
    assert f.no_summary
    assert f.contradict_summary
    assert f.fail_with_hook
    assert faults.parse("") == faults.Faults()
    assert faults.parse("die_signal=9").die_signal == signal.SIGKILL


@pytest.mark.parametrize(
    "spec",
    ["bogus", "fail=x", "fail=", "quiet=-1", "quiet=nan", "die_signal=CHLD", "no_summary=1"],
)
def test_fault_grammar_rejects_bad_items(spec: str) -> None:
    with pytest.raises(faults.FaultSpecError):
        faults.parse(spec)


def test_unknown_fault_exits_2_with_one_line(sim: Sim) -> None:
    r = sim.launch("--fault", "fail=0,bogus")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "bogus" in r.stderr
    assert not (sim.workdir / "static_kernel_compile_outputs").exists()
    r = sim.launch(SKGATE_SIM_FAULTS="nope")
    assert r.returncode == 2
    assert "nope" in r.stderr


# --- success layout -------------------------------------------------------------------


def test_success_layout_lines_install_and_records(sim: Sim) -> None:
    r = sim.launch("--inputs", "3", "--steps", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    start = [x for x in lines if x.startswith("Starting static kernel compilation")]
    assert len(start) == 1
    root = Path(start[0].rsplit(" ", 1)[1])
    assert re.fullmatch(r"ts\d{20}_pid\d+_outputs", root.name)
    assert root.parent == sim.workdir / "static_kernel_compile_outputs"
    pid = int(root.name.split("_pid")[1].split("_")[0])
    for sub in ("opcompile", "opcompile_selected", "opcompile_blacklist"):
        assert (root / f"{pid}_{sub}").is_dir()
    assert "skgate-sim: compile jobs=2 (source: NPU_STATIC_KERNEL_COMPILE_JOBS)" in lines
    succ = sim.logs("_compile_succ.log")
    assert len(succ) == 3
    assert not sim.logs("_compile_error.log")
    # Real names (docs/cann-static-compile.md): not the input's stem, not the launcher's
    # pid; <OpType>_<dtype>_<format>_<shape...>_<n>.json inputs, op_compiler's pid in logs.
    names = [p.name for p in succ]
    assert all(
        re.fullmatch(r"static_kernel_[A-Za-z0-9]+_[0-9a-f]{64}_\d+_d0_compile_succ\.log", n)
        and f"_{pid}_d0" not in n
        for n in names
    ), names
    inputs = sorted(p.stem for p in (root / f"{pid}_opcompile_selected").glob("*.json"))
    assert all(re.fullmatch(r"[A-Za-z0-9]+_float16_ND_\d+_\d+_\d+", s) for s in inputs), inputs
    assert sorted(n.split("_")[2] for n in names) == sorted(s.split("_")[0] for s in inputs)
    assert all("compile succ" in p.read_text() for p in succ)
    (run,) = sim.runs()
    assert re.fullmatch(r"static_kernel_\d{14}_\d+\.run", run.name)
    assert f"generate run package {run.name} success" in lines
    assert summaries(r.stdout) == [("compile", 3, 3, 0), ("package", 1, 1, 0)]
    assert "Verifying archive integrity...  100%   SHA256 checksums are OK. All good." in lines
    assert "Uncompressing STATIC KERNEL RUN PACKAGE  100%" in lines
    warn = [x for x in lines if x.startswith("Warning: If the process exits abnormally")]
    assert len(warn) == 1
    uninstall = Path(warn[0].rsplit(" ", 1)[1])
    ai_core = sim.workdir / "sim_ascend_home" / "opp" / "static_kernel" / "ai_core"
    assert uninstall == ai_core / run.name[:-4] / "uninstall.sh"
    assert uninstall.is_file()
    assert (ai_core / ".skgate-sim").is_file()
    assert (ai_core / "uninstall.sh").is_file()
    assert (ai_core / "version.info").is_file()
    launcher = sim.markers_of("launcher")[0]
    assert launcher["pid"] == pid
    rec = json.loads((sim.workdir / ".static_kernel_records.json").read_text())
    assert rec[run.name[:-4]]["uninstall_path"] == str(uninstall)
    assert rec[run.name[:-4]]["filename"] == run.name
    assert rec[run.name[:-4]]["pid"] == pid
    assert rec[run.name[:-4]]["process_start_time"] == launcher["start_ticks"]
    assert not (sim.workdir / "sk_meta").exists()
    assert lines[-1] == "skgate-sim: inference completed (steps=2)"


def test_package_uninstall_removes_only_its_own_package(sim: Sim) -> None:
    assert sim.launch("--inputs", "1", "--steps", "0").returncode == 0
    assert sim.launch("--inputs", "1", "--steps", "0").returncode == 0
    rec = json.loads((sim.workdir / ".static_kernel_records.json").read_text())
    first, second = (Path(v["uninstall_path"]) for v in rec.values())
    log = sim.workdir / "uninstall.log"
    subprocess.run(
        ["sh", str(first)], check=True, env={**sim.env, "SKGATE_SIM_UNINSTALL_LOG": str(log)}
    )
    assert not first.parent.exists()
    assert second.is_file()
    assert (first.parent.parent / "uninstall.sh").is_file()
    assert log.read_text() == f"uninstall {first.parent}\n"


def test_refuses_a_home_that_is_not_a_sandbox(sim: Sim) -> None:
    home = sim.workdir / "real_ascend"
    home.mkdir()
    (home / "set_env.sh").write_text("# a real install\n")
    r = sim.launch(ASCEND_HOME_PATH=str(home))
    assert r.returncode == 2
    assert "not a skgate-sim sandbox" in r.stderr
    assert sorted(p.name for p in home.iterdir()) == ["set_env.sh"]


def test_profiler_sk_trace_and_kernel_meta_change_outputs_not_the_result(sim: Sim) -> None:
    r = sim.launch(
        "--steps",
        "4",
        SKGATE_SIM_PROFILE="1",
        ASCEND_PROF_SK_ON="64",
        ASCEND_OP_COMPILE_SAVE_KERNEL_META="1",
        SKGATE_PROFILER_SCHEDULE="wait=1,warmup=1,active=2,repeat=1,skip_first=0",
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    sched = "skgate-sim: profiler schedule wait=1 warmup=1 active=2 repeat=1 skip_first=0"
    # C6: read at the launcher's normal initialization point, after the CANN env setup.
    setup = next(i for i, x in enumerate(lines) if x.startswith("skgate-sim: CANN env setup"))
    assert (
        setup
        < lines.index(sched)
        < next(i for i, x in enumerate(lines) if x.startswith("Starting static kernel"))
    )
    assert summaries(r.stdout) == [("compile", 4, 4, 0), ("package", 1, 1, 0)]
    (prof,) = sim.workdir.glob("profiling/*/profiler_info.json")
    assert json.loads(prof.read_text())["recorded_steps"] == [2, 3]
    assert (sim.workdir / "sk_prof_device_0.json").is_file()
    (fused,) = sim.workdir.glob("sk_meta/*/model_0_0/sk_fused_nodes.log")
    assert fused.read_text().startswith("SK Function: ")
    assert "Node Count: 4" in fused.read_text()
    bad = sim.launch(SKGATE_PROFILER_SCHEDULE="wait=x")
    assert bad.returncode == 2


# --- failures -------------------------------------------------------------------------


def test_failed_input_keeps_error_log_and_exits_nonzero(sim: Sim) -> None:
    r = sim.launch("--inputs", "4", "--fault", "fail=1")
    assert r.returncode == 1
    assert "execute op_compiler error, msg: " in r.stderr
    assert summaries(r.stdout) == [("compile", 4, 3, 1), ("package", 1, 1, 0)]
    (err,) = sim.logs("_compile_error.log")
    assert "injected fault fail=1" in err.read_text()
    assert len(sim.logs("_compile_succ.log")) == 3
    assert len(sim.runs()) == 1  # the inputs that compiled still make a package
    assert "Warning: If the process exits abnormally" not in r.stdout


@pytest.mark.parametrize(
    ("spec", "env", "failed"),
    [
        ("fail_above_jobs=1", {}, 1),
        ("fail_above_jobs=2", {}, 0),
        ("fail_seed=7", {"SKGATE_SIM_CACHE_SEED": "7"}, 1),
        ("fail_seed=7", {"SKGATE_SIM_CACHE_SEED": "8"}, 0),
    ],
)
def test_conditional_failures(sim: Sim, spec: str, env: dict[str, str], failed: int) -> None:
    r = sim.launch("--inputs", "2", "--fault", spec, **env)
    assert r.returncode == (1 if failed else 0)
    assert summaries(r.stdout)[0] == ("compile", 2, 2 - failed, failed)


def test_fail_with_hook_only_when_a_startup_hook_loads(sim: Sim, tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("# a start-up hook (C6 forbids these)\n")
    clean = sim.launch("--inputs", "2", "--fault", "fail_with_hook")
    assert clean.returncode == 0, clean.stderr
    hooked = sim.launch("--inputs", "2", "--fault", "fail_with_hook", PYTHONPATH=str(hook))
    assert hooked.returncode == 1
    assert summaries(hooked.stdout)[0] == ("compile", 2, 1, 1)
    (err,) = sim.logs("_compile_error.log")
    assert "sitecustomize" in err.read_text()


# --- processes ------------------------------------------------------------------------


def test_jobs_cap_is_honoured(sim: Sim) -> None:
    r = sim.launch("--inputs", "6", SKGATE_SIM_OPC_SECONDS="0.15")
    assert r.returncode == 0, r.stderr
    starts = {m["pid"]: m["mono"] for m in sim.markers_of("opc")}
    ends = {m["pid"]: m["mono"] for m in sim.markers_of("opc", "finished")}
    assert len(starts) == len(ends) == 6
    points = sorted([(t, 1) for t in starts.values()] + [(t, -1) for t in ends.values()])
    running = peak = 0
    for _, step in points:
        running += step
        peak = max(peak, running)
    assert peak == 2
    (compiler,) = sim.markers_of("op_compiler")
    assert {m["ppid"] for m in sim.markers_of("opc")} == {compiler["pid"]}


def test_opc_and_op_compiler_look_like_the_real_programs(sim: Sim) -> None:
    proc = sim.start("--inputs", "1", "--fault", "hang=0")
    try:
        opc = sim.wait_marker("opc", index=0)
        compiler = sim.markers_of("op_compiler")[0]
        for m, name in ((opc, "opc"), (compiler, "op_compiler")):
            st = stat_fields(m["pid"])
            assert st is not None
            assert st[0] == name
            argv = Path(f"/proc/{m['pid']}/cmdline").read_bytes().split(b"\0")
            assert argv[0] == name.encode()
        # C1: the error-named log exists while its opc is alive and healthy.
        assert len(sim.logs("_compile_error.log")) == 1
        assert alive(opc["pid"], opc["start_ticks"])
        os.kill(opc["pid"], signal.SIGKILL)
        assert proc.wait(timeout=DEADLINE) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "killed by signal 9" in sim.logs("_compile_error.log")[0].read_text()
    assert summaries(sim.output()) == [("compile", 1, 0, 1), ("package", 1, 0, 1)]
    assert not sim.runs()


def test_ignore_sigterm_opc_needs_sigkill(sim: Sim) -> None:
    proc = sim.start("--inputs", "1", "--fault", "ignore_sigterm,hang=0")
    try:
        m = sim.wait_marker("opc", "ignoring-sigterm")
        status = Path(f"/proc/{m['pid']}/status").read_text()
        ignored = int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.M)[1], 16)  # type: ignore[index]
        assert ignored & (1 << (signal.SIGTERM - 1))
        os.kill(m["pid"], signal.SIGKILL)
        assert proc.wait(timeout=DEADLINE) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_leader_exit_early_leaves_compiler_running_to_natural_end(sim: Sim) -> None:
    # hang=0 keeps op_compiler alive deterministically after the leader has gone.
    proc = sim.start("--inputs", "2", "--fault", "leader_exit_early,hang=0")
    assert proc.wait(timeout=DEADLINE) == 0
    (leader,) = sim.markers_of("launcher")
    (compiler,) = sim.markers_of("op_compiler")
    assert compiler["ppid"] == leader["pid"]
    assert alive(compiler["pid"], compiler["start_ticks"])
    hung = sim.wait_marker("opc", index=0)
    os.kill(hung["pid"], signal.SIGKILL)
    sim.wait_marker("op_compiler", "finished")
    text = sim.output()
    assert "leader_exit_early" in text
    assert summaries(text) == [("compile", 2, 1, 1), ("package", 1, 1, 0)]
    assert "Warning: If the process exits abnormally" not in text


def test_leader_exit_early_compiler_still_succeeds(sim: Sim) -> None:
    proc = sim.start("--inputs", "3", "--fault", "leader_exit_early")
    assert proc.wait(timeout=DEADLINE) == 0
    done = sim.wait_marker("op_compiler", "finished")
    assert done["succeeded"] == 3
    assert done["failed"] == 0
    assert len(sim.runs()) == 1


def test_die_signal_kills_the_leader_mid_compile(sim: Sim) -> None:
    proc = sim.start("--inputs", "2", "--fault", "die_signal=KILL")
    assert proc.wait(timeout=DEADLINE) == -signal.SIGKILL
    sim.wait_marker("op_compiler", "finished")
    assert summaries(sim.output())[0] == ("compile", 2, 2, 0)


def test_no_summary_exits_zero_without_summary(sim: Sim) -> None:
    r = sim.launch("--inputs", "2", "--fault", "no_summary")
    assert r.returncode == 0, r.stderr
    assert not [x for x in r.stdout.splitlines() if x.startswith("[summary]")]
    assert len(sim.runs()) == 1


def test_contradict_summary_contradicts_itself(sim: Sim) -> None:
    r = sim.launch("--inputs", "2", "--fault", "contradict_summary")
    assert r.returncode == 0, r.stderr
    got = summaries(r.stdout)
    assert any(s + f != n for _, n, s, f in got)
    package = [x for x in got if x[0] == "package"]
    assert len(package) == 2
    assert package[0] != package[1]


def test_quiet_period_before_summary(sim: Sim) -> None:
    r = sim.launch("--inputs", "1", "--fault", "quiet=0.3")
    assert r.returncode == 0, r.stderr
    (opc_end,) = sim.markers_of("opc", "finished")
    (compiler_end,) = sim.markers_of("op_compiler", "finished")
    assert compiler_end["mono"] - opc_end["mono"] >= 0.3
    assert summaries(r.stdout)[0] == ("compile", 1, 1, 0)


def test_escape_leaves_a_descendant_in_its_own_session(sim: Sim) -> None:
    r = sim.launch("--inputs", "1", "--fault", "escape=30")
    assert r.returncode == 0, r.stderr
    esc = sim.wait_marker("escaped")
    (leader,) = sim.markers_of("launcher")
    (opc,) = sim.markers_of("opc")
    assert esc["sid"] == esc["pid"] != leader["sid"]
    assert esc["pgid"] != leader["pgid"]
    assert esc["ppid"] not in (opc["pid"], leader["pid"])
    assert alive(esc["pid"], esc["start_ticks"])
    os.kill(esc["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(esc["pid"], esc["start_ticks"]), "escaped process to end")
