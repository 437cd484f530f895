"""C8 (issue 27), end to end: the gate records every package its owned tree installed or
uninstalled, and a failed install after a good compile is never a clean success.

The workload stands in for torchair: it prints a good final summary, then installs the
``.run`` it "built" the way torch-npu does (``subprocess.run([run], check=True,
capture_output=True)``, the failure caught and, as in 2.7 and 2.9 at the default log
level, not printed), and exits 0. Each test names its own compilers (C4: another user's
``opc`` is never waited for).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import gated_run, own_sim_env, read_json, run_skgate, script

OWN_NAMES = {"SKGATE_COMPILER_NAMES": "skgate-installs-test-opc"}
PHRASE = "compiled, but the package install failed: inference ran without these static kernels"
PHRASE_ZH = "已编译，但包安装失败：推理在没有这些静态 kernel 的情况下运行"
RUN_NAME = "static_kernel_20260101_1.run"
GLOBAL_WORDS = "removes every static-kernel package on this host, other experiments' too"

LAUNCHER = """\
import os, shutil, subprocess, sys
template, run = sys.argv[1:]
os.makedirs(os.path.dirname(run))
shutil.copy(template, run)  # the compile's package, made by this attempt
os.chmod(run, 0o755)
print("[summary] stage=compile inputs=2 succeeded=2 failed=0", flush=True)
try:
    subprocess.run([run], check=True, capture_output=True, text=True)
except subprocess.CalledProcessError:
    pass  # torch-npu 2.7/2.9: logger.warning, below the default level: nothing printed
"""


#: A stand-in script first waits until the gate has recorded its exec with its own argv
#: (a marker in procs.jsonl, polled, never a fixed sleep): a real ``.run`` verifies and
#: unpacks its archive for far longer than the gate takes to read an argv, while a
#: two-line stand-in would be gone before (then only its exit status is known).
SEEN_BY_GATE = """\
i=0
while [ $i -lt 3000 ] && ! grep -q "\\"e\\":\\"exec\\",\\"pid\\":$$,.*\\"argv0\\":\\"/bin/sh\\"" \\
    "$SKGATE_TEST_PROCS" 2>/dev/null; do
  i=$((i+1)); sleep 0.01
