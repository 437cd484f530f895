"""The console script ``skgate`` (and ``python -m skgate``): stop signals first.

:func:`skgate.proc.startup_signals.install` runs before the command line's first import
that takes time, so a SIGINT or SIGTERM at any instant of start-up ends the command with
128 + n, never with a traceback and never swallowed (issue 28 s5); see that module.

``skgate --help``, ``--version`` and ``skgate`` alone are answered from the static tables
(:mod:`skgate.cli.top`) before the parser is imported (issue 29); everything else goes to
:mod:`skgate.cli.main`.
"""

from __future__ import annotations

from skgate.proc import startup_signals

TYPE_CHECKING = False  # not ``typing``'s: this module runs before anything is imported
if TYPE_CHECKING:
    from typing import NoReturn


def entry() -> NoReturn:
    startup_signals.install()
    import sys  # noqa: PLC0415 - loaded at start-up; kept after the handlers all the same

    from skgate.cli.table import TOP_ANSWERS  # noqa: PLC0415 - after the handlers

    args = sys.argv[1:]
    # Any other command line loads the parser, and not top.py.
    if not args or (len(args) == 1 and args[0] in TOP_ANSWERS):
        from skgate.cli.top import answer  # noqa: PLC0415 - after the handlers

        code = answer(args)
        if code is not None:
            sys.exit(code)
    from skgate.cli.main import entry as main_entry  # noqa: PLC0415 - after the handlers

    main_entry()
