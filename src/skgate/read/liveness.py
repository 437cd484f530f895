"""May anything an attempt owns still live, and which processes: the one liveness answer.

``status`` and ``wait`` ask it to tell ``in_progress`` from ``unknown`` (C2.1); ``recover``,
``cleanup`` and ``retry`` ask it before they touch an attempt, and refuse while anything
may live (exit 6, issue 21 s1): before this module they asked ``ownership.json`` only, a
snapshot that predates the processes forked after it, so ``recover`` sealed ``unknown`` and
``cleanup`` moved the outputs away under a live ``opc`` whose runner had been killed.

The sources, each checked by (pid, start time) on this boot, never by pid alone (C4):

* the runner, from ``control.json`` or, before the controls are frozen, the journal's
  ``created``;
* the last manifest (``ownership.json``);
* the process journal (``procs.jsonl``), which has every fork the runner learnt up to
  its death;
* the attempt's cgroup leaf (named in ``launched``, or in the launch intent when the
  runner died before ``launched``), which lists every member now, even those forked
  after the runner died.

This is live probing of ``/proc`` and the cgroup tree, so it lives outside ``evidence/``,
which reads archives only, and ``report/`` never loads it (issue 22 s3). Nothing here sends
a signal or writes a file (C2.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from skgate.evidence import files, regular, sealed
from skgate.evidence.diskfull import disk_full_now
from skgate.evidence.intent import read_intent
from skgate.evidence.journal import created_runner, iter_journal
from skgate.evidence.load import (
    Control,
    archived_evidence,
    load_control,
    load_ownership,
    prelaunch_evidence,
)
from skgate.evidence.recorded import guarded, recorded_verdict
from skgate.model.errors import EvidenceError, StillLiveError
from skgate.model.events import Launched, TreeEnded
from skgate.model.frozen import replace
from skgate.model.records import Evidence, Ownership, ProcessRecord, Verdict
from skgate.proc.cgroup import LEAF_PREFIX, read_pids
from skgate.proc.keeper import KEPT_LOG, keeper_draining
from skgate.proc.observe import ProcStat, is_alive, read_stat, scan, still_runs, this_boot
from skgate.proc.owned import journal_alive
from skgate.verdict.classify import classify


class Source(Enum):
    """Where a live process was learnt of."""

    MANIFEST = "manifest"
    PROCS_JOURNAL = "procs.jsonl"
    CGROUP = "cgroup"
    #: In the session (or process group) the runner created for the leader: found by a
    #: re-scan of /proc, so a process forked after the runner died is seen without a
    #: cgroup (issue 28 s3).
    SESSION = "session"
    #: A descendant of a process found by another source (its parent is one), such as
    #: the child of an escape the process journal lists.
    ANCESTRY = "ancestry"


@dataclass(frozen=True)
class LiveProcess:
    """One owned process alive now, named by (pid, start time)."""

    pid: int
    start_ticks: int
    name: str
    source: Source


@dataclass(frozen=True)
class RunnerRef:
    """The runner that owns an attempt: pid, start time, boot."""

    pid: int
    start_ticks: int
    boot_id: str

    def same_boot(self) -> bool:
        return this_boot(self.boot_id)

    def alive(self) -> bool:
        return still_runs(self.pid, self.start_ticks, self.boot_id)


@dataclass(frozen=True)
class Liveness:
    """The answer: is the runner alive, which owned processes live (each counted once)."""

    runner: RunnerRef | None
    runner_alive: bool
    owned: tuple[LiveProcess, ...]
    #: The runner's pipe keeper still drains the compile's output (``run.kept.log`` is
    #: locked): the attempt's files are still being written (skgate.proc.keeper).
    keeper_draining: bool = False

    @property
    def may_live(self) -> bool:
        return self.runner_alive or bool(self.owned) or self.keeper_draining

    def pids(self) -> list[int]:
        runner = [self.runner.pid] if self.runner_alive and self.runner else []
        return runner + [p.pid for p in self.owned]

    def describe(self, limit: int = 6) -> str:
        """``runner pid 12, owned pids 40 (opc), 41 (sleep)``: what lives, one line."""
        parts: list[str] = []
        if self.runner_alive and self.runner is not None:
            parts.append(f"runner pid {self.runner.pid}")
        if self.owned:
            shown = ", ".join(f"{p.pid} ({p.name or '?'})" for p in self.owned[:limit])
            more = f" and {len(self.owned) - limit} more" if len(self.owned) > limit else ""
            parts.append(f"owned pid{'s' if len(self.owned) > 1 else ''} {shown}{more}")
        if self.keeper_draining:
            parts.append(f"skgate's pipe keeper still writing {KEPT_LOG}")
        return ", ".join(parts)


def runner_ref(attempt_dir: Path) -> RunnerRef | None:
    """The owning runner, from ``control.json`` or, before preflight has frozen the
    controls (a runner still waiting for a blocker), from the journal's ``created``."""
    if files.present(attempt_dir / files.CONTROL):
        c = load_control(attempt_dir)
        return RunnerRef(c.runner_pid, c.runner_start_ticks, c.boot_id)
    found = created_runner(attempt_dir / files.EVENTS)
    return None if found is None else RunnerRef(*found)


