"""Following a live attempt read-only: its journal as it grows, woken by the kernel.

``skgate wait`` and ``skgate wait --follow`` must return within milliseconds of the
runner's last record, without a poll loop that wakes many times a second for hours.
:class:`DirWatch` asks the kernel (inotify, through ``ctypes``: the standard library has
no binding) to make a descriptor readable whenever anything in the attempt directory
changes: an appended journal line, a created ``verdict.json`` or ``seal.json``.
:class:`skgate.evidence.journal.JournalFollower` then reads only the complete new lines
of ``events.jsonl``, and :class:`Progress` turns them into what a waiter shows.

Fallback: where inotify is unavailable (no ``inotify_init1``, a file system that does
not report changes, the per-user watch limit reached), :attr:`DirWatch.fd` is -1 and the
caller re-reads every :data:`FALLBACK_POLL` seconds instead; the answers are the same,
only later by up to that interval.

Nothing here writes a file or sends a signal (C2.1: observation of a live attempt is
read-only).
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from skgate.evidence.journal import blocker_text, blockers_of, is_wait_end, is_wait_start
from skgate.model.events import (
    Created,
    Event,
    Finished,
    Launched,
    Observation,
    SignalReceived,
    SignalSent,
    StageSeen,
    TreeEnded,
    VerdictLine,
)
from skgate.model.frozen import field, mutable
from skgate.model.protocol import AttemptPhase
from skgate.model.running import ProcessRecord, State, Waiting

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # Annotation only: the tracker is runner-side (issue 22 s3); evidence/ never loads it.
    from skgate.model.records import Verdict
    from skgate.runner.stage_tracker import StageTracker

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE_SELF = 0x00000400
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
WATCH_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF

#: Re-read interval when inotify is unavailable (see the module doc).
FALLBACK_POLL = 0.05


class DirWatch:
    """A descriptor that becomes readable when something in ``path`` changes."""

    def __init__(self, path: Path) -> None:
        self.fd = -1
        # Loaded by the waiter only: a runner imports this module before its launch.
        import ctypes  # noqa: PLC0415

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        wd = int(libc.inotify_add_watch(fd, os.fsencode(path), WATCH_MASK))
        if wd < 0:
            os.close(fd)
            return
        self.fd = fd

    @property
    def active(self) -> bool:
        return self.fd >= 0

    def drain(self) -> None:
        """Consume the pending notifications (their content is not needed: re-read)."""
        if self.fd < 0:
            return
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self.fd, 1 << 14):
                pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def wait_readable(fds: Iterable[int], timeout: float | None) -> list[int]:
    """The descriptors of ``fds`` (ignoring -1) readable within ``timeout`` seconds."""
    watched = [fd for fd in fds if fd >= 0]
    if timeout is not None:
        timeout = max(0.0, timeout)
    if not watched:
        if timeout:
            select.select([], [], [], timeout)
        return []
    poller = select.poll()
    for fd in watched:
        poller.register(fd, select.POLLIN)
    ms = None if timeout is None else int(timeout * 1000) + (timeout > 0)
    return [fd for fd, _ in poller.poll(ms)]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@mutable
class Progress:
    """What the journal says so far about a live attempt (counts are provisional, C1)."""

    created_t: float | None = None
    launched_t: float | None = None
    deadline_wall: float | None = None
    waiting: list[str] = field(default_factory=list)
    #: The same blockers, typed (the in-progress phase before launch, issue 30).
    blocked_by: Waiting | None = None
    waiting_since: float | None = None
    counts: dict[str, Any] | None = None
    owned_alive: int | None = None
    stage: str | None = None
    inputs_done: int | None = None
    inputs_total: int | None = None
    #: op_compiler pid -> its inputs (None: unreadable) and inputs done so far.
    stage_inputs: dict[int, int | None] = field(default_factory=dict)
    stage_done: dict[int, int] = field(default_factory=dict)
    signals: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    tree_ended: bool = False
    finished_state: State | None = None
    last_event: str | None = None

    def update(self, ev: Event) -> None:
        t = ev.t
        self.last_event = ev.event_name
        if isinstance(ev, Created):
            self.created_t = t
        elif is_wait_start(ev):
            self.waiting = blocker_text(ev)
            self.blocked_by = blockers_of(ev)
            self.waiting_since = self.waiting_since or t
        elif is_wait_end(ev):
            self.waiting, self.waiting_since, self.blocked_by = [], None, None
        elif isinstance(ev, Launched):
            self.launched_t = t
            self.waiting, self.waiting_since, self.blocked_by = [], None, None
            if ev.deadline_wall is not None:
                self.deadline_wall = float(ev.deadline_wall)
        elif isinstance(ev, Observation):
            if ev.counts is not None:
                self.counts = dict(ev.counts)
                if ev.stages is None:
                    self._inputs(self.counts)  # a runner that counts no stage of its own
            if ev.owned_alive is not None:
                self.owned_alive = ev.owned_alive
            self._stages(ev.stages)
        elif isinstance(ev, StageSeen):
            inputs, pid = ev.inputs, ev.pid
            if pid is not None and pid not in self.stage_inputs:
                # One stage per op_compiler invocation (its opc workers are not stages).
                self.stage_inputs[pid] = inputs if _count(inputs) else None
                self.stage_done.setdefault(pid, 0)
                self._totals()
            self.stage = f"op_compiler pid {pid} ({inputs} inputs)"
        elif isinstance(ev, (SignalReceived, SignalSent)):
            self.signals.append(f"{ev.name or ev.signal} ({ev.event_name})")
            stop = ev.stop_request if isinstance(ev, SignalReceived) else None
            if stop is not None:
                self.stop_reason = str(stop.get("reason") or "")
        elif isinstance(ev, TreeEnded):
            self.tree_ended = True
        elif isinstance(ev, Finished):
            self.finished_state = ev.state or State.UNKNOWN

    def _stages(self, stages: tuple[Mapping[str, Any], ...] | None) -> None:
        """Per-stage inputs done / total from an observation (provisional, C1)."""
        if stages is None:
            return
        for item in stages:
            if not isinstance(item, dict) or not isinstance(item.get("pid"), int):
                continue
            pid = item["pid"]
            if _count(item.get("inputs")):
                self.stage_inputs[pid] = item["inputs"]
            if _count(item.get("done")):
                self.stage_done[pid] = item["done"]
        self._totals()
        if self.stage_inputs:
            shown = [
                f"op_compiler pid {pid}: {self.stage_done.get(pid, 0)} of "
                f"{'?' if total is None else total} inputs done"
                for pid, total in self.stage_inputs.items()
            ]
            self.stage = "; ".join(shown)

    def _totals(self) -> None:
        if not self.stage_inputs:
            return
        totals = list(self.stage_inputs.values())
        self.inputs_total = None if None in totals else sum(t or 0 for t in totals)
        self.inputs_done = sum(self.stage_done.values())

    def _inputs(self, data: dict[str, Any]) -> None:
        total = data.get("inputs")
        if isinstance(total, int) and not isinstance(total, bool) and not self.stage_inputs:
            self.inputs_total = total
        # Done = succ logs seen so far; provisional (C1): an error-named file may still
        # turn into a succ log, so error-named files are never counted as done or failed.
        done = data.get("inputs_done", data.get("succ_logs"))
        if isinstance(done, int) and not isinstance(done, bool):
            self.inputs_done = done

    @property
    def phase(self) -> AttemptPhase:
        if self.finished_state is not None:
            return AttemptPhase.FINAL
        if self.tree_ended:
            return AttemptPhase.FINISHING
        if self.launched_t is not None:
            return AttemptPhase.RUNNING
        if self.waiting:
            return AttemptPhase.WAITING_FOR_BLOCKERS
        return AttemptPhase.PREFLIGHT

    def to_dict(self, now: float) -> dict[str, Any]:
        """The progress record of ``skgate wait --json`` (counts labelled provisional)."""
        since = self.launched_t or self.created_t
        return {
            "phase": self.phase.value,
            "elapsed_s": None if since is None else round(max(0.0, now - since), 3),
            "deadline_remaining_s": (
                None
                if self.deadline_wall is None or self.phase is AttemptPhase.FINAL
                else round(max(0.0, self.deadline_wall - now), 3)
            ),
            "waiting_for": list(self.waiting),
            "stage": self.stage,
            "provisional": {
                "note": "counts taken while the compile lives prove nothing (C1)",
                "counts": self.counts,
                "inputs_done": self.inputs_done,
                "inputs_total": self.inputs_total,
                "owned_alive": self.owned_alive,
            },
            "signals": list(self.signals),
            "stop_reason": self.stop_reason,
        }

    def line(self, now: float) -> str:
        """One progress line for a person (stderr of ``skgate wait``)."""
        d = self.to_dict(now)
        parts = [d["phase"].replace("_", " ")]
        if d["elapsed_s"] is not None:
            parts.append(f"{d['elapsed_s']:.0f} s elapsed")
        if d["deadline_remaining_s"] is not None:
            parts.append(f"deadline in {d['deadline_remaining_s']:.0f} s")
        if self.waiting:
            parts.append("waiting for " + ", ".join(self.waiting))
        if self.stage:
            parts.append(f"stage {self.stage}")
        if self.inputs_done is not None:
            total = "?" if self.inputs_total is None else str(self.inputs_total)
            parts.append(f"inputs done {self.inputs_done} of {total} (provisional, C1)")
        if self.counts is not None:
            parts.append(
                f"{self.counts.get('error_logs', 0)} provisional error-named files (C1), "
                f"{self.counts.get('succ_logs', 0)} succ logs, "
                f"{self.counts.get('run_packages', 0)} .run"
            )
        return "; ".join(parts)


def verdict_record(verdict: Verdict, outcome: str, exit_code: int) -> VerdictLine:
    """The last line of an event stream (``run --events jsonl``, ``wait --follow``): not
    a journal record but the verdict, in the same envelope (``schemas/event.json``).
    ``outcome`` is ``final``, ``in_progress`` (a bounded wait ran out) or
    ``runner_gone``."""
    return VerdictLine(
        t=time.time(),
        attempt=verdict.attempt,
        outcome=outcome,
        state=verdict.state,
        exit_code=exit_code,
        verdict=verdict.to_dict(),
    )


def stage_announcer(
    tracker: StageTracker, emit: Callable[[Event], object]
) -> Callable[[ProcessRecord], None]:
    """The tracker's ``on_process``, journalling ``stage_seen`` for each new op_compiler
    invocation with the inputs of its ``-p`` directory, so a live stream and ``wait``
    can show "inputs done of total" (provisional, C1) while it runs."""

    def on_process(record: ProcessRecord) -> None:
        known = len(tracker.inputs_first_seen)
        tracker.on_process(record)
        if len(tracker.inputs_first_seen) > known:
            args = tracker.args_of(record)
            emit(
                StageSeen(
                    pid=record.pid,
                    start_ticks=record.start_ticks,
                    inputs=tracker.inputs_first_seen.get((record.pid, record.start_ticks)),
                    params_dir=args.params_dir,
                    output=args.output,
                    jobs=args.jobs,
                )
            )

    return on_process
