"""Compile concurrency: probe the host, choose a bounded value, freeze it (C5).

The CANN runtime derives ``op_compiler -j`` from the host CPU count when nothing says
otherwise; on a large host that is an unbounded fan-out of ``opc`` children. skgate
always freezes an explicit ``NPU_STATIC_KERNEL_COMPILE_JOBS`` and records the value, the
inputs it was computed from and the rule used, so that attempts that are compared with
each other provably ran with the same value (C5: "never changed silently").

Inputs of ``--jobs auto``: the CPUs this process may use (``sched_getaffinity``), the
cgroup CPU quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, the
tightest on the path), available memory (``MemAvailable`` and the cgroup memory limit)
divided by a per-job memory budget, and an inherited ``NPU_STATIC_KERNEL_COMPILE_JOBS``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

from skgate.model.errors import UsageError
from skgate.model.frozen import record
from skgate.model.request import frozen_jobs

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JOBS_VAR = "NPU_STATIC_KERNEL_COMPILE_JOBS"
#: Per-job memory budget override (MiB), read from the workload environment.
JOB_MEMORY_VAR = "SKGATE_JOB_MEMORY_MB"
#: A static compile job (one ``opc``) can take a few GiB; 2 GiB keeps auto conservative.
DEFAULT_JOB_MEMORY_MB = 2048
#: Upper bound of ``auto``: more concurrent ``opc`` children than this only adds contention.
MAX_AUTO_JOBS = 32
#: Upper bound of an explicit ``--jobs N``: a typo such as 1000 is refused, not obeyed.
MAX_JOBS = 1024

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
MEMINFO = Path("/proc/meminfo")


@record
class JobsDecision:
    """The frozen value, where it came from, and everything it was computed from."""

    value: int
    requested: str | None
    rule: str
    inputs: Mapping[str, Any]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "requested": self.requested,
            "variable": JOBS_VAR,
            "rule": self.rule,
            "inputs": dict(self.inputs),
            "notes": list(self.notes),
        }


def parse_jobs(spec: str | None) -> str | int | None:
    """Validate ``--jobs``: ``auto``, a positive integer, or None. Bad input -> UsageError."""
    if spec is None:
        return None
    text = spec.strip().lower()
    if text == "auto":
        return "auto"
    try:
        n = int(text, 10)
    except ValueError:
        raise UsageError(
            f"--jobs {spec!r} is not valid; give a positive integer or 'auto'"
        ) from None
    if n <= 0:
        raise UsageError(f"--jobs {spec} is not valid; it must be at least 1 (or 'auto')")
    if n > MAX_JOBS:
        raise UsageError(f"--jobs {spec} is above the limit {MAX_JOBS}; give a smaller value")
    return n


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _cgroup_dirs() -> list[tuple[str, Path]]:
    """(version, directory) pairs of this process's cgroups, leaf first, up to the root."""
    text = _read(PROC_SELF_CGROUP)
    if text is None:
        return []
    found: list[tuple[str, Path]] = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _hid, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            base = CGROUP_ROOT
            version = "v2"
        elif "cpu" in controllers.split(",") or "memory" in controllers.split(","):
            version = "v1"
            base = CGROUP_ROOT / controllers
            if not base.is_dir():
                # Some hosts mount cpu,cpuacct under a combined name: try the single one.
                name = "cpu" if "cpu" in controllers.split(",") else "memory"
                base = CGROUP_ROOT / name
        else:
            continue
        path = base / rel if rel else base
        # Inside a container the cgroup namespace often makes our own path "/" while
        # the mount shows the container's cgroup: walk up from the leaf either way.
        chain = [path, *path.parents]
        for p in chain:
            if p == base.parent or not str(p).startswith(str(base)):
                break
            found.append((version + ":" + controllers, p))
    return found


