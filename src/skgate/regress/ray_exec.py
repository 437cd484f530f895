"""The Ray executor: the arms of a matrix spread over a Ray cluster (issue 15).

Ray is an optional dependency (``pip install 'skgate[ray]'``); nothing here imports it
until a :class:`RayExecutor` connects.

**One unit = one Ray task** (``max_retries=0``: a retry Ray made on its own would run an
attempt twice outside the ledger; ``skgate retry`` is the retry path, C4). The task asks
for ``num_cpus`` = the unit's frozen jobs (C5) and ``NPU: n`` when the request declares
``n`` devices. Inside the task the skgate runner runs exactly as on one host, detached so
a worker's exit cannot end it (``python -m skgate.runner --detach``: its own session,
subreaper, frozen timeout, preflight with hooks, foreign compilers and device leases *of
that node*; the lease is taken on the NPU ids Ray assigned), into a node-local root, with
the attempt id the driver reserved in its own root (so the attempt keeps one name
everywhere).

**Evidence comes home**: the task is a streaming generator. It yields progress while the
runner works (tailing the attempt's ``events.jsonl``), then the sealed attempt directory
in bounded chunks (:func:`skgate.evidence.transfer.send_items`); the driver writes them
into a staging directory, re-verifies the seal, renames the attempt into its root and
appends the ledger entries naming the node (hostname, Ray node id, Ray task id).

**Faults stay honest** (C2, C4): ``ray.cancel`` of a task (or Ctrl-C on the driver, which
cancels every task) reaches the task as ``KeyboardInterrupt`` or, at a ``yield``, as
``GeneratorExit``; the task asks its runner to stop the way ``skgate stop`` does (the
runner ends its own process group only, and the verdict reads interrupted / external); a
collect task pinned to that node then brings the sealed attempt home, or says at once
that the runner is gone without one. The tasks themselves are
:mod:`skgate.regress.ray_node`. A node that dies, or a task Ray loses, leaves the unit **unknown**
(:data:`~skgate.regress.executor.NODE_LOST`), never failed; the other units go on, and a
second ``regress --resume`` on the same root runs only what is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence import ledger
from skgate.evidence.transfer import CHUNK, MAX_BYTES, Incoming
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.messages import (
    End,
    FileHeader,
    FileList,
    Message,
    Progress,
    Result,
    Started,
    message_from_dict,
)
from skgate.model.records import Verdict
from skgate.model.request import RunRequest
from skgate.regress.executor import NODE_LOST, ArmState, Board, Unit, UnitResult
from skgate.regress.ray_node import STOP_SLACK, arm_task, collect_task

#: Streamed objects a task may have ahead of the driver (bounds the object store and the
#: driver's memory to a few chunks per unit).
BACKPRESSURE = 4

INSTALL_HINT = "the ray executor needs Ray: pip install 'skgate[ray]'"


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise UsageError(f"{INSTALL_HINT}; nothing was run") from None


def cpus_of(request: RunRequest) -> int:
    """CPUs a unit asks Ray for: its frozen compile jobs (C5); 1 when not a number."""
    jobs = request.jobs
    return int(jobs) if jobs is not None and jobs.isdigit() and int(jobs) > 0 else 1


def resources_of(request: RunRequest) -> dict[str, float]:
    return {"NPU": float(len(request.devices))} if request.devices else {}


# --------------------------------------------------------------------------- driver side


@dataclass
class _Flight:
    """What the driver knows of one unit's task while it runs."""

    unit: Unit
    target: Path
    gen: Any = None
    node: dict[str, Any] | None = None
    origin: str | None = None
    runner_pid: int | None = None
    runner_start_ticks: int | None = None
    cancelled: bool = False


