"""Profiler schedule: parsed, recorded, and handed to the launcher through one variable (C6).

A schedule change is a launcher change (C6): skgate never injects anything into the
interpreter. ``skgate run --profiler-schedule wait=1,warmup=1,active=3,repeat=2,skip_first=0``
is validated, recorded in ``control.json`` and exported as ``SKGATE_PROFILER_SCHEDULE``.
The launcher, at its normal initialisation point (after the CANN environment setup),
calls::

    from skgate.preflight.profiler import schedule_from_env, build_schedule
    sched = schedule_from_env()
    if sched is not None:
        schedule, limits = build_schedule(sched)   # torch_npu / torch profiler schedule
        prof = torch_npu.profiler.profile(schedule=schedule, ...)

``build_schedule`` goes through the framework's own ``schedule`` API. When that API lacks
a requested parameter, the framework default is kept and the limitation is returned to
be recorded (C6: "keep its default schedule and record the limitation"); nothing is
patched. This module imports no framework at import time.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping

from skgate.model.errors import UsageError
from skgate.model.frozen import record

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENV_VAR = "SKGATE_PROFILER_SCHEDULE"
FIELDS: tuple[str, ...] = ("wait", "warmup", "active", "repeat", "skip_first")
REQUIRED: tuple[str, ...] = ("wait", "warmup", "active")
#: Modules whose ``schedule`` is tried, in order (same shape in both, see the spec).
FRAMEWORKS: tuple[str, ...] = ("torch_npu.profiler", "torch.profiler")


@record
class ProfilerSchedule:
    """The five step counts of ``torch(_npu).profiler.schedule``."""

    wait: int
    warmup: int
    active: int
    repeat: int = 0
    skip_first: int = 0

    def __post_init__(self) -> None:
        for name in FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"profiler schedule {name}={value!r} must be an integer >= 0")
        if self.active < 1:
            raise UsageError("profiler schedule active must be at least 1")

    def as_kwargs(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in FIELDS}

    def to_text(self) -> str:
        """Canonical form, the value of ``SKGATE_PROFILER_SCHEDULE``."""
        return ",".join(f"{k}={v}" for k, v in self.as_kwargs().items())

    @classmethod
    def parse(cls, text: str) -> ProfilerSchedule:
        """Parse ``wait=..,warmup=..,active=..[,repeat=..][,skip_first=..]``.

        Unknown, repeated or missing required keys and non-integers are a UsageError.
        """
        values: dict[str, int] = {}
        for part in text.split(","):
            item = part.strip()
            if not item:
                continue
            key, sep, raw = item.partition("=")
            key = key.strip()
            if not sep:
                raise UsageError(
                    f"profiler schedule item {item!r} is not key=value; "
                    "use wait=..,warmup=..,active=..,repeat=..,skip_first=.."
                )
            if key not in FIELDS:
                raise UsageError(
                    f"profiler schedule key {key!r} is unknown; known: {', '.join(FIELDS)}"
                )
            if key in values:
                raise UsageError(f"profiler schedule key {key!r} is given twice")
            try:
                values[key] = int(raw.strip(), 10)
            except ValueError:
                raise UsageError(
                    f"profiler schedule {key}={raw.strip()!r} is not an integer"
                ) from None
        missing = [k for k in REQUIRED if k not in values]
        if missing:
            raise UsageError(
                f"profiler schedule lacks {', '.join(missing)}; "
                "give at least wait=..,warmup=..,active=.."
            )
        return cls(**values)


def schedule_from_env(env: Mapping[str, str] | None = None) -> ProfilerSchedule | None:
    """The schedule handed over in ``SKGATE_PROFILER_SCHEDULE``, or None when unset."""
    source = os.environ if env is None else env
    raw = source.get(ENV_VAR)
    if raw is None or raw.strip() == "":
        return None
    return ProfilerSchedule.parse(raw)


def find_framework_schedule() -> tuple[Callable[..., Any], str] | None:
    """The installed framework's ``schedule`` factory and its module, or None."""
    for module in FRAMEWORKS:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        factory = getattr(mod, "schedule", None)
        if callable(factory):
            return factory, module
    return None


def build_schedule(
    sched: ProfilerSchedule, factory: Callable[..., Any] | None = None
) -> tuple[Any, tuple[str, ...]]:
    """Build the framework's schedule object; return it with the recorded limitations.

    Parameters the factory does not accept are left at the framework default and named
    in the limitations (C6). With no framework installed, raises UsageError.
    """
    if factory is None:
        found = find_framework_schedule()
        if found is None:
            raise UsageError(
                "no profiler framework (torch_npu.profiler or torch.profiler) is importable; "
                "the schedule cannot be built"
            )
        factory = found[0]
    wanted = sched.as_kwargs()
    limitations: list[str] = []
    import inspect  # noqa: PLC0415 - the launcher side only (run-path start-up, issue 29)

    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = None
    if params is not None and not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    ):
        for name in list(wanted):
            if name not in params:
                value = wanted.pop(name)
                limitations.append(
                    f"the framework schedule has no {name!r} parameter: {name}={value} "
                    "not applied, framework default kept"
                )
    return factory(**wanted), tuple(limitations)


def describe(sched: ProfilerSchedule | None) -> dict[str, Any]:
    """The ``controls["profiler"]`` record for a schedule (or the framework default)."""
    if sched is None:
        return {
            "schedule": None,
            "env_var": ENV_VAR,
            "note": "no schedule requested: the framework default schedule applies",
        }
    return {
        "schedule": sched.as_kwargs(),
        "text": sched.to_text(),
        "env_var": ENV_VAR,
        "note": (
            f"handed to the launcher in {ENV_VAR}, read at its normal initialisation point; "
            "nothing is injected into the interpreter (C6)"
        ),
    }
