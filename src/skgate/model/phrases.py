"""The C7 phrases, exactly as the contract gives them, in English and Chinese.

Their one home: reports, the linter, regress results, the exit-code table and the
headlines all quote them from here. Nothing here does I/O."""

from __future__ import annotations

import enum


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


#: C7 phrases, exactly as docs/contract.md C7 gives them.
C7 = {
    "provisional": {"en": "provisional error-named files", "zh": "暂时性 error 命名文件"},
    "final_failure": {
        "en": "naturally returned final compiler failures",
        "zh": "自然返回的最终编译失败",
    },
    "interruption": {
        "en": "top-level timeout or external interruption",
        "zh": "顶层超时/外部中断",
    },
    "clean_retry": {"en": "valid clean-retry result", "zh": "有效干净重试结果"},
}


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
