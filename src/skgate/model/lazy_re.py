"""``Lazy``: a regular expression compiled on its first use, not at import.

Each ``re.compile`` at a module's top costs every importer 30-300 µs whether or not the
pattern is ever used; a ``skgate run`` imports about a hundred modules and, with an empty
log and no foreign compiler, uses few of their patterns (issue 29). ``Lazy(p).get()`` is
``re.compile(p)``, compiled once (two threads racing compile it twice: harmless, the
result is the same)."""

from __future__ import annotations

import re


class Lazy:
    """A text pattern compiled by the first :meth:`get` (no ``typing`` at run time: a
    generic class would import it, issue 29)."""

    __slots__ = ("_compiled", "_flags", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._pattern, self._flags)
        return compiled
