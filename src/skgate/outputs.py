"""``skgate check-outputs``: upstream's ``sk_check_static_kernel_outputs``, made contract-aware.

Upstream judges on file names alone. skgate applies the same C8 rules only after natural
return, and says "in progress" before it (C1: an error-named file next to a live compiler
is provisional). Without ``--attempt`` it keeps upstream's verdict (an error log and no
``.run`` is a failure, exit 1) but says that it judged by file names alone and did not
verify natural return, and how to check against an attempt:

- a ``.run`` package anywhere under DIR: fine, even with error-named files (they are then
  provisional leftovers);
- an error log and no ``.run``: failure;
- ``required`` and no ``.run``: failure; ``optional`` and no ``.run``: fine.

Symbolic links are not followed and not counted (as in ``census.py``). Every message says
which file and which rule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from skgate.census import ERROR_SUFFIX, RUN_SUFFIX, SUCC_SUFFIX
from skgate.errors import UsageError
from skgate.model import EXIT_CODES, PackageMode, State, Verdict

#: How many file names a message lists before it says "and N more".
SHOW = 10

STATUS_EXIT = {"ok": 0, "failure": 1}


@dataclass(frozen=True)
class OutputCheck:
    """The result of one output check; ``exit_code`` is what the CLI returns."""

    directory: str
    mode: PackageMode
    status: str  # "ok", "failure", or a verdict state that blocks judging
    messages: tuple[str, ...]
    error_logs: int
    succ_logs: int
    run_packages: int
    exit_code: int


@dataclass
class _Found:
    errors: list[str]
    runs: list[str]
    n_errors: int = 0
    n_succ: int = 0
    n_runs: int = 0


def _walk(top: Path) -> _Found:
    found = _Found(errors=[], runs=[])
    stack = [str(top)]
    while stack:
        path = stack.pop()
        try:
            it = os.scandir(path)
        except OSError:
            continue
        with it:
            for entry in sorted(it, key=lambda e: e.name):
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                name = entry.name
                rel = os.path.relpath(entry.path, top)
                if name.endswith(ERROR_SUFFIX):
                    found.n_errors += 1
                    if len(found.errors) < SHOW:
                        found.errors.append(rel)
                elif name.endswith(SUCC_SUFFIX):
                    found.n_succ += 1
                elif name.endswith(RUN_SUFFIX):
                    found.n_runs += 1
                    if len(found.runs) < SHOW:
                        found.runs.append(rel)
    return found


def _more(shown: list[str], total: int) -> str:
    extra = total - len(shown)
    return ", ".join(shown) + (f" and {extra} more" if extra > 0 else "")


def _whose(verdict: Verdict) -> str:
    return f"attempt {verdict.attempt}'s" if verdict.attempt else "the attempt's"


def check_outputs(
    directory: Path,
    mode: PackageMode = PackageMode.OPTIONAL,
    verdict: Verdict | None = None,
) -> OutputCheck:
    """Apply C8 to ``directory``; with ``verdict`` only after natural return."""
    if not directory.is_dir() or directory.is_symlink():
        raise UsageError(f"{directory}: no such directory (pass the outputs directory to check)")
    found = _walk(directory)
    messages: list[str] = []

    def done(status: str, code: int) -> OutputCheck:
        return OutputCheck(
            directory=str(directory),
            mode=mode,
            status=status,
            messages=tuple(messages),
            error_logs=found.n_errors,
            succ_logs=found.n_succ,
            run_packages=found.n_runs,
            exit_code=code,
        )

    if verdict is not None and verdict.state not in (State.SUCCEEDED, State.FAILED):
        who = f"attempt {verdict.attempt}" if verdict.attempt else "the attempt"
        if verdict.state is State.IN_PROGRESS:
            messages.append(
                f"in progress: {who} is live; outputs are not judged before natural return "
                f"(C1, C8); {found.n_errors} provisional error-named file(s) so far, "
                f"{found.n_runs} .run package(s)"
            )
        elif verdict.state is State.INTERRUPTED:
            messages.append(
                f"interrupted: {who} ended by top-level timeout or external interruption; "
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
        return done(verdict.state.value, EXIT_CODES[verdict.state])

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
    if found.n_runs:
        messages.append(
            f"ok: .run package(s) {_more(found.runs, found.n_runs)} "
            "(C8: .run is the terminal success artifact)"
        )
        if found.n_errors:
            messages.append(
                f"note: error-named file(s) {_more(found.errors, found.n_errors)} are "
                "provisional leftovers: a .run package exists (C1, C8)"
            )
    else:
        if found.n_errors:
            failure = True
            messages.append(
                f"failure {basis}: error log(s) {_more(found.errors, found.n_errors)} and no "
                ".run package (C8: an error log without .run is a failure)"
            )
        if mode is PackageMode.REQUIRED:
            failure = True
            messages.append(
                f"failure {basis}: no .run package under {directory} and --package required (C8)"
            )
        elif not found.n_errors:
            messages.append("ok: no .run package and no error log; --package optional (C8)")
    if verdict is None:
        package = " --package required" if mode is PackageMode.REQUIRED else ""
        messages.append(
            f"to check against an attempt: skgate check-outputs {directory}{package} "
            "--attempt <root>/attempts/NNNN (judged only after its natural return; exit 6 "
            "while it is live, 4 interrupted, 5 unknown)"
        )
    status = "failure" if failure else "ok"
    return done(status, STATUS_EXIT[status])
