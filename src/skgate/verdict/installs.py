"""Install is part of the answer (C8, issue 27): the package runs of ``installs.json`` in
the verdict.

Applied by the classifier to the verdict it reached (pure, no I/O). The state stays the
compile's verdict: a failed install after a good compile leaves it succeeded, with
``installed: false`` and the contract's words as the first reason (and the headline, see
:mod:`skgate.verdict.words_installs`): "compiled, but the package install failed:
inference ran without these static kernels". In ``required`` package mode the failed
install fails the C8 output check: state failed, exit 1. ``installed`` is true only when
every install seen exited 0, and absent when none was seen or an outcome is unknown. A
global ``ai_core/uninstall.sh`` run by an owned process is the first reason of all.
"""

from __future__ import annotations

import posixpath

from skgate.model.frozen import replace
from skgate.model.installs import Installs, PackageRun, RunSource
from skgate.model.modes import PackageMode
from skgate.model.records import Evidence, State, Verdict
from skgate.model.releases import unseen_install_note
from skgate.model.signals import signal_name
from skgate.verdict.stages import launcher_release
from skgate.verdict.words_installs import REQUIRED_REASON

#: Failed installs named in the reason; the rest are counted.
NAMED = 3


def _outcome(run: PackageRun) -> str:
    name = posixpath.basename(run.path)
    if run.source is RunSource.LINE:
        return f"{name}: the launcher printed 'install failed'"
    if run.exit_signal is not None:
        return f"{name} was ended by {signal_name(run.exit_signal)}"
    return f"{name} exited with status {run.exit_status}"


def _status(run: PackageRun) -> str:
    if run.source is RunSource.LINE:
        said = "success" if run.ok else "failed"
        return f"; the launcher printed 'uninstall {said}'"
    if run.exit_signal is not None:
        return f"; ended by {signal_name(run.exit_signal)}"
    if run.exit_status is None:
        return "; exit status not known"
    return f"; exit status {run.exit_status}"


def failed_details(installs: Installs) -> str:
    """Each failed install once (an exec's exit status first, else the launcher's line)."""
    failed = sorted(installs.failed_installs, key=lambda r: r.source is RunSource.LINE)
    seen: set[str] = set()
    named: list[str] = []
    for run in failed:
        key = run.package or run.path
        if key in seen:
            continue
        seen.add(key)
        named.append(_outcome(run))
    more = len(named) - NAMED
    return "; ".join(named[:NAMED]) + (f"; {more} more" if more > 0 else "")


def install_reason(v: Verdict, installs: Installs) -> str:
    details = failed_details(installs)
    if v.state is State.SUCCEEDED and v.compiled is False:
        words = "no compile ran, and the package install failed"
    elif v.state is State.SUCCEEDED:
        words = "compiled, but the package install failed"
    else:
        words = "the package install failed"
    return f"C8: {words}: inference ran without these static kernels ({details})"


def global_uninstalls(installs: Installs) -> list[PackageRun]:
    """Each global uninstall once: its exec, else the launcher's line about it."""
    runs = installs.global_uninstalls
    execs = {r.path for r in runs if r.source is RunSource.EXEC}
    return [r for r in runs if r.source is RunSource.EXEC or r.path not in execs]


def global_uninstall_reasons(installs: Installs) -> list[str]:
    return [
        f"C8: an owned process ran the global {run.path}, which removes every static-kernel "
        f"package on this host, other experiments' too{_status(run)}"
        for run in global_uninstalls(installs)
    ]


def with_installs(ev: Evidence, v: Verdict) -> Verdict:
    """The verdict with what the attempt's package runs add (see the module doc)."""
    installs = ev.installs
    if installs is None:
        return v  # an attempt from before installs.json: no claim either way
    first = global_uninstall_reasons(installs)
    state = v.state
    installed = installs.installed
    if installed is False:
        first.append(install_reason(v, installs))
        release = launcher_release(ev)
        unseen = unseen_install_note(release) if release is not None else None
        said = any(r.source is RunSource.LINE and r.failed for r in installs.runs)
        if unseen is not None and not said:
            # Issue 27: why no launcher line names it (the release table).
            first.append(f"C7: {unseen}")
        if ev.package_mode is PackageMode.REQUIRED and v.state is State.SUCCEEDED:
            state = State.FAILED  # C8: a failed output check in required mode (exit 1)
            first.append(REQUIRED_REASON)
    paths = tuple(dict.fromkeys(r.path for r in global_uninstalls(installs)))
    return replace(
        v,
        state=state,
        reasons=(*first, *v.reasons),
        installed=installed,
        global_uninstall=paths,
    )