def runner_is_alive(control: Control) -> bool:
    """Is the runner that owns the attempt alive now (same boot, same pid and start time)?"""
    return RunnerRef(control.runner_pid, control.runner_start_ticks, control.boot_id).alive()


def live_owned(ownership: Ownership | None) -> list[ProcessRecord]:
    """Processes of the last manifest (the leader included) alive now, by (pid, start
    time): a manifest from another boot has none alive, and a process the runner saw exit
    is never counted again."""
    if ownership is None or not this_boot(ownership.boot_id):
        return []
    seen: set[tuple[int, int]] = set()
    alive: list[ProcessRecord] = []
    for p in ([ownership.leader] if ownership.leader else []) + list(ownership.owned):
        key = (p.pid, p.start_ticks)
        if key in seen or p.exit_status is not None or p.exit_signal is not None:
            continue
        seen.add(key)
        if is_alive(p.pid, p.start_ticks):
            alive.append(p)
    return alive


def _journal_cgroup(attempt_dir: Path) -> str | None:
    for ev in iter_journal(attempt_dir / files.EVENTS):
        if isinstance(ev, Launched) and ev.cgroup is not None:
            return ev.cgroup
    intent = read_intent(attempt_dir)
    return intent.cgroup if intent is not None else None


@dataclass(frozen=True)
class LeaderRef:
    """The leader the runner launched, and the session and group it created (C4)."""

    pid: int
    start_ticks: int
    pgid: int
    sid: int


def leader_ref(attempt_dir: Path) -> LeaderRef | None:
    """The leader of ``launched`` (None before the launch was recorded)."""
    return _journal_leader(attempt_dir)[0]


def _journal_leader(attempt_dir: Path) -> tuple[LeaderRef | None, bool]:
    """The leader of ``launched``, and whether the runner saw the whole tree end (a
    ``tree_ended`` with no escape alive: nothing of the attempt can live any more)."""
    leader: LeaderRef | None = None
    for ev in iter_journal(attempt_dir / files.EVENTS):
        if isinstance(ev, TreeEnded) and not ev.escaped_alive:
            return leader, True
        if leader is None and isinstance(ev, Launched):
            leader = _leader_of(ev)
    return leader, False


def _leader_of(ev: Launched) -> LeaderRef | None:
    if ev.pid is None or ev.start_ticks is None:
        return None
    pgid = ev.pgid if ev.pgid is not None else ev.pid
    return LeaderRef(ev.pid, ev.start_ticks, pgid, ev.sid if ev.sid is not None else pgid)


def session_members(leader: LeaderRef, table: dict[int, ProcStat]) -> dict[int, ProcStat]:
    """Live processes of the session and process group the runner created for the leader.

    The runner started the leader in a new session, so the session id and the group id
    are the leader's pid; nothing outside can join a session, and the kernel never hands
    out a pid still in use as a session or group id. The number can only name a
    stranger's session after every member ended and the pid was reused: then a process
    with that pid lives with another start time (the stranger's session leader), or the
    members started before our leader did; both are refused (C4: never by pid alone)."""
    holder = table.get(leader.sid)
    if holder is not None and holder.start_ticks != leader.start_ticks:
        return {}
    return {
        pid: st
        for pid, st in table.items()
        if not st.zombie
        and (st.sid == leader.sid or st.pgid == leader.pgid)
        and st.start_ticks >= leader.start_ticks
    }


