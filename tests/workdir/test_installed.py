"""Installed static binaries (issue 20 s3, C8): check-outputs reads the package manifests.

On the simulator: its install step writes ``<opp>/static_kernel/ai_core/<package>/config/
<soc>/binary_info_config.json`` (fact 4a), and ``SKGATE_SIM_MANIFEST_DROP`` leaves an op
type out, standing for a binary that was not built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from conftest import end_leftover_sim_processes, run_skgate, torchair_sim_env
from skgate.model.outcomes import PackageMode
from skgate.workdir.outputs_check import check_outputs

TORCHAIR = [sys.executable, "-m", "skgate.sim.torchair", "--inputs", "4"]


def compile_here(work: Path, **extra: str) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SKGATE_SIM_OPC_SECONDS": "0.01", **extra}
    env.pop("ASCEND_HOME_PATH", None)
    subprocess.run(TORCHAIR, cwd=work, env=env, check=True, capture_output=True, timeout=120)
    return work / "sim_ascend_home" / "opp"


def op_types(work: Path) -> list[str]:
    return sorted(
        json.loads(p.read_text())["op_type"]
        for p in work.glob("static_kernel_compile_outputs/*/*_opcompile/*.json")
    )


def test_every_op_with_a_binary_is_ok(tmp_path: Path) -> None:
    opp = compile_here(tmp_path)
    res = check_outputs(
        tmp_path / "static_kernel_compile_outputs", PackageMode.REQUIRED, None, str(opp)
    )
    assert res.exit_code == 0
    assert res.installed is not None and res.installed.without_binary() == ()
    assert any("every dumped op type (4) has a static binary" in m for m in res.messages)


def test_missing_binary_fails_required_and_is_a_finding_when_optional(tmp_path: Path) -> None:
    opp = compile_here(tmp_path, SKGATE_SIM_MANIFEST_DROP="HcPre")
    assert "HcPre" in op_types(tmp_path)
    out = tmp_path / "static_kernel_compile_outputs"
    req = check_outputs(out, PackageMode.REQUIRED, None, str(opp))
    assert req.exit_code == 1 and req.status == "failure"
    (msg,) = [m for m in req.messages if "no static binary" in m]
    assert msg.startswith("failure by file names alone")
    assert "descriptor op type(s) with no static binary installed: HcPre" in msg
    assert "_opcompile/HcPre_" in msg  # the input that carries it
    opt = check_outputs(out, PackageMode.OPTIONAL, None, str(opp))
    assert opt.exit_code == 0
    assert any(
        m.startswith("finding: descriptor op type(s) with no static binary") for m in opt.messages
    )
    assert opt.to_dict()["installed"]["without_binary"] == ["HcPre"]


def test_empty_static_list_counts_as_no_binary(tmp_path: Path) -> None:
    opp = compile_here(tmp_path)
    (manifest,) = opp.glob("static_kernel/ai_core/static_kernel_*/config/*/binary_info_config.json")
    data = json.loads(manifest.read_text())
    data["AddRmsNorm"]["staticList"] = []
    manifest.write_text(json.dumps(data))
    res = check_outputs(
        tmp_path / "static_kernel_compile_outputs", PackageMode.REQUIRED, None, str(opp)
    )
    assert res.exit_code == 1
    assert res.installed is not None and res.installed.listed_empty() == ("AddRmsNorm",)
    assert any("(listed with an empty staticList: AddRmsNorm)" in m for m in res.messages)


def test_no_manifest_says_the_uninstall_at_exit_caveat_and_concludes_nothing(
    tmp_path: Path,
) -> None:
    compile_here(tmp_path)
    out = tmp_path / "static_kernel_compile_outputs"
    res = check_outputs(out, PackageMode.REQUIRED, None, str(tmp_path / "elsewhere"))
    assert res.exit_code == 0
    (msg,) = [m for m in res.messages if "no installed manifest" in m]
    assert "torchair uninstalls its packages at process exit, fact 4b" in msg
    none = check_outputs(out, PackageMode.REQUIRED, None, None)
    assert any("not checked: no --opp given and ASCEND_OPP_PATH unset" in m for m in none.messages)


def test_manifest_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    opp = compile_here(tmp_path, SKGATE_SIM_MANIFEST_DROP="HcPre")
    (manifest,) = opp.glob("static_kernel/ai_core/static_kernel_*/config/*/binary_info_config.json")
    full = tmp_path / "full.json"
    full.write_text(json.dumps({op: {"staticList": [{}]} for op in op_types(tmp_path)}))
    manifest.unlink()
    manifest.symlink_to(full)
    res = check_outputs(
        tmp_path / "static_kernel_compile_outputs", PackageMode.REQUIRED, None, str(opp)
    )
    assert res.exit_code == 0  # not concluded from a link
    assert any("not a regular file" in m for m in res.messages)


@pytest.mark.slow
def test_cli_opp_overrides_the_environment(tmp_path: Path) -> None:
    opp = compile_here(tmp_path, SKGATE_SIM_MANIFEST_DROP="HcPre")
    env = {**os.environ, "ASCEND_OPP_PATH": str(tmp_path / "nowhere")}
    args = ("check-outputs", "static_kernel_compile_outputs", "--package", "required")
    from_env = run_skgate(*args, cwd=tmp_path, env=env)
    assert from_env.returncode == 0 and "no installed manifest found" in from_env.stdout
    given = run_skgate(*args, "--opp", str(opp), cwd=tmp_path, env=env)
    assert given.returncode == 1, given.stdout
    assert "no static binary installed: HcPre" in given.stdout


def gated(tmp_path: Path, drop: str = "") -> Path:
    home = tmp_path / "home"
    env = torchair_sim_env(
        tmp_path,
        SKGATE_SIM_MANIFEST_DROP=drop,
        ASCEND_HOME_PATH=str(home),
        ASCEND_OPP_PATH=str(home / "opp"),
    )
    try:
        res = run_skgate(
            "run", "--root", "r", "--quiet", "--json", "--jobs", "2", "--", *TORCHAIR,
            cwd=tmp_path, env=env, timeout=120,
        )  # fmt: skip
    finally:
        end_leftover_sim_processes(tmp_path / "markers")
    assert res.returncode == 0, res.stdout + res.stderr
    return sorted((tmp_path / "r" / "attempts").iterdir())[-1]


@pytest.mark.slow
def test_attempt_records_installed_binaries_and_the_report_names_the_missing(
    tmp_path: Path,
) -> None:
    att = gated(tmp_path, "HcPre")
    rec = json.loads((att / "installed.json").read_text())
    schema = resources.files("skgate").joinpath("schemas/installed.json").read_text("utf-8")
    jsonschema.Draft202012Validator(json.loads(schema)).validate(rec)
    assert rec["schema"] == "skgate.installed/1" and rec["without_binary"] == ["HcPre"]
    sealed = {f["name"] for f in json.loads((att / "seal.json").read_text())["files"]}
    assert "installed.json" in sealed
    en = run_skgate("report", "--lang", "en", str(att), cwd=tmp_path).stdout
    assert "Installed static binaries (C8)" in en
    assert "descriptor op type(s) with no static binary installed: HcPre" in en
    zh = run_skgate("report", "--lang", "zh", str(att), cwd=tmp_path).stdout
    assert "没有安装静态二进制的算子类型：HcPre" in zh
    html = run_skgate("report", "--format", "html", str(att), cwd=tmp_path)
    assert "no static binary installed: HcPre" in html.stdout, html.stderr


@pytest.mark.slow
def test_an_earlier_attempts_package_does_not_cover_this_ones(tmp_path: Path) -> None:
    gated(tmp_path)  # an earlier compile whose package has every op type
    att = gated(tmp_path, "HcPre")
    rec = json.loads((att / "installed.json").read_text())
    assert len(rec["packages"]) == 1 and rec["without_binary"] == ["HcPre"]
