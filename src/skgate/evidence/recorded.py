"""The verdict an attempt recorded (``verdict.json``), read without the classifier.

``skgate status`` of a finished attempt needs nothing more: this module keeps that path
free of the classifier and the live look (start-up cost, issue 22 s5), while
:func:`skgate.evidence.load.current_verdict` uses it first and does the rest (C2.1:
read-only, nothing signalled or written).
"""

from __future__ import annotations

import os

from skgate.evidence import files, ledger_seals, pathtext
from skgate.evidence.sealed import OverlongError, SealBreachError, removed_attempt
from skgate.model.errors import EvidenceError
from skgate.model.records import Verdict
from skgate.model.running import DISOWNED, JOURNAL_GONE, UNRECORDED, SealBreach

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` nor ``pathlib``
# (issue 29): an attempt is a ``str`` or a ``Path`` here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from skgate.evidence.pathtext import P
    from skgate.model.events import Event


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
    if _finishing(attempt_dir):
        return None  # not final yet: the live look says what runs (C2.1)
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


def _finishing(attempt_dir: Path | str) -> bool:
    """Is this unsealed attempt's runner still alive (its journal's first entry names it;
    boot and start time checked, C4)? Its ``verdict.json`` is then not final: the runner
    seals the attempt once its final files are written, and a ``verdict.json`` that
    another process wrote while the run ran (an agent's "succeeded") must never read as
    the end of a run whose command still runs (measured on 1f34d91: ``status`` said
    SUCCEEDED, exit 0, and ``stop`` refused "already final", while it ran)."""
    if os.path.lexists(pathtext.join(attempt_dir, files.SEAL)):
        return False
    runner = ledger_seals.attempt_runner(pathtext.plain(attempt_dir))
    if runner is None:
        return False  # nothing names its runner: nobody to be alive
    if runner[0] == os.getpid():
        return False  # the runner itself, reading after its run (the demo, in-process)
    from skgate.proc.observe import still_runs  # noqa: PLC0415 - unsealed attempts only

    return still_runs(*runner)


def disowned(attempt_dir: P) -> tuple[str, ...]:
    """The final files the attempt's runner found written by another process when it came
    to write its own (its journal's ``finished`` record,
    :attr:`skgate.model.events.Finished.disowned`); empty for every other attempt. Such a
    runner wrote none of its final files and sealed nothing, so only an unsealed attempt
    is read for them (one search of its journal for the field's name)."""
    if os.path.lexists(pathtext.join(attempt_dir, files.SEAL)):
        return ()
    from skgate.model.events import Finished  # noqa: PLC0415 - see _journal_events

    for event in _journal_events(attempt_dir, b'"disowned"'):
        if isinstance(event, Finished) and event.disowned:
            return tuple(event.disowned)
    return ()


def _journal_events(attempt_dir: P, needle: bytes) -> Iterator[Event]:
    """The typed records of the attempt's journal whose line holds ``needle``, found by
    one search of it block by block; a damaged line is skipped (verify names it), and an
    unreadable journal holds none. Loaded for an unsealed attempt only: the status of a
    sealed one does without the event types."""
    from skgate.evidence import regular  # noqa: PLC0415
    from skgate.model import jsonread  # noqa: PLC0415
    from skgate.model.events import event_from_dict  # noqa: PLC0415

    try:
        fd = regular.open_fd(pathtext.join(attempt_dir, files.EVENTS))
    except (OSError, EvidenceError):
        return
    try:
        for raw in regular.lines_containing(fd, needle):
            try:
                record = jsonread.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(record, dict):
                yield event_from_dict(record)
    except OSError:
        return
    finally:
        os.close(fd)


def foreign_verdict(attempt_dir: P) -> SealBreach | None:
    """The breach of an unsealed attempt whose runner is gone and whose ``verdict.json``
    is not the verdict it recorded, or None (sealed: the seal vouches; no verdict; a
    live runner, which reads in progress: its journal or, that removed, its
    ``control.json`` names it).

    Its runner journals the hash of the ``verdict.json`` it links (the ``verdict_hash``
    record, :class:`skgate.model.events.VerdictHash`) before linking it, as ``skgate
    recover`` does; until the seal, nothing else says which verdict is its own. A
    ``verdict.json`` no such record names was copied from another attempt, edited, or
    written by hand after its runner died: measured on 45579b3, another attempt's
    "succeeded" copied into one whose runner was killed read SUCCEEDED, exit 0, while the
    killed runner's command still ran (C2.5: evidence its runner did not write decides
    nothing)."""
    if os.path.lexists(pathtext.join(attempt_dir, files.SEAL)):
        return None
    path = pathtext.join(attempt_dir, files.VERDICT)
    if not files.present(path):
        return None
    runner = ledger_seals.attempt_runner(pathtext.plain(attempt_dir))
    if runner is not None:
        if runner[0] == os.getpid():
            return None  # this process is its runner, reading after its run (the demo)
        from skgate.proc.observe import still_runs  # noqa: PLC0415 - unsealed attempts only

        if still_runs(*runner):
            return None  # never final while its runner lives (_finishing): in progress
    import stat  # noqa: PLC0415

    from skgate.evidence import regular  # noqa: PLC0415
    from skgate.evidence.digest import sha256_bytes  # noqa: PLC0415

    try:
        data = regular.read_bytes(path)
    except (OSError, EvidenceError):
        return None  # unreadable: the reader that needs it says so
    at = ledger_seals.root_of(pathtext.plain(attempt_dir))
    if at is not None and ledger_seals.recorded_seals(*at):
        return None  # it was sealed, and its seal is gone: that breach is the answer
    try:
        journal = os.lstat(pathtext.join(attempt_dir, files.EVENTS))
    except OSError:
        journal = None
    if journal is None or not stat.S_ISREG(journal.st_mode):
        return SealBreach(files.VERDICT, None, JOURNAL_GONE)  # nothing can vouch for it
    # An emptied journal holds no hash: nothing vouches for the verdict. Nor does an older
    # skgate's, which recorded none (such an attempt, left unsealed by a kill while
    # sealing, reads unknown: a clean retry answers it).
    if sha256_bytes(data) in _verdict_hashes(attempt_dir):
        return None
    return SealBreach(files.VERDICT, None, UNRECORDED)


def _verdict_hashes(attempt_dir: P) -> set[str]:
    """Every ``verdict_hash`` its journal holds."""
    from skgate.model.events import VerdictHash  # noqa: PLC0415 - see _journal_events

    found = _journal_events(attempt_dir, b'"verdict_hash"')
    return {e.sha256 for e in found if isinstance(e, VerdictHash) and e.sha256}


def not_its_own(attempt_dir: P) -> SealBreach | None:
    """The breach of an unsealed attempt whose final files its runner did not write: it
    found them taken (:func:`disowned`), or it is gone and its ``verdict.json`` is none
    it recorded (:func:`foreign_verdict`); None for every other attempt. C2.5: evidence
    its runner did not write decides nothing, whatever it says."""
    if os.path.lexists(pathtext.join(attempt_dir, files.SEAL)):
        return None  # sealed: one lstat, as before (status of a sealed attempt, issue 29)
    taken = disowned(attempt_dir)
    if taken:
        return SealBreach(", ".join(taken), None, DISOWNED)
    return foreign_verdict(attempt_dir)


def guarded(attempt_dir: P, answer: Callable[[P], Verdict]) -> Verdict:
    """The one way a command answers about an attempt (status, wait, report, classify,
    MCP): ``answer``, unless a file it read differs from the attempt's seal, which makes
    the answer ``unknown`` with "evidence changed after sealing: FILE ..." first (issue 28
    s3, C2.5), or an over-long record was refused (never read, never passed over). An
    attempt whose directory is gone though its root's ledger indexed it is ``unknown``
    too, its removal first (:func:`skgate.evidence.sealed.removed_attempt`)."""
    gone = removed_attempt(attempt_dir)
    if gone is None:
        gone = not_its_own(attempt_dir)
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
