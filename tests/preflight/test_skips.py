"""Preflight names what will make the compile skip (issue 20 s1, C6): on the simulator.

Each warning is recorded in control.json before launch and said by ``skgate run`` and
``skgate preflight`` in English and Chinese; only a build path too deep refuses (exit 3,
not started) unless ``--allow-long-paths``.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import read_json, run_skgate, torchair_sim_env
from skgate.model.skips import NAME_MAX, derived_name_bytes, path_too_deep

TORCHAIR = [sys.executable, "-m", "skgate.sim.torchair"]


pytestmark = pytest.mark.usefixtures("end_leftover_sim")


def gate(
    tmp: Path, cwd: Path, *launcher: str, run_args: tuple[str, ...] = (), **extra: str
) -> tuple[Any, Path]:
    cwd.mkdir(parents=True, exist_ok=True)
    res = run_skgate(
        "run", "--root", str(tmp / "r"), "--quiet", "--json", "--jobs", "2",
        "--scan-interval", "0.05", *run_args, "--", *TORCHAIR, "--inputs", "3", *launcher,
        cwd=cwd, env=torchair_sim_env(tmp, **extra), timeout=120,
    )  # fmt: skip
    return res, sorted((tmp / "r" / "attempts").iterdir())[-1]


def skips(att: Path) -> dict[str, Any]:
    control = read_json(att / "control.json")
    text = resources.files("skgate").joinpath("schemas/control.json").read_text("utf-8")
    jsonschema.Draft202012Validator(json.loads(text)).validate(control)
    data: dict[str, Any] = control["controls"]["skips"]
    return data


def kinds(att: Path) -> list[str]:
    return [f["kind"] for f in skips(att)["findings"]]


@pytest.mark.slow
def test_existing_cache_is_named_with_its_entries_before_launch(tmp_path: Path) -> None:
    work = tmp_path / "w"
    first, att1 = gate(tmp_path, work, "--cache")
    assert first.returncode == 0 and kinds(att1) == []  # nothing there before the first
    res, att = gate(tmp_path, work, "--cache")
    rec = skips(att)
    (cache,) = rec["caches"]
    assert cache["path"].endswith(".json") and cache["lock"] is True
    (entry,) = cache["entries"]
    assert entry["run_exists"] is True and entry["run_path"].endswith(".run")
    (f,) = rec["findings"]
    assert f["kind"] == "static_kernel_cache" and f["blocks"] is False
    assert "a hit installs the cached package without compiling" in f["en"]
    # Issue 27: 2.14's key covers the options and the deterministic level, not the .o.
    assert "deterministic mode and level, not replaced .o files" in f["en"]
    assert "disable_static_kernel_compile_cache" in f["en"] and "skgate cleanup" in f["en"]
    assert entry["run_path"] in f["en"] and "(exists)" in f["en"]
    assert "命中时直接安装缓存的包，不会编译" in f["zh"]
    # said on stderr by skgate run, in both languages, and the run still launched
    assert "skgate: warning: static-kernel cache present" in res.stderr
    assert "skgate: 警告：存在静态 Kernel 缓存" in res.stderr
    assert read_json(att / "verdict.json")["compiled"] is False


@pytest.mark.slow
def test_cache_entry_whose_run_is_gone_is_named_missing(tmp_path: Path) -> None:
    work = tmp_path / "w"
    gate(tmp_path, work, "--cache")
    for run in (work / "static_kernel_compile_outputs").glob("*/*.run"):
        run.unlink()
    _, att = gate(tmp_path, work, "--cache")
    (f,) = skips(att)["findings"]
    assert "(missing: a silent miss, then a compile)" in f["en"]
    assert skips(att)["caches"][0]["entries"][0]["run_exists"] is False


@pytest.mark.slow
def test_stale_kernel_meta_objects_are_named_with_size_and_mtime(tmp_path: Path) -> None:
    work = tmp_path / "w"
    first, att1 = gate(tmp_path, work, SKGATE_SIM_SK_JIT="1")
    assert first.returncode == 0 and "stale_kernel_meta" not in kinds(att1)
    obj = work / "kernel_meta" / "ascendc_super_kernel_plus.o"
    assert obj.is_file()  # the simulated SuperKernel JIT left it
    (work / "kernel_meta" / "link.o").symlink_to(obj)  # a link is not what CANN checks
    st = obj.stat()
    res, att = gate(tmp_path, work, SKGATE_SIM_SK_JIT="1")
    meta = skips(att)["kernel_meta"]
    (o,) = meta["objects"]
    assert o == {"name": obj.name, "size": st.st_size, "mtime": st.st_mtime}
    (f,) = [f for f in skips(att)["findings"] if f["kind"] == "stale_kernel_meta"]
    assert f"{obj.name} ({st.st_size} bytes, mtime {st.st_mtime:.0f})" in f["en"]
    assert "extract_sub_bin_file" in f["en"] and "SuperKernel 编译直接返回" in f["zh"]
    assert "skgate: warning: stale kernel_meta objects" in res.stderr


def test_derived_name_rule_is_the_path_plus_the_longest_fixed_name() -> None:
    assert derived_name_bytes("/a/b") == len("a_b") + 1 + 108
    limit_path = "/" + "x" * (NAME_MAX - 1 - 108)
    assert not path_too_deep(limit_path) and path_too_deep(limit_path + "y")
    assert derived_name_bytes("/é") == 2 + 1 + 108  # bytes, not characters


def deep_dir(tmp: Path) -> Path:
    need = NAME_MAX - 108 - len(str(tmp).lstrip("/")) + 5
    return tmp / ("d" * max(need, 1))


def test_deep_build_path_is_refused_before_launch(tmp_path: Path) -> None:
    work = deep_dir(tmp_path)
    res, att = gate(tmp_path, work)
    assert res.returncode == 3, res.stdout + res.stderr
    v = read_json(att / "verdict.json")
    assert v["state"] == "not_started"
    n = derived_name_bytes(str(work))
    (reason,) = [r for r in v["reasons"] if r.startswith("build path too deep")]
    assert f"{work}: estimated derived file name length {n} bytes > limit 255" in reason
    assert "--allow-long-paths" in reason and "\n" not in reason
    assert not (work / "static_kernel_compile_outputs").exists()  # nothing ran
    assert skips(att)["path"] == {
        "cwd": str(work), "derived_name_bytes": n, "limit": 255, "too_deep": True,
        "allow_long_paths": False,
    }  # fmt: skip
    assert "skgate: 拒绝：构建路径过深" in res.stderr


def test_allow_long_paths_launches_on_record_and_the_sim_fails_on_it(tmp_path: Path) -> None:
    work = deep_dir(tmp_path)
    res, att = gate(tmp_path, work, run_args=("--allow-long-paths",))
    control = read_json(att / "control.json")
    assert control["request"]["allow_long_paths"] is True
    assert kinds(att) == ["path_too_deep_allowed"]
    v = read_json(att / "verdict.json")
    # The simulated op_compiler meets ENAMETOOLONG; torchair swallows it (exit 0).
    assert v["state"] == "failed" and v["exit_status"] == 0, v["reasons"]
    assert "File name too long" in (att / "run.log").read_text()
    assert res.returncode == 1


@pytest.mark.slow
def test_static_kernels_off_is_named_from_the_environment_only(tmp_path: Path) -> None:
    work = tmp_path / "w"
    res, att = gate(tmp_path, work, WORLD_SIZE="2", RANK="0", VLLM_USE_V1="1")
    (f,) = skips(att)["findings"]
    assert f["kind"] == "static_kernels_off"
    assert "WORLD_SIZE=2, RANK=0, VLLM_USE_V1" in f["en"] and "LOCAL_WORLD_SIZE" in f["en"]
    assert skips(att)["static_off"] == ["WORLD_SIZE=2", "RANK=0", "VLLM_USE_V1"]
    # the simulated torchair indeed turned static kernels off with only a warning
    assert "the static kernel feature will be disabled" in (att / "run.log").read_text()
    assert "多卡启动环境中未设置 LOCAL_WORLD_SIZE" in res.stderr
    _, att2 = gate(tmp_path, work, WORLD_SIZE="2", LOCAL_WORLD_SIZE="1")
    assert kinds(att2) == []  # LOCAL_WORLD_SIZE set: nothing to name
    _, att3 = gate(tmp_path, work, WORLD_SIZE="1")
    assert kinds(att3) == []  # one card: nothing to name


def test_preflight_shows_the_findings_in_both_languages(tmp_path: Path) -> None:
    work = tmp_path / "w"
    (work / "kernel_meta").mkdir(parents=True)
    (work / "kernel_meta" / "k.o").write_bytes(b"x" * 7)
    res = run_skgate(
        "preflight", "--root", str(tmp_path / "r"), "--", *TORCHAIR,
        cwd=work, env=torchair_sim_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert "what will make the compile skip (C6):" in res.stdout
    assert "k.o (7 bytes, mtime " in res.stdout and "残留的 kernel_meta 目标文件" in res.stdout
    got = run_skgate(
        "preflight", "--json", "--root", str(tmp_path / "r"), "--", *TORCHAIR,
        cwd=work, env=torchair_sim_env(tmp_path), timeout=60,
    )  # fmt: skip
    rec = json.loads(got.stdout)["controls"]["skips"]
    assert rec["kernel_meta"]["objects"][0]["size"] == 7


def test_contract_gives_every_new_word_in_both_languages() -> None:
    from skgate.model.installed import WORDS as INSTALLED
    from skgate.model.skips import WORDS, SkipKind

    text = " ".join((Path(__file__).parents[2] / "docs" / "contract.md").read_text().split())
    for kind in (SkipKind.CACHE, SkipKind.KERNEL_META, SkipKind.STATIC_OFF):
        en, zh = WORDS[kind]["en"].split(": ")[0], WORDS[kind]["zh"]
        assert en in text and zh in text, kind
    assert "build path too deep (C6)" in text and "构建路径过深" in text
    for key in ("missing", "title"):
        assert INSTALLED[key]["en"] in text and INSTALLED[key]["zh"] in text, key
    assert "CANN process log (plog)" in text and "CANN 进程日志（plog）" in text


def test_words_name_a_few_and_count_the_rest() -> None:
    from skgate.model.skips import cache_finding, kernel_meta_finding

    f = cache_finding("/c.json", [(f"/{i}.run", True) for i in range(7)], omitted=3)
    assert "/c.json, 10 entries: /0.run (exists)" in f.en and "/5.run" not in f.en
    assert "; and 5 more;" in f.en and "另有 5 个" in f.zh
    k = kernel_meta_finding("/km", [(f"k{i}.o", 1, 0.0) for i in range(8)], omitted=2)
    assert "k4.o (1 bytes" in k.en and "k5.o" not in k.en and " and 5 more;" in k.en


def test_a_short_link_to_a_deep_directory_is_judged_by_the_real_path(tmp_path: Path) -> None:
    deep = deep_dir(tmp_path)
    deep.mkdir()
    link = tmp_path / "s"
    link.symlink_to(deep)
    # --cwd keeps the link as given (a shell's getcwd would resolve it already).
    res, att = gate(tmp_path, tmp_path, run_args=("--cwd", str(link)))
    assert read_json(att / "control.json")["request"]["cwd"] == str(link)
    assert res.returncode == 3 and skips(att)["path"]["cwd"] == str(deep)
