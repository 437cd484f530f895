"""How the arms of a matrix are run: the executor seam (issue 15).

A matrix is a list of :class:`Unit` (one repeat of the baseline or of an arm, one gated
attempt each). An executor runs the units and returns one :class:`UnitResult` per unit;
the matrix code turns those into the attribution table, whichever executor ran them.

- :class:`LocalExecutor` (the default): one unit after the other on this host, each an
  ordinary :func:`skgate.api.run_attempt` (today's behaviour).
- :class:`skgate.regress.ray_exec.RayExecutor`: one Ray task per unit on a cluster, each
  still a complete gated attempt on its node (see that module).

Progress of every unit goes to a :class:`Board`: the CLI shows it as a live table or as
JSON lines (``--events jsonl``).
"""

from __future__ import annotations

import enum
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skgate.model.errors import SkgateError
from skgate.model.frozen import replace
from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest
from skgate.regress.common import RunFn, default_run

#: What the matrix says about a unit that a lost node or task took with it (C2: never
#: failed; the runner may still be running or may have finished, nobody here knows).
NODE_LOST = "node lost; the runner's state is not known"


@dataclass(frozen=True)
class Unit:
    """One repeat of the baseline or of an arm: exactly one gated attempt."""

    name: str  # "baseline" or the arm's name
    repeat: int
    request: RunRequest  # root: the driver's root for this arm
    work: str | None = None  # a fresh working directory of this name (matrix cwd="fresh")

    @property
    def key(self) -> str:
        return f"{self.name}#{self.repeat}"


@dataclass(frozen=True)
class UnitResult:
    """How one unit ended: a verdict of an attempt in the driver's root, or why none."""

    unit: Unit
    verdict: Verdict | None = None
    error: str | None = None  # not run (bad input or blocked before an attempt existed)
    lost: str | None = None  # the attempt's fate is not known (NODE_LOST and why)
    node: Mapping[str, Any] | None = None
    origin: str | None = None  # where the node-local copy of the attempt lives
    runner_pid: int | None = None


class ArmState(str, enum.Enum):
    """A unit's state on the board: where it is while it runs, then its verdict's state
    (or why it has none). Formats as its text (the live table, the JSON lines)."""

    QUEUED = "queued"
    PREFLIGHT = "preflight"
    WAITING = "waiting"
    RUNNING = "running"
    SEALING = "sealing"
    STOPPING = "stopping"
    TRANSFERRING = "transferring"
    NOT_RUN = "not run"
    #: Resumed from an earlier session without a verdict.
    NONE = "-"
    IN_PROGRESS = State.IN_PROGRESS.value
    SUCCEEDED = State.SUCCEEDED.value
    FAILED = State.FAILED.value
    INTERRUPTED = State.INTERRUPTED.value
    UNKNOWN = State.UNKNOWN.value
    NOT_STARTED = State.NOT_STARTED.value

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def of(cls, text: str | None) -> ArmState | None:
        """The state a task's progress message names (None: none, or one this driver
        does not know: the row keeps its state)."""
        try:
            return None if text is None else cls(text)
        except ValueError:
            return None

    @classmethod
    def of_verdict(cls, state: State) -> ArmState:
        return cls(state.value)


@dataclass
class ArmStatus:
    """The driver's view of one unit while the matrix runs (provisional, C1)."""

    key: str
    node: str = "-"
    state: ArmState = ArmState.QUEUED
    started: float | None = None
    ended: float | None = None
    stages: dict[str, int] = field(default_factory=dict)
    note: str = ""

    def elapsed(self, now: float) -> float:
        if self.started is None:
            return 0.0
        return (self.ended if self.ended is not None else now) - self.started

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "arm": self.key,
            "node": self.node,
            "state": self.state.value,
            "elapsed_s": round(self.elapsed(now), 1),
            "stages": dict(self.stages),
            "provisional": self.ended is None,
            "note": self.note,
        }


Listener = Callable[[ArmStatus, float], None]


class Board:
    """Every unit's status; listeners hear each change (from any thread)."""

    def __init__(self, keys: Sequence[str], listeners: Sequence[Listener] = ()) -> None:
        self.arms = {k: ArmStatus(k) for k in keys}
        self.listeners = list(listeners)
        self._lock = threading.Lock()

    def update(
        self,
        key: str,
        *,
        state: ArmState | None = None,
        node: str | None = None,
        note: str | None = None,
        stages: Mapping[str, Any] | None = None,
        final: bool = False,
    ) -> None:
        with self._lock:
            arm = self.arms[key]
            now = time.time()
            if state is not None and state is not ArmState.QUEUED and arm.started is None:
                arm.started = now
            if final:
                arm.ended = now
            if state is not None:
                arm.state = state
            if node is not None:
                arm.node = node
            if note is not None:
                arm.note = note
            if stages is not None:
                arm.stages = dict(stages)
            for listen in self.listeners:
                listen(arm, now)

    def rows(self) -> list[dict[str, Any]]:
        now = time.time()
        with self._lock:
            return [a.to_dict(now) for a in self.arms.values()]


class Executor(Protocol):
    """Runs units; returns a result for every unit it was given, in any order."""

    name: str

    #: Control keys (``control_view``) that this executor makes differ between units on
    #: purpose, which therefore never make two units incomparable.
    ignored_controls: tuple[str, ...]

    def run(self, units: Sequence[Unit], session: Path, board: Board) -> list[UnitResult]: ...


class LocalExecutor:
    """One unit after the other on this host (the default)."""

    name = "local"
    ignored_controls: tuple[str, ...] = ()

    def __init__(self, run: RunFn | None = None) -> None:
        self._run = run

    def run(self, units: Sequence[Unit], session: Path, board: Board) -> list[UnitResult]:
        run_fn = self._run if self._run is not None else default_run()
        host = socket.gethostname()
        out: list[UnitResult] = []
        for unit in units:
            request = unit.request
            if unit.work is not None:
                work = session / "work" / unit.work
                work.mkdir(parents=True)
                request = replace(request, cwd=str(work))
            board.update(unit.key, state=ArmState.RUNNING, node=host)
            try:
                verdict = run_fn(request)
            except SkgateError as exc:
                board.update(unit.key, state=ArmState.NOT_RUN, note=str(exc), final=True)
                out.append(UnitResult(unit, error=str(exc)))
                continue
            board.update(unit.key, state=ArmState.of_verdict(verdict.state), final=True)
            out.append(UnitResult(unit, verdict=verdict, node={"hostname": host}))
        return out
