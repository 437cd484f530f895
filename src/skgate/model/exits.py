"""The exit-code table: the one place that says what each exit status of ``skgate`` means.

``skgate --help`` is rendered from it (:func:`verdict_help`), and so is every command's
``--help`` epilog (:func:`command_epilog`) and README's exit-code table
(:func:`markdown_table`; tests/model/test_exit_codes.py keeps them equal).
:class:`~skgate.model.records.Verdict` and the errors of :mod:`skgate.model.errors` take
their codes from it. Code 1 does not mean the same for every command (changes found by
``verify``, lint violations, a refused uninstall, a demo mismatch): ``for_command`` says
what it means for each command that gives it another sense. Nothing here does I/O.

A verdict state maps to one code (C2: the five states, plus ``not_started``, which is a
blocked launch and never a compile result); the other rows are outcomes of skgate itself.
"""

from __future__ import annotations

from skgate.model.c7 import C7

# Not ``typing.TYPE_CHECKING``: ``skgate --help`` renders this table (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import MappingProxyType
else:
    # ``types``' own definition, without importing ``types`` (``skgate --help``).
    MappingProxyType = type(type.__dict__)

#: Every command of the CLI, in the order ``skgate --help`` lists them.
COMMANDS = (
    "run",
    "status",
    "classify",
    "demo",
    "preflight",
    "report",
    "lint-report",
    "check-outputs",
    "verify",
    "recover",
    "retry",
    "cleanup",
    "uninstall",
    "regress",
    "start",
    "wait",
    "stop",
    "mcp",
)

#: Commands whose exit status is the verdict of an attempt.
VERDICT_COMMANDS = ("run", "status", "classify", "retry", "wait")


class ExitCode:
    """One exit status: its number, its name, what it means and who returns it.

    A plain class, not a dataclass or ``typing.NamedTuple``: ``skgate --help`` renders this
    table, and importing ``dataclasses`` or ``typing`` would be a fifth of that command's
    start-up (issue 22 s5). Rows are never changed after the table is built."""

    __slots__ = ("code", "commands", "for_command", "help_label", "meaning", "name", "state")

    def __init__(
        self,
        code: int,
        name: str,
        meaning: str,
        commands: tuple[str, ...],
        *,
        state: str | None = None,
        help_label: str | None = None,
        for_command: Mapping[str, str] | None = None,
    ) -> None:
        self.code = code
        self.name = name
        #: One sentence, as README's exit-code table gives it.
        self.meaning = meaning
        #: The commands that return this status (``*``: any command).
        self.commands = commands
        #: The verdict state (``State`` value) this code reports, if it reports one.
        self.state = state
        #: The words ``skgate --help`` shows beside the number (None: not shown there).
        self.help_label = help_label
        #: What this code means for a command that gives it another sense than ``meaning``.
        self.for_command: Mapping[str, str] = MappingProxyType(dict(for_command or {}))


