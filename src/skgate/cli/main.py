"""The command line: parse, call, print, exit. No logic lives here.

``skgate --help`` comes from the static command table (:mod:`skgate.cli.table`); a
command's parser from its own spec (:mod:`skgate.cli.specs`); its handler, in the
area module ``skgate/cli/<area>.py``, is imported only when the command runs (start-up
cost, issue 22 s5). Every handler returns an exit status. This module is the one place
that turns skgate's own errors into a one-line message and an exit status: no traceback
reaches a user.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from skgate import __version__
from skgate.cli import table
from skgate.cli.table import columns
from skgate.model import exits
from skgate.model.errors import SkgateError
from skgate.model.exits import EXIT_INTERRUPTED_BY_USER, EXIT_USAGE
from skgate.proc import startup_signals

# Not ``typing.TYPE_CHECKING``: ``skgate --help`` never imports ``typing`` (a tenth of its
# start-up, issue 22 s5); type checkers treat this name alike.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

#: The table's names, kept here for callers and tests (tests/cli/test_specs.py checks
#: the table against what the specs really register).
AREAS = table.AREAS
COMMAND_AREA = table.COMMAND_AREA


#: Set by a command whose caller waits on this process's exit (``run``, ``start``,
#: ``wait``, ``stop``: an agent's next step, timed by a benchmark): :func:`entry` then
#: flushes the output and ends the process without the interpreter's teardown (about
#: 10 ms here), where a stop signal would be taken and never acted on
#: (:func:`skgate.proc.signals.exit_now`). Nothing is lost: every file skgate writes is
#: complete (write, fsync, rename) before a handler returns.
_exit_at_once = [False]


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


def main(argv: Sequence[str] | None = None) -> int:
    # Names that are not UTF-8 (GBK file names) are carried as surrogateescape text; a
    # message that shows one must not fail on the terminal's encoding (issue 12).
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:  # noqa: SIM105 - contextlib is an import status does without (issue 29)
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first '--' is the workload's command, verbatim: argparse never
    # sees it, so the command's own options can never be taken for skgate's.
    command: list[str] | None = None
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, command = args_list[:cut], args_list[cut + 1 :]
    first = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(first)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:
        # --help, --version and usage errors: argparse has printed; main() still returns.
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    args.command_argv = command
    if args.command != "run":
        # The start-up handlers (console entry) end here; only 'run' hands them to its
        # runner, which records a signal kept after its early work started.
        startup_signals.release()
    _exit_at_once[0] = bool(getattr(args, "exit_at_once", False))
    try:
        code: int = args.handler(args)
    except SkgateError as exc:
        print(f"skgate: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("skgate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED_BY_USER
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.filename is None:
            return _internal_error(exc)
        # A path the user gave (or one inside it) that cannot be read or is of the wrong
        # type: their environment, not a bug in skgate; one line, exit 2 (issue 12).
        denied = exc.errno in (errno.EACCES, errno.EPERM)
        hint = (
            "check its permissions, or run as the user who owns the evidence"
            if denied
            else "check the path"
        )
        print(f"skgate: {exc.filename}: {exc.strerror or exc}; {hint}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # the last resort: a bug in skgate, never a traceback
        return _internal_error(exc)
    return code


def _internal_error(exc: Exception) -> int:
    if os.environ.get("SKGATE_DEBUG"):
        raise exc
    print(
        f"skgate: internal error: {type(exc).__name__}: {exc} (a bug in skgate, not a "
        "verdict; evidence already written is kept; rerun with SKGATE_DEBUG=1 for details)",
        file=sys.stderr,
    )
    return EXIT_USAGE


def entry() -> NoReturn:
    code = main()
    kept = startup_signals.pending()
    if kept:  # kept at start-up and never handed to a runner (its start failed): not lost
        code = 128 + kept[0]
    if _exit_at_once[0]:
        from skgate.proc.signals import exit_now  # noqa: PLC0415 - only these commands

        exit_now(code)
    sys.exit(code)
