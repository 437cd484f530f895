"""``skgate recover``: finish what can honestly be finished of an attempt whose runner died.

A runner killed at any instant (SIGKILL, OOM, a lost host session) leaves a partial set
of files; ``status`` then reads ``unknown`` ("the runner died before the verdict was
written") and ``verify`` fails naming the attempt. Once nothing the attempt owned is
alive, this module finishes it, as far as the evidence honestly allows (issue 12):

* the runner's own work is kept as it is: a verdict it wrote stays its verdict, a seal
  it wrote is only checked (a seal that does not match the files is tampering, never
  repaired) and then indexed;
* files the runner had not written are made now: the artifact census (taken now, and
  labelled ``late``), the run log's summary and scan; a temporary file the dead runner
  left (dot-named ``*.tmp``, never evidence) is removed;
* the journal gets a ``recovered`` event saying when the runner died (before launch,
  before or after the natural return); the classifier reads it: a tree nobody saw end
  stays ``unknown``, and "after natural return" keeps the recorded natural return and
  says the census is late;
* then the seal, and the ledger's end entry (a ``start`` first, if the runner died
  before indexing the attempt).

Idempotent: an attempt that is sealed and has its ledger end is left alone. Without ``--adopt``
nothing is ever signalled; a live runner or owned process refuses the recovery (exit 6). One
recover per attempt at a time: a second one waits for the first (an flock on the
attempt directory, issue 21), then finds it done.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate import __version__
from skgate.evidence import files, ledger, ledger_seals, seal
from skgate.evidence.census import census_outputs, take_census
from skgate.evidence.intent import read_intent
from skgate.evidence.journal import read_journal
from skgate.evidence.load import load_control, load_evidence
from skgate.evidence.logscan_file import scan_files
from skgate.evidence.recorded import disowned, foreign_verdict
from skgate.evidence.stops import clear_stop_request, stop_request_path
from skgate.model.errors import EvidenceError
from skgate.model.events import Created, Event, EventKind, Recovered, UnknownEvent, VerdictHash
from skgate.model.frozen import replace
from skgate.model.records import RecoveredWhen, Verdict
from skgate.model.request import RunRequest
from skgate.model.running import disowned_line
from skgate.model.schema import SCHEMA_CONTROL
from skgate.preflight.request import legacy_outputs_dir, outputs_dir
from skgate.proc.keeper import KEPT_LOG
from skgate.read.liveness import refuse_while_live
from skgate.verdict.classify import classify
from skgate.workdir.adopt import adopt
from skgate.workdir.scenes import finish_scenes


@dataclass(frozen=True)
class Recovery:
    """What ``recover`` did for one attempt (``done`` empty: nothing to recover), or, with
    ``ledger``, for the root's ledger (``attempt`` is then the ledger's path)."""

    attempt: Path
    done: tuple[str, ...]
    verdict: Verdict | None
    ledger: bool = False

    @property
    def nothing_to_do(self) -> bool:
        return not self.done

    def to_dict(self) -> dict[str, Any]:
        if self.ledger:
            return {"ledger": str(self.attempt), "done": list(self.done)}
        return {
            "attempt": str(self.attempt),
            "done": list(self.done),
            "state": self.verdict.state.value if self.verdict else None,
        }


def repair_ledger(root: Path | None) -> Recovery | None:
    """Cut back the root's torn ledger line, if it has one (issue 29's leftover).

    A last line without its line end that is no whole entry is an append its writer never
    finished (killed, or the disk filled): no entry depends on it, so it is cut back to
    the last whole line, and the ``repair`` entry appended next records its size and
    sha256 (C4: every whole line stays as written). Done under the ledger's lock, so a
    writer still appending is waited for, never cut."""
    if root is None:
        return None
    entry = ledger.repair(root)
    if entry is None:
        return None
    cut = entry["torn_cut"]
    said = (
        f"cut back a torn last line ({cut['bytes']} bytes, sha256 {cut['sha256']}): an append "
        "stopped before its line end (its writer was killed or the disk filled); the "
        "ledger's repair entry records the cut"
    )
    return Recovery(root / ledger.LEDGER, (said,), None, ledger=True)


def _ledger_entries(root: Path | None, name: str) -> set[ledger.LedgerEvent | None]:
    if root is None or not files.present(root / ledger.LEDGER):
        return set()
    return {
        ledger.entry_kind(e)
        for e in ledger.read_ledger(root)
        if isinstance(e, dict) and e.get("attempt") == name
    }


def _events(attempt: Path) -> list[Event]:
    return read_journal(attempt / files.EVENTS)


def _kinds(events: list[Event]) -> set[EventKind]:
    return {e.KIND for e in events if not isinstance(e, UnknownEvent)}


def _created(events: list[Event]) -> Created | None:
    return next((e for e in events if isinstance(e, Created)), None)


def _check_nothing_alive(attempt: Path, events: list[Event]) -> None:
    """Refuse while the runner or anything the attempt owned may live: the one liveness
    answer of ``status`` (runner, manifest, procs.jsonl, cgroup leaf; issue 21 s1)."""
    if not files.present(attempt / files.CONTROL):
        created = _created(events)
        runner = created.runner if created else None
        if runner is None or not isinstance(runner.get("pid"), int):
            raise EvidenceError(
                f"{attempt}: no control.json and no runner identity in its journal; cannot "
                "tell whether its runner is alive, so it is not recovered (inspect it by hand)"
            )
    refuse_while_live(attempt, "recover")


def _remove_temp_files(attempt: Path) -> list[str]:
    removed = []
    with os.scandir(attempt) as it:
        names = [e.name for e in it if e.is_file(follow_symlinks=False)]
    for name in names:
        if files.is_temp_name(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(attempt / name)
            removed.append(name)
    return removed


def _control_from_journal(attempt: Path, events: list[Event]) -> dict[str, Any]:
    """The control record of an attempt whose runner died before freezing its controls."""
    created = _created(events)
    assert created is not None  # the caller checked (EventKind.CREATED in its kinds)
    root = ledger.root_of(attempt)
    request = RunRequest(
        argv=created.argv or ("?",),
        cwd=created.cwd or "",
        root=str(root or attempt.parent),
    )
    runner = created.runner or {}
    return {
        "schema": SCHEMA_CONTROL,
        "attempt": attempt.name,
        "created_at": created.t,
        "skgate_version": __version__,
        "request": request.to_dict(),
        "runner": {
            "pid": runner["pid"],
            "start_ticks": runner.get("start_ticks", -1),
            "boot_id": created.boot_id or "",
        },
        "controls": {
            "recovered": "written by skgate recover from the journal: the runner died "
            "before freezing the controls; nothing was launched under them"
        },
    }


def _when(attempt: Path, names: set[EventKind]) -> RecoveredWhen:
    # run.log is made before the command is started, and the launch intent just before
    # the fork: with it, the workload may have run (issue 21 s1).
    no_launch = EventKind.LAUNCHED not in names and not files.present(attempt / files.RUN_LOG)
    if no_launch and read_intent(attempt) is None:
        return RecoveredWhen.BEFORE_LAUNCH
    if EventKind.TREE_ENDED in names and EventKind.LEADER_EXITED in names:
        return RecoveredWhen.AFTER_NATURAL_RETURN
    return RecoveredWhen.BEFORE_NATURAL_RETURN


def _late_files(attempt: Path, when: RecoveredWhen) -> tuple[dict[str, str], list[str]]:
    """The finishing files the runner had not written, made now (census labelled late)."""
    control = load_control(attempt)
    request = control.request
    made: dict[str, str] = {}
    notes: list[str] = []
    if when is RecoveredWhen.BEFORE_LAUNCH:
        return made, notes
    if not files.present(attempt / files.LOGSCAN) and files.present(attempt / files.RUN_LOG):
        # What the compile printed after the runner died is in the pipe keeper's copy
        # (C4): the summary of a compile that returned on its own is there, not in run.log.
        logs = [attempt / files.RUN_LOG]
        if files.present(attempt / KEPT_LOG):
            logs.append(attempt / KEPT_LOG)
        scan = scan_files(logs, request.summary_patterns, request.completion_marker)
        made[files.LOGSCAN] = files.dumps(scan.to_dict())
        if not files.present(attempt / files.SUMMARY):
            made[files.SUMMARY] = "".join(line + "\n" for line in scan.summary.lines)
        notes.append(
            "scanned run.log for the summary (as far as the runner had written it)"
            if len(logs) == 1
            else f"scanned run.log and then {KEPT_LOG} (what the compile printed after the "
            "runner died, kept by the pipe keeper) for the summary"
        )
    if not files.present(attempt / files.CENSUS):
        exclude = control.controls.outputs_before_ids or frozenset()
        outputs = census_outputs(outputs_dir(request), legacy_outputs_dir(request), exclude)
        census = take_census(outputs, live=False, exclude=exclude)
        data = census.to_dict()
        data["late"] = {
            "taken_at": time.time(),
            "by": "skgate recover",
            "note": "taken after the runner died, not at the natural return; the outputs "
            "may have changed since"
            + (
                ""
                if control.controls.outputs_before_ids is not None
                else "; entries present before launch were not recorded, so not excluded"
            ),
        }
        made[files.CENSUS] = files.dumps(data)
        notes.append("took the artifact census now (labelled late)")
    return made, notes


def _refuse_linked(attempt: Path) -> None:
    """Refuse an attempt directory reached through a symbolic link (issue 21).

    Recover writes into the attempt and indexes it in the root's ledger: through a link
    it would write into a directory outside the root and put that path in the ledger,
    and ``verify`` would then vouch for it (C4: evidence is appended only where it is).
    The attempt itself and the ``attempts/`` directory above it must be real directories.
    """
    places = [attempt]
    if ledger.root_of(attempt) is not None:
        places.append(attempt.parent)
    for place in places:
        try:
            linked = stat.S_ISLNK(os.lstat(place).st_mode)
        except OSError:
            continue  # missing: the reads below say so
        if linked:
            raise EvidenceError(
                f"{place}: is a symbolic link; an attempt is never recovered through a link "
                "(nothing written)"
            )


Notify = Callable[[str], None]


def _lock_holder(fd: int) -> int | None:
    """The pid holding the flock on ``fd``'s file, from ``/proc/locks`` (None: unknown)."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            rows = fh.read().splitlines()
    except OSError:
        return None
    for row in rows:
        parts = row.split()
        # "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"; waiters have "->" after N:
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == key:
            with contextlib.suppress(ValueError):
                return int(parts[4])
    return None


