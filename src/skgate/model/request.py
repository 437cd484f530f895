"""The run request: one attempt as the CLI or a controller asks for it (frozen in control.json).

Nothing here does I/O: the checks that need the file system are in
:mod:`skgate.preflight.request`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from skgate.model.errors import EvidenceError, UsageError
from skgate.model.frozen import field, record
from skgate.model.modes import PackageMode, VerdictFrom
from skgate.model.schema import require

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Where CANN's static compile writes its outputs, below the working directory (C1, C8).
OUTPUTS_DIRNAME = "static_kernel_compile_outputs"
#: C8: the outputs upstream's cleanup clears, in the order it lists them (what ``skgate
#: cleanup`` and ``retry`` move into a scene; ``verify`` and ``recover`` tell an
#: interrupted preservation by these names, issue 28).
CLEANUP_OUTPUTS = (
    OUTPUTS_DIRNAME,
    "aclnn_static_shape_kernel_outputs",
    ".static_kernel_records.json",
    "sk_meta",
    "kernel_meta",
)
#: Also cleared by upstream; optional for ``skgate cleanup`` (they may hold the user's
#: own files).
OPTIONAL_CLEANUP_OUTPUTS = ("log", "tmp", "profiling")

#: Where torch-npu 2.7 writes them instead (``static_kernel.py`` l.267 of 2.7.1.post2).
LEGACY_OUTPUTS_DIRNAME = "aclnn_static_shape_kernel_outputs"

DEFAULT_TIMEOUT = 3 * 3600.0
DEFAULT_GRACE = 30.0


def outputs_path(cwd: str, outputs: str | None) -> str:
    """``outputs`` (relative to ``cwd`` unless absolute), else ``<cwd>/OUTPUTS_DIRNAME``.

    Pure path arithmetic, no file-system access; callers wrap it in a ``Path``.
    """
    return posixpath.join(cwd, outputs or OUTPUTS_DIRNAME)


@record
class RunRequest:
    """One attempt to run, as the CLI or a controller asks for it.

    Everything here is frozen into ``control.json`` before launch (C5, C6), so that
    ``skgate retry`` can run exactly the same controls again.
    """

    argv: tuple[str, ...]
    cwd: str
    root: str
    timeout: float = DEFAULT_TIMEOUT
    grace: float = DEFAULT_GRACE
    outputs: str | None = None  # default: <cwd>/static_kernel_compile_outputs
    package_mode: PackageMode = PackageMode.OPTIONAL
    summary_patterns: tuple[str, ...] = ()
    completion_marker: str | None = None
    jobs: str | None = None  # "auto", a positive integer as text, or None (not frozen)
    env: Mapping[str, str] = field(default_factory=dict)  # set on top of the runner's env
    unset_env: tuple[str, ...] = ()
    python: str | None = None
    approved_hooks: tuple[str, ...] = ()
    hook_baseline: str | None = None
    #: C6: refuse even the known distribution hooks the catalogue would allow.
    strict_hooks: bool = False
    #: Opt-in (C5): also hand the frozen jobs to ``os.cpu_count()`` (PYTHON_CPU_COUNT).
    python_cpu_count: bool = False
    #: Opt-in (C5): put skgate's op_compiler shim first on PATH, rewriting ``-j`` to the
    #: frozen value (:mod:`skgate.preflight.shim`).
    enforce_jobs: bool = False
    foreign_policy: str = "wait"  # "wait" or "refuse"
    lease_timeout: float = 600.0
    devices: tuple[int, ...] = ()
    profiler_schedule: str | None = None
    vary: tuple[str, ...] = ()
    retry_of: str | None = None
    quiet: bool = False
    scan_interval: float = 1.0
    #: Names of compiler processes (C4 foreign check); empty: $SKGATE_COMPILER_NAMES or
    #: ("opc", "op_compiler").
    compiler_names: tuple[str, ...] = ()
    #: Memory budget per compile job for ``--jobs auto`` (C5); None: $SKGATE_JOB_MEMORY_MB
    #: or the built-in default.
    job_memory_mb: int | None = None
    #: C2: where the final summary comes from; ``exit-status`` declares that this command
    #: is not a compile and its exit status is its result (a frozen control).
    verdict_from: VerdictFrom = VerdictFrom.SUMMARY
    #: C6: launch even when the build path is too deep for CANN's derived file names
    #: (a frozen control: the refusal is overridden on record, never silently).
    allow_long_paths: bool = False

    def outputs_path(self) -> str:
        """The outputs directory of this run (the one home of that rule, C1 / C8)."""
        return outputs_path(self.cwd, self.outputs)

    def legacy_outputs_path(self) -> str | None:
        """torch-npu 2.7's outputs directory below ``cwd`` when no outputs directory was
        given (``aclnn_static_shape_kernel_outputs``; issue 27), else None."""
        return None if self.outputs else posixpath.join(self.cwd, LEGACY_OUTPUTS_DIRNAME)

    def to_dict(self) -> dict[str, Any]:
        return {
            "argv": list(self.argv),
            "cwd": self.cwd,
            "root": self.root,
            "timeout": self.timeout,
            "grace": self.grace,
            "outputs": self.outputs,
            "package_mode": self.package_mode.value,
            "summary_patterns": list(self.summary_patterns),
            "completion_marker": self.completion_marker,
            "jobs": self.jobs,
            "env": dict(self.env),
            "unset_env": list(self.unset_env),
            "python": self.python,
            "approved_hooks": list(self.approved_hooks),
            "hook_baseline": self.hook_baseline,
            "strict_hooks": self.strict_hooks,
            "python_cpu_count": self.python_cpu_count,
            "enforce_jobs": self.enforce_jobs,
            "foreign_policy": self.foreign_policy,
            "lease_timeout": self.lease_timeout,
            "devices": list(self.devices),
            "profiler_schedule": self.profiler_schedule,
            "vary": list(self.vary),
            "retry_of": self.retry_of,
            "quiet": self.quiet,
            "scan_interval": self.scan_interval,
            "compiler_names": list(self.compiler_names),
            "job_memory_mb": self.job_memory_mb,
            "verdict_from": self.verdict_from.value,
            "allow_long_paths": self.allow_long_paths,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "request") -> RunRequest:
        try:
            return cls(
                argv=tuple(str(a) for a in require(data, "argv", list, where)),
                cwd=require(data, "cwd", str, where),
                root=require(data, "root", str, where),
                timeout=float(require(data, "timeout", (int, float), where)),
                grace=float(require(data, "grace", (int, float), where)),
                outputs=data.get("outputs"),
                package_mode=PackageMode(data.get("package_mode", "optional")),
                summary_patterns=tuple(data.get("summary_patterns", ())),
                completion_marker=data.get("completion_marker"),
                jobs=data.get("jobs"),
                env=dict(data.get("env", {})),
                unset_env=tuple(data.get("unset_env", ())),
                python=data.get("python"),
                approved_hooks=tuple(data.get("approved_hooks", ())),
                hook_baseline=data.get("hook_baseline"),
                strict_hooks=bool(data.get("strict_hooks", False)),
                python_cpu_count=bool(data.get("python_cpu_count", False)),
                enforce_jobs=bool(data.get("enforce_jobs", False)),
                foreign_policy=str(data.get("foreign_policy", "wait")),
                lease_timeout=float(data.get("lease_timeout", 600.0)),
                devices=tuple(int(d) for d in data.get("devices", ())),
                profiler_schedule=data.get("profiler_schedule"),
                vary=tuple(data.get("vary", ())),
                retry_of=data.get("retry_of"),
                quiet=bool(data.get("quiet", False)),
                scan_interval=float(data.get("scan_interval", 1.0)),
                compiler_names=tuple(str(n) for n in data.get("compiler_names", ())),
                job_memory_mb=(
                    int(data["job_memory_mb"]) if data.get("job_memory_mb") is not None else None
                ),
                # Absent in attempts recorded before the control existed: the default.
                verdict_from=VerdictFrom(data.get("verdict_from", VerdictFrom.SUMMARY.value)),
                allow_long_paths=bool(data.get("allow_long_paths", False)),
            )
        except (TypeError, ValueError) as exc:
            raise EvidenceError(f"{where}: {exc}") from None


#: Named groups a ``--summary-pattern`` must define.
SUMMARY_GROUPS = ("stage", "inputs", "succeeded", "failed")


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"{what} {pattern!r} is not a valid regular expression ({exc}); fix the pattern"
        ) from None


def validate_patterns(summary_patterns: Sequence[str], completion_marker: str | None) -> None:
    """Refuse (UsageError, one line) a bad regex or a summary pattern missing a group."""
    for pattern in summary_patterns:
        compiled = _compile(pattern, "--summary-pattern")
        absent = [g for g in SUMMARY_GROUPS if g not in compiled.groupindex]
        if absent:
            raise UsageError(
                f"--summary-pattern {pattern!r} lacks the named group(s) "
                + ", ".join(f"(?P<{g}>...)" for g in absent)
                + "; it needs stage, inputs, succeeded and failed"
            )
    if completion_marker is not None:
        if completion_marker == "":
            raise UsageError("--completion-marker is empty; give a regex that marks completion")
        _compile(completion_marker, "--completion-marker")


def frozen_jobs(controls: Any) -> int | None:
    """The jobs value an attempt froze, from its ``control.json["controls"]`` (C5).

    None when nothing was frozen (or the record is not the expected shape). ``controls`` is
    the JSON object or its typed record (:class:`~skgate.model.controls.FrozenControls`).
    """
    from skgate.model.controls import FrozenControls  # noqa: PLC0415 - not for a start

    if isinstance(controls, FrozenControls):
        return controls.jobs_value
    return FrozenControls.from_dict(controls).jobs_value
