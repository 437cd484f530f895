"""The command line: parse, call, print, exit. No logic lives here.

``skgate --help`` comes from the static command table (:mod:`skgate.cli.table`); a
command's parser from its own spec (:mod:`skgate.cli.specs`); its handler, in the
area module ``skgate/cli/<area>.py``, is imported only when the command runs (start-up
cost, issue 22 s5). Every handler returns an exit status. This module is the one place
that turns skgate's own errors into a one-line message and an exit status: no traceback
reaches a user.
"""

from __future__ import annotations

import os
import sys

from skgate.cli import output, table
from skgate.cli.quick import status_args
from skgate.model.errors import SkgateError, path_error
from skgate.model.exits import EXIT_INTERRUPTED_BY_USER, EXIT_USAGE
from skgate.proc import startup_signals

# Not ``typing.TYPE_CHECKING``: ``skgate --help`` never imports ``typing`` (a tenth of its
# start-up, issue 22 s5); type checkers treat this name alike.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
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

#: Set when the command line was one skgate.cli.quick parses (``skgate status``, read
#: only): :func:`entry` flushes the output and ends without the interpreter's teardown,
#: a tenth of that command's time (issue 29). It writes no file and starts no thread or
#: process, so the teardown has nothing else to do. A flush that fails (a closed pipe or
#: descriptor) leaves the ending to the teardown, which reports it as it always did.
_read_only = [False]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser (:func:`skgate.cli.parser.build_parser`), argparse imported only now."""
    from skgate.cli.parser import build_parser as build  # noqa: PLC0415 - see module doc

    return build(command)


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
    # The common status lines are parsed without argparse (issue 29); see cli/quick.py.
    args: Any = None if command is not None else status_args(args_list)
    _read_only[0] = args is not None
    if command is not None and args_list[:1] in (["run"], ["start"]):  # cli/quick_run.py
        from skgate.cli.quick_run import run_args  # noqa: PLC0415 - only for these

        args = run_args(args_list)
    if args is None:
        first = next((a for a in args_list if not a.startswith("-")), None)
        parser = build_parser(first)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exc:
            # --help, --version and usage errors: argparse has printed; main() returns.
            said = exc.code
            return said if isinstance(said, int) else (0 if said is None else EXIT_USAGE)
    args.command_argv = command
    if args.command != "run":
        # The start-up handlers (console entry) end here; only 'run' hands them to its
        # runner, which records a signal kept after its early work started.
        startup_signals.release()
    _exit_at_once[0] = bool(getattr(args, "exit_at_once", False))
    if getattr(args, "target", None) == "":
        # Path("") is ".": an empty argument (an unset shell variable) must not read the
        # current directory's evidence in its place.
        print(
            "skgate: the path given is empty; pass an attempt directory or an evidence root",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
    except SkgateError as exc:
        print(f"skgate: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("skgate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED_BY_USER
    except OSError as exc:
        # A path the user gave (or one inside it) that cannot be read or is of the wrong
        # type: their environment, not a bug in skgate; one line, exit 2 (issue 12).
        refused = path_error(exc)
        if refused is None:
            return _internal_error(exc)
        print(f"skgate: {refused}", file=sys.stderr)
        return refused.exit_code
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
    # The exit status is the answer: a closed pipe or a full disk on stdout never turns it
    # into another (a failed run into 0, a verdict into "internal error"); cli/output.py.
    output.guard(sys)
    code = main()
    kept = startup_signals.pending()
    if kept:  # kept at start-up and never handed to a runner (its start failed): not lost
        code = 128 + kept[0]
    output.settle(sys)
    if _exit_at_once[0]:
        from skgate.proc.signals import exit_now  # noqa: PLC0415 - only these commands

        exit_now(code)
    if _read_only[0]:
        _end_read_only(code)
    sys.exit(code)


def _end_read_only(code: int) -> None:
    """End at once with ``code`` once the output is flushed (see ``_read_only``)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError, AttributeError):
        return  # the teardown flushes again and says what failed, with its exit status
    os._exit(code)
