"""The C7 phrases, exactly as the contract gives them, in English and Chinese.

Reports, the linter, regress results and the headlines quote them from here; their text
lives in :mod:`skgate.model.c7` (re-exported here), which the exit-code table and so
``skgate --help`` read without building :class:`Lang` (no ``enum`` import, issue 29).
Nothing here does I/O."""

from __future__ import annotations

import enum

from skgate.model.c7 import C7

__all__ = ["C7", "LANGS", "Lang", "count"]


class Lang(str, enum.Enum):
    """The language of what skgate says to a person (reports, reasons, headlines).

    Parsed once at the edge (the CLI's ``--lang``, the MCP tool's ``lang``); inside, a
    ``Lang`` is passed and compared by identity, never a string. It formats as its code
    (``f"{Lang.ZH}"`` is ``zh``), so an HTML ``lang`` attribute or a JSON field keeps the
    text it had."""

    EN = "en"
    ZH = "zh"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: Every language, in the order reports list them.
LANGS = tuple(lang.value for lang in Lang)


#: English nouns whose plural is not the noun with "s" added (``count``).
_PLURALS = {
    "process": "processes",
    "owned process": "owned processes",
    "directory": "directories",
    "entry": "entries",
}


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the English number it takes: "1 attempt", "2 attempts",
    "2 entries". The one helper for every count people read (issue 23): never "1
    attempts", "2 entr(ies)" or "argv(s)"."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {plural or _PLURALS.get(noun) or noun + 's'}"
