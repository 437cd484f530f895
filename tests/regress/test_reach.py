""" "The declared change did not reach the compile" (C6, issue 20 section 2).

End to end on the torchair-faithful simulator: a reference compile, then the health gate
with a declared kernel change. ``SKGATE_SIM_KERNEL_REVISION`` stands in for the changed
kernel (it is built into every kernel object, hence into the ``.run``; like a replaced
``.o`` it is not part of torchair's cache key). The sim's compilers are named ``sk_*``
and the gate is told those names (C4: never another checkout's compiler).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import own_sim_env, read_json, run_skgate
from skgate.evidence.digest import sha256_file
from skgate.model.errors import UsageError
from skgate.model.phrases import Lang
from skgate.preflight.kernel_meta import KernelMetaObject, from_controls, stale_kernel_meta
from skgate.regress.change import parse_declaration
from skgate.verdict.words import in_language

TORCHAIR = [sys.executable, "-m", "skgate.sim.torchair", "--inputs", "4"]
REVISION = "env:SKGATE_SIM_KERNEL_REVISION=2"


# End-to-end runs of seconds each: left out of the fast selection (README, Development).
pytestmark = [pytest.mark.usefixtures("ends_leftover_sim"), pytest.mark.slow]


def _gate(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One skgate command on the sim with the sk_* compiler names (C3, C4)."""
    res = run_skgate(*args, cwd=tmp, env=own_sim_env(tmp), timeout=240)
    assert "Traceback" not in res.stderr
    return res


def _reference(tmp: Path, *launcher: str) -> Path:
    marker = ("--completion-marker", "inference completed")
    run = ("run", "--root", "ref", "--quiet", "--jobs", "2", "--scan-interval", "0.05")
    res = _gate(tmp, *run, *marker, "--", *TORCHAIR, *launcher)
    assert res.returncode == 0, res.stdout + res.stderr
    return tmp / "ref" / "attempts" / "0001"


def _health(tmp: Path, ref: Path, *declared: str) -> tuple[int, dict[str, Any], str]:
    args = [a for d in declared for a in ("--declare", d)]
    res = _gate(tmp, "regress", "--health", "--reference", str(ref), "--root", "h", *args)
    data: dict[str, Any] = read_json(tmp / "h" / "regress.json")
    return res.returncode, data, res.stdout


def _checks(data: dict[str, Any]) -> list[str]:
    return [f["check"] for f in data["not_reached"]]


def test_kernel_change_hidden_by_the_cache_did_not_reach_the_compile(tmp_path: Path) -> None:
    ref = _reference(tmp_path, "--cache")
    code, data, out = _health(tmp_path, ref, "kernel:HcPre", REVISION)
    assert code == 3, out
    assert data["result"] == "not_reached" and data["profiling_accepted"] is False
    # A cache hit compiled nothing, so neither HcPre nor anything else; the package it
    # installed is the reference's own.
    assert _checks(data) == ["cache_hit", "op_types", "same_package"]
    first = data["not_reached"][0]
    assert first["en"].startswith(
        "the declared change did not reach the compile: its stage was a cache hit"
    )
    assert "static_kernel_cache/CANN-" in first["en"]  # which cache to clear
    assert "turn the launcher's static kernel compile cache off" in first["clear"]
    assert first["zh"].startswith("声明的改动没有进入编译：其阶段命中了缓存")
    assert "HEALTH NOT REACHED" in out and "[NOT REACHED]" in out
    assert in_language(data["statement"], Lang.ZH).startswith(
        "不能接受之后的性能分析：声明的改动没有进入编译"
    )
    zh = run_skgate("report", "--lang", "zh", "h", cwd=tmp_path)
    ops_zh = "声明的改动没有进入编译：其 op_compiler 没有编译改动涉及的任何算子类型（HcPre）"
    assert ops_zh in zh.stdout
    assert data["declared"][0]["op_types"] == ["HcPre"]


def test_kernel_change_that_reached_the_compile_passes(tmp_path: Path) -> None:
    ref = _reference(tmp_path)
    code, data, out = _health(tmp_path, ref, "kernel:HcPre,MatMulV2", REVISION)
    assert code == 0, out
    assert data["result"] == "pass" and data["not_reached"] == []


def test_recompile_of_the_same_package_and_untouched_op_types_did_not_reach(
    tmp_path: Path,
) -> None:
    ref = _reference(tmp_path)
    # No revision: the kernel "change" made no difference to what was compiled.
    code, data, _ = _health(tmp_path, ref, "kernel:Conv2D")
    assert code == 3
    assert _checks(data) == ["op_types", "same_package"]
    ops = data["not_reached"][0]["en"]
    assert "touches (Conv2D); op types compiled: AddRmsNorm, GroupedMatmul, HcPre, MatMulV3" in ops
    assert "byte-identical to the reference's" in data["not_reached"][1]["en"]


