"""The ``skgate stop`` request file, the runner's side (the caller's side is
:func:`skgate.api.lifecycle.stop`): ``<root>/stop-requests/<attempt>.stop.json``, beside
the attempts, never inside one. Here, apart from :mod:`skgate.api.lifecycle`, so a
detached runner reads it without loading the waiting machinery before its launch."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from skgate.evidence import regular
from skgate.model.errors import EvidenceError
from skgate.model.oneline import one_line

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_STOP_REQUEST = "skgate.stop-request/1"
STOP_REQUEST_DIR = "stop-requests"


def stop_request_path(attempt: Path) -> Path:
    """Where ``stop`` leaves its request: beside the attempts, never inside one (a
    sealed attempt may hold nothing that was not sealed; C4)."""
    return attempt.parent.parent / STOP_REQUEST_DIR / f"{attempt.name}.stop.json"


def stop_pending(attempt: Path) -> dict[str, Any] | None:
    """The runner's side: the ``skgate stop`` request for ``attempt``, if one is there."""
    try:
        # A regular file only, bounded: a FIFO or a link in the stop-request directory must
        # not hang the runner or make it read a file it was not given (issue 21).
        data = json.loads(regular.read_bytes(stop_request_path(attempt), 1 << 20))
    except (OSError, ValueError, EvidenceError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_STOP_REQUEST:
        return None
    ask = {k: data.get(k) for k in ("reason", "requested_by_pid", "requested_at")}
    if isinstance(ask["reason"], str):  # a request written by hand: shown on one line
        ask["reason"] = one_line(ask["reason"])
    return ask


def clear_stop_request(attempt: Path) -> None:
    """Remove the request once its attempt is final (issue 21 s4): a request outlives
    nothing it was for. The link itself, never what it points to, is removed."""
    with contextlib.suppress(OSError):
        stop_request_path(attempt).unlink()
