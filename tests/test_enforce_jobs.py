"""``--enforce-jobs`` (C5, issue 20 section 4): skgate's op_compiler shim on the real launcher.

torchair passes ``-j os.cpu_count()`` and reads no ``NPU_STATIC_KERNEL_COMPILE_JOBS``. The
sim's torchair flavour finds op_compiler on PATH here (``--op-compiler-from-path``, where
``python -m skgate.sim.bin`` put the sim's), so the shim skgate puts first on PATH really
is what the launcher runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import own_sim_env, read_json, run_skgate
from skgate.evidence.shim_calls import read_shim_calls
from skgate.preflight.shim import install_shim

SHIM = resources.files("skgate").joinpath("data/op_compiler.sh")


pytestmark = pytest.mark.usefixtures("ends_leftover_sim")


def _env(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "cann-bin"
    subprocess.run([sys.executable, "-m", "skgate.sim.bin", str(bin_dir)], check=True)
    # The CANN install's bin directory on PATH, as on a real host.
    return {**own_sim_env(tmp), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def _gate(tmp: Path, *run_args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    res = run_skgate(
        "run",
        "--root",
        "r",
        "--quiet",
        "--json",
        "--jobs",
        "2",
        "--scan-interval",
        "0.05",
        *run_args,
        "--",
        sys.executable,
        "-m",
        "skgate.sim.torchair",
        "--inputs",
        "3",
        "--cpu-count",
        "7",
        "--op-compiler-from-path",
        cwd=tmp,
        env=_env(tmp),
        timeout=120,
    )
    return res, sorted((tmp / "r" / "attempts").iterdir())[-1]


def _valid(att: Path, name: str) -> dict[str, Any]:
    text = resources.files("skgate").joinpath(f"schemas/{name}.json").read_text("utf-8")
    data: dict[str, Any] = read_json(att / f"{name}.json")
    jsonschema.Draft202012Validator(json.loads(text)).validate(data)
    return data


@pytest.mark.slow
def test_enforce_jobs_runs_op_compiler_with_the_frozen_j_and_records_both_argvs(
    tmp_path: Path,
) -> None:
    res, att = _gate(tmp_path, "--enforce-jobs")
    assert res.returncode == 0, res.stdout + res.stderr
    v = read_json(att / "verdict.json")
    assert v["state"] == "succeeded"
    assert v["effective_jobs"] == [2]
    assert not [r for r in v["reasons"] if r.startswith("C5:")]
    (stage,) = _valid(att, "stages")["stages"]
    assert stage["parsed"]["jobs"] == 2
    original = stage["original_argv"]
    assert original[original.index("-j") + 1] == "7"  # what torchair passed
    assert Path(original[0]) == att / "shim" / "bin" / "op_compiler"
    assert original[original.index("-p") + 1] == stage["parsed"]["params_dir"]
    control = _valid(att, "control")
    shim = control["controls"]["jobs"]["shim"]
    shipped = "sha256:" + hashlib.sha256(SHIM.read_bytes()).hexdigest()
    assert shim["in_force"] is True and shim["fingerprint"] == shipped and shim["jobs"] == 2
    assert shim["path"] == str(att / "shim" / "bin" / "op_compiler")
    assert "sha256:" + hashlib.sha256(Path(shim["path"]).read_bytes()).hexdigest() == shipped
    assert control["request"]["enforce_jobs"] is True
    delta = control["controls"]["env"]["delta"]
    assert delta["changed"]["PATH"]["to"].startswith(str(att / "shim" / "bin") + os.pathsep)
    # The classifier recomputes the same from the files alone (C2).
    again = json.loads(run_skgate("classify", "--json", str(att), cwd=att).stdout)
    assert again["effective_jobs"] == [2]
    en = run_skgate("report", str(att), cwd=att).stdout
    assert (
        f"  - op_compiler pid {stage['pid']}: the launcher passed -j 7; skgate's op_compiler "
        "shim ran it with -j 2 (--enforce-jobs, C5)"
    ) in en
    zh = run_skgate("report", "--lang", "zh", str(att), cwd=att).stdout
    assert "启动器传入 -j 7；skgate 的 op_compiler 垫片以 -j 2 运行它（--enforce-jobs，C5）" in zh


def test_without_enforce_jobs_nothing_changes_and_c5_says_not_in_effect(tmp_path: Path) -> None:
    res, att = _gate(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    v = read_json(att / "verdict.json")
    assert v["effective_jobs"] == [7]
    assert any(
        r.startswith("C5: frozen jobs 2, but op_compiler ran with -j 7") and "not in effect" in r
        for r in v["reasons"]
    )
    (stage,) = _valid(att, "stages")["stages"]
    assert stage["original_argv"] is None
    control = _valid(att, "control")
    assert "shim" not in control["controls"]["jobs"]
    assert control["request"]["enforce_jobs"] is False
    assert not (att / "shim").exists()


def _fake_real(tmp: Path) -> Path:
    real = tmp / "real"
    real.mkdir()
    prog = real / "op_compiler"
    prog.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    prog.chmod(0o755)
    return real


def _shim(tmp: Path, *args: str, jobs: str = "3") -> subprocess.CompletedProcess[str]:
    shim_dir = tmp / "shim"
    shim_dir.mkdir(exist_ok=True)
    calls = tmp / "calls"
    calls.mkdir(exist_ok=True)
    shim = shim_dir / "op_compiler"
    shim.write_bytes(SHIM.read_bytes())
    shim.chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "SKGATE_SHIM_JOBS": jobs,
        "SKGATE_SHIM_DIR": str(shim_dir),
        "SKGATE_SHIM_CALLS": str(calls),
        "SKGATE_SHIM_PATH": f"{shim_dir}:{tmp / 'real'}:/usr/bin",
    }
    return subprocess.run(
        [str(shim), *args], env=env, capture_output=True, text=True, check=False, timeout=30
    )


@pytest.mark.parametrize(
    ("given", "ran"),
    [
        (["-p", "a b", "-j", "64", "-o", "o"], ["-p", "a b", "-j", "3", "-o", "o"]),
        (["-p", "x", "-j64"], ["-p", "x", "-j", "3"]),
        (["-j=64", "-o", "*"], ["-j", "3", "-o", "*"]),
        (["-p", "x"], ["-p", "x", "-j", "3"]),  # op_compiler's default 16 is not the frozen one
        (["-p", "x", "-j"], ["-p", "x", "-j", "3"]),
    ],
)
def test_shim_sets_j_and_keeps_every_other_word(
    tmp_path: Path, given: list[str], ran: list[str]
) -> None:
    _fake_real(tmp_path)
    res = _shim(tmp_path, *given)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ran
    (call,) = read_shim_calls(tmp_path / "calls").values()
    assert list(call.original[1:]) == given
    assert list(call.rewritten) == [str(tmp_path / "real" / "op_compiler"), *ran]


def test_shim_without_a_real_op_compiler_or_jobs_says_so_in_one_line(tmp_path: Path) -> None:
    res = _shim(tmp_path, "-p", "x")
    assert res.returncode == 127
    assert res.stderr == (
        "skgate op_compiler shim: no op_compiler on the original PATH (SKGATE_SHIM_PATH)\n"
    )
    _fake_real(tmp_path)
    bad = _shim(tmp_path, "-p", "x", jobs="0")
    assert bad.returncode == 127 and bad.stderr.count("\n") == 1


def test_shim_is_posix_sh_and_starts_no_python() -> None:
    # C6: no interpreter start-up hook can run in a shell script.
    text = SHIM.read_text()
    assert text.startswith("#!/bin/sh\n")
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "python" in line.lower()]
    sh = shutil.which("sh")
    assert sh is not None
    assert subprocess.run([sh, "-n", str(SHIM)], check=False).returncode == 0


def test_an_outer_runs_shim_on_path_is_not_taken_for_the_real_op_compiler(tmp_path: Path) -> None:
    outer = tmp_path / "outer" / "attempt"
    outer.mkdir(parents=True)
    env = {"PATH": "/usr/bin"}
    first = install_shim(outer, env, 4)
    assert first["in_force"] is True and "skipped_shims" not in first
    inner = tmp_path / "inner" / "attempt"
    inner.mkdir(parents=True)
    nested = dict(env)  # a skgate run inside the first one's command
    second = install_shim(inner, nested, 2)
    outer_bin = str(outer / "shim" / "bin")
    assert second["skipped_shims"] == [outer_bin]
    assert nested["SKGATE_SHIM_PATH"] == "/usr/bin"
    assert nested["PATH"] == f"{inner / 'shim' / 'bin'}:{outer_bin}:/usr/bin"
    assert nested["SKGATE_SHIM_JOBS"] == "2"
