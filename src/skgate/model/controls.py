"""The frozen controls of an attempt (``control.json["controls"]``, C5 / C6) as a typed record.

Preflight writes the controls as a JSON object; this record is how the gate reads them
back: the facts that decide whether two attempts may be compared (jobs, profiler schedule,
interpreter, ordered ``PYTHONPATH``, the environment that matters, hook findings, host).
Reading is as lenient as the file may be old or partial: a missing or ill-typed field is
``None`` (or empty), never an exception, since a comparison must still say what differs.

``to_dict`` gives back exactly the object that was read, so writing a record read from a
``control.json`` never changes that file's bytes. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.frozen import field, record

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _sub(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ids(value: Any) -> frozenset[tuple[str, int]] | None:
    if not isinstance(value, list):
        return None
    pairs = [v for v in value if isinstance(v, list) and len(v) == 2]
    return frozenset((n, i) for n, i in pairs if isinstance(n, str) and _int(i) is not None)


@record
class HookFinding:
    """One start-up hook finding as the controls froze it (C6)."""

    fingerprint: str | None
    kind: str | None
    path: str | None
    approved: bool | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HookFinding:
        approved = data.get("approved")
        return cls(
            fingerprint=_text(data.get("fingerprint")),
            kind=_text(data.get("kind")),
            path=_text(data.get("path")),
            approved=approved if isinstance(approved, bool) else None,
        )


@record
class FrozenControls:
    """The typed view of ``control.json["controls"]``."""

    #: The frozen compile concurrency (C5), and whether it was a declared vary.
    jobs_value: int | None = None
    jobs_varied: bool = False
    #: The profiler schedule handed to the launcher, as text (None: framework default).
    profiler_schedule: str | None = None
    python_executable: str | None = None
    python_version: str | None = None
    python_implementation: str | None = None
    python_flags: tuple[str, ...] | None = None
    #: ``PYTHONPATH`` entries in order, as given.
    pythonpath: tuple[str | None, ...] = ()
    #: The workload environment variables that matter to a compile, by name.
    env_relevant: Mapping[str, Any] = field(default_factory=dict)
    hook_findings: tuple[HookFinding, ...] = ()
    host_hostname: str | None = None
    host_machine: str | None = None
    host_kernel: str | None = None
    #: Host facts that change how a compile behaves (C5; recorded since issue 15).
    host_cpu_model: str | None = None
    host_cpu_count: int | None = None
    host_cann_version: str | None = None
    #: The installed torch-npu version preflight read from its dist-info (issue 27);
    #: None when not found or not recorded (older attempts).
    torch_npu_version: str | None = None
    #: (name, inode) of each outputs entry present before launch (C8: never this
    #: attempt's); None when not recorded (older attempts: only the first names were).
    outputs_before_ids: frozenset[tuple[str, int]] | None = None
    #: The object read, returned unchanged by ``to_dict`` (byte-stable control.json).
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> FrozenControls:
        if not isinstance(data, dict):
            return cls()
        jobs = _sub(data, "jobs")
        prof = _sub(data, "profiler")
        py = _sub(data, "python")
        flags = py.get("flags")
        env = _sub(data, "env")
        relevant = env.get("relevant")
        hooks = _sub(data, "hooks")
        host = _sub(data, "host")
        return cls(
            jobs_value=_int(jobs.get("value")),
            jobs_varied=jobs.get("varied") is True,
            profiler_schedule=_text(prof.get("text")) or _text(prof.get("schedule")),
            python_executable=_text(py.get("executable")),
            python_version=_text(py.get("version")),
            python_implementation=_text(py.get("implementation")),
            python_flags=tuple(str(f) for f in flags) if isinstance(flags, list) else None,
            pythonpath=tuple(_text(e.get("entry")) for e in _items(data.get("pythonpath"))),
            env_relevant=dict(relevant) if isinstance(relevant, dict) else {},
            hook_findings=tuple(HookFinding.from_dict(f) for f in _items(hooks.get("findings"))),
            host_hostname=_text(host.get("hostname")),
            host_machine=_text(host.get("machine")),
            host_kernel=_text(host.get("kernel")),
            host_cpu_model=_text(host.get("cpu_model")),
            host_cpu_count=_int(host.get("cpu_count")),
            host_cann_version=_text(host.get("cann_version")),
            torch_npu_version=_text(_sub(data, "torch_npu").get("version")),
            outputs_before_ids=_ids(_sub(data, "outputs_before").get("ids")),
            raw=dict(data),
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)
