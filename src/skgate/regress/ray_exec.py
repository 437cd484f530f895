"""The Ray executor: the arms of a matrix spread over a Ray cluster (issue 15).

Ray is an optional dependency (``pip install 'skgate[ray]'``); nothing here imports it
until a :class:`RayExecutor` connects.

**One unit = one Ray task** (``max_retries=0``: a retry Ray made on its own would run an
attempt twice outside the ledger; ``skgate retry`` is the retry path, C4). The task asks
for ``num_cpus`` = the unit's frozen jobs (C5) and ``NPU: n`` when the request declares
``n`` devices. Inside the task the skgate runner runs as a child exactly as on one host
(``python -m skgate.runner``: its own session, subreaper, frozen timeout, preflight with
hooks, foreign compilers and device leases *of that node*; the lease is taken on the NPU
ids Ray assigned), into a node-local root, with the attempt id the driver reserved in its
own root (so the attempt keeps one name everywhere).

**Evidence comes home**: the task is a streaming generator. It yields progress while the
runner works (tailing the attempt's ``events.jsonl``), then the sealed attempt directory
in bounded chunks (:func:`skgate.evidence.transfer.send_items`); the driver writes them
into a staging directory, re-verifies the seal, renames the attempt into its root and
appends the ledger entries naming the node (hostname, Ray node id, Ray task id).

**Faults stay honest** (C2, C4): ``ray.cancel`` of a task (or Ctrl-C on the driver, which
cancels every task) reaches the task as ``KeyboardInterrupt``; the task asks its runner
to stop the way ``skgate stop`` does (the runner ends its own process group only, and the
verdict reads interrupted / external); a collect task pinned to that node then brings the
sealed attempt home. A node that dies, or a task Ray loses, leaves the unit **unknown**
(:data:`~skgate.regress.executor.NODE_LOST`), never failed; the other units go on, and a
second ``regress --resume`` on the same root runs only what is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skgate.evidence import files, ledger
from skgate.evidence.journal import JournalFollower, blocker_text, is_wait_start
from skgate.evidence.transfer import CHUNK, MAX_BYTES, Incoming, send_items
from skgate.model.errors import EvidenceError, SkgateError, UsageError
from skgate.model.events import Created, Event, Launched, Observation, SignalReceived, TreeEnded
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

#: Streamed objects a task may have ahead of the driver (bounds the object store and the
#: driver's memory to a few chunks per unit).
BACKPRESSURE = 4

#: How long a stopped runner may take to end its group and seal, beyond its grace.
STOP_SLACK = 60.0

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


# --------------------------------------------------------------------------- node side


def _node_facts() -> dict[str, Any]:
    ctx = _ray().get_runtime_context()
    ids = ctx.get_accelerator_ids().get("NPU", [])
    return {
        "hostname": socket.gethostname(),
        "node_id": ctx.get_node_id(),
        "task_id": ctx.get_task_id(),
        "npu_ids": [str(i) for i in ids],
        "visible_devices": os.environ.get("ASCEND_RT_VISIBLE_DEVICES"),
    }


def _node_base(payload: Mapping[str, Any], node_id: str) -> Path:
    base = payload.get("node_base") or os.path.join(
        tempfile.gettempdir(), f"skgate-ray-{os.getuid()}"
    )
    # The run token keeps two runs of one driver apart, the node id two raylets of one
    # machine (a test cluster).
    return Path(base).absolute() / str(payload["session"]) / node_id[:12]


def _progress(follower: JournalFollower) -> Iterator[dict[str, Any]]:
    """New complete records of an attempt's journal as progress items (progress only: a
    damaged or linked journal gives none, the runner's verdict is what counts, C2)."""
    try:
        events = follower.poll()
    except (OSError, EvidenceError):
        return
    for ev in events:
        item = progress_of(ev)
        if item is not None:
            yield item.to_dict()


def progress_of(ev: Event) -> Progress | None:
    """The driver's view of one journal event (None: not worth a progress line)."""
    if isinstance(ev, Created):
        return Progress(state=ArmState.PREFLIGHT.value)
    if is_wait_start(ev):
        return Progress(state=ArmState.WAITING.value, note="; ".join(blocker_text(ev)))
    if isinstance(ev, Launched):
        return Progress(state=ArmState.RUNNING.value, note="")
    if isinstance(ev, Observation) and ev.counts is not None:
        return Progress(stages=dict(ev.counts))
    if isinstance(ev, SignalReceived):
        return Progress(note=f"signal {ev.name} received")
    if isinstance(ev, TreeEnded):
        return Progress(state=ArmState.SEALING.value)
    return None


