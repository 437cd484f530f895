"""The console script ``skgate`` (and ``python -m skgate``): stop signals first.

:func:`skgate.proc.startup_signals.install` runs before the command line's first import
that takes time, so a SIGINT or SIGTERM at any instant of start-up ends the command with
128 + n, never with a traceback and never swallowed (issue 28 s5); see that module.

``skgate --help``, ``--version`` and ``skgate`` alone are answered from the static tables
(:mod:`skgate.cli.top`) before the parser is imported (issue 29); everything else goes to
:mod:`skgate.cli.main`.

The cyclic garbage collector's first threshold is raised first of all
(:data:`GC_THRESHOLD`): a command's start-up is mostly imports, which make long-lived
objects and few cycles, and at the default threshold (700 allocations) a ``skgate run``
paid about 4 ms of collections before its command had run, 24 young and 3 middle ones
(measured with ``gc.callbacks``; issue 29). Nothing is switched off: cycles are still
collected, after 10,000 allocations instead of 700 (a few MB at most wait for it), in
the long supervision of a compile as well.
"""

from __future__ import annotations

import gc

from skgate.proc import startup_signals

#: The collector's thresholds for every command (see the module doc): the young
#: generation's raised from CPython's 700, the older two as CPython's.
GC_THRESHOLD = (10_000, 10, 10)

TYPE_CHECKING = False  # not ``typing``'s: this module runs before anything is imported
if TYPE_CHECKING:
    from typing import NoReturn


def entry() -> NoReturn:
    startup_signals.install()
    gc.set_threshold(*GC_THRESHOLD)
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
