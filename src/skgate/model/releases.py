"""torch-npu releases and how their static-kernel code behaves (issue 27): one table.

Read in the wheels on the package index, file
``torch_npu/dynamo/<pkg>/_acl_concrete_graph/static_kernel.py`` (``<pkg>`` is
``torchair`` in 2.7.1.post2, ``npugraph_ex`` from 2.9.0.post2; 2.11.0.post3's file is
byte-identical to 2.14.0's). Line numbers are those of that file in the named wheel;
``docs/cann-static-compile.md`` gives each fact with its line. Preflight states the row
of the installed release (``control.json`` ``controls.torch_npu``), and the verdict uses
the same row when it explains what it did not see. No I/O here:
:mod:`skgate.preflight.torch_npu` reads the installed version.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from skgate.model.frozen import record, replace
from skgate.model.lazy_re import Lazy
from skgate.model.request import LEGACY_OUTPUTS_DIRNAME, OUTPUTS_DIRNAME


class JobsRule(enum.Enum):
    """How the launcher picks op_compiler's ``-j``."""

    #: ``os.cpu_count() // LOCAL_WORLD_SIZE`` on a multi-card run, else the CPU count;
    #: 16 when that is below 1 (2.7.1.post2 l.284-298).
    CPUS_PER_LOCAL_RANK = "cpu_count // LOCAL_WORLD_SIZE"
    #: ``os.cpu_count()`` (16 when unknown), whatever the number of ranks.
    CPUS = "cpu_count"


@record
class Release:
    """One release series and its static-kernel behaviour (the table's row)."""

    #: ``major.minor`` (every patch and post release of it behaves alike).
    series: str
    #: The wheel the row was read in.
    wheel: str
    #: The file, inside the wheel, the line numbers refer to.
    source: str
    #: Where a compile's build directory goes, below the working directory (or build_dir).
    output_root: str
    #: The launcher's start line (a ``warnings.warn``, visible by default).
    start_line: str
    jobs: JobsRule
    #: An op_compiler failure is printed at the default log level (a ``warnings.warn``),
    #: not only through the launcher's logger (which prints ERROR only by default).
    compiler_failures_visible: bool
    #: op_compiler's output is captured by the launcher (never in the run log).
    compiler_output_captured: str
    #: A ``.run`` install failure is printed at the default log level.
    install_failures_visible: bool
    #: The cache mechanisms the release has (empty: none).
    caches: tuple[str, ...]
    #: Where packages are installed when not into the shared opp tree (None: always
    #: the shared tree).
    private_install: str | None
    #: A SIGTERM/SIGINT handler that uninstalls and then ignores the signal.
    survives_sigterm: bool

    @property
    def outputs_dirname(self) -> str:
        return self.output_root.split("/", 1)[0]

    def to_dict(self) -> dict[str, object]:
        return {
            "series": self.series,
            "wheel": self.wheel,
            "source": self.source,
            "output_root": self.output_root,
            "start_line": self.start_line,
            "jobs": self.jobs.value,
            "compiler_failures_visible": self.compiler_failures_visible,
            "compiler_output_captured": self.compiler_output_captured,
            "install_failures_visible": self.install_failures_visible,
            "caches": list(self.caches),
            "private_install": self.private_install,
            "survives_sigterm": self.survives_sigterm,
        }


_NPUGRAPH = "torch_npu/dynamo/npugraph_ex/_acl_concrete_graph/static_kernel.py"
_START = "Starting static kernel compilation, the build directory is <root>"
_ROOT = f"{OUTPUTS_DIRNAME}/ts<%Y%m%d%H%M%S%f>_pid<pid>_outputs"
_CACHES_14 = (
    "use_cache_compile (compile_cache_dir/static_kernel_compile_outputs/ts*_outputs/*.run)",
    "static_kernel_cache (CANN-<version>_<device>.json; key: inputs, super-kernel options, "
    "deterministic mode and level)",
)

