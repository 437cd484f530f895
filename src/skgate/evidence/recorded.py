"""The verdict an attempt recorded (``verdict.json``), read without the classifier.

``skgate status`` of a finished attempt needs nothing more: this module keeps that path
free of the classifier and the live look (start-up cost, issue 22 s5), while
:func:`skgate.evidence.load.current_verdict` uses it first and does the rest (C2.1:
read-only, nothing signalled or written).
"""

from __future__ import annotations

from pathlib import Path

from skgate.evidence import files
from skgate.model.errors import EvidenceError
from skgate.model.records import Verdict


def recorded_verdict(attempt_dir: Path) -> Verdict | None:
    """The recorded verdict, naming the attempt where it is now; None while the attempt
    is still in preflight (a journal, no controls), when none was recorded, or when
    ``verdict.json`` is damaged (the caller recomputes from the rest of the evidence)."""
    if not files.present(attempt_dir / files.CONTROL) and files.present(attempt_dir / files.EVENTS):
        return None
    path = attempt_dir / files.VERDICT
    if not files.present(path):
        return None
    try:
        recorded = Verdict.from_dict(files.read_json(path), str(path))
    except EvidenceError:
        return None
    # A root copied or moved elsewhere: name the attempt where it is now, not where it
    # was recorded (the file itself is sealed and stays as it is).
    if recorded.attempt and Path(recorded.attempt).is_absolute():
        return recorded.with_attempt(str(attempt_dir))
    return recorded
