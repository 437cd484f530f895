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

Installed static binaries (C8, facts 4a-4b): with an OPP directory (``--opp``, else
``$ASCEND_OPP_PATH``), the manifest of each ``.run`` package found,
``<opp>/static_kernel/ai_core/<stem>/config/<soc>/binary_info_config.json``, is read and
the dumped op types (``*_opcompile/*.json``) with no static binary are named: a failure
with ``--package required``, a named finding with ``optional``. No manifest found is said
with its cause (torchair uninstalls at process exit), never concluded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence.census import FirstNames, count_tree
from skgate.evidence.files import require_dir
from skgate.evidence.installed import installed_binaries
from skgate.model.installed import WORDS as INSTALLED_WORDS
from skgate.model.installed import InstalledBinaries, missing_text
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
    installed: InstalledBinaries | None = None

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
            "installed": self.installed.to_dict() if self.installed is not None else None,
        }


#: Where CANN's OPP tree is, unless ``--opp`` says (C8, fact 4a).
OPP_VAR = "ASCEND_OPP_PATH"


def opp_dir(given: str | None, env: Mapping[str, str]) -> str | None:
    """The OPP directory whose manifests are read: ``given`` (``--opp``), else
    ``$ASCEND_OPP_PATH`` of ``env``, else None (not checked, and said so)."""
    return given or env.get(OPP_VAR) or None


def _installed_messages(
    found: InstalledBinaries, mode: PackageMode, basis: str, n_runs: int
) -> tuple[list[str], bool]:
    """(messages, failed) of the installed-binaries check (C8)."""
    if not found.descriptors or not n_runs:
        return [], False  # nothing dumped, or no package: the .run rules above said it
    if found.opp is None:
        return [f"note: {INSTALLED_WORDS['not_checked']['en']} (C8)"], False
    if not found.manifest_found:
        where = ", ".join(
            f"{found.opp}/static_kernel/ai_core/{p.stem}/config/<soc>/binary_info_config.json"
            for p in found.packages[:SHOW]
        )
        problems = [q for p in found.packages for q in p.problems]
        extra = f"; {'; '.join(problems[:SHOW])}" if problems else ""
        return [f"note: {INSTALLED_WORDS['no_manifest']['en']}: {where}{extra} (C8)"], False
    missing = found.without_binary()
    if not missing:
        return [
            f"ok: every dumped op type ({len(found.descriptors)}) has a static binary in the "
            "installed manifest (C8)"
        ], False
    text = missing_text(missing, found.listed_empty())
    inputs = "; ".join(f"{op}: {', '.join(found.descriptors[op][:1])}" for op in missing[:SHOW])
    if mode is PackageMode.REQUIRED:
        return [f"failure {basis}: {text} (inputs {inputs}; --package required, C8)"], True
    return [f"finding: {text} (inputs {inputs}; --package optional, C8)"], False


def _more(shown: list[str], total: int) -> str:
    extra = total - len(shown)
    return ", ".join(shown) + (f" and {extra} more" if extra > 0 else "")


def _rel(paths: list[str], top: Path) -> list[str]:
    return [os.path.relpath(p, top) for p in paths]


def _whose(verdict: Verdict) -> str:
    return f"attempt {verdict.attempt}'s" if verdict.attempt else "the attempt's"


def _install_messages(verdict: Verdict, mode: PackageMode) -> tuple[list[str], bool]:
    """C8, install is part of the answer: the attempt's failed package install (a failure
    in ``required`` mode) and any global uninstall its tree ran, as its verdict says."""
    out = [
        f"warning: {_whose(verdict)} owned tree ran the global {path}, which removes every "
        "static-kernel package on this host, other experiments' too (C8)"
        for path in verdict.global_uninstall
    ]
    if verdict.installed is not False:
        return out, False
    required = mode is PackageMode.REQUIRED
    out.append(
        f"{'failure' if required else 'warning'}: {_whose(verdict)} package install failed: "
        "inference ran without these static kernels (C8; see installs.json)"
        + ("; --package required" if required else "")
    )
    return out, required


def check_outputs(
    directory: Path,
    mode: PackageMode = PackageMode.OPTIONAL,
    verdict: Verdict | None = None,
    opp: str | None = None,
) -> OutputCheck:
    """Apply C8 to ``directory``; with ``verdict`` only after natural return.

    ``opp``: the OPP directory whose installed manifests are checked (the CLI passes
    ``--opp`` or ``$ASCEND_OPP_PATH``); None: they are not checked, and that is said."""
    require_dir(directory, "directory", "pass the outputs directory to check")
    names = FirstNames(limit=SHOW)
    unreadable: list[str] = []
    n_errors, n_succ, n_runs = count_tree(str(directory), unreadable, names)
    messages: list[str] = []

    installed: InstalledBinaries | None = None

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
            installed=installed,
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
        # As the classifier (verdict.outputs.census_inconclusive): a directory that could not
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
    if verdict is not None:
        more, install_failed = _install_messages(verdict, mode)
        messages.extend(more)
        failure = failure or install_failed
    if not inconclusive:
        installed = installed_binaries(str(directory), opp)
        more, missing_failed = _installed_messages(installed, mode, basis, n_runs)
        messages.extend(more)
        failure = failure or missing_failed
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
