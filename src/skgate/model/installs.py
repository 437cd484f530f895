"""Static-kernel packages the owned tree installed or uninstalled (C8, issue 27).

torchair installs the ``.run`` it built by executing it: ``subprocess.run([run],
check=True, capture_output=True, text=True)`` in torch-npu 2.7.1.post2
(``torch_npu/dynamo/torchair/_acl_concrete_graph/static_kernel.py`` line 99) and
2.9.0.post2 (``npugraph_ex/.../static_kernel.py`` line 433); 2.14.0 adds
``--install-path=<cwd>/static_kernel_install/<ts>_<pid>`` in process isolation and ``-q``
from CANN 9.1 (``npugraph_ex/.../static_kernel.py`` lines 748-754). A non-zero exit is
caught and only said: ``warnings.warn(... install failed, msg: ...)`` in 2.14 (line 760),
``logger.warning`` in 2.7 and 2.9 (lines 103 and 438), whose logger prints ERROR and above
unless ``TORCH_COMPILE_DEBUG=1``: by default nothing is printed and inference carries on
without the static kernels. Uninstall runs each package's own
``$ASCEND_HOME_PATH/../*/opp/static_kernel/ai_core/<package>/uninstall.sh`` at exit
(``uninstall_static_kernel``); vllm-ascend's worker runs the global
``opp/static_kernel/ai_core/uninstall.sh``, which removes every package of the host,
on SIGTERM and SIGINT (``vllm_ascend/worker/worker.py``).

So a package run is known from the exec of the owned process (its argv, its exit status
when the process events or the reaper gave one) and from the launcher's own line where
it printed one. This module is the pure part: which argv is a package run, the records
of ``installs.json`` and what they add up to. :mod:`skgate.evidence.installs` builds and
reads the file; :mod:`skgate.verdict.installs` says it in the verdict.
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Collection, Iterable, Mapping

from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.running import ProcessRecord
from skgate.model.schema import check_schema, opt_int, require

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_INSTALLS = "skgate.installs/1"

#: Package runs kept in ``installs.json``; the rest are counted in ``omitted``.
MAX_RUNS = 1000

#: Interpreters a ``.run`` or an ``uninstall.sh`` is executed through: the kernel puts
#: the script's path after the interpreter in argv (``#!/bin/sh`` -> ``sh x.run ...``).
_SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh", "busybox"})

#: The directory of every static-kernel package, under the toolkit's ``opp``.
_AI_CORE = ("opp", "static_kernel", "ai_core")
UNINSTALL_SCRIPT = "uninstall.sh"


class PackageAction(str, enum.Enum):
    """What one package run does to the installed static kernels."""

    #: A ``*.run`` executed: installs one package.
    INSTALL = "install"
    #: ``ai_core/<package>/uninstall.sh``: removes that package only.
    UNINSTALL = "uninstall"
    #: ``ai_core/uninstall.sh``: removes every package on the host, other users' too.
    UNINSTALL_ALL = "uninstall_all"


class RunSource(str, enum.Enum):
    """Where a package run was learnt."""

    #: The exec of an owned process (argv), with its exit status where known.
    EXEC = "exec"
    #: A line the launcher printed (``X.run install failed, msg: ...``).
    LINE = "launcher line"


def _script_of(argv: tuple[str, ...]) -> str | None:
    """The script a process runs: argv[0], or the first operand after a shell."""
    if not argv:
        return None
    first = posixpath.basename(argv[0])
    if first.endswith(".run") or first == UNINSTALL_SCRIPT:
        return argv[0]
    if first not in _SHELLS:
        return None
    for arg in argv[1:]:
        if arg == "-c":
            return None  # a command string, not a script file: nothing to say by name
        if not arg.startswith("-"):
            return arg
    return None


def classify_path(path: str) -> tuple[PackageAction, str | None] | None:
    """(action, package) of a script path, or None when it is no package run.

    ``.../opp/static_kernel/ai_core/uninstall.sh`` is the global uninstall;
    ``.../ai_core/<package>/...uninstall.sh`` that package's own. A bare ``uninstall.sh``
    (no directory) is not judged: its directory is unknown.
    """
    name = posixpath.basename(path)
    if name.endswith(".run") and len(name) > len(".run"):
        return PackageAction.INSTALL, name[: -len(".run")]
    if name != UNINSTALL_SCRIPT:
        return None
    parts = [p for p in path.split("/") if p and p != "."]
    for i in range(len(parts) - len(_AI_CORE) + 1):
        if tuple(parts[i : i + len(_AI_CORE)]) != _AI_CORE:
            continue
        rest = parts[i + len(_AI_CORE) :]
        if rest == [UNINSTALL_SCRIPT]:
            return PackageAction.UNINSTALL_ALL, None
        return PackageAction.UNINSTALL, rest[0]
    return None


def package_action(argv: tuple[str, ...]) -> tuple[PackageAction, str, str | None] | None:
    """(action, script path, package) of a process's argv, or None."""
    script = _script_of(argv)
    if script is None:
        return None
    found = classify_path(script)
    if found is None:
        return None
    return found[0], script, found[1]