_R27 = Release(
    series="2.7",
    wheel="torch_npu-2.7.1.post2",
    source="torch_npu/dynamo/torchair/_acl_concrete_graph/static_kernel.py",
    output_root=f"{LEGACY_OUTPUTS_DIRNAME}/<%Y%m%d%H%M%S%f>_<pid>_outputs",
    start_line="Starting static kernel compilation",
    jobs=JobsRule.CPUS_PER_LOCAL_RANK,
    compiler_failures_visible=False,
    compiler_output_captured="always (-l info fixed, never -f)",
    install_failures_visible=False,
    caches=(),
    private_install=None,
    survives_sigterm=False,
)
_R29 = Release(
    series="2.9",
    wheel="torch_npu-2.9.0.post2",
    source=_NPUGRAPH,
    output_root=_ROOT,
    start_line=_START,
    jobs=JobsRule.CPUS,
    compiler_failures_visible=True,
    compiler_output_captured="always, even with -f true",
    install_failures_visible=False,
    caches=(_CACHES_14[0],),
    private_install=None,
    survives_sigterm=False,
)
_R214 = replace(
    _R29,
    series="2.14",
    wheel="torch_npu-2.14.0",
    compiler_output_captured="before CANN 9.0 only (-f true from 9.0 on)",
    install_failures_visible=True,
    caches=_CACHES_14,
    private_install="<cwd>/static_kernel_install/<ts>_<pid> (CANN >= 9.1, removed at exit)",
    survives_sigterm=True,
)
#: 2.11.0.post3's static_kernel.py is byte-identical to 2.14.0's.
RELEASES: tuple[Release, ...] = (
    _R27,
    _R29,
    replace(_R214, series="2.11", wheel="torch_npu-2.11.0.post3"),
    _R214,
)

_BY_SERIES: Mapping[str, Release] = {r.series: r for r in RELEASES}
_VERSION = Lazy(r"(\d+)\.(\d+)(?:\.|$|[a-z+])")


def release_for(version: str | None) -> Release | None:
    """The row of a torch-npu version (``2.7.1.post2`` -> 2.7), or None when the series
    is not in the table (never guessed from a neighbour)."""
    if not version:
        return None
    m = _VERSION.get().match(version.strip())
    if m is None:
        return None
    return _BY_SERIES.get(f"{int(m.group(1))}.{int(m.group(2))}")


def release_of_root(root: str) -> Release | None:
    """The release a build directory's layout shows: only 2.7 writes its roots under
    ``aclnn_static_shape_kernel_outputs`` (later releases cannot be told apart by it)."""
    parts = root.replace("\\", "/").rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2] == LEGACY_OUTPUTS_DIRNAME:
        return _BY_SERIES["2.7"]
    return None


def jobs_explained(release: Release, jobs: int) -> str:
    """What a release's ``-j`` rule says about an op_compiler that ran with ``-j jobs``."""
    if release.jobs is JobsRule.CPUS_PER_LOCAL_RANK:
        return (
            f"torch-npu {release.series} passes -j os.cpu_count() // LOCAL_WORLD_SIZE to each "
            f"rank's op_compiler (-j {jobs} here) and reads no NPU_STATIC_KERNEL_COMPILE_JOBS"
        )
    return (
        f"torch-npu {release.series} passes -j os.cpu_count() (-j {jobs} here) and reads no "
        "NPU_STATIC_KERNEL_COMPILE_JOBS"
    )


def unseen_install_note(release: Release) -> str | None:
    """Why a failed package install may show in no line of the run log (or None)."""
    if release.install_failures_visible:
        return None
    return (
        f"torch-npu {release.series} logs package install failures below the default level; "
        "the failure was read from the package run's exit status"
    )


def unseen_failure_note(release: Release) -> str | None:
    """Why a failure may show in no line of the run log, for the verdict (or None)."""
    if release.compiler_failures_visible:
        return None
    return (
        f"torch-npu {release.series} logs op_compiler failures below the default level; "
        "the failure was read from op_compiler's exit status and its logs"
    )
