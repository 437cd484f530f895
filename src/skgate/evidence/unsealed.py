"""What ``verify`` says of an attempt that is not sealed yet (issues 12, 28, 30).

An unsealed attempt is in progress (its runner lives, perhaps still waiting for a foreign
compiler before launch), or unfinished (its runner died: ``skgate recover`` finishes it),
or changed (its runner found its final names taken by another process and sealed nothing,
or it died and its ``verdict.json`` is none it recorded: recover refuses both). This
module tells them apart (:func:`unfinished_problem`), names a live runner's blockers
("WAITING ...; nothing launched yet", never "the runner died"), and names a journal record
over the line bound (never read whole). Nothing here writes or signals.
"""

from __future__ import annotations

import os
from pathlib import Path

from skgate.evidence import ledger, ledger_seals, sealed
from skgate.evidence.files import CONTROL, EVENTS, PROCS, SEAL, VERDICT
from skgate.evidence.follow import Progress
from skgate.evidence.journal import created_runner, iter_journal
from skgate.evidence.load import load_control
from skgate.evidence.recorded import disowned, foreign_verdict
from skgate.evidence.seal_problem import Flaw, SealProblem, problem
from skgate.model.errors import EvidenceError
from skgate.model.phrases import Lang
from skgate.model.running import Waiting
from skgate.verdict.changed import waiting_words


def runner_alive(attempt: Path) -> bool:
    """Is the runner that owns this unsealed attempt alive (then it is not unfinished)?
    Before its controls are frozen (waiting for a foreign compiler), the journal's
    ``created`` names it (issue 30: never "the runner died" while it waits)."""
    try:
        if (attempt / CONTROL).exists():
            control = load_control(attempt)
            runner = (control.runner_pid, control.runner_start_ticks, control.boot_id)
        else:
            found = created_runner(attempt / EVENTS)
            if found is None:
                return False
            runner = found
    except EvidenceError:
        return False
    # Loaded here, only for an unsealed attempt: the read side (a report of sealed
    # archives) loads no skgate.proc module (issue 22 s3). The identity rule is the one of
    # skgate.read.liveness: same boot, same pid and start time (C4).
    from skgate.proc.observe import still_runs  # noqa: PLC0415

    return still_runs(*runner)


def unfinished_problem(attempt: Path, *, recorded: bool = False) -> SealProblem | None:
    """Why an unsealed attempt is unfinished or damaged, or None (sealed, still running,
    or removed: the ledger check names a removed one, and recover has nothing to finish).

    Told apart from tampering (issue 12): a runner that died leaves an attempt that
    ``skgate recover`` can finish; ``verify`` fails on it, naming it and saying so.
    ``recorded``: the ledger holds this attempt's seal hash, so a missing seal was
    removed, not interrupted (the ledger check reports that)."""
    label = attempt.name
    if os.path.lexists(attempt / SEAL) or recorded or ledger_seals.removed(str(attempt)):
        return None
    control = attempt / CONTROL
    if not control.exists():
        if runner_alive(attempt):
            return None  # in preflight, waiting for a blocker: see waiting_notes
        return problem(label, Flaw.NO_CONTROL, attempt=attempt)
    try:
        load_control(attempt)
    except EvidenceError as exc:
        return problem(f"{label}/{CONTROL}", Flaw.CONTROL_DAMAGED, why=exc)
    if runner_alive(attempt):
        return None  # in progress: its runner seals it when it is done
    taken = disowned(attempt)
    if taken:  # a change, never "interrupted": recover refuses it too
        return problem(label, Flaw.DISOWNED, names=", ".join(taken))
    if (attempt / VERDICT).exists():
        if foreign_verdict(attempt) is not None:  # a change too: recover refuses it
            return problem(label, Flaw.UNRECORDED)
        return problem(label, Flaw.SEALING_INTERRUPTED, attempt=attempt)
    return problem(label, Flaw.NEVER_FINISHED, attempt=attempt)


def waiting_notes(target: Path) -> list[str]:
    """One line per attempt of ``target`` whose live runner waits before launch (issue
    30): "0001: WAITING for 1 foreign compiler (named: ...); nothing launched yet". Not
    a problem: nothing is sealed yet, and nothing ran."""
    if ledger.is_removed(target):
        return []  # gone: nothing of it waits (verify names its removal)
    notes = []
    for attempt in ledger.resolve(target, prelaunch=True):
        if not ledger.is_prelaunch_dir(attempt) or not runner_alive(attempt):
            continue
        progress = Progress()
        try:
            for ev in iter_journal(attempt / EVENTS):
                progress.update(ev)
        except EvidenceError:
            continue
        waiting = progress.blocked_by or Waiting()
        notes.append(
            f"{attempt.name}: {waiting_words(waiting, Lang.EN, headline=True)} "
            "(not sealed yet: nothing to verify)"
        )
    return notes


def overlong(attempt: Path) -> list[SealProblem]:
    """An unsealed attempt's journals with a record over the line bound (a 1 GiB line
    appended to ``procs.jsonl``): named, never read whole (issue 28 s4). A sealed one's
    size differs from its seal instead."""
    found = []
    for name in (EVENTS, PROCS):
        number = sealed.first_overlong(attempt / name)
        if number is not None:
            found.append(sealed.overlong_problem(f"{attempt.name}/{name}", number))
    return found