@record
class PackageRun:
    """One package run: an exec of an owned process, or a launcher line about one."""

    action: PackageAction
    #: The script as executed (argv) or as printed (a ``.run`` file name in a line).
    path: str
    package: str | None
    source: RunSource
    pid: int | None = None
    start_ticks: int | None = None
    argv: tuple[str, ...] = ()
    #: None with ``exit_signal`` None: the exit status is unknown (the scan saw the
    #: process but nothing reaped it or reported its exit).
    exit_status: int | None = None
    exit_signal: int | None = None
    #: From a launcher line: whether it said success (True) or failure (False).
    ok: bool | None = None
    rank: int | None = None
    #: Known by its process name: its argv was never read (``action_by_name``).
    by_name: bool = False

    @property
    def failed(self) -> bool:
        if self.source is RunSource.LINE:
            return self.ok is False
        return self.exit_signal is not None or bool(self.exit_status)

    @property
    def succeeded(self) -> bool:
        if self.source is RunSource.LINE:
            return self.ok is True
        return self.exit_signal is None and self.exit_status == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action.value,
            "path": self.path,
            "package": self.package,
            "source": self.source.value,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "argv": list(self.argv),
            "exit_status": self.exit_status,
            "exit_signal": self.exit_signal,
            "ok": self.ok,
            "rank": self.rank,
            "by_name": self.by_name,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> PackageRun:
        if not isinstance(data, dict):
            raise EvidenceError(f"{where}: a package run is not an object")
        try:
            action = PackageAction(require(data, "action", str, where))
            source = RunSource(require(data, "source", str, where))
        except ValueError as exc:
            raise EvidenceError(f"{where}: {exc}") from None
        package = data.get("package")
        ok = data.get("ok")
        argv = data.get("argv", [])
        if not isinstance(argv, list):
            raise EvidenceError(f"{where}: field 'argv' has the wrong type")
        return cls(
            action=action,
            path=require(data, "path", str, where),
            package=package if isinstance(package, str) else None,
            source=source,
            pid=opt_int(data, "pid", where),
            start_ticks=opt_int(data, "start_ticks", where),
            argv=tuple(str(a) for a in argv),
            exit_status=opt_int(data, "exit_status", where),
            exit_signal=opt_int(data, "exit_signal", where),
            ok=ok if isinstance(ok, bool) else None,
            rank=opt_int(data, "rank", where),
            by_name=data.get("by_name") is True,
        )


@record
class Installs:
    """Every package run of one attempt (``installs.json``)."""

    runs: tuple[PackageRun, ...] = ()
    #: Package runs beyond :data:`MAX_RUNS`, counted, not listed.
    omitted: int = 0

    def of(self, action: PackageAction) -> tuple[PackageRun, ...]:
        return tuple(r for r in self.runs if r.action is action)

    @property
    def failed_installs(self) -> tuple[PackageRun, ...]:
        return tuple(r for r in self.of(PackageAction.INSTALL) if r.failed)

    @property
    def installed(self) -> bool | None:
        """C8: False when an install failed (its exit status or the launcher's line);
        True only when installs were seen and every one was seen to exit 0; None when no
        install was seen or one's outcome is unknown: never more than the evidence shows."""
        installs = self.of(PackageAction.INSTALL)
        if not installs:
            return None
        if any(r.failed for r in installs):
            return False
        execs = [r for r in installs if r.source is RunSource.EXEC]
        if self.omitted or not execs or not all(r.succeeded for r in execs):
            return None
        return True

    @property
    def global_uninstalls(self) -> tuple[PackageRun, ...]:
        return self.of(PackageAction.UNINSTALL_ALL)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_INSTALLS,
            "installed": self.installed,
            "runs": [r.to_dict() for r in self.runs],
            "omitted": self.omitted,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "installs.json") -> Installs:
        d = check_schema(data, SCHEMA_INSTALLS, where)
        runs = require(d, "runs", list, where)
        omitted = d.get("omitted", 0)
        if isinstance(omitted, bool) or not isinstance(omitted, int):
            raise EvidenceError(f"{where}: field 'omitted' has the wrong type")
        return cls(
            runs=tuple(PackageRun.from_dict(r, where) for r in runs),
            omitted=omitted,
        )


