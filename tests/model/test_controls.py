"""The typed frozen-controls record reads control.json["controls"] and gives it back unchanged."""

from __future__ import annotations

import json
from typing import Any

from skgate.model.controls import FrozenControls, HookFinding

CONTROLS: dict[str, Any] = {
    "jobs": {"value": 4, "requested": "4", "varied": True, "notes": []},
    "profiler": {"schedule": {"wait": 1}, "text": "wait=1", "env_var": "SKGATE_PROFILER_SCHEDULE"},
    "python": {
        "executable": "/v/bin/python",
        "version": "3.11.7",
        "implementation": "cpython",
        "flags": ["-X", "dev"],
    },
    "pythonpath": [{"index": 0, "entry": "src"}, "not an object", {"index": 1, "entry": "lib"}],
    "env": {"relevant": {"PATH": "/bin", "NPU_STATIC_KERNEL_COMPILE_JOBS": "4"}},
    "hooks": {
        "findings": [
            {
                "fingerprint": "ab",
                "kind": "pth-import",
                "path": "/x.pth",
                "approved": False,
                "detail": "imports y",
            }
        ]
    },
    "host": {"hostname": "vm", "machine": "x86_64", "kernel": "Linux 6"},
    "leases": {"mode": "none", "devices": []},
}


def test_reads_the_facts_a_comparison_needs() -> None:
    c = FrozenControls.from_dict(CONTROLS)
    assert (c.jobs_value, c.jobs_varied, c.profiler_schedule) == (4, True, "wait=1")
    assert (c.python_executable, c.python_version, c.python_flags) == (
        "/v/bin/python",
        "3.11.7",
        ("-X", "dev"),
    )
    assert c.pythonpath == ("src", "lib")
    assert c.env_relevant["PATH"] == "/bin"
    assert c.hook_findings == (HookFinding("ab", "pth-import", "/x.pth", False),)
    assert (c.host_hostname, c.host_machine, c.host_kernel) == ("vm", "x86_64", "Linux 6")


def test_to_dict_gives_back_the_same_bytes() -> None:
    c = FrozenControls.from_dict(json.loads(json.dumps(CONTROLS)))
    assert json.dumps(c.to_dict(), indent=2) == json.dumps(CONTROLS, indent=2)


def test_old_or_partial_controls_read_as_absent_never_raise() -> None:
    cases: tuple[Any, ...] = (
        None,
        [],
        {},
        {"jobs": "4", "python": {"flags": "x"}, "hooks": {"findings": 3}},
        {"jobs": {"value": True}},
    )
    for data in cases:
        c = FrozenControls.from_dict(data)
        assert c.jobs_value is None and c.python_flags is None and c.hook_findings == ()
