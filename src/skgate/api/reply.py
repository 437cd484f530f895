"""The caller's side of the detached runner's reply (protocol: :mod:`skgate.api.detach`).

Its own module, below :mod:`skgate.api.lifecycle`, so that ``skgate start``'s caller
reads the reply without importing wait and stop (about 70 modules, tens of ms of CPU
on every start, taken from the runner it has just forked; issue 29).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from skgate.model.errors import UnfinishedError
from skgate.model.protocol import Started, read_reply

if TYPE_CHECKING:
    from skgate.model.request import RunRequest


def read_started(r: int, request: RunRequest) -> Started:
    """Read the detached runner's one reply line from ``r`` (closed here) to its end."""
    try:
        raw = _read_all(r)
    finally:
        os.close(r)
    return _parse_started(raw, request)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _parse_started(raw: bytes, request: RunRequest) -> Started:
    recorded = _recorded_only(raw)
    if recorded is not None:
        # Issue 21 s4: the runner recorded an attempt, then died before its reply; the
        # attempt is named, with the exit code of an unfinished one (5, model/exits.py).
        raise UnfinishedError(
            f"the detached skgate runner died before it reported, after it recorded "
            f"{recorded}; see 'skgate status {recorded}' (its runner.log says why), and "
            f"'skgate recover {recorded}' once nothing it owned is alive"
        )
    got = read_reply(
        raw,
        f"the detached skgate runner ended before it could report; see the evidence root "
        f"{request.root} (runner.log of the newest attempt)",
    )
    return Started.from_dict(got)


def _recorded_only(raw: bytes) -> str | None:
    """The attempt named by the runner's early ``recorded`` line, when no reply followed."""
    lines = raw.decode("utf-8", "backslashreplace").strip().splitlines()
    try:
        last = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None
    if isinstance(last, dict) and set(last) == {"recorded"}:
        return str(last["recorded"])
    return None
