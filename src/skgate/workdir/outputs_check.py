"""``skgate check-outputs``: upstream's ``sk_check_static_kernel_outputs``, made contract-aware.

Upstream judges on file names alone. skgate applies the same C8 rules only after natural
return, and says "in progress" before it (C1: an error-named file next to a live compiler
is provisional). Without ``--attempt`` it keeps upstream's verdict (an error log and no
``.run`` is a failure, exit 1) but says that it judged by file names alone and did not
verify natural return, and how to check against an attempt:

- a ``.run`` package anywhere under DIR: fine, even with error-named files (they are then
  provisional leftovers);
- an error log and no ``.run``: failure;
- ``required`` and no ``.run``: failure; ``optional`` and no ``.run``: fine;
- but when a directory under DIR could not be read and no ``.run`` is visible, an error
  log or a required package is not concluded: "unknown", exit 5 (C2.5: the unread
  directory may hide the package, as in the classifier's census rule).

The walk is ``census.count_tree``: symbolic links are not followed and not counted.
Every message says which file and which rule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence.census import FirstNames, count_tree
from skgate.evidence.files import require_dir
from skgate.model.outcomes import OutputStatus, PackageMode
from skgate.model.phrases import C7
from skgate.model.records import EXIT_CODES, State, Verdict

#: How many file names a message lists before it says "and N more".
SHOW = 10
SCHEMA_OUTPUT_CHECK = "skgate.output-check/1"

STATUS_EXIT = {OutputStatus.OK: 0, OutputStatus.FAILURE: 1}


@dataclass(frozen=True)
class OutputCheck:
    """The result of one output check; ``exit_code`` is what the CLI returns."""

    directory: str
    mode: PackageMode
    status: OutputStatus
    messages: tuple[str, ...]
    error_logs: int
    succ_logs: int
    run_packages: int
    exit_code: int

    def to_dict(self) -> dict[str, Any]:
        """``skgate check-outputs --json`` (and the MCP tool ``check_outputs``)."""
        return {
            "schema": SCHEMA_OUTPUT_CHECK,
            "directory": self.directory,
            "mode": self.mode.value,
            "status": self.status,
            "messages": list(self.messages),
            "counts": {
                "error_logs": self.error_logs,
                "succ_logs": self.succ_logs,
                "run_packages": self.run_packages,
            },
            "exit_code": self.exit_code,
        }


def _more(shown: list[str], total: int) -> str:
    extra = total - len(shown)
    return ", ".join(shown) + (f" and {extra} more" if extra > 0 else "")


def _rel(paths: list[str], top: Path) -> list[str]:
    return [os.path.relpath(p, top) for p in paths]


def _whose(verdict: Verdict) -> str:
    return f"attempt {verdict.attempt}'s" if verdict.attempt else "the attempt's"


def check_outputs(
    directory: Path,
    mode: PackageMode = PackageMode.OPTIONAL,
    verdict: Verdict | None = None,
) -> OutputCheck:
    """Apply C8 to ``directory``; with ``verdict`` only after natural return."""
    require_dir(directory, "directory", "pass the outputs directory to check")
    names = FirstNames(limit=SHOW)
    unreadable: list[str] = []
    n_errors, n_succ, n_runs = count_tree(str(directory), unreadable, names)
    messages: list[str] = []

    def done(status: OutputStatus, code: int) -> OutputCheck:
        return OutputCheck(
            directory=str(directory),
            mode=mode,
            status=status,
            messages=tuple(messages),
            error_logs=n_errors,
            succ_logs=n_succ,
            run_packages=n_runs,
            exit_code=code,
        )

    if verdict is not None and verdict.state not in (State.SUCCEEDED, State.FAILED):
        who = f"attempt {verdict.attempt}" if verdict.attempt else "the attempt"
        if verdict.state is State.IN_PROGRESS:
            messages.append(
                f"in progress: {who} is live; outputs are not judged before natural return "
                f"(C1, C8); {n_errors} provisional error-named file(s) so far, "
                f"{n_runs} .run package(s)"
            )
        elif verdict.state is State.INTERRUPTED:
            messages.append(
                f"interrupted: {who} ended by {C7['interruption']['en']}; "
                "its outputs are invalid evidence and are not judged (C2.4); a clean retry "
                "is required before judging compiler support"
            )
        elif verdict.state is State.UNKNOWN:
            messages.append(
                f"unknown: {who} has missing or contradictory evidence; outputs are not "
                "judged and failure is not inferred (C2.5)"
            )
        else:
            messages.append(f"not started: {who} launched nothing; there is nothing to judge")
        return done(OutputStatus(verdict.state.value), EXIT_CODES[verdict.state])

    # Without an attempt nothing shows the compiler returned naturally: the words must say
    # the judgement rests on file names alone (C1, C8), never "after natural return".
    if verdict is None:
        basis = "by file names alone (no --attempt given: natural return not verified, C1/C8)"
    elif verdict.natural_return:
        basis = f"after natural return ({_whose(verdict)} verdict shows it)"
    else:
        basis = f"by file names alone ({_whose(verdict)} verdict does not show natural return)"
    if verdict is None:
        messages.append(
            "note: no --attempt given; judging by file names alone, natural return not "
            "verified (C1, C8)"
        )
    failure = False
    inconclusive = False
    if n_runs:
        messages.append(
            f"ok: .run package(s) {_more(names.runs, n_runs)} "
            "(C8: .run is the terminal success artifact)"
        )
        if n_errors:
            messages.append(
                f"note: error-named file(s) {_more(names.errors, n_errors)} are "
                "provisional leftovers: a .run package exists (C1, C8)"
            )
    elif unreadable and (n_errors or mode is PackageMode.REQUIRED):
        # As the classifier (classify.census_inconclusive): a directory that could not
        # be read may hide the .run, so a missing package or an error log is not final.
        inconclusive = True
        logs = f"error log(s) {_more(names.errors, n_errors)}" if n_errors else "no error log"
        messages.append(
            f"unknown: cannot conclude: {len(unreadable)} unreadable director(ies) "
            f"({_more(_rel(unreadable[:SHOW], directory), len(unreadable))}) may hide a .run "
            f"package; {logs} and no .run package visible; failure is not inferred from an "
            "incomplete walk (C2.5, C8)"
        )
    else:
        if n_errors:
            failure = True
            messages.append(
                f"failure {basis}: error log(s) {_more(names.errors, n_errors)} and no "
                ".run package (C8: an error log without .run is a failure)"
            )
        if mode is PackageMode.REQUIRED:
            failure = True
            messages.append(
                f"failure {basis}: no .run package under {directory} and --package required (C8)"
            )
        elif not n_errors:
            messages.append("ok: no .run package and no error log; --package optional (C8)")
    if unreadable and not inconclusive:
        messages.append(
            f"note: {len(unreadable)} director(ies) could not be read "
            f"({_more(_rel(unreadable[:SHOW], directory), len(unreadable))}); the counts "
            "are a lower bound"
        )
    if verdict is None:
        package = " --package required" if mode is PackageMode.REQUIRED else ""
        messages.append(
            f"to check against an attempt: skgate check-outputs {directory}{package} "
            "--attempt <root>/attempts/NNNN (judged only after its natural return; exit 6 "
            "while it is live, 4 interrupted, 5 unknown)"
        )
    if inconclusive:
        return done(OutputStatus.UNKNOWN, EXIT_CODES[State.UNKNOWN])
    status = OutputStatus.FAILURE if failure else OutputStatus.OK
    return done(status, STATUS_EXIT[status])
