"""Profiler schedule: validated, recorded, handed over through one variable (C6)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from skgate.model.errors import UsageError
from skgate.preflight import profiler
from skgate.preflight.profiler import ProfilerSchedule


def test_parse_canonical_and_kwargs() -> None:
    s = ProfilerSchedule.parse(" wait=1, warmup=2,active=3,repeat=4,skip_first=5 ")
    assert s.as_kwargs() == {"wait": 1, "warmup": 2, "active": 3, "repeat": 4, "skip_first": 5}
    assert s.to_text() == "wait=1,warmup=2,active=3,repeat=4,skip_first=5"
    assert ProfilerSchedule.parse(s.to_text()) == s
    assert ProfilerSchedule.parse("wait=0,warmup=0,active=1").repeat == 0


@pytest.mark.parametrize(
    "bad",
    [
        "wait=1,warmup=1",  # active missing
        "wait=1,warmup=1,active=0",
        "wait=-1,warmup=1,active=1",
        "wait=1,warmup=1,active=x",
        "wait=1,warmup=1,active=2,cycles=3",
        "wait=1,wait=2,warmup=1,active=1",
        "wait 1",
        "",
    ],
)
def test_malformed_schedule_is_usage_error(bad: str) -> None:
    with pytest.raises(UsageError):
        ProfilerSchedule.parse(bad)


def test_schedule_from_env() -> None:
    assert profiler.schedule_from_env({}) is None
    env = {profiler.ENV_VAR: "wait=1,warmup=1,active=2,repeat=1,skip_first=0"}
    got = profiler.schedule_from_env(env)
    assert got == ProfilerSchedule(1, 1, 2, 1, 0)


def test_missing_framework_parameter_keeps_default_and_is_recorded() -> None:
    """An older framework whose schedule() has no skip_first: keep its default, say so."""
    calls: list[dict[str, Any]] = []

    def old_schedule(*, wait: int, warmup: int, active: int, repeat: int = 0) -> str:
        calls.append({"wait": wait, "warmup": warmup, "active": active, "repeat": repeat})
        return "sched"

    obj, limits = profiler.build_schedule(ProfilerSchedule(1, 1, 2, 3, 4), old_schedule)
    assert obj == "sched"
    assert calls == [{"wait": 1, "warmup": 1, "active": 2, "repeat": 3}]
    assert len(limits) == 1
    assert "skip_first=4" in limits[0]


def test_describe_records_the_variable() -> None:
    d = profiler.describe(ProfilerSchedule(0, 1, 2))
    assert d["env_var"] == "SKGATE_PROFILER_SCHEDULE"
    assert d["text"] == "wait=0,warmup=1,active=2,repeat=0,skip_first=0"
    assert profiler.describe(None)["schedule"] is None


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
# torch's CPU wheel warns at import when NumPy is absent; NumPy plays no part here.
@pytest.mark.filterwarnings("ignore:Failed to initialize NumPy:UserWarning")
def test_real_torch_profiler_schedule() -> None:
    import torch.profiler  # type: ignore[import-not-found, unused-ignore]

    fn, limits = profiler.build_schedule(
        ProfilerSchedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1),
        torch.profiler.schedule,
    )
    assert limits == ()
    actions = [fn(step) for step in range(6)]
    assert actions[0] == torch.profiler.ProfilerAction.NONE  # skip_first
    assert actions[1] == torch.profiler.ProfilerAction.NONE  # wait
    assert actions[2] == torch.profiler.ProfilerAction.WARMUP