def cgroup_cpu_limit() -> tuple[float | None, str | None]:
    """The tightest CPU quota on our cgroup path, in CPUs, and the file it came from."""
    best: float | None = None
    source: str | None = None
    for version, d in _cgroup_dirs():
        if version.startswith("v2"):
            raw = _read(d / "cpu.max")
            if raw is None:
                continue
            fields = raw.split()
            if len(fields) >= 2 and fields[0] != "max":
                try:
                    limit = int(fields[0]) / int(fields[1])
                except (ValueError, ZeroDivisionError):
                    continue
                if best is None or limit < best:
                    best, source = limit, str(d / "cpu.max")
        else:
            q = _read(d / "cpu.cfs_quota_us")
            p = _read(d / "cpu.cfs_period_us")
            if q is None or p is None:
                continue
            try:
                quota, period = int(q), int(p)
            except ValueError:
                continue
            if quota > 0 and period > 0:
                limit = quota / period
                if best is None or limit < best:
                    best, source = limit, str(d / "cpu.cfs_quota_us")
    return best, source


def cgroup_memory_available() -> tuple[int | None, str | None]:
    """Bytes left under the tightest cgroup memory limit on our path, and its file."""
    best: int | None = None
    source: str | None = None
    for version, d in _cgroup_dirs():
        if version.startswith("v2"):
            limit_raw, used_raw, name = (
                _read(d / "memory.max"),
                _read(d / "memory.current"),
                ("memory.max"),
            )
        else:
            limit_raw = _read(d / "memory.limit_in_bytes")
            used_raw = _read(d / "memory.usage_in_bytes")
            name = "memory.limit_in_bytes"
        if limit_raw is None or limit_raw.strip() == "max":
            continue
        try:
            limit = int(limit_raw)
            used = int(used_raw) if used_raw is not None else 0
        except ValueError:
            continue
        if limit >= 1 << 60:  # v1 "unlimited" is a huge number
            continue
        left = max(limit - used, 0)
        if best is None or left < best:
            best, source = left, str(d / name)
    return best, source


def meminfo() -> dict[str, int]:
    """``/proc/meminfo`` in bytes (MemTotal, MemAvailable, ...)."""
    out: dict[str, int] = {}
    text = _read(MEMINFO) or ""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            scale = 1024 if len(fields) > 1 and fields[1] == "kB" else 1
            out[name.strip()] = int(fields[0]) * scale
    return out


def affinity_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def probe_host() -> dict[str, Any]:
    """The host facts ``auto`` needs (also recorded as part of ``controls.host``)."""
    affinity = affinity_cpus()
    quota, quota_src = cgroup_cpu_limit()
    mem = meminfo()
    cg_mem, cg_mem_src = cgroup_memory_available()
    return {
        "cpu_count": os.cpu_count(),
        "affinity": affinity,
        "affinity_count": len(affinity),
        "cgroup_cpu_quota": quota,
        "cgroup_cpu_quota_source": quota_src,
        "mem_total": mem.get("MemTotal"),
        "mem_available": mem.get("MemAvailable"),
        "cgroup_memory_available": cg_mem,
        "cgroup_memory_source": cg_mem_src,
    }


def _job_memory_mb(env: Mapping[str, str]) -> int:
    raw = env.get(JOB_MEMORY_VAR)
    if raw is None or raw == "":
        return DEFAULT_JOB_MEMORY_MB
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise UsageError(f"{JOB_MEMORY_VAR}={raw!r} is not valid; give a positive number of MiB")
    return value


def _inherited(env: Mapping[str, str]) -> tuple[int | None, str | None]:
    raw = env.get(JOBS_VAR)
    if raw is None:
        return None, None
    try:
        value = int(raw.strip())
    except ValueError:
        return None, raw
    if value <= 0:
        return None, raw
    return value, raw


