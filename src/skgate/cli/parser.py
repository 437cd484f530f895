"""The argparse parser of every command line :mod:`skgate.cli.quick` does not answer.

Apart from :mod:`skgate.cli.main` so that ``skgate status ROOT`` never imports
``argparse`` (with ``gettext`` and ``locale``, a tenth of its start-up, issue 29).
"""

from __future__ import annotations

import argparse

from skgate import __version__
from skgate.cli import table
from skgate.cli.table import columns
from skgate.model import exits
from skgate.model.exits import EXIT_USAGE

# Not ``typing.TYPE_CHECKING``: ``skgate --help`` never imports ``typing`` (issue 22 s5).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn


class _Formatter(argparse.HelpFormatter):
    """Wraps prose; keeps the exit-status lists (indented lines) as they are written."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(
            prog, indent_increment, max_help_position, columns() - 2 if width is None else width
        )

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for line in text.splitlines():
            if line.startswith("  ") or line.endswith(":"):
                out.append(indent + line)
            else:
                out.append(super()._fill_text(line, width, indent))
        return "\n".join(out)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2, never a traceback.

    Every parser, the sub-parsers too, formats with :class:`_Formatter` from the start:
    argparse builds a formatter in every ``add_argument``, and its own default imports
    ``shutil`` for the terminal width (a few ms of each command's start-up, issue 22 s5).
    An epilog given by :meth:`epilog_from` is rendered on first use: only help output
    shows it, and rendering the exit-code table is a part of ``skgate status``'s start-up
    worth saving (issue 29).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._epilog_of: Callable[[], str] | None = None
        self._epilog: str | None = None
        kwargs["formatter_class"] = _Formatter
        super().__init__(*args, **kwargs)

    @property
    def epilog(self) -> str | None:
        if self._epilog is None and self._epilog_of is not None:
            self._epilog = self._epilog_of()
        return self._epilog

    @epilog.setter
    def epilog(self, text: str | None) -> None:
        self._epilog = text

    def epilog_from(self, make: Callable[[], str]) -> None:
        """The epilog is ``make()``, called when it is first shown."""
        self._epilog_of = make

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"skgate: error: {message} (see '{self.prog} --help')\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, that command's spec is built, else the static table.

    Either way no handler is imported: each is a :class:`~skgate.cli.table.Handler`,
    which imports its area module when :func:`main` calls it.
    """
    parser = _Parser(prog="skgate", description=table.DESCRIPTION)
    parser.epilog_from(exits.verdict_help)
    parser.add_argument("--version", action="version", version=f"skgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    if command is None or command not in table.COMMAND_AREA:
        # No command, or an unknown one: the list, the help and the usage error need the
        # names and one-line helps only.
        for row in table.COMMANDS:
            sub.add_parser(row.name, help=row.summary, add_help=False)
        return parser
    from skgate.cli.specs import SPECS  # noqa: PLC0415 - only with a command to parse

    SPECS[command](sub)  # that command's parser only, not its whole area's
    # Its epilog lists its own exit statuses, from the one table (model/).
    chosen = sub.choices[command]
    if command in exits.COMMANDS and isinstance(chosen, _Parser):
        chosen.epilog_from(lambda: exits.command_epilog(command))
    return parser
