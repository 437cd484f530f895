"""The declared-change record of the health gate (C6): what a run may differ in, and its grammar.

Change grammar (``--declare`` of the health gate), one item per flag:

=========================  ===============================================================
``env:NAME=VALUE``         set ``NAME`` in the workload environment
``unset:NAME``             remove ``NAME`` from the workload environment
``profiler-schedule=SPEC`` the schedule handed to the launcher (``wait=..,warmup=..,...``)
``jobs=N``                 a different frozen compile concurrency (declared vary, C5)
``kernel[:OP,OP...]``      a kernel change skgate does not make (a replaced ``.o``, kernel
                           source, ``super_kernel_optimize_options``): nothing in the
                           request changes; the op types it touches, when named, must be
                           compiled by the candidate (C6, :mod:`skgate.regress.reach`)
=========================  ===============================================================
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skgate.model.errors import UsageError
from skgate.model.frozen import replace
from skgate.model.request import RunRequest
from skgate.preflight import prepare as preflight
from skgate.preflight.jobs import JOBS_VAR, parse_jobs
from skgate.preflight.profiler import ENV_VAR as SCHEDULE_VAR
from skgate.preflight.profiler import ProfilerSchedule


@dataclass(frozen=True)
class Change:
    """One declared change to a frozen request, and the controls it may move.

    ``kind`` is a matrix factor (``startup_hook`` ... ``jobs``) or a health declaration
    (``env``, ``unset``, ``profiler_schedule``, ``jobs``).
    """

    kind: str
    label: str
    env: tuple[tuple[str, str], ...] = ()
    unset: tuple[str, ...] = ()
    jobs: str | None = None
    profiler_schedule: str | None = None
    hook_dir: str | None = None
    #: ``kernel:OP,...``: the op types a kernel change touches (empty: not named).
    op_types: tuple[str, ...] = ()

    def env_names(self) -> set[str]:
        names = {n for n, _ in self.env} | set(self.unset)
        if self.hook_dir is not None:
            names.add("PYTHONPATH")
        return names

    def allows(self, key: str, value: Any) -> bool:
        """May the control ``key`` (see :func:`control_view`) differ because of this change?"""
        for name in self.env_names():
            if key in (f"request.env.{name}", f"env.{name}", "request.unset_env"):
                return True
            if name == "PYTHONPATH" and key == "pythonpath":
                return True
            if name == SCHEDULE_VAR and key in ("profiler", "request.profiler_schedule"):
                return True
            if name == JOBS_VAR and key == "jobs.value":
                return True
        if self.jobs is not None and key in (
            "request.jobs",
            "request.vary",
            "jobs.value",
            f"env.{JOBS_VAR}",
        ):
            return True
        if self.profiler_schedule is not None and key in (
            "request.profiler_schedule",
            "profiler",
            f"env.{SCHEDULE_VAR}",
        ):
            return True
        if self.hook_dir is not None and key.startswith("hooks.finding."):
            # Only the declared hook's own findings: anything else it drags in still blocks.
            path = value.get("path") if isinstance(value, dict) else None
            return isinstance(path, str) and is_inside(path, self.hook_dir)
        return False

    def apply(self, request: RunRequest, runner_env: Mapping[str, str]) -> RunRequest:
        env = dict(request.env)
        unset = [n for n in request.unset_env if n not in self.env_names()]
        for name, value in self.env:
            env[name] = value
        for name in self.unset:
            env.pop(name, None)
            unset.append(name)
        if self.hook_dir is not None:
            # The hook directory goes first, for this run only (C6: declared, as a factor).
            current = env.get("PYTHONPATH", runner_env.get("PYTHONPATH", ""))
            env["PYTHONPATH"] = self.hook_dir + (os.pathsep + current if current else "")
        out = replace(request, env=env, unset_env=tuple(unset))
        if self.jobs is not None:
            # A declared vary (C5): the value changes on purpose and is recorded as such.
            out = replace(out, jobs=self.jobs, vary=tuple(sorted({*out.vary, "jobs"})))
        if self.profiler_schedule is not None:
            out = replace(out, profiler_schedule=self.profiler_schedule)
        return out

    def changes(self, request: RunRequest, runner_env: Mapping[str, str]) -> bool:
        """Does applying this change alter the request at all? A kernel change is made
        outside skgate (in the working directory), so it is taken as declared."""
        if self.kind == "kernel":
            return True
        before = base_effective(request, runner_env)
        after = base_effective(self.apply(request, runner_env), runner_env)
        return before != after

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "label": self.label,
            "env": dict(self.env),
            "unset": list(self.unset),
            "jobs": self.jobs,
            "profiler_schedule": self.profiler_schedule,
            "hook_dir": self.hook_dir,
            "op_types": list(self.op_types),
        }


def base_effective(request: RunRequest, runner_env: Mapping[str, str]) -> tuple[Any, ...]:
    """What a change can alter: effective env, jobs and schedule."""
    env = preflight.base_env(request, runner_env)
    return (sorted(env.items()), request.jobs, request.profiler_schedule)


def is_inside(path: str, directory: str) -> bool:
    p, d = os.path.realpath(path), os.path.realpath(directory)
    return p == d or p.startswith(d.rstrip(os.sep) + os.sep)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_env_name(name: str, where: str) -> str:
    if not _ENV_NAME.match(name):
        raise UsageError(f"{where}: {name!r} is not an environment variable name")
    return name


def check_jobs_text(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{where}: jobs must be a positive integer")
    parsed = parse_jobs(str(value))
    if parsed == "auto" or parsed is None:
        raise UsageError(f"{where}: jobs must be a positive integer, not {value!r}")
    return str(parsed)


def parse_declaration(text: str) -> Change:
    """One ``--declare`` item (grammar in the module docstring). Bad input: UsageError."""
    where = f"--declare {text!r}"
    if text.startswith("env:"):
        name, sep, value = text[4:].partition("=")
        if not sep:
            raise UsageError(f"{where}: use env:NAME=VALUE")
        return Change("env", f"env {name}={value}", env=((check_env_name(name, where), value),))
    if text.startswith("unset:"):
        name = check_env_name(text[6:], where)
        return Change("unset", f"unset {name}", unset=(name,))
    if text == "kernel:":
        raise UsageError(f"{where}: use kernel or kernel:OP,OP (op types separated by commas)")
    if text == "kernel" or text.startswith("kernel:"):
        label, ops = _kernel_change(text[7:], where)
        return Change("kernel", label, op_types=ops)
    key, sep, value = text.partition("=")
    if sep and key == "profiler-schedule":
        spec = ProfilerSchedule.parse(value).to_text()
        return Change("profiler_schedule", f"profiler schedule {spec}", profiler_schedule=spec)
    if sep and key == "jobs":
        jobs = check_jobs_text(value, where)
        return Change("jobs", f"compile jobs {jobs}", jobs=jobs)
    raise UsageError(
        f"{where}: unknown change; use env:NAME=VALUE, unset:NAME, profiler-schedule=SPEC, "
        "jobs=N or kernel[:OP,OP...]"
    )


_OP_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def check_op_types(words: Sequence[str], where: str) -> tuple[str, ...]:
    """Op type names as CANN spells them (``HcPre``, ``MatMulV2``): letters, digits, ``_``."""
    out: list[str] = []
    for word in words:
        if not _OP_TYPE.match(word):
            raise UsageError(f"{where}: {word!r} is not an op type name (e.g. HcPre, MatMulV2)")
        if word not in out:
            out.append(word)
    return tuple(out)


def _kernel_change(ops_text: str, where: str) -> tuple[str, tuple[str, ...]]:
    words = [w.strip() for w in ops_text.split(",")] if ops_text else []
    if ops_text and not all(words):
        raise UsageError(f"{where}: use kernel or kernel:OP,OP (op types separated by commas)")
    ops = check_op_types(words, where)
    label = "kernel change" + (f" touching {', '.join(ops)}" if ops else "")
    return label, ops
