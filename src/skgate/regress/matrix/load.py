"""The diagnosis matrix file (C6): a baseline request and one arm per factor, read and checked
before anything runs (bad input: UsageError, nothing was run).

Matrix file (TOML, or JSON; see ``examples/diagnose.toml``)::

    repeats = 1                      # optional; --repeats overrides
    hosts_may_differ = false         # optional; true: host facts may differ between arms (C5)
    [baseline]
    argv = ["python3", "-m", "skgate.sim.launcher", "--inputs", "2"]
    cwd = "fresh"                    # default: a fresh working directory per run
    env = { SKGATE_SIM_FAULTS = "fail_with_hook" }
    jobs = 2
    timeout = 60
    completion_marker = "skgate-sim: inference completed"
    [[arm]]
    startup_hook = "hooks/override"  # a directory holding sitecustomize.py
    [[arm]]
    profiler = true                  # or "NAME=VALUE" or { env = "NAME", value = "V" }
    [[arm]]
    sk_trace = 1024                  # ASCEND_PROF_SK_ON=1024, or { env = ..., value = ... }
    [[arm]]
    cache_seed = 7                   # SKGATE_SIM_CACHE_SEED=7, or { env = ..., value = ... }
    [[arm]]
    jobs = 4
    touches = ["HcPre"]              # optional on any arm: op types the change must compile

``touches`` (a list of op type names, or one comma-separated string) makes the arm's run
count only when its op_compiler compiled at least one of them, nothing came from the
cache and no stale ``kernel_meta`` object stood in for it: otherwise "the declared change
did not reach the compile" (C6, :mod:`skgate.regress.reach`), never evidence either way.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skgate.evidence import regular
from skgate.model.errors import UsageError
from skgate.model.outcomes import PackageMode
from skgate.model.request import DEFAULT_GRACE, DEFAULT_TIMEOUT, RunRequest
from skgate.preflight.profiler import ProfilerSchedule
from skgate.preflight.request import validate
from skgate.regress.change import Change, check_env_name, check_jobs_text, check_op_types

#: The factors C6 lists for a diagnosis, in the order the table shows them.
FACTORS: tuple[str, ...] = ("startup_hook", "profiler", "sk_trace", "cache_seed", "jobs")

#: Environment switch of each env-borne factor when the matrix names no variable of its own
#: (the simulator's and CANN's names; a real launcher may give ``{env=..., value=...}``).
DEFAULT_FACTOR_ENV: Mapping[str, tuple[str, str | None]] = {
    "profiler": ("SKGATE_SIM_PROFILE", "1"),
    "sk_trace": ("ASCEND_PROF_SK_ON", None),
    "cache_seed": ("SKGATE_SIM_CACHE_SEED", None),
}

MAX_REPEATS = 20

FRESH = "fresh"


@dataclass(frozen=True)
class Arm:
    name: str
    factor: str
    change: Change

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "factor": self.factor, "change": self.change.to_dict()}


@dataclass(frozen=True)
class Matrix:
    """A validated matrix: the baseline request (root and cwd filled per run) and its arms."""

    source: str
    baseline: RunRequest
    fresh_cwd: bool
    arms: tuple[Arm, ...]
    repeats: int
    #: The matrix says its arms may run on hosts whose compile-relevant facts differ
    #: (``hosts_may_differ = true``): then host facts never make arms incomparable (C5).
    hosts_may_differ: bool = False


_BASELINE_KEYS = {
    "argv",
    "cwd",
    "env",
    "unset_env",
    "jobs",
    "timeout",
    "grace",
    "outputs",
    "package",
    "summary_patterns",
    "completion_marker",
    "python",
    "approve_hooks",
    "hook_baseline",
    "profiler_schedule",
}

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
#: The largest matrix file read: a few arms of a few options each, far below this.
MAX_MATRIX = 16 << 20


def _read_matrix_file(path: Path) -> dict[str, Any]:
    hint = "give the matrix as a .toml or .json file; nothing was run"
    raw = regular.read_named(path, "matrix file", hint, MAX_MATRIX)
    data: Any
    toml: Any = None
    if path.suffix.lower() != ".json":
        try:
            toml = importlib.import_module("tomllib")
        except ModuleNotFoundError:
            raise UsageError(
                f"matrix file {path}: TOML needs Python 3.11+ (tomllib); give the matrix as .json"
            ) from None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if toml is None else toml.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        # json.JSONDecodeError and tomllib.TOMLDecodeError are both ValueErrors.
        kind = "JSON" if toml is None else "TOML"
        raise UsageError(
            f"matrix file {path} is not valid {kind} ({exc}); nothing was run"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"matrix file {path}: expected a table/object at the top")
    return data


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise UsageError(f"{where}: expected a list of strings")
    return tuple(value)


def _number(value: Any, where: str, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{where}: expected a number of seconds")
    if value < 0 or (positive and value == 0):
        raise UsageError(f"{where}: must be {'more than' if positive else 'at least'} 0")
    return float(value)


def _baseline(data: Any, base_dir: Path) -> tuple[RunRequest, bool]:
    where = "matrix baseline"
    if not isinstance(data, dict):
        raise UsageError("matrix file has no [baseline] table; add one with at least argv")
    unknown = sorted(set(data) - _BASELINE_KEYS)
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_BASELINE_KEYS))}"
        )
    if "argv" not in data:
        raise UsageError(f"{where}: argv is missing (the command as a list of strings)")
    argv = _str_list(data["argv"], f"{where} argv")
    if not argv:
        raise UsageError(f"{where}: argv is empty")
    env_raw = data.get("env", {})
    if not isinstance(env_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, int)) and not isinstance(v, bool)
        for k, v in env_raw.items()
    ):
        raise UsageError(f'{where}: env must be a table of NAME = "value"')
    cwd_raw = data.get("cwd", FRESH)
    if not isinstance(cwd_raw, str):
        raise UsageError(f'{where}: cwd must be a path or "fresh"')
    fresh = cwd_raw == FRESH
    cwd = base_dir if fresh else (base_dir / cwd_raw)
    jobs = data.get("jobs")
    jobs_text: str | None = None
    if jobs is not None:
        jobs_text = "auto" if jobs == "auto" else check_jobs_text(jobs, f"{where} jobs")
    package = data.get("package", PackageMode.OPTIONAL.value)
    if package not in [m.value for m in PackageMode]:
        raise UsageError(f"{where}: package must be 'required' or 'optional'")
    marker = data.get("completion_marker")
    if marker is not None and not isinstance(marker, str):
        raise UsageError(f"{where}: completion_marker must be a string")
    for key in ("outputs", "python", "hook_baseline", "profiler_schedule"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise UsageError(f"{where}: {key} must be a string")
    schedule = data.get("profiler_schedule")
    if schedule is not None:
        schedule = ProfilerSchedule.parse(schedule).to_text()
    hook_baseline = data.get("hook_baseline")
    request = RunRequest(
        argv=argv,
        cwd=str(cwd.absolute()),
        root=str(base_dir.absolute()),  # replaced per run
        timeout=_number(data.get("timeout", DEFAULT_TIMEOUT), f"{where} timeout", True),
        grace=_number(data.get("grace", DEFAULT_GRACE), f"{where} grace", False),
        outputs=data.get("outputs"),
        package_mode=PackageMode(package),
        summary_patterns=_str_list(data.get("summary_patterns", []), f"{where} summary_patterns"),
        completion_marker=marker,
        jobs=jobs_text,
        env={str(k): str(v) for k, v in env_raw.items()},
        unset_env=_str_list(data.get("unset_env", []), f"{where} unset_env"),
        python=data.get("python"),
        approved_hooks=_str_list(data.get("approve_hooks", []), f"{where} approve_hooks"),
        hook_baseline=str(base_dir / hook_baseline) if hook_baseline else None,
        profiler_schedule=schedule,
        quiet=True,
    )
    validate(request)
    return request, fresh


def _env_factor(factor: str, value: Any, where: str) -> tuple[str, str]:
    default_name, default_value = DEFAULT_FACTOR_ENV[factor]
    if isinstance(value, dict):
        extra = sorted(set(value) - {"env", "value"})
        if extra or not isinstance(value.get("env"), str) or "value" not in value:
            raise UsageError(f'{where}: use {{ env = "NAME", value = "V" }}')
        name, val = value["env"], value["value"]
    elif isinstance(value, str) and "=" in value:
        name, _, val = value.partition("=")
    elif value is True and default_value is not None:
        name, val = default_name, default_value
    elif isinstance(value, (str, int)) and not isinstance(value, bool):
        name, val = default_name, value
    else:
        raise UsageError(f"{where}: unsupported value {value!r}")
    if isinstance(val, bool) or not isinstance(val, (str, int)):
        raise UsageError(f"{where}: the value must be a string or an integer")
    return check_env_name(str(name), where), str(val)


def _arm(index: int, data: Any, base_dir: Path) -> Arm:
    where = f"matrix arm {index + 1}"
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a table")
    name = data.get("name")
    keys = [k for k in data if k not in ("name", "touches")]
    unknown = [k for k in keys if k not in FACTORS]
    if unknown:
        raise UsageError(
            f"{where}: unknown factor {unknown[0]!r}; one of: {', '.join(FACTORS)}; nothing was run"
        )
    if len(keys) != 1:
        what = (
            "changes no factor" if not keys else f"changes {len(keys)} factors ({', '.join(keys)})"
        )
        raise UsageError(
            f"{where} {what}; each arm changes exactly one factor (C6); nothing was run"
        )
    factor = keys[0]
    value = data[factor]
    fwhere = f"{where} {factor}"
    if factor == "startup_hook":
        if not isinstance(value, str):
            raise UsageError(f"{fwhere}: give the hook directory as a string")
        hook_dir = (base_dir / value).absolute()
        if not (hook_dir / "sitecustomize.py").is_file():
            raise UsageError(f"{fwhere}: {hook_dir} holds no sitecustomize.py")
        change = Change(factor, f"start-up hook {hook_dir} on PYTHONPATH", hook_dir=str(hook_dir))
    elif factor == "jobs":
        jobs = check_jobs_text(value, fwhere)
        change = Change(factor, f"compile jobs {jobs}", jobs=jobs)
    else:
        env_name, env_value = _env_factor(factor, value, fwhere)
        change = Change(factor, f"{env_name}={env_value}", env=((env_name, env_value),))
    if name is None:
        name = factor
    if not isinstance(name, str) or not _NAME.match(name) or name == "baseline":
        raise UsageError(f"{where}: name {name!r} must be short letters/digits/._- (not baseline)")
    if "touches" in data:
        change = replace(change, op_types=_touches(data["touches"], f"{where} touches"))
    return Arm(name, factor, change)


def _touches(value: Any, where: str) -> tuple[str, ...]:
    words = value.split(",") if isinstance(value, str) else value
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise UsageError(f'{where}: give op type names, e.g. ["HcPre", "MatMulV2"]')
    return check_op_types([w.strip() for w in words], where)


def load_matrix(
    path: Path, repeats: int | None = None, runner_env: Mapping[str, str] | None = None
) -> Matrix:
    """Read and validate a matrix file. Any problem: UsageError (exit 2), nothing run."""
    data = _read_matrix_file(path)
    base_dir = path.absolute().parent
    unknown = sorted(set(data) - {"baseline", "arm", "arms", "repeats", "hosts_may_differ"})
    if unknown:
        raise UsageError(f"matrix file {path}: unknown key(s) {', '.join(unknown)}")
    if "baseline" not in data:
        raise UsageError(f"matrix file {path} has no [baseline]; nothing was run")
    baseline, fresh = _baseline(data["baseline"], base_dir)
    arms_raw = data.get("arm", data.get("arms", []))
    if not isinstance(arms_raw, list) or not arms_raw:
        raise UsageError(f"matrix file {path} has no [[arm]] entries; nothing was run")
    arms = tuple(_arm(i, a, base_dir) for i, a in enumerate(arms_raw))
    names = [a.name for a in arms]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"matrix file {path}: arm name(s) {', '.join(dup)} used twice; name them")
    env = dict(os.environ if runner_env is None else runner_env)
    for arm in arms:
        if not arm.change.changes(baseline, env):
            raise UsageError(
                f"matrix arm {arm.name}: '{arm.change.label}' is already the baseline's; "
                "an arm must change its factor; nothing was run"
            )
    n = repeats if repeats is not None else data.get("repeats", 1)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REPEATS:
        raise UsageError(f"repeats must be a whole number from 1 to {MAX_REPEATS}")
    hosts = data.get("hosts_may_differ", False)
    if not isinstance(hosts, bool):
        raise UsageError(f"matrix file {path}: hosts_may_differ must be true or false")
    return Matrix(str(path), baseline, fresh, arms, n, hosts)