def _ask_stop(proc: subprocess.Popen[bytes], attempt: Path, grace: float) -> None:
    """Ask the runner to stop its attempt the way ``skgate stop`` does, then wait for it.

    The library's stop (``skgate.api.stop``) when this skgate has it; otherwise the same
    runner-side request it makes: SIGTERM to the runner only (our own child, not yet
    reaped, so the pid is ours, C4); the runner forwards it to its own group and records
    the attempt interrupted / external. A second request after the grace is an explicit
    "now" (the runner SIGKILLs its group).
    """
    stop = getattr(importlib.import_module("skgate.api"), "stop", None)
    asked = False
    if callable(stop) and attempt.is_dir():
        with contextlib.suppress(SkgateError, OSError):
            stop(str(attempt), "ray.cancel of this arm")
            asked = True
    if not asked and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace + 5.0)
    except subprocess.TimeoutExpired:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace + STOP_SLACK)


def arm_task(payload: dict[str, Any]) -> Iterator[dict[str, Any] | bytes]:
    """The Ray task of one unit (a streaming generator; see the module doc)."""
    node = _node_facts()
    request = RunRequest.from_dict(payload["request"])
    base = _node_base(payload, str(node["node_id"]))
    root = base / "runs" / str(payload["name"])
    changes: dict[str, Any] = {"root": str(root), "quiet": True}
    if payload.get("work"):
        work = base / "work" / str(payload["work"])
        work.mkdir(parents=True)
        changes["cwd"] = str(work)
    if request.devices:
        # The lease is taken on the NPUs Ray gave this task, on this node (C4).
        changes["devices"] = tuple(int(i) for i in node["npu_ids"])
    request = replace(request, **changes)
    root.mkdir(parents=True, exist_ok=True)
    attempt = root / ledger.ATTEMPTS / str(payload["attempt_id"])
    if os.path.lexists(attempt):
        # Never send evidence this task did not make (C4): the runner would refuse the id
        # anyway, and an older attempt of that name must not come home as this unit's.
        yield Result(f"{attempt} exists on this node already; not run").to_dict()
        yield End().to_dict()
        return
    with open(root / f".runner-{payload['attempt_id']}.stderr", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skgate.runner", "--attempt-id", str(payload["attempt_id"])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
    yield Started(node, str(attempt), proc.pid).to_dict()
    assert proc.stdin is not None and proc.stdout is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(json.dumps(request.to_dict()).encode())
    proc.stdin.close()
    tail = JournalFollower(attempt / files.EVENTS)
    try:
        while True:
            try:
                proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            yield from _progress(tail)
    except KeyboardInterrupt:  # ray.cancel: the runner records interrupted / external
        _ask_stop(proc, attempt, request.grace)
        raise
    yield from _progress(tail)
    lines = proc.stdout.read().decode("utf-8", "backslashreplace").strip().splitlines()
    try:
        result: Any = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if not isinstance(result, dict):
        result = {"error": f"the runner ended without a result (exit status {proc.returncode})"}
    error = result.get("error")
    yield Result(None if error is None else str(error)).to_dict()
    if (attempt / files.SEAL).is_file():
        yield from send_items(attempt, int(payload.get("chunk", CHUNK)))
    yield End().to_dict()


def collect_task(payload: dict[str, Any]) -> Iterator[dict[str, Any] | bytes]:
    """Bring home an attempt left on this node (after a cancel): wait for its seal."""
    attempt = Path(str(payload["origin"]))
    deadline = time.monotonic() + float(payload["wait_s"])
    while not (attempt / files.SEAL).is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not (attempt / files.SEAL).is_file():
        yield Result(f"{attempt} was not sealed in time").to_dict()
        yield End().to_dict()
        return
    yield Result(None).to_dict()
    yield from send_items(attempt, int(payload.get("chunk", CHUNK)))
    yield {"kind": "end"}


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
            verdict, error = self._drain(flight, gen, board)
        except ray.exceptions.TaskCancelledError:
            if cancelled:
                return self._lost(flight, board, "the collect task was cancelled")
            raise
        except ray.exceptions.RayError as exc:
            return self._lost(flight, board, type(exc).__name__)
        except (EvidenceError, OSError) as exc:
            board.update(unit.key, state=ArmState.UNKNOWN, note=str(exc), final=True)
            return self._result(flight, lost=f"evidence could not be brought home: {exc}")
        if verdict is None and cancelled:
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

    def _drain(self, flight: _Flight, gen: Any, board: Board) -> tuple[Verdict | None, str | None]:
        """Consume one task's stream; import the attempt when it arrives whole."""
        ray = _ray()
        unit = flight.unit
        incoming: Incoming | None = None
        error: str | None = None
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
                    error = message.error
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
        return verdict, error


def _message(key: str, item: dict[str, Any]) -> Message:
    try:
        return message_from_dict(item)
    except ValueError as exc:
        raise EvidenceError(f"{key}: {exc}") from None


def _node_label(node: Mapping[str, Any]) -> str:
    return f"{node.get('hostname')}/{str(node.get('node_id'))[:8]}"
