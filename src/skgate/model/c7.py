"""The C7 phrases' text, English and Chinese, the one place it is written.

Apart from :mod:`skgate.model.phrases` (which re-exports :data:`C7` beside ``Lang``) and
free of imports, so that the exit-code table, and with it ``skgate --help``, quotes them
without importing ``enum`` (issue 29). Nothing here does I/O.
"""

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