EXIT_TABLE: tuple[ExitCode, ...] = (
    ExitCode(
        0,
        "succeeded",
        "succeeded",
        ("*",),
        state="succeeded",
        help_label="succeeded",
        for_command={
            "start": "the attempt is recorded; the detached runner goes on (preflight, a wait "
            "for blockers, the launch or a refusal: see status or wait)",
            "stop": "the runner recorded the request, or the attempt was already final "
            "(nothing changed)",
            "mcp": "the client closed the connection",
        },
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
        for_command={
            "check-outputs": "the C8 output check failed after natural return",
            "regress": "--health: the health check failed; --matrix: not complete (invalid "
            "arms need a clean retry)",
            "lint-report": "violations found in the report",
            "verify": "changes found (a seal, a scene or the ledger chain differs), or "
            "unfinished work (a runner, cleanup or ledger append that died part-way: skgate "
            "recover finishes it)",
            "cleanup": "something was refused or left in place",
            "uninstall": "refused a candidate, or an uninstall.sh failed",
            "demo": "mismatch: the scenario did not give the verdict it shows",
        },
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
        (*VERDICT_COMMANDS, "demo", "preflight", "regress", "cleanup", "check-outputs", "start"),
        state="not_started",
        help_label="blocked before launch",
        for_command={
            "regress": "--health: blocked, not attributable, or the declared change did not "
            "reach the compile",
            "cleanup": "refused while another process uses the outputs (nothing moved; a live "
            "process of the attempt itself is exit 6)",
            "check-outputs": "the attempt given with --attempt never started",
            "start": "the evidence root cannot be written: nothing was recorded or started",
        },
    ),
    ExitCode(
        4,
        "interrupted",
        f"interrupted: {C7['interruption']['en']}",
        (*VERDICT_COMMANDS, "check-outputs"),
        state="interrupted",
        help_label="interrupted (timeout or external)",
        # Ctrl-C during `run`: the runner ends its own group and records the attempt as
        # interrupted/external (C2.4), so the exit is that verdict, which tells a caller
        # the attempt needs a clean retry; 130 would hide that a verdict exists (issue 30).
        for_command={
            "run": f"interrupted: {C7['interruption']['en']}; also when skgate run itself "
            "gets Ctrl-C (or SIGTERM, SIGHUP) once its command was launched: it ends its "
            "own group and records interrupted/external (recorded but not yet launched: "
            "nothing runs, not started, exit 3)"
        },
    ),
    ExitCode(
        5,
        "unknown",
        "unknown: evidence missing or contradictory (also `check-outputs` when unreadable "
        "directories may hide a `.run`)",
        (*VERDICT_COMMANDS, "check-outputs", "stop", "start"),
        state="unknown",
        help_label="unknown",
        for_command={
            "run": "unknown; or the attempt is left unfinished, its command returned and "
            "untouched: the evidence disk stayed full past the grace (or a stop signal ended "
            "that wait), or a second stop signal came before the verdict was written; one "
            "line says what to do (free space, then skgate recover ATTEMPT)",
            "start": "the detached runner died before it reported, after it recorded an "
            "attempt (named in the message: see skgate status, then skgate recover)",
            "wait": "unknown, or at once: the runner died without a verdict (nobody will "
            "record one; never kill its processes)",
            "stop": "the runner is gone; nothing was signalled",
        },
    ),
    ExitCode(
        6,
        "in_progress",
        "in progress (`status`, `check-outputs --attempt`)",
        ("status", "classify", "check-outputs", "recover", "cleanup", "retry", "wait"),
        state="in_progress",
        help_label="in progress (status, check-outputs --attempt, wait --max)",
        for_command={
            "recover": "its runner or an owned process may still live (named by pid): "
            "nothing recovered; wait for the natural return or 'skgate stop'",
            "cleanup": "the attempt's runner or an owned process may still live (named by "
            "pid): nothing moved; wait for the natural return or 'skgate stop'",
            "retry": "the attempt's runner or an owned process may still live (named by "
            "pid): nothing launched; wait for the natural return or 'skgate stop'",
            "wait": "still in progress when --max ran out; the workload is untouched, wait again",
        },
    ),
    ExitCode(
        130,
        "keyboard_interrupt",
        "skgate itself was interrupted (Ctrl-C) with no verdict to report (`run` only "
        "before the attempt is recorded); evidence already written is kept",
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
EXIT_UNKNOWN = code_of("unknown")
EXIT_IN_PROGRESS = code_of("in_progress")

#: Exit status of each verdict state (``State`` value -> code).
STATE_CODES: Mapping[str, int] = {row.state: row.code for row in EXIT_TABLE if row.state}


def returns(row: ExitCode, command: str) -> bool:
    return "*" in row.commands or command in row.commands


def rows_for(command: str) -> list[tuple[int, str]]:
    """(code, meaning for this command) of every status ``command`` can return."""
    return [
        (row.code, row.for_command.get(command, row.meaning))
        for row in EXIT_TABLE
        if returns(row, command)
    ]


def codes_for(command: str) -> list[int]:
    return [code for code, _ in rows_for(command)]


def _wrapped(text: str) -> list[str]:
    # Indented lines: the help formatter keeps them as they are, so wrap them here;
    # ``textwrap`` only for what skgate.model.wrap leaves to it (``skgate --help``'s
    # start-up, issue 29).
    from skgate.model.wrap import wrap  # noqa: PLC0415 - help output only (status start-up)

    lines = wrap(text, 76, "  ", "      ", break_on_hyphens=False)
    if lines is None:
        import textwrap  # noqa: PLC0415

        lines = textwrap.wrap(
            text, 76, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False
        )
    return lines


def _plain(text: str) -> str:
    return text.replace("`", "")


def command_epilog(command: str) -> str:
    """The exit statuses of one command, for its ``--help`` epilog."""
    lines = [f"exit status of {command}:"]
    for code, meaning in rows_for(command):
        lines += _wrapped(f"{code:<3} {_plain(meaning)}")
    return "\n".join(lines) + "\n"


def _who(commands: tuple[str, ...]) -> str:
    return "all commands" if "*" in commands else ", ".join(commands)


def verdict_help() -> str:
    """The exit-status part of ``skgate --help``, rendered from :data:`EXIT_TABLE`."""
    lines = ["exit status (each command's own list: skgate COMMAND --help):"]
    for row in EXIT_TABLE:
        label = row.help_label or _plain(row.meaning)
        usual = [c for c in row.commands if c not in row.for_command]
        lines += _wrapped(f"{row.code} {label} [{_who(tuple(usual))}]")
        for command, meaning in row.for_command.items():
            lines += _wrapped(f"  {command}: {meaning}")
    return "\n".join(lines) + "\n"


def markdown_table() -> list[str]:
    """README's exit-code table: one row per code and meaning, naming its commands."""
    out = ["| code | meaning | commands |", "| --- | --- | --- |"]
    for row in EXIT_TABLE:
        usual = tuple(c for c in row.commands if c not in row.for_command)
        who = "all" if "*" in usual else ", ".join(f"`{c}`" for c in usual)
        out.append(f"| {row.code} | {row.meaning} | {who} |")
        for command, meaning in row.for_command.items():
            out.append(f"| {row.code} | {meaning} | `{command}` |")
    return out
