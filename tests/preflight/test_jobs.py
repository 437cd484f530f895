"""Compile concurrency probe and decision (C5): bounded, explicit, recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skgate.model.errors import UsageError
from skgate.preflight import jobs

GIB = 1024**3


def host(cpus: int = 64, quota: float | None = None, mem: int = 512 * GIB) -> dict[str, Any]:
    return {
        "cpu_count": 192,
        "affinity_count": cpus,
        "cgroup_cpu_quota": quota,
        "mem_available": mem,
        "cgroup_memory_available": None,
    }


@pytest.mark.parametrize("bad", ["0", "-3", "two", "", "1.5", "5000"])
def test_bad_jobs_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        jobs.parse_jobs(bad)


def test_explicit_value_is_kept_and_recorded() -> None:
    d = jobs.decide("7", {jobs.JOBS_VAR: "3"}, host(cpus=4))
    assert d.value == 7
    assert d.rule == "explicit --jobs"
    assert any("replaces inherited" in n for n in d.notes)
    assert any("above the 4 usable CPUs" in n for n in d.notes)
    assert d.to_dict()["variable"] == jobs.JOBS_VAR


def test_auto_is_bounded_by_cpus_quota_memory_and_cap() -> None:
    """A 192-CPU host must not fan out 192 opc children (the C5 hazard)."""
    assert jobs.decide("auto", {}, host(cpus=192)).value == jobs.MAX_AUTO_JOBS
    assert jobs.decide("auto", {}, host(cpus=64, quota=6.5)).value == 6
    # 10 GiB available with the default 2 GiB budget -> 5 jobs.
    assert jobs.decide("auto", {}, host(cpus=64, mem=10 * GIB)).value == 5
    budget = {jobs.JOB_MEMORY_VAR: "5120"}
    d = jobs.decide("auto", budget, host(cpus=64, mem=10 * GIB))
    assert d.value == 2
    assert d.inputs["job_memory_mb"] == 5120
    assert jobs.decide("auto", {}, host(cpus=1, mem=GIB // 2)).value == 1


def test_auto_honours_inherited_value_within_the_bound() -> None:
    d = jobs.decide("auto", {jobs.JOBS_VAR: "4"}, host(cpus=16))
    assert (d.value, d.inputs["inherited"]) == (4, "4")
    assert "inherited" in d.rule
    assert jobs.decide("auto", {jobs.JOBS_VAR: "400"}, host(cpus=16)).value == 16


def test_no_jobs_given_freezes_inherited_or_auto() -> None:
    assert jobs.decide(None, {jobs.JOBS_VAR: "9"}, host()).value == 9
    d = jobs.decide(None, {jobs.JOBS_VAR: "nine"}, host(cpus=3))
    assert d.value == 3
    assert any("not a positive integer" in n for n in d.notes)


def test_bad_memory_budget_is_usage_error() -> None:
    with pytest.raises(UsageError):
        jobs.decide("auto", {jobs.JOB_MEMORY_VAR: "-1"}, host())


def test_cgroup_v2_quota_and_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cg = tmp_path / "cg"
    leaf = cg / "a" / "b"
    leaf.mkdir(parents=True)
    (cg / "a" / "cpu.max").write_text("300000 100000\n")
    (leaf / "cpu.max").write_text("max 100000\n")
    (leaf / "memory.max").write_text(str(8 * GIB))
    (leaf / "memory.current").write_text(str(2 * GIB))
    proc = tmp_path / "cgroup"
    proc.write_text("0::/a/b\n")
    monkeypatch.setattr(jobs, "CGROUP_ROOT", cg)
    monkeypatch.setattr(jobs, "PROC_SELF_CGROUP", proc)
    quota, src = jobs.cgroup_cpu_limit()
    assert quota == 3.0
    assert src == str(cg / "a" / "cpu.max")
    left, _ = jobs.cgroup_memory_available()
    assert left == 6 * GIB


def test_cgroup_v1_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cg = tmp_path / "cg"
    d = cg / "cpu,cpuacct" / "docker" / "x"
    d.mkdir(parents=True)
    (d / "cpu.cfs_quota_us").write_text("150000\n")
    (d / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "cgroup"
    proc.write_text("4:cpu,cpuacct:/docker/x\n2:pids:/docker/x\n")
    monkeypatch.setattr(jobs, "CGROUP_ROOT", cg)
    monkeypatch.setattr(jobs, "PROC_SELF_CGROUP", proc)
    assert jobs.cgroup_cpu_limit()[0] == 1.5


def test_real_host_probe_has_the_recorded_inputs() -> None:
    facts = jobs.probe_host()
    assert facts["affinity_count"] >= 1
    d = jobs.decide("auto", {}, facts)
    assert 1 <= d.value <= jobs.MAX_AUTO_JOBS
    assert set(d.to_dict()) >= {"value", "requested", "rule", "inputs", "notes"}


def test_frozen_value_reads_only_int_values() -> None:
    assert jobs.frozen_value({"jobs": {"value": 4}}) == 4
    assert jobs.frozen_value({"jobs": {"value": True}}) is None
    assert jobs.frozen_value({"jobs": None}) is None
    assert jobs.frozen_value(None) is None