def decide(
    spec: str | None,
    env: Mapping[str, str],
    host: Mapping[str, Any] | None = None,
    *,
    job_memory_mb: int | None = None,
) -> JobsDecision:
    """Choose the frozen jobs value for ``--jobs spec`` given the workload environment.

    ``spec`` None means the caller gave no ``--jobs``: an inherited valid value is
    frozen as it is, otherwise ``auto`` applies. C5 asks for an explicit value always.
    """
    parsed = parse_jobs(spec)
    facts = dict(host) if host is not None else probe_host()
    inherited, inherited_raw = _inherited(env)
    notes: list[str] = []
    if inherited_raw is not None and inherited is None:
        notes.append(f"inherited {JOBS_VAR}={inherited_raw!r} is not a positive integer: ignored")
    cpus = int(facts.get("affinity_count") or facts.get("cpu_count") or 1)
    quota = facts.get("cgroup_cpu_quota")
    if isinstance(quota, (int, float)) and quota > 0:
        cpus = min(cpus, max(1, math.floor(quota)))
    mem_avail_candidates = [
        v
        for v in (facts.get("mem_available"), facts.get("cgroup_memory_available"))
        if isinstance(v, int)
    ]
    budget_mb = job_memory_mb if job_memory_mb is not None else _job_memory_mb(env)
    mem_jobs: int | None = None
    if mem_avail_candidates:
        mem_jobs = max(1, min(mem_avail_candidates) // (budget_mb * 1024 * 1024))
    inputs: dict[str, Any] = {
        "usable_cpus": cpus,
        "affinity_count": facts.get("affinity_count"),
        "cgroup_cpu_quota": quota,
        "memory_available": min(mem_avail_candidates) if mem_avail_candidates else None,
        "job_memory_mb": budget_mb,
        "memory_jobs": mem_jobs,
        "inherited": inherited_raw,
        "max_auto": MAX_AUTO_JOBS,
    }
    bound = min(cpus, MAX_AUTO_JOBS, *([mem_jobs] if mem_jobs is not None else []))
    bound = max(1, bound)
    if isinstance(parsed, int):
        if inherited is not None and inherited != parsed:
            notes.append(f"--jobs {parsed} replaces inherited {JOBS_VAR}={inherited}")
        if parsed > cpus:
            notes.append(f"--jobs {parsed} is above the {cpus} usable CPUs (kept as asked)")
        return JobsDecision(parsed, spec, "explicit --jobs", inputs, tuple(notes))
    if parsed is None and inherited is not None:
        return JobsDecision(
            inherited, None, f"inherited {JOBS_VAR} (no --jobs given)", inputs, tuple(notes)
        )
    rule = "auto: min(usable CPUs (affinity, cgroup quota), available memory / job budget, cap)"
    value = bound
    if inherited is not None:
        value = min(inherited, bound)
        rule = f"auto: inherited {JOBS_VAR} bounded by " + rule.removeprefix("auto: ")
    if parsed is None:
        rule += " (no --jobs given)"
    return JobsDecision(value, spec, rule, inputs, tuple(notes))


def frozen_value(controls: Any) -> int | None:
    """The jobs value an earlier attempt froze, from its ``control.json["controls"]``."""
    return frozen_jobs(controls)


#: Python >= 3.13 reads this at start-up: ``os.cpu_count()`` then returns it for the
#: whole process, so a launcher that passes ``-j $(os.cpu_count())`` (torchair) passes it.
CPU_COUNT_VAR = "PYTHON_CPU_COUNT"


def python_cpu_count(value: object, version: object, env: dict[str, str]) -> dict[str, object]:
    """``--python-cpu-count``: hand the frozen jobs value to ``os.cpu_count()`` (C5).

    An explicit opt-in, never silent: it changes ``os.cpu_count()`` for the whole
    launcher process (every use, not only the compile's ``-j``), and only Python >= 3.13
    honours it. Sets ``PYTHON_CPU_COUNT`` in ``env`` and returns the record for
    ``control.json`` (``jobs.python_cpu_count``). Whether the launcher honoured it is
    seen afterwards in the op_compiler argv (``effective_jobs``).
    """
    in_effect: bool | None = None
    if isinstance(version, str) and version[:1].isdigit():
        parts = version.split(".")
        try:
            in_effect = (int(parts[0]), int(parts[1])) >= (3, 13)
        except (ValueError, IndexError):
            in_effect = None
    record: dict[str, object] = {
        "opted_in": True,
        "variable": CPU_COUNT_VAR,
        "value": value,
        "python_version": version,
        "in_effect": in_effect,
        "note": "os.cpu_count() of the whole launcher process returns this value on "
        "Python >= 3.13; older Pythons ignore the variable",
    }
    if isinstance(value, int):
        env[CPU_COUNT_VAR] = str(value)
    return record
