"""The exit-code table: the one place that says what each exit status of ``skgate`` means.

``skgate --help`` is rendered from it (:func:`verdict_help`), :class:`~skgate.model.records.Verdict`
and the errors of :mod:`skgate.model.errors` take their codes from it, and README's table is
meant to agree with it. Nothing here does I/O.

A verdict state maps to one code (C2: the five states, plus ``not_started``, which is a
blocked launch and never a compile result); the other rows are outcomes of skgate itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from skgate.model.phrases import C7

#: Commands whose exit status is the verdict of an attempt.
VERDICT_COMMANDS = ("run", "status", "classify", "retry")


@dataclass(frozen=True)
class ExitCode:
    """One exit status: its number, its name, what it means and who returns it."""

    code: int
    name: str
    #: One sentence, as README's exit-code table gives it.
    meaning: str
    #: The commands that return this status (``*``: any command).
    commands: tuple[str, ...]
    #: The verdict state (``State`` value) this code reports, if it reports one.
    state: str | None = None
    #: The words ``skgate --help`` shows beside the number (None: not shown there).
    help_label: str | None = None


EXIT_TABLE: tuple[ExitCode, ...] = (
    ExitCode(
        0,
        "succeeded",
        "succeeded",
        ("*",),
        state="succeeded",
        help_label="succeeded",
    ),
    ExitCode(
        1,
        "failed",
        f"failed ({C7['final_failure']['en']})",
        (
            *VERDICT_COMMANDS,
            "check-outputs",
            "regress",
            "lint-report",
            "verify",
            "cleanup",
            "uninstall",
            "demo",
        ),
        state="failed",
        help_label="failed",
    ),
    ExitCode(
        2,
        "usage",
        "usage error or bad input (nothing was run)",
        ("*",),
        help_label="usage or bad input",
    ),
    ExitCode(
        3,
        "blocked",
        "blocked before launch (recorded as not started; never a compile result)",
        (*VERDICT_COMMANDS, "preflight", "regress"),
        state="not_started",
        help_label="blocked before launch",
    ),
    ExitCode(
        4,
        "interrupted",
        f"interrupted: {C7['interruption']['en']}",
        (*VERDICT_COMMANDS, "check-outputs"),
        state="interrupted",
        help_label="interrupted (timeout or external)",
    ),
    ExitCode(
        5,
        "unknown",
        "unknown: evidence missing or contradictory (also `check-outputs` when unreadable "
        "directories may hide a `.run`)",
        (*VERDICT_COMMANDS, "check-outputs"),
        state="unknown",
        help_label="unknown",
    ),
    ExitCode(
        6,
        "in_progress",
        "in progress (`status`, `check-outputs --attempt`)",
        ("status", "classify", "check-outputs"),
        state="in_progress",
        help_label="in progress (status only)",
    ),
    ExitCode(
        130,
        "keyboard_interrupt",
        "skgate itself was interrupted (Ctrl-C); evidence already written is kept",
        ("*",),
    ),
)


def code_of(name: str) -> int:
    """The exit status named ``name`` in :data:`EXIT_TABLE` (KeyError if there is none)."""
    for row in EXIT_TABLE:
        if row.name == name:
            return row.code
    raise KeyError(name)


EXIT_USAGE = code_of("usage")
EXIT_BLOCKED = code_of("blocked")
EXIT_INTERRUPTED_BY_USER = code_of("keyboard_interrupt")

#: Exit status of each verdict state (``State`` value -> code).
STATE_CODES: Mapping[str, int] = {row.state: row.code for row in EXIT_TABLE if row.state}


def verdict_help() -> str:
    """The exit-status part of ``skgate --help``, rendered from :data:`EXIT_TABLE`."""
    items = [f"{row.code} {row.help_label}" for row in EXIT_TABLE if row.help_label]
    # Four items on the first line, the rest on the second: the layout of the help text.
    lines = ["   ".join(items[:4]), "   ".join(items[4:])]
    return "exit status (run, status, classify):\n" + "".join(f"  {ln}\n" for ln in lines)
