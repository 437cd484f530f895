"""The gate around the torchair-faithful simulator: verdicts from the stage record (C2, C3, C5).

torchair prints no ``[summary]`` line and swallows a failing op_compiler with exit 0, so
these runs are judged from what each owned op_compiler invocation left on disk. The sim's
compilers are named ``sk_op_compiler`` / ``sk_opc`` here (and the gate is told those
names) so that another checkout's ``opc`` on a shared machine is never this test's
workload, nor a foreign compiler it must wait for (C4).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import end_leftover_sim_processes, read_json, run_skgate

# End-to-end runs of seconds each: left out of the fast selection (README, Development).
pytestmark = pytest.mark.slow

TORCHAIR = [sys.executable, "-m", "skgate.sim.torchair"]
NAMES = "sk_opc,sk_op_compiler"


@pytest.fixture(autouse=True)
def end_leftover_sim(tmp_path: Path) -> Iterator[None]:
    yield
    end_leftover_sim_processes(tmp_path / "markers")


def env(tmp: Path, faults: str = "", opc_seconds: str = "0.2") -> dict[str, str]:
    markers = tmp / "markers"
    markers.mkdir(exist_ok=True)
    out = {
        "SKGATE_SIM_MARKERS": str(markers),
        "SKGATE_SIM_OPC_SECONDS": opc_seconds,
        "SKGATE_SIM_PROGRAM_PREFIX": "sk_",
        "SKGATE_COMPILER_NAMES": NAMES,
    }
    if faults:
        out["SKGATE_SIM_FAULTS"] = faults
    return out


def gate(
    tmp: Path,
    *launcher_args: str,
    faults: str = "",
    jobs: str = "2",
    root: str = "r",
    run_args: tuple[str, ...] = (),
) -> tuple[subprocess.CompletedProcess[str], Path]:
    res = run_skgate(
        "run",
        "--root",
        root,
        "--quiet",
        "--json",
        "--jobs",
        jobs,
        "--scan-interval",
        "0.05",
        *run_args,
        "--",
        *TORCHAIR,
        "--inputs",
        "4",
        *launcher_args,
        cwd=tmp,
        env=env(tmp, faults),
        timeout=120,
    )
    attempts = sorted((tmp / root / "attempts").iterdir())
    return res, attempts[-1]


def verdict(att: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_json(att / "verdict.json")
    return data


def report(att: Path, lang: str) -> str:
    res = run_skgate("report", "--lang", lang, str(att), cwd=att)
    assert res.returncode == 0, res.stderr
    return res.stdout


def stage_schema_ok(att: Path) -> dict[str, Any]:
    text = resources.files("skgate").joinpath("schemas/stages.json").read_text("utf-8")
    data: dict[str, Any] = read_json(att / "stages.json")
    jsonschema.Draft202012Validator(json.loads(text)).validate(data)
    return data


def recompute(att: Path) -> dict[str, Any]:
    """``skgate classify`` gives the recorded verdict again from the files alone (C2)."""
    res = run_skgate("classify", "--json", str(att), cwd=att)
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def test_success_without_summary_lines_is_judged_by_the_stage(tmp_path: Path) -> None:
    res, att = gate(tmp_path, "--cpu-count", "2")
    v = verdict(att)
    assert res.returncode == 0, res.stdout + res.stderr
    assert v["state"] == "succeeded"
    assert v["summary_source"] == "op_compiler census"
    assert v["effective_jobs"] == [2]
    assert v["compiled"] is True
    assert (att / "summary.txt").read_text() == ""  # torchair printed no [summary] line
    stages = stage_schema_ok(att)
    (stage,) = stages["stages"]
    # CANN 8 (the default here): no -f; -l error at the default log level 3 (issue 19).
    assert stage["parsed"]["jobs"] == 2 and stage["parsed"]["force"] is None
    assert stage["parsed"]["log_level"] == "error"
    assert stage["parsed"]["enable_super_kernel"] is True
    assert stage["inputs_first_seen"] == 4
    census = stage["census"]
    assert (census["inputs"], census["succeeded"], census["failed"]) == (4, 4, 0)
    assert census["after_return"] is True and len(census["run_packages"]) == 1
    assert recompute(att)["state"] == "succeeded"
    en = report(att, "en")
    assert f"- op_compiler pid {stage['pid']}: -j 2, inputs 4, succeeded 4, failed 0" in en
    assert "- summary source: op_compiler census after natural return" in en
    zh = report(att, "zh")
    assert f"- op_compiler pid {stage['pid']}：-j 2，输入 4，成功 4，失败 0" in zh
    assert "汇总来源：自然返回后的 op_compiler 统计" in zh


def test_swallowed_failure_is_failed_although_the_launcher_exits_0(tmp_path: Path) -> None:
    res, att = gate(tmp_path, "--cpu-count", "2", faults="fail=1")
    v = verdict(att)
    assert v["exit_status"] == 0  # torchair swallowed it
    assert res.returncode == 1
    assert v["state"] == "failed"
    assert v["summary_source"] == "op_compiler census"
    (stage,) = stage_schema_ok(att)["stages"]
    (bad,) = [r for r in stage["census"]["named"] if r["outcome"] == "failed"]
    joined = "\n".join(v["reasons"])
    assert (
        f"op_compiler pid {stage['pid']} naturally returned with 1 of 4 input(s) failed" in joined
    )
    assert bad["name"] in joined and bad["logs"][0] in joined
    assert "execute op_compiler error, msg:" in joined and "injected fault fail=1" in joined
    assert "does not turn it into a success" in joined
    assert recompute(att)["state"] == "failed"
    en = report(att, "en")
    assert "failed 1" in en
    assert f"  - {bad['name']}: naturally returned final compiler failures; read next" in en
    assert bad["logs"][0].endswith("_compile_error.log")
    zh = report(att, "zh")
    assert f"  - {bad['name']}：自然返回的最终编译失败；请先查看" in zh
    assert "C2.3：启动器报告 op_compiler 执行出错" in zh
    # skgate's own reports pass its C7 linter, in both languages.
    (tmp_path / "en.md").write_text(en)
    (tmp_path / "zh.md").write_text(zh)
    lint = run_skgate("lint-report", "en.md", "zh.md", cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_partial_stage_is_unknown_never_failed(tmp_path: Path) -> None:
    # op_compiler compiles 2 of its 4 inputs and exits 0: two inputs have no log at all.
    res, att = gate(tmp_path, faults="stop_after=2")
    v = verdict(att)
    assert res.returncode == 5 and v["state"] == "unknown"
    assert v["summary_source"] is None
    joined = "\n".join(v["reasons"])
    assert "does not account for every input: 2 input(s) without a compile log" in joined
    assert any("op_compiler census after natural return" in m for m in v["missing"])
    assert "原文" not in report(att, "zh").split("## 依据")[1].split("##")[0]


def test_missing_log_with_a_failure_elsewhere_is_failed_only_by_the_failure(
    tmp_path: Path,
) -> None:
    res, att = gate(tmp_path, faults="lose_log=0")
    v = verdict(att)
    assert res.returncode == 5 and v["state"] == "unknown"
    assert "1 input(s) without a compile log" in "\n".join(v["reasons"])


def test_summary_that_disagrees_with_the_stage_is_unknown(tmp_path: Path) -> None:
    # A runtime whose op_compiler prints [summary] lines (CANN >= 9 shows its output) and
    # lies about one failed input: the census after natural return says otherwise.
    res, att = gate(tmp_path, "--cann", "9", "--op-compiler-summary", faults="fail=1,false_summary")
    v = verdict(att)
    assert res.returncode == 5 and v["state"] == "unknown"
    assert v["summary_source"] == "summary_lines"
    joined = "\n".join(v["reasons"])
    assert "the printed summary and the op_compiler census disagree" in joined
    assert "inputs=4 succeeded=3 failed=1 on disk" in joined
    zh = report(att, "zh")
    assert "打印的汇总与 op_compiler 统计不一致" in zh


def test_summary_that_agrees_with_the_stage_keeps_summary_lines_as_source(
    tmp_path: Path,
) -> None:
    res, att = gate(tmp_path, "--cann", "9", "--op-compiler-summary")
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded"
    assert v["summary_source"] == "summary_lines"


def test_silent_cache_hit_is_succeeded_without_compiling(tmp_path: Path) -> None:
    """A real cache hit prints nothing (the hit line is INFO, shown only in debug mode):
    the start line, a fresh root of JSONs, no op_compiler, and a cache that was there
    before launch naming a package that exists (issue 19, C2)."""
    first, att1 = gate(tmp_path, "--cache")
    assert first.returncode == 0 and verdict(att1)["compiled"] is True
    res, att = gate(tmp_path, "--cache")
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded"
    assert v["compiled"] is False and v["effective_jobs"] == []
    stages = stage_schema_ok(att)
    assert stages["stages"] == []
    (root,) = stages["announced"]
    assert root["inputs"] == 4 and root["logs"] == 0 and root["run_packages"] == 0
    (cache,) = stages["caches"]
    assert cache["preexisting"] and cache["path"].endswith(".json")
    assert [e["run_exists"] for e in cache["entries"]] == [True]
    scan = read_json(att / "logscan.json")["launcher"]
    assert scan["cache_hits"] == [] and len(scan["starts"]) == 1  # nothing but the start
    joined = "\n".join(v["reasons"])
    assert "no compile ran: a cached package was installed (the launcher announced " in joined
    assert cache["entries"][0]["run_path"] in joined and cache["path"] in joined
    en = report(att, "en")
    assert "succeeded without compiling" in en and "This is not compile evidence" in en
    assert "the result can be cited" not in en
    zh = report(att, "zh")
    assert "成功（未编译）" in zh and "没有运行编译：安装的是缓存中的包" in zh
    shown = run_skgate("status", str(att), cwd=tmp_path)
    assert shown.stdout.startswith("SUCCEEDED without compiling"), shown.stdout
    root_status = run_skgate("report", str(tmp_path / "r"), cwd=tmp_path).stdout
    assert "2 succeeded (1 of them without a compile)" in root_status, root_status


def test_printed_cache_hit_in_debug_mode_is_no_compile(tmp_path: Path) -> None:
    gate(tmp_path, "--cache")
    res = run_skgate(
        "run", "--root", "r", "--quiet", "--json", "--jobs", "2",
        "--env", "TORCH_COMPILE_DEBUG=1", "--", *TORCHAIR, "--inputs", "4", "--cache",
        cwd=tmp_path, env=env(tmp_path), timeout=120,
    )  # fmt: skip
    att = sorted((tmp_path / "r" / "attempts").iterdir())[-1]
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded" and v["compiled"] is False
    scan = read_json(att / "logscan.json")["launcher"]
    assert len(scan["cache_hits"]) == 1
    assert "(Static kernel cache hit: " in "\n".join(v["reasons"])


def test_cached_run_gone_is_a_silent_miss_and_a_recompile(tmp_path: Path) -> None:
    gate(tmp_path, "--cache")
    for run in (tmp_path / "static_kernel_compile_outputs").glob("*/*.run"):
        run.unlink()
    res, att = gate(tmp_path, "--cache")
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded", v["reasons"]
    assert v["compiled"] is True
    stages = stage_schema_ok(att)
    assert len(stages["stages"]) == 1
    assert not any(r.startswith("C7:") for r in v["reasons"])  # no runtime words printed


def test_d0_and_d1_logs_per_input_are_paired(tmp_path: Path) -> None:
    res, att = gate(tmp_path, "--log-variants", "2")
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded", v["reasons"]
    (stage,) = stage_schema_ok(att)["stages"]
    c = stage["census"]
    assert c["inputs"] == 4 and c["succeeded"] == 4 and c["logs"] == 8


def test_multicard_rank0_gathers_and_compiles_once(tmp_path: Path) -> None:
    res, att = gate(tmp_path, "--nproc", "2")
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded", v["reasons"]
    (stage,) = stage_schema_ok(att)["stages"]
    assert stage["parsed"]["params_dir"].endswith("_opcompile_gathered")
    assert stage["census"]["inputs"] == 5  # 4 shared operators + rank 1's own
    scan = read_json(att / "logscan.json")["launcher"]
    # Every rank prints its start line (before its dump); only rank 0 compiles.
    assert scan["ranks"] == [0, 1]
    assert all(s["multi_card"] for s in scan["starts"])
    assert sorted(s["rank"] for s in scan["starts"]) == [0, 1]


def test_jobs_not_honoured_is_said_and_reported(tmp_path: Path) -> None:
    res, att = gate(tmp_path, "--cpu-count", "3", jobs="1")
    v = verdict(att)
    assert res.returncode == 0 and v["state"] == "succeeded"
    assert v["effective_jobs"] == [3]
    assert (
        "C5: frozen jobs 1, but op_compiler ran with -j 3: the launcher does not honour the "
        "frozen value (NPU_STATIC_KERNEL_COMPILE_JOBS); the control was not in effect"
    ) in v["reasons"]
    assert v["peak_opc"] is not None and v["peak_opc"] >= 1
    en = report(att, "en")
    assert "- effective concurrency: -j 3 (frozen NPU_STATIC_KERNEL_COMPILE_JOBS=1): the " in en
    assert "the control was not in effect" in en
    assert "该控制项没有生效" in report(att, "zh")


def test_command_failing_with_no_compiler_says_so(tmp_path: Path) -> None:
    res = run_skgate(
        "run", "--root", "r", "--quiet", "--", "bash", "missing.sh", cwd=tmp_path, env=env(tmp_path)
    )
    assert res.returncode == 1
    v = verdict(tmp_path / "r" / "attempts" / "0001")
    assert v["state"] == "failed" and v["exit_status"] == 127
    joined = "\n".join(v["reasons"])
    assert "no compiler process (op_compiler) was observed" in joined
    assert "127 usually means a command was not found" in joined
    assert "kept error logs are now final compiler evidence" not in joined


def test_regress_health_refuses_a_cache_hit_as_compile_health_evidence(tmp_path: Path) -> None:
    marker = ("--completion-marker", "inference completed")
    first, ref = gate(tmp_path, "--cache", run_args=marker)
    assert first.returncode == 0 and verdict(ref)["compiled"] is True
    # Same source and workload: the health run hits the cache the reference filled, so
    # nothing compiled and the gate cannot judge compile health (blocked, exit 3).
    res = run_skgate(
        "regress",
        "--health",
        "--reference",
        str(ref),
        "--root",
        "h",
        cwd=tmp_path,
        env=env(tmp_path),
        timeout=120,
    )
    assert res.returncode == 3, res.stdout + res.stderr
    assert "no compile ran: a cached package was installed" in res.stdout + res.stderr
    cached = sorted((tmp_path / "h" / "attempts").iterdir())[-1]
    assert verdict(cached)["compiled"] is False
    # A cache-hit attempt is no reference either (bad input, exit 2, nothing run).
    refused = run_skgate(
        "regress", "--health", "--reference", str(cached), cwd=tmp_path, env=env(tmp_path)
    )
    assert refused.returncode == 2
    assert "no compile ran: a cached package was installed" in refused.stderr


def test_regress_health_refuses_a_reference_whose_jobs_were_not_in_effect(
    tmp_path: Path,
) -> None:
    _, ref = gate(
        tmp_path,
        "--cpu-count",
        "3",
        jobs="1",
        run_args=("--completion-marker", "inference completed"),
    )
    res = run_skgate(
        "regress", "--health", "--reference", str(ref), cwd=tmp_path, env=env(tmp_path)
    )
    assert res.returncode == 2
    assert "frozen jobs 1, but op_compiler ran with -j 3" in res.stderr


def test_python_cpu_count_opt_in_is_recorded_and_judged_by_the_argv(tmp_path: Path) -> None:
    # Explicit opt-in only: PYTHON_CPU_COUNT changes os.cpu_count() for the whole launcher
    # on Python >= 3.13. Whether it worked is read from op_compiler's -j, never assumed.
    res, att = gate(tmp_path, jobs="1", run_args=("--python-cpu-count",))
    assert res.returncode == 0, res.stdout + res.stderr
    control = read_json(att / "control.json")
    rec = control["controls"]["jobs"]["python_cpu_count"]
    assert rec["opted_in"] is True and rec["variable"] == "PYTHON_CPU_COUNT" and rec["value"] == 1
    assert control["request"]["python_cpu_count"] is True
    assert control["controls"]["env"]["delta"]["added"]["PYTHON_CPU_COUNT"] == "1"
    v = verdict(att)
    honoured = v["effective_jobs"] == [1]
    assert rec["in_effect"] is (sys.version_info >= (3, 13))
    if not honoured:
        assert any(
            r.startswith("C5: frozen jobs 1, but op_compiler ran with") for r in v["reasons"]
        )
    plain, att2 = gate(tmp_path, jobs="1", root="r2")
    assert plain.returncode == 0
    assert "python_cpu_count" not in read_json(att2 / "control.json")["controls"]["jobs"]
