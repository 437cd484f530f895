"""The one-line headline of each state: the first words a person reads (C7).

Shared by ``skgate run/status/classify`` and the live view, so the same state is always
said the same way, and never in words that can be mistaken for a compile failure.
"""

from __future__ import annotations

from skgate.model import State

HEADLINE = {
    State.IN_PROGRESS: "IN PROGRESS: the compile is still running; keep waiting, kill nothing",
    State.SUCCEEDED: "SUCCEEDED: the compiler returned naturally and every input succeeded",
    State.FAILED: "FAILED: naturally returned final compiler failures",
    State.INTERRUPTED: "INTERRUPTED: top-level timeout or external interruption; "
    "not a compile result, a clean retry is required",
    State.UNKNOWN: "UNKNOWN: evidence is missing or contradictory; no conclusion, "
    "failure is not inferred",
    State.NOT_STARTED: "NOT STARTED: blocked before launch; nothing ran, not a compile result",
}