def _tied(found: dict[tuple[int, int], LiveProcess], leader: LeaderRef | None) -> list[LiveProcess]:
    """The re-scan of /proc (issue 28 s3): members of the leader's session or group, and
    every live descendant of an owned process (its parent is one, by pid and start
    time), to a fixed point. A process forked after the runner died is found this way on
    a host without a cgroup; one that left the session and whose owned parent ended too
    cannot be told from a stranger by any of these, and is not claimed."""
    table = scan()
    added: list[LiveProcess] = []
    if leader is not None:
        for pid, st in session_members(leader, table).items():
            if (pid, st.start_ticks) not in found:
                found[(pid, st.start_ticks)] = p = LiveProcess(
                    pid, st.start_ticks, st.name, Source.SESSION
                )
                added.append(p)
    owned = {pid for pid, _ in found}
    grew = True
    while grew:
        grew = False
        for pid, st in table.items():
            if pid in owned or st.zombie or st.ppid not in owned:
                continue
            parent = table.get(st.ppid)
            if parent is None or (st.ppid, parent.start_ticks) not in found:
                continue
            found[(pid, st.start_ticks)] = p = LiveProcess(
                pid, st.start_ticks, st.name, Source.ANCESTRY
            )
            added.append(p)
            owned.add(pid)
            grew = True
    return added


def live_processes(
    attempt_dir: Path,
    ownership: Ownership | None = None,
    cgroup: str | None = None,
    *,
    same_boot: bool = True,
    rescan: bool = True,
) -> tuple[LiveProcess, ...]:
    """Owned processes alive now, from every record the attempt left (read-only); each
    counts once, by (pid, start time): never unknown while something owned runs (C2.1).

    ``ownership`` and ``cgroup`` default to what the attempt directory holds. The manifest
    names its own boot; ``same_boot`` says whether the runner's (``control.json``) is this
    one, without which the process journal and the leaf name nothing alive now.
    ``rescan``: also re-scan /proc for the leader's session and the descendants of what
    was found (:func:`_tied`); a live runner needs none (it tracks its own tree)."""
    if ownership is None:
        ownership = load_ownership(attempt_dir)
    if cgroup is None:
        cgroup = _journal_cgroup(attempt_dir)
    found: dict[tuple[int, int], LiveProcess] = {}
    for p in live_owned(ownership):
        found[(p.pid, p.start_ticks)] = LiveProcess(p.pid, p.start_ticks, p.name, Source.MANIFEST)
    if not same_boot:
        return tuple(found.values())
    procs = attempt_dir / files.PROCS
    if files.present(procs):
        # Bounded lines of a regular file only (issue 21), checked against the seal
        # (issue 28). An over-long line is a damaged record that may name a live process:
        # refused and named, never read whole and never passed over in silence.
        lines = (_bounded(ln, procs) for ln in sealed.iter_lines(procs))
        for (pid, ticks), first in journal_alive(lines).items():
            if (pid, ticks) not in found and is_alive(pid, ticks):
                name = str(first.get("name") or first.get("comm") or "")
                found[(pid, ticks)] = LiveProcess(pid, ticks, name, Source.PROCS_JOURNAL)
    # Only a leaf skgate made (the name is the runner's): a damaged journal must not
    # point the check at a whole hierarchy.
    if cgroup and Path(cgroup).name.startswith(LEAF_PREFIX):
        for pid in read_pids(Path(cgroup)):
            st = read_stat(pid)
            if st is not None and not st.zombie and (pid, st.start_ticks) not in found:
                found[(pid, st.start_ticks)] = LiveProcess(
                    pid, st.start_ticks, st.name, Source.CGROUP
                )
    if rescan:
        # A /proc scan costs about 0.06 ms a process: only where something may be left
        # to find (the runner did not see the whole tree end).
        leader, ended = _journal_leader(attempt_dir)
        if not ended and (leader is not None or found):
            _tied(found, leader)
    return tuple(found.values())