def _check_address(address: str) -> None:
    """Fail fast, in one line, when nothing listens at a ``host:port`` address."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise UsageError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one "
            "(ray start --head) or pass --ray-address HOST:PORT; nothing was run"
        ) from None


class RayExecutor:
    """Runs each unit as one Ray task on a cluster (see the module doc)."""

    name = "ray"
    #: Device ids are Ray's per-node choice; the count is the same for every unit.
    ignored_controls: tuple[str, ...] = ("request.devices",)

    def __init__(
        self,
        address: str | None = None,
        *,
        node_base: str | None = None,
        max_bytes: int = MAX_BYTES,
        chunk: int = CHUNK,
    ) -> None:
        self.address = address
        self.node_base = node_base
        self.max_bytes = max_bytes
        self.chunk = chunk
        self.session = uuid.uuid4().hex[:12]
        self._flights: dict[str, _Flight] = {}
        self._lock = threading.Lock()
        self._owns_connection = False

    # -- connection --------------------------------------------------------------------

    def connect(self) -> None:
        """Join the cluster (bad input when Ray is missing or nobody answers)."""
        ray = _ray()
        if ray.is_initialized():
            return
        address = self.address or os.environ.get("RAY_ADDRESS") or "auto"
        _check_address(address)
        try:
            ray.init(
                address=address,
                log_to_driver=False,
                logging_level="ERROR",
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageError(
                f"no Ray cluster answers at {address} ({first}); start one (ray start "
                "--head) or pass --ray-address HOST:PORT; nothing was run"
            ) from None
        self._owns_connection = True

    def close(self) -> None:
        if self._owns_connection:
            _ray().shutdown()
            self._owns_connection = False

    def check_feasible(self, units: Sequence[Unit]) -> None:
        """Refuse, before anything runs, a unit that no live node could ever hold."""
        ray = _ray()
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        for unit in units:
            cpus, extra = cpus_of(unit.request), resources_of(unit.request)
            if not any(
                r.get("CPU", 0) >= cpus and all(r.get(k, 0) >= v for k, v in extra.items())
                for r in nodes
            ):
                want = ", ".join([f"CPU: {cpus}", *(f"{k}: {v:g}" for k, v in extra.items())])
                raise UsageError(
                    f"matrix unit {unit.key} needs {{{want}}} (its frozen jobs and devices) "
                    "and no live node of the cluster has that much; nothing was run"
                )

    # -- running -----------------------------------------------------------------------

    def run(self, units: Sequence[Unit], session: Path, board: Board) -> list[UnitResult]:
        self.connect()
        self.check_feasible(units)
        ray = _ray()
        run_token = f"{self.session}-{uuid.uuid4().hex[:8]}"  # one node-local tree per run
        task = ray.remote(arm_task)
        results: dict[str, UnitResult] = {}
        threads: list[threading.Thread] = []
        for unit in units:
            root = Path(unit.request.root)
            # Reserved now, in the driver's root: the id the node-local attempt will take.
            target = ledger.allocate(root)
            flight = _Flight(unit, target)
            payload = {
                "request": unit.request.to_dict(),
                "name": unit.name,
                "work": unit.work,
                "attempt_id": target.name,
                "session": run_token,
                "node_base": self.node_base,
                "chunk": self.chunk,
            }
            flight.gen = task.options(
                num_cpus=cpus_of(unit.request),
                resources=resources_of(unit.request) or None,
                max_retries=0,
                num_returns="streaming",
                _generator_backpressure_num_objects=BACKPRESSURE,
                name=f"skgate-arm:{unit.key}",
            ).remote(payload)
            with self._lock:
                self._flights[unit.key] = flight

            def work(f: _Flight = flight) -> None:
                results[f.unit.key] = self._follow(f, board)

            t = threading.Thread(target=work, name=f"skgate-ray-{unit.key}", daemon=True)
            t.start()
            threads.append(t)
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
        except KeyboardInterrupt:
            # Ctrl-C on the driver: every arm is asked to stop through its runner (C4),
            # and what they recorded is still brought home.
            for key in list(self._flights):
                self.cancel(key)
            for t in threads:
                t.join()
        return [results[u.key] for u in units]

    def submitted(self) -> list[str]:
        """Keys of the units whose task was submitted (cancelling one that ended is a no-op)."""
        with self._lock:
            return [k for k, f in self._flights.items() if f.gen is not None]

    def cancel(self, key: str) -> bool:
        """``ray.cancel`` the task of one unit (its runner records interrupted/external)."""
        with self._lock:
            flight = self._flights.get(key)
        if flight is None or flight.gen is None:
            return False
        flight.cancelled = True
        _ray().cancel(flight.gen)
        return True

    def where(self, key: str) -> dict[str, Any]:
        """Where a unit's task runs, once it started: node facts, node-local attempt
        directory and the runner's pid (empty before)."""
        with self._lock:
            flight = self._flights.get(key)
        if flight is None or flight.node is None:
            return {}
        return {"node": dict(flight.node), "origin": flight.origin, "runner_pid": flight.runner_pid}

    def _follow(self, flight: _Flight, board: Board) -> UnitResult:
        ray = _ray()
        try:
            return self._home(flight, flight.gen, board, cancelled=False)
        except ray.exceptions.TaskCancelledError:
            return self._after_cancel(flight, board)

    def _home(self, flight: _Flight, gen: Any, board: Board, *, cancelled: bool) -> UnitResult:
        """Drain one task's stream into a result: the imported attempt, or why none."""
        ray = _ray()
        unit = flight.unit
        try:
            verdict, said = self._drain(flight, gen, board)
        except ray.exceptions.TaskCancelledError:
            if cancelled:
                return self._lost(flight, board, "the collect task was cancelled")
            raise
        except ray.exceptions.RayError as exc:
            return self._lost(flight, board, type(exc).__name__)
        except (EvidenceError, OSError) as exc:
            board.update(unit.key, state=ArmState.UNKNOWN, note=str(exc), final=True)
            return self._result(flight, lost=f"evidence could not be brought home: {exc}")
        error = said.error if said is not None else None
        if verdict is None and cancelled and not (said is not None and said.nothing_ran):
            return self._lost(flight, board, error or "no sealed attempt after the cancel")
        if verdict is None:
            board.update(unit.key, state=ArmState.NOT_RUN, note=error or "", final=True)
            return self._result(flight, error=error or "no attempt was recorded")
        board.update(unit.key, state=ArmState.of_verdict(verdict.state), final=True)
        return self._result(flight, verdict=verdict)

    def _after_cancel(self, flight: _Flight, board: Board) -> UnitResult:
        ray = _ray()
        unit = flight.unit
        if flight.origin is None or flight.node is None:
            board.update(
                unit.key, state=ArmState.NOT_RUN, note="cancelled before it started", final=True
            )
            return self._result(flight, error="cancelled before it started (not run)")
        board.update(
            unit.key, state=ArmState.STOPPING, note="cancelled; bringing the evidence home"
        )
        strategies = importlib.import_module("ray.util.scheduling_strategies")
        strategy = strategies.NodeAffinitySchedulingStrategy(
            node_id=flight.node["node_id"], soft=False
        )
        gen = (
            ray.remote(collect_task)
            .options(
                num_cpus=0,
                max_retries=0,
                num_returns="streaming",
                _generator_backpressure_num_objects=BACKPRESSURE,
                scheduling_strategy=strategy,
                name=f"skgate-collect:{unit.key}",
            )
            .remote(
                {
                    "origin": flight.origin,
                    "runner_pid": flight.runner_pid,
                    "runner_start_ticks": flight.runner_start_ticks,
                    "wait_s": unit.request.grace * 2 + STOP_SLACK,
                    "chunk": self.chunk,
                }
            )
        )
        return self._home(flight, gen, board, cancelled=True)

    def _lost(self, flight: _Flight, board: Board, why: str) -> UnitResult:
        text = f"{NODE_LOST} ({why})"
        board.update(flight.unit.key, state=ArmState.UNKNOWN, note=text, final=True)
        return self._result(flight, lost=text)

    def _result(self, flight: _Flight, **kw: Any) -> UnitResult:
        if kw.get("verdict") is None:
            # Nothing came home: give back the id reserved for it (never indexed in the
            # ledger, still empty), so the root holds no attempt without evidence.
            with contextlib.suppress(OSError):
                flight.target.rmdir()
        return UnitResult(
            flight.unit,
            node=flight.node,
            origin=flight.origin,
            runner_pid=flight.runner_pid,
            **kw,
        )

    def _drain(
        self, flight: _Flight, gen: Any, board: Board
    ) -> tuple[Verdict | None, Result | None]:
        """Consume one task's stream; import the attempt when it arrives whole. Also the
        task's own result message (None when the stream had none)."""
        ray = _ray()
        unit = flight.unit
        incoming: Incoming | None = None
        said: Result | None = None
        verdict: Verdict | None = None
        try:
            for ref in gen:
                item = ray.get(ref)
                del ref  # one chunk at a time: the driver's memory stays bounded
                if isinstance(item, bytes):
                    if incoming is None:
                        raise EvidenceError(f"{unit.key}: bytes before the file list")
                    incoming.feed(item)
                    continue
                message = _message(unit.key, item)
                if isinstance(message, Started):
                    flight.node, flight.origin = dict(message.node), message.origin
                    flight.runner_pid = message.runner_pid
                    flight.runner_start_ticks = message.runner_start_ticks
                    label = _node_label(flight.node)
                    board.update(unit.key, node=label, state=ArmState.PREFLIGHT)
                elif isinstance(message, Progress):
                    board.update(
                        unit.key,
                        state=ArmState.of(message.state),
                        note=message.note,
                        stages=message.stages,
                    )
                elif isinstance(message, Result):
                    said = message
                elif isinstance(message, FileList):
                    incoming = Incoming(Path(unit.request.root), flight.target.name, self.max_bytes)
                    incoming.feed(item)
                    board.update(unit.key, state=ArmState.TRANSFERRING)
                elif isinstance(message, FileHeader):
                    if incoming is None:
                        raise EvidenceError(f"{unit.key}: a file before the file list")
                    incoming.feed(item)
                elif isinstance(message, End) and incoming is not None:
                    node = dict(flight.node or {})
                    verdict = incoming.commit(flight.target, node, flight.origin or "")
                    incoming = None
        finally:
            if incoming is not None:
                incoming.discard()
        return verdict, said


def _message(key: str, item: dict[str, Any]) -> Message:
    try:
        return message_from_dict(item)
    except ValueError as exc:
        raise EvidenceError(f"{key}: {exc}") from None


def _node_label(node: Mapping[str, Any]) -> str:
    return f"{node.get('hostname')}/{str(node.get('node_id'))[:8]}"
