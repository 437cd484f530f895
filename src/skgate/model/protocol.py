"""The runner's reply protocol, read on the caller's side (no I/O: bytes in, a record out).

A runner started as a child (``python -m skgate.runner`` for :func:`skgate.api.run`,
``python -m skgate.detach`` for ``start``) ends its conversation with one JSON line:
its result, or ``{"error": MESSAGE, "exit_code": N}`` for skgate's own refusal.
"""

from __future__ import annotations

import json
from typing import Any

from skgate.model.errors import BlockedError, SkgateError, UnfinishedError, UsageError


def read_reply(raw: bytes, failure: str) -> dict[str, Any]:
    """The caller's side: the runner's last JSON line, or its error raised as skgate's
    own (BlockedError for exit 3, UsageError otherwise); ``failure`` when there is none."""
    lines = raw.decode("utf-8", "backslashreplace").strip().splitlines()
    try:
        result: Any = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        raise SkgateError(failure)
    if "error" in result:
        code = int(result.get("exit_code", 2))
        for error in (BlockedError, UnfinishedError):
            if code == error.exit_code:
                raise error(str(result["error"]))
        raise UsageError(str(result["error"]))
    return result
