"""The verdict an attempt recorded (``verdict.json``), read without the classifier.

``skgate status`` of a finished attempt needs nothing more: this module keeps that path
free of the classifier and the live look (start-up cost, issue 22 s5), while
:func:`skgate.evidence.load.current_verdict` uses it first and does the rest (C2.1:
read-only, nothing signalled or written).
"""

from __future__ import annotations

import os

from skgate.evidence import files, pathtext
from skgate.evidence.sealed import OverlongError, SealBreachError, removed_attempt
from skgate.model.errors import EvidenceError
from skgate.model.records import Verdict

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` nor ``pathlib``
# (issue 29): an attempt is a ``str`` or a ``Path`` here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from skgate.evidence.pathtext import P


def recorded_verdict(attempt_dir: Path | str) -> Verdict | None:
    """The recorded verdict, naming the attempt where it is now; None while the attempt
    is still in preflight (a journal, no controls), when none was recorded, or when
    ``verdict.json`` is damaged (the caller recomputes from the rest of the evidence)."""
    control = pathtext.join(attempt_dir, files.CONTROL)
    if not files.present(control) and files.present(pathtext.join(attempt_dir, files.EVENTS)):
        return None
    path = pathtext.join(attempt_dir, files.VERDICT)
    if not files.present(path):
        return None
    try:
        recorded = Verdict.from_dict(files.read_json(path), str(path))
    except SealBreachError:
        raise  # a sealed verdict that changed is never recomputed around (issue 28)
    except EvidenceError:
        return None
    # A root copied or moved elsewhere: name the attempt where it is now, not where it
    # was recorded (the file itself is sealed and stays as it is).
    if recorded.attempt and os.path.isabs(recorded.attempt):
        return recorded.with_attempt(pathtext.plain(attempt_dir))
    return recorded


def guarded(attempt_dir: P, answer: Callable[[P], Verdict]) -> Verdict:
    """The one way a command answers about an attempt (status, wait, report, classify,
    MCP): ``answer``, unless a file it read differs from the attempt's seal, which makes
    the answer ``unknown`` with "evidence changed after sealing: FILE ..." first (issue 28
    s3, C2.5), or an over-long record was refused (never read, never passed over). An
    attempt whose directory is gone though its root's ledger indexed it is ``unknown``
    too, its removal first (:func:`skgate.evidence.sealed.removed_attempt`)."""
    gone = removed_attempt(attempt_dir)
    if gone is None:
        try:
            return answer(attempt_dir)
        except SealBreachError as exc:
            gone = exc.breach
        except OverlongError as exc:
            from skgate.verdict.changed import damaged_verdict  # noqa: PLC0415 - see below

            return damaged_verdict(str(exc), pathtext.plain(attempt_dir))
    # C2.5: a removed attempt is never "no such attempt", and a changed one is never read
    # as it says. These verdicts are loaded by these answers alone: the status of an
    # attempt as sealed does without them (issue 29).
    from skgate.verdict.changed import changed_verdict  # noqa: PLC0415

    return changed_verdict(gone, pathtext.plain(attempt_dir))
