"""The modes of an attempt frozen before launch and carried by its verdict: the C8 output
check's :class:`PackageMode` and the final summary's source, :class:`VerdictFrom` (C2).

Apart from :mod:`skgate.model.outcomes` (which re-exports them) so that reading a recorded
verdict (``skgate status``) builds these two enums only, not every procedure's outcome
vocabulary (start-up cost, issue 29). Nothing here does I/O.
"""

from __future__ import annotations

import enum


class PackageMode(str, enum.Enum):
    """C8 output check: must a ``.run`` package exist after natural return?"""

    REQUIRED = "required"
    OPTIONAL = "optional"


class VerdictFrom(str, enum.Enum):
    """Where the final summary of an attempt comes from, frozen before launch (C2).

    ``summary``: the default, [summary] lines, a --summary-pattern or the op_compiler
    census; exit status 0 alone never succeeds. ``exit-status``: the command is not a
    compile and declares that its exit status is its final summary (C2, last paragraph);
    an observed owned op_compiler still decides by its stage evidence.
    """

    SUMMARY = "summary"
    EXIT_STATUS = "exit-status"


#: ``summary_source`` of a verdict decided by a declared exit status (C2, last paragraph).
SOURCE_EXIT_STATUS = "exit status"