#: The kernel keeps a process name (``comm``) to 15 bytes (``TASK_COMM_LEN`` 16); a
#: script's is the script's file name, so a package's name is often cut.
COMM_CHARS = 15


def action_by_name(
    name: str, run_paths: Collection[str]
) -> tuple[PackageAction, str, str | None] | None:
    """A package run known by its process name alone (its argv was never read: it
    exec'ed and ended between two looks, which a failing ``.run`` does in milliseconds).

    ``X.run`` whole, or the first 15 bytes of the name of a ``.run`` this attempt's
    outputs hold (the path when exactly one matches). ``uninstall.sh`` is not judged by
    name: whether it was the global one is in its path, which was not read.
    """
    if name.endswith(".run") and len(name) < COMM_CHARS + 1:
        matches = [p for p in run_paths if posixpath.basename(p) == name]
    elif len(name) == COMM_CHARS:
        matches = [p for p in run_paths if posixpath.basename(p).startswith(name)]
        if not matches:
            return None
    else:
        return None
    if len(matches) == 1:
        return PackageAction.INSTALL, matches[0], posixpath.basename(matches[0])[: -len(".run")]
    return PackageAction.INSTALL, name, name[: -len(".run")] if name.endswith(".run") else None


def runs_from_processes(
    records: Iterable[ProcessRecord], run_paths: Collection[str] = ()
) -> list[PackageRun]:
    """The package runs among the owned processes, one per exec'd script.

    What a package run starts (a shell's subshell, which carries its argv until it
    execs; the package's own install script) is part of that run, never a second one.
    A process whose argv was never read
    is known by its name (:func:`action_by_name`, ``run_paths``: the ``.run`` files of
    the attempt's outputs).
    """
    recs = sorted(records, key=lambda r: (r.start_ticks, r.pid))
    inside: set[int] = set()  # package runs and every process they started
    runs: list[PackageRun] = []
    for rec in recs:
        if rec.ppid in inside:
            inside.add(rec.pid)  # a fork, or the package's own install script: its inside
            continue
        unread = rec.argv_late or not rec.argv
        found = action_by_name(rec.name, run_paths) if unread else package_action(rec.argv)
        if found is None:
            continue
        inside.add(rec.pid)
        action, path, package = found
        runs.append(
            PackageRun(
                action=action,
                path=path,
                package=package,
                source=RunSource.EXEC,
                pid=rec.pid,
                start_ticks=rec.start_ticks,
                argv=() if unread else rec.argv,
                exit_status=rec.exit_status,
                exit_signal=rec.exit_signal,
                by_name=unread,
            )
        )
    return runs


def runs_from_lines(lines: Iterable[Mapping[str, Any]]) -> list[PackageRun]:
    """The package runs the launcher's lines reported (see ``launcher_lines``)."""
    runs: list[PackageRun] = []
    for line in lines:
        path = str(line.get("path", ""))
        found = classify_path(path)
        if found is None:
            continue
        ok = line.get("ok")
        rank = line.get("rank")
        runs.append(
            PackageRun(
                action=found[0],
                path=path,
                package=found[1],
                source=RunSource.LINE,
                ok=ok if isinstance(ok, bool) else None,
                rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
            )
        )
    return runs


def build_installs(
    records: Iterable[ProcessRecord],
    lines: Iterable[Mapping[str, Any]] = (),
    run_paths: Collection[str] = (),
) -> Installs:
    """``installs.json`` of an attempt: its execs first, then the launcher's lines."""
    runs = runs_from_processes(records, run_paths) + runs_from_lines(lines)
    return Installs(runs=tuple(runs[:MAX_RUNS]), omitted=max(0, len(runs) - MAX_RUNS))
