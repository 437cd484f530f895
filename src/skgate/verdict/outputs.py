"""The C8 output check as the classifier applies it, after natural return only.

Part of the classifier (:mod:`skgate.verdict.classify`), kept apart so the C2 order reads
in one module: the ``.run`` package is the terminal success artifact, an error log with no
``.run`` after natural return is a failure, and ``required`` mode also fails when no
``.run`` exists (C8).
"""

from __future__ import annotations

from skgate.model.modes import PackageMode
from skgate.model.phrases import count
from skgate.model.records import Evidence


def output_check_failures(ev: Evidence) -> list[str]:
    """C8 output check, valid only after natural return (the caller ensures that)."""
    census = ev.census
    if census is None or census.unreadable:
        return []  # an incomplete census cannot prove a package missing (see classify)
    problems: list[str] = []
    if census.run_packages == 0 and census.error_logs > 0:
        problems.append(
            f"C8: {count(census.error_logs, 'error-named log')} and no .run package after "
            "natural return"
        )
    return problems + required_package_missing(ev)


def required_package_missing(ev: Evidence) -> list[str]:
    """C8 ``required`` mode: no ``.run`` after natural return fails, whatever else the
    stages say (a compile whose every input succeeded and left no package included)."""
    census = ev.census
    if census is None or census.unreadable or ev.package_mode is not PackageMode.REQUIRED:
        return []
    if census.run_packages:
        return []
    return ["C8: package mode 'required' and no .run package after natural return"]


def census_inconclusive(ev: Evidence) -> str | None:
    """C8 on an incomplete census: the verdict the counts would give cannot be trusted.

    Directories that could not be read may hide a ``.run``; when the visible counts would
    decide the output check (error logs and no package, or a required package missing),
    the check has no answer and the conclusion is blocked.
    """
    census = ev.census
    if census is None or not census.unreadable or census.run_packages:
        return None
    if census.error_logs or ev.package_mode is PackageMode.REQUIRED:
        return (
            f"C2.5: the artifact census could not read {count(census.unreadable, 'directory')} "
            "under the outputs; a .run package may be hidden there, so the C8 output "
            "check cannot conclude"
        )
    return None
