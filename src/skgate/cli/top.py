"""``skgate --help``, ``skgate --version`` and ``skgate`` alone, without argparse (issue 29).

These three answers are static: the command table (:mod:`skgate.cli.table`), the
exit-code table (:mod:`skgate.model.exits`) and the version. The console entry answers
them from here before :mod:`skgate.cli.main` (and argparse, gettext, locale) is
imported: ``skgate --help`` costs little more than the interpreter's own start-up.
:func:`render_help` lays the table out exactly as argparse's ``HelpFormatter`` does for
the top-level parser :func:`skgate.cli.main.build_parser` builds (usage, description,
the command list with the help column, options, the exit-status epilog), wrapped by
:func:`skgate.model.wrap.wrap`. Where that cannot promise argparse's bytes (a terminal
narrower than the usage line, a word longer than its column), it answers ``None`` and
the console entry lets argparse do it. tests/cli/test_top.py holds the output equal to
argparse's, byte for byte, at every width from 20 to 200 columns and the version and
usage-error lines alike, so the two can never drift apart. Every other command line is
parsed by argparse, unchanged.
"""

from __future__ import annotations

import sys

from skgate import __version__
from skgate.cli.table import COMMANDS, DESCRIPTION, TOP_ANSWERS, columns
from skgate.model.exits import EXIT_USAGE, verdict_help
from skgate.model.wrap import wrap

# Not ``typing.TYPE_CHECKING``: ``skgate --help`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

#: The options of the top-level parser: (invocation, help), as argparse words them.
OPTIONS = (
    ("-h, --help", "show this help message and exit"),
    ("--version", "show program's version number and exit"),
)
#: The top-level usage line (argparse's, after ``usage: ``).
USAGE = "skgate [-h] [--version] COMMAND ..."
#: What argparse says when no command is given (through ``parser._Parser.error``).
NO_COMMAND = "skgate: error: the following arguments are required: COMMAND (see 'skgate --help')\n"


def _fill(text: str, width: int) -> list[str] | None:
    """argparse's wrapping of one paragraph: whitespace runs made one space, then
    ``textwrap``'s lines."""
    return wrap(" ".join(text.split()), width)


def render_help(width: int) -> str | None:
    """The top-level help argparse prints with ``HelpFormatter(width=width)`` (the
    terminal's columns less 2), or ``None`` where only argparse can say it."""
    if len("usage: ") + len(USAGE) > width:
        return None  # argparse would wrap the usage line over several lines
    description = _fill(DESCRIPTION, max(width, 11))
    if description is None:
        return None
    # Section items are indented 2, the command list 4; argparse measures every
    # invocation at the section's indent (2) for the help column.
    longest = max(len("COMMAND"), *(len(c.name) for c in COMMANDS), *(len(o) for o, _ in OPTIONS))
    help_position = min(longest + 2 + 2, 24, max(width - 20, 4))
    help_width = max(width - help_position, 11)
    out = [f"usage: {USAGE}", "", *description, "", "positional arguments:", "  COMMAND"]
    rows = [(4, c.name, c.summary) for c in COMMANDS]
    for indent, invocation, help_text in (*rows, *((2, o, h) for o, h in OPTIONS)):
        if indent == 2 and invocation == OPTIONS[0][0]:
            out += ["", "options:"]
        lines = _fill(help_text, help_width)
        if not lines:
            return None
        room = help_position - indent - 2
        if len(invocation) <= room:
            out.append(" " * indent + invocation.ljust(room) + "  " + lines[0])
        else:
            out += [" " * indent + invocation, " " * help_position + lines[0]]
        out += [" " * help_position + line for line in lines[1:]]
    # The epilog's lines are kept as written (parser._Formatter): wrapped in model.exits.
    out += ["", *verdict_help().splitlines()]
    text = "\n".join(out) + "\n"
    # ASCII only: main.main makes stdout replace what its encoding cannot say; this path
    # writes before that, so anything else is argparse's to print.
    return text if text.isascii() else None


def render_version(width: int) -> str | None:
    """What ``--version`` prints (argparse fills it to the width too)."""
    lines = _fill(f"skgate {__version__}", max(width, 11))
    return None if lines is None else "\n".join(lines) + "\n"


def _write(stream: TextIO | None, text: str) -> None:
    # As argparse's _print_message: no stream (a process started with it closed) means
    # stderr, and a stream that cannot be written is no error. Not
    # ``contextlib.suppress``: ``contextlib`` is an import this path does without.
    try:  # noqa: SIM105
        (stream or sys.stderr).write(text)
    except (AttributeError, OSError):
        pass


def answer(args: list[str]) -> int | None:
    """The exit status after answering ``skgate ARGS`` here, or ``None`` when argparse
    must parse them (every command, every other option or spelling)."""
    if not args:
        _write(sys.stderr, NO_COMMAND)
        return EXIT_USAGE
    if len(args) != 1 or args[0] not in TOP_ANSWERS:
        return None
    width = columns() - 2  # parser._Formatter's width
    text = render_version(width) if args[0] == "--version" else render_help(width)
    if text is None:
        return None
    _write(sys.stdout, text)
    return 0
