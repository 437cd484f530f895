"""Comparison of the frozen controls of two attempts (C6: a run is attributable only when it
differs from its reference in the declared change alone)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from skgate.model.controls import FrozenControls
from skgate.preflight import prepare as preflight
from skgate.regress.change import Change

#: Settings of the gate's own observation (which process names count as foreign
#: compilers, C4), not runtime setup of the compile: they never make runs incomparable.
GATE_ONLY_ENV = frozenset({preflight.COMPILER_NAMES_VAR})


def _sub(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def control_view(control: Mapping[str, Any]) -> dict[str, Any]:
    """The frozen controls of one attempt (``control.json``) that must match for two
    attempts to be compared (C5, C6): request, jobs, schedule, interpreter, ordered
    ``PYTHONPATH``, the effective environment that matters, hook findings, host."""
    req = _sub(control, "request")
    c = FrozenControls.from_dict(control.get("controls"))
    view: dict[str, Any] = {}
    for key in (
        "argv",
        "cwd",
        "timeout",
        "grace",
        "outputs",
        "package_mode",
        "summary_patterns",
        "verdict_from",
        "completion_marker",
        "jobs",
        "unset_env",
        "python",
        "profiler_schedule",
        "vary",
        "devices",
    ):
        view[f"request.{key}"] = req.get(key)
    for name, value in sorted((req.get("env") or {}).items()):
        view[f"request.env.{name}"] = value
    view["jobs.value"] = c.jobs_value
    view["profiler"] = c.profiler_schedule
    view["python.executable"] = c.python_executable
    view["python.version"] = c.python_version
    view["python.implementation"] = c.python_implementation
    view["python.flags"] = list(c.python_flags) if c.python_flags is not None else None
    view["pythonpath"] = list(c.pythonpath)
    for name, value in sorted(c.env_relevant.items()):
        if name not in GATE_ONLY_ENV:
            view[f"env.{name}"] = value
    for f in c.hook_findings:
        view[f"hooks.finding.{f.fingerprint}"] = {
            "kind": f.kind,
            "path": f.path,
            "approved": f.approved,
        }
    view["host.hostname"] = c.host_hostname
    view["host.machine"] = c.host_machine
    view["host.kernel"] = c.host_kernel
    view["host.cpu_model"] = c.host_cpu_model
    view["host.cpu_count"] = c.host_cpu_count
    view["host.cann_version"] = c.host_cann_version
    return view


#: Host facts that change how a compile behaves (C5): the same arm on hosts that differ
#: here is not the same experiment. The host name is identity, not behaviour: arms spread
#: over a cluster ignore it (see :data:`HOST_IDENTITY`), never these.
HOST_COMPILE_FACTS = ("machine", "kernel", "cpu_model", "cpu_count", "cann_version")

#: Control keys that only say which host ran an attempt.
HOST_IDENTITY = ("host.hostname",)

#: Every host control key (ignored only when a matrix declares that hosts may differ).
HOST_KEYS = tuple(f"host.{k}" for k in ("hostname", *HOST_COMPILE_FACTS))


@dataclass(frozen=True)
class Difference:
    key: str
    reference: Any
    observed: Any
    declared: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "reference": self.reference,
            "observed": self.observed,
            "declared": self.declared,
        }

    def text(self) -> str:
        return f"{self.key}: {_short(self.reference)} -> {_short(self.observed)}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "(none)"
    return text if len(text) <= 80 else text[:77] + "..."


def compare_controls(
    reference: Mapping[str, Any],
    observed: Mapping[str, Any],
    changes: Iterable[Change] = (),
    ignore: Iterable[str] = (),
) -> list[Difference]:
    """Every control that differs between two ``control.json`` files, each marked whether a
    declared change accounts for it. Pure: the same files always give the same answer."""
    a, b = control_view(reference), control_view(observed)
    skip = set(ignore)
    declared = tuple(changes)
    out: list[Difference] = []
    for key in sorted(set(a) | set(b)):
        if key in skip or a.get(key) == b.get(key):
            continue
        value = b.get(key) if b.get(key) is not None else a.get(key)
        ok = any(ch.allows(key, value) for ch in declared)
        out.append(Difference(key, a.get(key), b.get(key), ok))
    return out