def test_stale_kernel_meta_left_in_place_did_not_reach(tmp_path: Path) -> None:
    ref = _reference(tmp_path)
    obj = tmp_path / "kernel_meta" / "ascendc_super_kernel_plus.o"
    obj.parent.mkdir()
    obj.write_bytes(b"old super kernel")
    os.utime(obj, (1_000_000_000, 1_000_000_000))
    code, data, _ = _health(tmp_path, ref, "kernel:HcPre", REVISION)
    assert code == 3
    assert _checks(data) == ["kernel_meta"]
    text = data["not_reached"][0]["en"]
    assert f"{obj} (16 bytes, mtime 1000000000)" in text
    assert "skgate cleanup" in data["not_reached"][0]["clear"]
    assert obj.read_bytes() == b"old super kernel"  # read-only: never moved or edited


def test_cache_hit_without_a_declared_change_is_still_blocked(tmp_path: Path) -> None:
    ref = _reference(tmp_path, "--cache")
    code, data, _ = _health(tmp_path, ref)
    assert code == 3 and data["result"] == "blocked" and data["not_reached"] == []


def test_kernel_declaration_grammar() -> None:
    ch = parse_declaration("kernel:HcPre,MatMulV2,HcPre")
    assert (ch.kind, ch.op_types) == ("kernel", ("HcPre", "MatMulV2"))
    assert ch.label == "kernel change touching HcPre, MatMulV2"
    assert parse_declaration("kernel").op_types == ()
    for bad in ("kernel:", "kernel:Hc-Pre", "kernel:A,,B", "kernels:A"):
        with pytest.raises(UsageError):
            parse_declaration(bad)


def test_stale_kernel_meta_names_old_regular_objects_only(tmp_path: Path) -> None:
    km = tmp_path / "kernel_meta"
    km.mkdir()
    old, new, other = km / "a.o", km / "b.o", km / "c.json"
    for p in (old, new, other):
        p.write_bytes(b"x")
    os.utime(old, (100.0, 100.0))
    os.utime(other, (100.0, 100.0))
    (km / "link.o").symlink_to(old)
    os.utime(new, (300.0, 300.0))
    found = stale_kernel_meta(tmp_path, before=200.0)
    assert found == [KernelMetaObject(str(old), 1, 100.0)]
    assert stale_kernel_meta(tmp_path / "missing", before=200.0) == []
    assert found[0].still_in_place()
    old.write_bytes(b"rebuilt")
    assert not found[0].still_in_place()
    # The preflight record in control.json, in either form, round-trips.
    rec = [found[0].to_dict()]
    assert from_controls({"kernel_meta": rec}) == found
    assert from_controls({"kernel_meta": {"objects": rec}}) == found
    assert from_controls({}) is None
    assert json.loads(json.dumps(rec))[0]["name"] == "a.o"


def test_matrix_arm_whose_touched_op_types_were_not_compiled_is_not_evidence(
    tmp_path: Path,
) -> None:
    base = {
        "argv": [*TORCHAIR, "--cpu-count", "2"],
        "jobs": 2,
        "timeout": 60,
        "grace": 2,
        "completion_marker": "inference completed",
    }
    arms = [
        {"name": "absent", "cache_seed": 7, "touches": ["Conv2D"]},
        {"name": "present", "sk_trace": 1, "touches": "HcPre,Conv2D"},
    ]
    (tmp_path / "m.json").write_text(json.dumps({"baseline": base, "arm": arms}))
    res = _gate(tmp_path, "regress", "--matrix", "m.json", "--root", "out", "--json")
    data = json.loads(res.stdout)
    rows = {a["arm"]: a for a in data["arms"]}
    assert data["baseline"]["outcome"] == "pass"
    (absent,) = rows["absent"]["runs"]
    assert absent["status"] == "not-comparable"
    assert absent["detail"].startswith(
        "the declared change did not reach the compile: its op_compiler compiled none of the "
        "op types the change touches (Conv2D)"
    )
    assert [r["status"] for r in rows["present"]["runs"]] == ["pass"]
    assert res.returncode == 1  # an arm without valid evidence leaves the diagnosis incomplete


def test_matrix_touches_must_name_op_types(tmp_path: Path) -> None:
    base = {"argv": TORCHAIR, "jobs": 2, "completion_marker": "inference completed"}
    for bad in ([], "Hc-Pre", [1]):
        path = tmp_path / "m.json"
        path.write_text(json.dumps({"baseline": base, "arm": [{"jobs": 3, "touches": bad}]}))
        res = run_skgate("regress", "--matrix", "m.json", cwd=tmp_path)
        assert res.returncode == 2 and "touches" in res.stderr, res.stderr


def test_same_package_is_seen_from_the_digest_recorded_at_finish(tmp_path: Path) -> None:
    ref = _reference(tmp_path)
    (stage,) = read_json(ref / "stages.json")["stages"]
    census = stage["census"]
    (run,) = census["run_packages"]
    recorded = census["run_sha256"]
    assert recorded == {run: sha256_file(Path(run))}
    # The reference's package is gone from where it was (moved into a scene, say): the
    # digest its stage record keeps still shows the candidate built the same bytes.
    Path(census["output_root"]).rename(tmp_path / "moved")
    code, data, _ = _health(tmp_path, ref, "kernel:HcPre")
    assert code == 3
    assert _checks(data) == ["same_package"]