def _lock_attempt(attempt: Path, fd: int, notify: Notify | None) -> None:
    """One ``recover`` of an attempt at a time (issue 21: two at once raced, one failing
    with exit 2, or sealing the other's temporary file so ``verify`` called the attempt
    changed forever; C4: evidence is written once).

    An flock on the attempt directory itself (``fd``; closing it releases the lock): no
    lock file is added to sealed evidence. A second recover waits, saying by whom, then
    finds the attempt finished.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        by = f"pid {holder}" if holder is not None else "another skgate recover"
        if notify is not None:
            notify(f"skgate: {attempt} is being recovered by {by}; waiting for it")
        fcntl.flock(fd, fcntl.LOCK_EX)


def recover_attempt(
    attempt: Path, notify: Notify | None = None, *, adopt_tree: bool = False
) -> Recovery:
    """Finish one attempt whose runner died (see the module doc). Idempotent.

    Serialised per attempt (:func:`_lock_attempt`): what is done is decided only once
    the lock is held, so a second recover finds the first one's work. ``adopt_tree``
    (``--adopt``): first supervise a live tree to its end, under the frozen deadline
    (:mod:`skgate.workdir.adopt`).
    """
    _refuse_linked(attempt)
    try:
        fd = os.open(attempt, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise EvidenceError(f"{attempt}: no such attempt directory") from None
    try:
        _lock_attempt(attempt, fd, notify)
        if adopt_tree and not files.present(attempt / files.SEAL):
            how = adopt(attempt)
            if notify is not None and how != "nothing":
                notify(f"skgate: {attempt}: adopted tree ended ({how}); recovering it")
        return _recover_locked(attempt)
    finally:
        os.close(fd)  # releases the lock


def _recover_locked(attempt: Path) -> Recovery:
    root = ledger.root_of(attempt)
    if root is not None and ledger_seals.holds_another(str(attempt), str(root), attempt.name):
        # Finishing it would chain a copy's seal as this attempt's, in this root's ledger.
        raise EvidenceError(
            f"{attempt}: holds another attempt's evidence (its journal names another runner "
            "than the root's ledger: copied from another root?); not recovered; 'skgate "
            "verify' names it, and 'skgate status' answers unknown for it"
        )
    indexed = _ledger_entries(root, attempt.name)
    sealed = files.present(attempt / files.SEAL)
    if sealed and ledger.LedgerEvent.END in indexed:
        verdict_path = attempt / files.VERDICT
        verdict = (
            Verdict.from_dict(files.read_json(verdict_path), str(verdict_path))
            if files.present(verdict_path)
            else None
        )
        # A cleanup or retry killed while preserving a scene into it (issue 28).
        return Recovery(attempt, tuple(finish_scenes(attempt, root)), verdict)
    events = _events(attempt)
    names = _kinds(events)
    if EventKind.CREATED not in names and not files.present(attempt / files.CONTROL):
        raise EvidenceError(
            f"{attempt}: neither control.json nor a journal with its creation; not an "
            "attempt skgate can recover"
        )
    _check_nothing_alive(attempt, events)
    taken = disowned(attempt)
    if taken:
        # C2.5: its runner found these at its final names and sealed nothing; a seal now
        # would vouch for what another process wrote (an agent's "succeeded").
        raise EvidenceError(
            f"{attempt}: {disowned_line(taken)}; not recovered: a seal would vouch for "
            "evidence its runner did not write"
        )
    foreign = foreign_verdict(attempt)  # None for a sealed attempt: its seal vouches
    if foreign is not None:
        # C2.5: its verdict.json is none its runner recorded (copied in, edited, or
        # written by hand after it died, or its journal is gone): sealing it would vouch
        # for it.
        raise EvidenceError(
            f"{attempt}: {foreign.line()}; not recovered: a seal would vouch for evidence "
            "its runner did not write"
        )
    done: list[str] = []
    if sealed:
        # Died between the seal and the ledger end: index it only if the seal holds. The
        # seal is linked into place from a temporary file removed next: a runner killed
        # in between leaves that file too (issue 28: recover refused it forever).
        left = _seal_temps(attempt)
        if left:
            done.append(
                f"removed the seal's temporary file {', '.join(left)} (the runner was killed "
                f"between linking {files.SEAL} and removing it)"
            )
        problems = seal.verify_attempt(attempt)
        if problems:
            raise EvidenceError(
                f"{attempt}: sealed, but the seal does not match the files ({problems[0]}); "
                "that is tampering or damage, not an interruption: not repaired"
            )
        verdict = Verdict.from_dict(
            files.read_json(attempt / files.VERDICT), str(attempt / files.VERDICT)
        )
    else:
        if root is not None and ledger.LedgerEvent.START not in indexed:
            # Indexed before it is sealed, as a runner indexes before it launches (C4): a
            # recover killed in between leaves an attempt its ledger names, which the next
            # one finishes, never a sealed one the ledger does not name, which every
            # reader answers unknown for (skgate.evidence.ledger_seals.Anchor).
            ledger.record_start(root, attempt, None)
            indexed.add(ledger.LedgerEvent.START)
            done.append("indexed the attempt's start in the ledger")
        removed = _remove_temp_files(attempt)
        if removed:
            done.append(f"removed {len(removed)} temporary file(s) the runner left")
        if not files.present(attempt / files.CONTROL):
            files.write_json_new(attempt / files.CONTROL, _control_from_journal(attempt, events))
            done.append("wrote control.json from the journal (the runner died in preflight)")
        verdict, more = _finish_unsealed(attempt, names)
        done.extend(more)
        seal.seal_attempt(attempt, chain=False)
        done.append("sealed the attempt")
    if root is not None:
        if ledger.LedgerEvent.START not in indexed:
            ledger.record_start(root, attempt, None)
            done.append("indexed the attempt's start in the ledger")
        ledger.record_end(root, attempt, verdict, {"recovered": True})
        done.append("wrote the ledger's end entry")
        done.extend(finish_scenes(attempt, root))
    # The attempt is final now: a stop request for it outlives nothing it was for (as
    # the runner removes it at its own end).
    if os.path.lexists(stop_request_path(attempt)):
        clear_stop_request(attempt)
        done.append("removed the attempt's stop request")
    return Recovery(attempt, tuple(done), verdict)


def _seal_temps(attempt: Path) -> list[str]:
    """Remove the leftovers of the seal's link step: dot-named temporary files of
    ``seal.json`` that are the seal itself (one inode, the link made and the temporary
    name not yet removed). Anything else stays for verify to name."""
    try:
        sealed = os.lstat(attempt / files.SEAL)
    except OSError:
        return []
    removed: list[str] = []
    with os.scandir(attempt) as it:
        names = [e.name for e in it if e.is_file(follow_symlinks=False)]
    for name in sorted(names):
        if not (files.is_temp_name(name) and name.startswith(f".{files.SEAL}.")):
            continue
        st = os.lstat(attempt / name)
        if (st.st_dev, st.st_ino) == (sealed.st_dev, sealed.st_ino):
            os.unlink(attempt / name)
            removed.append(name)
    if removed:
        files.fsync_dir(attempt)
    return removed


def _finish_unsealed(attempt: Path, names: set[EventKind]) -> tuple[Verdict, list[str]]:
    done: list[str] = []
    verdict_path = attempt / files.VERDICT
    journal = files.Journal(attempt / files.EVENTS)
    try:
        if files.present(verdict_path):
            # The runner's own verdict stands; only its "finished" record may be missing.
            verdict = Verdict.from_dict(files.read_json(verdict_path), str(verdict_path))
            if EventKind.FINISHED not in names and EventKind.RECOVERED not in names:
                journal.emit(Recovered(when=None, by="skgate recover", note="verdict kept"))
                done.append("journalled the end (the runner's verdict is kept)")
            return verdict, done
        when = _when(attempt, names)
        made, notes = _late_files(attempt, when)
        if made:
            files.write_batch_new(attempt, made)
            done.extend(notes)
        journal.emit(
            Recovered(
                when=when.value,
                by="skgate recover",
                made=tuple(sorted(made)),
                census_late=files.CENSUS in made,
            )
        )
        verdict = classify(load_evidence(attempt, finishing=True)).with_attempt(str(attempt))
        extra = {**verdict.extra, "recovered": {"when": when.value}}
        verdict = replace(verdict, extra=extra)
        text, sha = files.verdict_bytes(verdict.to_dict())
        # C2.5: its hash on record first, as the runner does: a recover killed before the
        # seal leaves a verdict the next one finds vouched for by the journal.
        journal.emit(VerdictHash(sha256=sha))
        files.write_new(verdict_path, text)
        done.append(f"wrote the verdict ({verdict.state.value}; the runner died {when.value})")
        return verdict, done
    finally:
        journal.close()


def attempts_to_recover(target: Path) -> list[Path]:
    """An attempt, or every attempt directory of a root (those without control.json too)."""
    if files.present(target / files.CONTROL) or files.present(target / files.EVENTS):
        return [target]
    base = target / ledger.ATTEMPTS
    if not base.is_dir():
        ledger.resolve(target)  # the one-line error for a bad target
        return []
    # Every numbered entry, links included: recover_attempt refuses a linked one by name
    # rather than skipping it unseen (issue 21).
    with os.scandir(base) as it:
        found = [
            Path(e.path)
            for e in it
            if e.name.isdigit() and (e.is_dir(follow_symlinks=False) or e.is_symlink())
        ]
    return sorted(found, key=lambda p: int(p.name))


def recover(target: Path, notify: Notify | None = None, *, adopt: bool = False) -> list[Recovery]:
    """``skgate recover [--adopt] ATTEMPT|ROOT``: repair the root's torn ledger line, if
    any, then recover each unfinished attempt."""
    attempts = attempts_to_recover(target)
    root = ledger.root_of(target) if attempts == [target] else target
    repaired = repair_ledger(root)
    done = [recover_attempt(a, notify, adopt_tree=adopt) for a in attempts]
    return done if repaired is None else [repaired, *done]


def render(recoveries: list[Recovery]) -> list[str]:
    lines: list[str] = []
    for r in recoveries:
        if r.ledger:
            lines.append(f"{r.attempt}: repaired")
            lines.extend(f"  - {d}" for d in r.done)
            continue
        if r.nothing_to_do:
            lines.append(f"{r.attempt}: nothing to recover (sealed and indexed)")
            continue
        state = r.verdict.state.value if r.verdict else "?"
        lines.append(f"{r.attempt}: recovered ({state})")
        lines.extend(f"  - {d}" for d in r.done)
    return lines


def dumps(recoveries: list[Recovery]) -> str:
    return json.dumps([r.to_dict() for r in recoveries], ensure_ascii=False, indent=2)