def probe(attempt_dir: Path) -> Liveness:
    """The one liveness answer for an attempt (status, wait, recover, cleanup, retry).

    An attempt from another boot has nothing alive, whatever pids exist now."""
    try:
        ref = runner_ref(attempt_dir)
    except EvidenceError:
        ref = None
    same_boot = ref is None or ref.same_boot()
    alive = ref is not None and ref.alive()
    owned = live_processes(attempt_dir, same_boot=same_boot, rescan=not alive)
    return Liveness(ref, alive, owned, same_boot and keeper_draining(attempt_dir))


def refuse_while_live(attempt_dir: Path, action: str) -> None:
    """Raise :class:`StillLiveError` (exit 6) while anything the attempt owns may live.

    One line naming the pids and what to do: never act under a live tree (C4, C8)."""
    live = probe(attempt_dir)
    if live.may_live:
        raise StillLiveError(
            f"{attempt_dir}: still live ({live.describe()}); {action} refused: wait for its "
            f"natural return ('skgate wait {attempt_dir}') or end it with "
            f"'skgate stop {attempt_dir}', then try again",
            tuple(live.pids()),
        )


def live_evidence(attempt_dir: Path) -> Evidence:
    """The archived evidence plus facts about now: is the runner alive, how many owned
    processes live, has the frozen deadline passed (read-only)."""
    archived = archived_evidence(attempt_dir)
    ev = archived.evidence
    if ev.runner_finished:
        return ev
    control = load_control(attempt_dir)
    same_boot = this_boot(control.boot_id)
    if not same_boot:
        return ev  # as before: an attempt of another boot has nothing alive now
    alive = runner_is_alive(control)
    owned = live_processes(attempt_dir, cgroup=archived.cgroup, rescan=not alive)
    deadline = archived.deadline_wall
    alive = runner_is_alive(control)
    return replace(
        ev,
        runner_alive=alive,
        owned_alive=len(owned),
        deadline_passed=deadline is not None and time.time() > deadline,
        # A full disk takes the journal lines that would say where the runner is
        # (tree ended, timeout fired): the file system itself says why (issue 28).
        evidence_full_free=disk_full_now(attempt_dir) if alive else None,
    )


def live_prelaunch(attempt_dir: Path) -> Evidence:
    ev = prelaunch_evidence(attempt_dir)
    if ev.runner_finished:
        return ev
    ref = runner_ref(attempt_dir)
    return replace(ev, runner_alive=ref is not None and ref.alive())


def recompute(attempt_dir: Path) -> Verdict:
    """See :func:`_recompute`; through the one guard of what is read (issue 28)."""
    return guarded(attempt_dir, _recompute)


def _recompute(attempt_dir: Path) -> Verdict:
    """``skgate classify``: the verdict from the archived files, and for an unfinished
    attempt the liveness of its runner and owned processes (read-only), so it reads
    ``in_progress`` or ``unknown``, never a final state from a partial set of files."""
    return classify(live_evidence(attempt_dir)).with_attempt(str(attempt_dir))


def current_verdict(attempt_dir: Path) -> Verdict:
    """See :func:`_current`; through the one guard of what is read (issue 28)."""
    return guarded(attempt_dir, _current)


def _current(attempt_dir: Path) -> Verdict:
    """``skgate status``: the recorded verdict if the run finished, else a live look.

    An attempt whose runner died without a verdict reads ``in_progress`` while its owned
    processes live and its deadline has not passed, else ``unknown``, never a final state
    derived from the partial set of files it left."""
    if not files.present(attempt_dir / files.CONTROL) and files.present(attempt_dir / files.EVENTS):
        # Still in preflight (or ended there without controls): the journal alone says
        # whether a live runner is waiting for a blocker.
        return classify(live_prelaunch(attempt_dir)).with_attempt(str(attempt_dir))
    recorded = recorded_verdict(attempt_dir)
    if recorded is not None:
        return recorded
    return _recompute(attempt_dir)


def _bounded(line: regular.Line, path: Path) -> bytes:
    if line.too_long:
        raise sealed.OverlongError(sealed.overlong_text(path, line.number))
    return line.raw