done
"""


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    procs = tmp / "r" / "attempts" / "0001" / "procs.jsonl"
    return {**OWN_NAMES, "SKGATE_TEST_PROCS": str(procs), **extra}


def _package(tmp: Path, status: int) -> list[str]:
    """The launcher's arguments: a stand-in ``.run`` exiting with ``status``, and where
    the launcher puts it under the outputs."""
    template = tmp / "package.template"
    template.write_text(
        f"#!/bin/sh\n{SEEN_BY_GATE}echo 'Verifying archive integrity...'\nexit {status}\n"
    )
    run = tmp / "static_kernel_compile_outputs" / "ts20260101_pid1_outputs" / RUN_NAME
    return [str(template), str(run)]


def _installs(attempt: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_json(attempt / "installs.json")
    return data


def _sealed(attempt: Path, name: str) -> bool:
    seal = json.loads((attempt / "seal.json").read_text())
    return name in json.dumps(seal)


@pytest.mark.parametrize("mode", ["optional", "required"])
def test_a_failed_install_after_a_good_compile_is_named_first(tmp_path: Path, mode: str) -> None:
    args = _package(tmp_path, 1)
    cmd = [*script(tmp_path, "launcher.py", LAUNCHER), *args]
    run = gated_run(tmp_path, cmd, "--package", mode, env=_env(tmp_path), quiet=False)
    verdict = run.verdict()
    runs = _installs(run.attempt)["runs"]
    assert [(r["action"], r["path"], r["exit_status"]) for r in runs] == [
        ("install", args[1], 1)
    ], run.output
    assert _sealed(run.attempt, "installs.json")
    assert verdict["installed"] is False
    first = verdict["reasons"][0]
    assert first == f"C8: {PHRASE} (static_kernel_20260101_1.run exited with status 1)"
    if mode == "optional":
        # The state stays the compile's verdict, but never reads as a clean success.
        assert (verdict["state"], run.returncode) == ("succeeded", 0), run.output
        assert f"SUCCEEDED: {PHRASE}" in run.stdout
    else:
        # C8: required mode fails the output check (exit 1), not as a compiler failure.
        assert (verdict["state"], run.returncode) == ("failed", 1), run.output
        assert f"FAILED: {PHRASE} (package mode 'required')" in run.stdout
    # The first screen of status and of the Chinese report say it too.
    status = run_skgate("status", str(run.attempt), cwd=tmp_path, env=OWN_NAMES)
    assert PHRASE in status.stdout.splitlines()[0], status.stdout
    report = run_skgate("report", str(run.attempt), "--lang", "zh", cwd=tmp_path, env=OWN_NAMES)
    assert PHRASE_ZH in "\n".join(report.stdout.splitlines()[:12]), report.stdout


def test_a_good_install_is_installed_true(tmp_path: Path) -> None:
    cmd = [*script(tmp_path, "launcher.py", LAUNCHER), *_package(tmp_path, 0)]
    run = gated_run(tmp_path, cmd, env=_env(tmp_path))
    verdict = run.verdict()
    assert verdict["state"] == "succeeded", run.output
    assert verdict["installed"] is True
    assert not any(r.startswith("C8") for r in verdict["reasons"])


def test_an_owned_global_uninstall_is_flagged_first(tmp_path: Path) -> None:
    home = tmp_path / "ascend" / "latest"
    ai_core = home / "opp" / "static_kernel" / "ai_core"
    (ai_core / "static_kernel_other_experiment").mkdir(parents=True)
    everything = ai_core / "uninstall.sh"
    # A stand-in of the global script: it would remove every package of the host.
    everything.write_text(f'#!/bin/sh\n{SEEN_BY_GATE}rm -rf -- "{ai_core}"/static_kernel_*\n')
    everything.chmod(0o755)
    # vllm-ascend's worker, at SIGTERM/SIGINT: os.path.join(ASCEND_HOME_PATH, ...).
    body = (
        "import os, subprocess\n"
        'print("[summary] stage=compile inputs=1 succeeded=1 failed=0", flush=True)\n'
        'path = os.path.join(os.environ["ASCEND_HOME_PATH"], '
        '"opp/static_kernel/ai_core/uninstall.sh")\n'
        "subprocess.run([path], check=False)\n"
    )
    env = _env(tmp_path, ASCEND_HOME_PATH=str(home))
    run = gated_run(tmp_path, script(tmp_path, "worker.py", body), env=env, quiet=False)
    verdict = run.verdict()
    assert verdict["global_uninstall"] == [str(everything)], run.output
    first = verdict["reasons"][0]
    assert first.startswith(f"C8: an owned process ran the global {everything}, which ")
    assert GLOBAL_WORDS in first
    assert GLOBAL_WORDS in "\n".join(run.stdout.splitlines()[:3]), run.stdout
    runs = _installs(run.attempt)["runs"]
    assert [(r["action"], r["exit_status"]) for r in runs] == [("uninstall_all", 0)]
    status = run_skgate("status", str(run.attempt), cwd=tmp_path, env=env)
    assert GLOBAL_WORDS in "\n".join(status.stdout.splitlines()[:3]), status.stdout


def test_the_torchair_simulator_install_fault_is_read_from_its_warning(
    tmp_path: Path, ends_leftover_sim: None
) -> None:
    """The simulator's ``install_fail`` fault (torch-npu 2.14's warning, nothing installed,
    exit 0) is read from the launcher's line: compiled, but not installed."""
    torchair = [sys.executable, "-m", "skgate.sim.torchair", "--inputs", "2"]
    env = {**own_sim_env(tmp_path, "0.05"), "SKGATE_SIM_FAULTS": "install_fail"}
    run = gated_run(tmp_path, torchair, env=env, quiet=False, timeout=120)
    verdict = run.verdict()
    assert (verdict["state"], verdict["compiled"]) == ("succeeded", True), run.output
    assert verdict["installed"] is False
    first = verdict["reasons"][0]
    assert first.startswith(f"C8: {PHRASE} (static_kernel_"), first
    assert first.endswith(".run: the launcher printed 'install failed')"), first
    lines = [r for r in _installs(run.attempt)["runs"] if r["source"] == "launcher line"]
    assert [(r["action"], r["ok"]) for r in lines] == [("install", False)]
    assert f"SUCCEEDED: {PHRASE}" in run.stdout
    # Without the fault the same launcher installs: no failure is said.
    again = gated_run(tmp_path, torchair, root="r2", env=own_sim_env(tmp_path, "0.05"))
    assert again.verdict()["state"] == "succeeded", again.output
    assert "installed" not in again.verdict() or again.verdict()["installed"] is not False
    assert not any(r.startswith("C8: compiled") for r in again.verdict()["reasons"])
