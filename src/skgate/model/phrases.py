"""The C7 phrases, exactly as the contract gives them, in English and Chinese.

Their one home: reports, the linter, regress results, the exit-code table and the
headlines all quote them from here. Nothing here does I/O."""

from __future__ import annotations

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
