"""The node side of the Ray executor: the tasks that run on a cluster node (issue 15).

:func:`arm_task` runs one matrix unit: the skgate runner, detached (a grandchild of the
task, out of the reach of a worker's exit), exactly as on one host, then the sealed
attempt home in bounded chunks. :func:`collect_task` brings home an
attempt whose arm task was cancelled. The driver side is :mod:`skgate.regress.ray_exec`.

**A cancel stops the runner wherever it lands** (C2.4, C4): ``ray.cancel`` reaches a
streaming task as ``KeyboardInterrupt`` in its own frame, or as ``GeneratorExit`` at a
``yield`` when it lands in Ray's code between two items. Either way the task asks its
runner to stop the way ``skgate stop`` does. The collect task is the backstop: when,
after the cancel, the runner is neither sealed nor asked, it asks; it never asks twice
(a second request in the grace is "now"). When the runner is gone without a seal it says
so at once, and "nothing was run" only when the runner recorded no attempt (it records
one before any launch).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from skgate.evidence import files, ledger
from skgate.evidence.journal import JournalFollower, blocker_text, is_wait_start
from skgate.evidence.stops import stop_pending
from skgate.evidence.transfer import CHUNK, send_items
from skgate.model.errors import EvidenceError, SkgateError
from skgate.model.events import Created, Event, Launched, Observation, SignalReceived, TreeEnded
from skgate.model.frozen import replace
from skgate.model.messages import End, Progress, Result, Started
from skgate.model.request import RunRequest
from skgate.proc.handle import ProcessHandle
from skgate.proc.observe import is_alive
from skgate.regress.executor import ArmState

#: How long a cancelled arm task gives its runner, still starting up, to record the
#: attempt before it falls back to a plain SIGTERM.
ATTEMPT_WAIT = 10.0

#: How long the collect task gives the cancelled arm task to ask its runner to stop
#: before it asks itself.
ASKED_WAIT = 5.0

#: How long a stopped runner may take to end its group and seal, beyond its grace.
STOP_SLACK = 60.0

#: How long the detached runner may take to say who it is (its first line, right after
#: its interpreter has imported the runner).
IDENTITY_WAIT = 60.0

#: The most of the runner's stdout kept: its result is one JSON line at the end.
RESULT_LIMIT = 1 << 20


def _node_facts() -> dict[str, Any]:
    ctx = importlib.import_module("ray").get_runtime_context()
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


def _request_stop(attempt: Path, reason: str) -> bool:
    """``skgate stop`` through the library when this skgate has it (an older skgate on
    the node may not); whether the request was made."""
    stop = getattr(importlib.import_module("skgate.api"), "stop", None)
    if not callable(stop):
        return False
    try:
        stop(str(attempt), reason)
    except (SkgateError, OSError):
        return False
    return True


def _ask_stop(runner: ProcessHandle | None, attempt: Path, grace: float) -> None:
    """Ask the runner to stop its attempt the way ``skgate stop`` does, then wait for it.

    The library's stop (``skgate.api.stop``) when this skgate has it; otherwise the same
    runner-side request it makes: SIGTERM to the runner only, through its pidfd (the
    process this task started, by pid and start time, C4); the runner forwards it to its
    own group and records the attempt interrupted / external. A second request after the
    grace is an explicit "now" (the runner SIGKILLs its group).
    """
    if runner is None:
        return
    # The runner records its attempt before anything else (and before any launch): give
    # a runner still starting up the moment to do so, so the stop names its reason.
    deadline = time.monotonic() + ATTEMPT_WAIT
    while not attempt.is_dir() and runner.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    asked = attempt.is_dir() and _request_stop(attempt, "ray.cancel of this arm")
    if not asked:
        runner.send_signal(signal.SIGTERM)
    if not _ended(runner, grace + 5.0):
        runner.send_signal(signal.SIGTERM)
        _ended(runner, grace + STOP_SLACK)


def _ended(runner: ProcessHandle, timeout: float) -> bool:
    """Wait up to ``timeout`` for the runner (not our child: a detached grandchild) to
    exit, woken by its pidfd where the kernel has one; whether it has."""
    deadline = time.monotonic() + timeout
    while runner.alive():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if runner.fileno() >= 0:
            select.select([runner.fileno()], [], [], min(left, 1.0))
        else:
            time.sleep(min(left, 0.05))
    return True


class _RunnerOutput:
    """The detached runner's stdout, read without blocking the task: its first line says
    who the runner is, its last line is its result (the child protocol)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._fd = pipe.fileno()
        self._buf = bytearray()
        self.eof = False

    def read_for(self, timeout: float) -> None:
        """Take what arrives within ``timeout`` seconds (at most until end of file)."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._fd], [], [], max(left, 0.0))
            if not ready:
                return
            data = os.read(self._fd, 1 << 16)
            if not data:
                self.eof = True
            self._buf += data
            if len(self._buf) > RESULT_LIMIT:
                self._buf = self._buf[-RESULT_LIMIT:]  # only the last line counts

    def first_line(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf and not self.eof and time.monotonic() < deadline:
            self.read_for(deadline - time.monotonic())
        line, sep, _ = bytes(self._buf).partition(b"\n")
        if not sep:
            return None
        del self._buf[: len(line) + 1]
        return line

    def last_line(self) -> Any:
        lines = self._buf.decode("utf-8", "backslashreplace").strip().splitlines()
        try:
            return json.loads(lines[-1]) if lines else None
        except ValueError:
            return None


def _runner_identity(line: bytes | None) -> ProcessHandle | None:
    """The detached runner, by the pid and start time its first line gave (None: it said
    nothing of itself, or it is already gone)."""
    try:
        got: Any = json.loads(line) if line else None
        pid, ticks = int(got["runner_pid"]), int(got["runner_start_ticks"])
    except (ValueError, TypeError, KeyError):
        return None
    return ProcessHandle.open(pid, ticks)


def arm_task(payload: dict[str, Any]) -> Generator[dict[str, Any] | bytes, None, None]:
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
        # --detach: the runner goes on as a grandchild of this task, so the worker's exit
        # (Ray SIGKILLs a worker's direct children) never leaves the compile unsupervised.
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skgate.runner",
                "--attempt-id",
                str(payload["attempt_id"]),
                "--detach",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
    assert proc.stdin is not None and proc.stdout is not None
    # The request first, before the first yield: a cancel can land at any yield, and a
    # runner that holds its request can always be stopped the way ``skgate stop`` does.
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(json.dumps(request.to_dict()).encode())
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    out = _RunnerOutput(proc.stdout)
    runner = _runner_identity(out.first_line(IDENTITY_WAIT))
    proc.wait()  # the direct child: it exits as soon as it has forked the runner
    tail = JournalFollower(attempt / files.EVENTS)
    pid = runner.pid if runner is not None else proc.pid
    ticks = runner.start_ticks if runner is not None else None
    try:
        yield Started(node, str(attempt), pid, ticks).to_dict()
        while runner is not None and not out.eof:
            out.read_for(0.5)
            if not runner.alive():
                out.read_for(0.0)  # what it wrote before it went
                break
            yield from _progress(tail)
    except (KeyboardInterrupt, GeneratorExit):
        # ray.cancel lands as KeyboardInterrupt in this frame, or, when it lands in Ray's
        # own code between two items, as GeneratorExit at the ``yield`` (seen in CI: the
        # runner was then never asked and ran on unsealed). Either way the runner records
        # interrupted / external (C2.4) and ends only its own group (C4).
        _ask_stop(runner, attempt, request.grace)
        proc.stdout.close()
        raise
    with proc.stdout:
        yield from _progress(tail)
        result = out.last_line()
    if not isinstance(result, dict):
        why = "the runner ended without a result"
        result = {"error": why if runner is not None else f"{why} (it never said who it was)"}
    error = result.get("error")
    yield Result(None if error is None else str(error)).to_dict()
    if (attempt / files.SEAL).is_file():
        yield from send_items(attempt, int(payload.get("chunk", CHUNK)))
    yield End().to_dict()


def _stop_asked(attempt: Path, tail: JournalFollower) -> bool:
    """Whether the runner was asked to stop: a pending ``skgate stop`` request, or a stop
    signal in its journal (the arm task's fallback SIGTERM)."""
    if stop_pending(attempt) is not None:
        return True
    with contextlib.suppress(OSError, EvidenceError):
        return any(isinstance(ev, SignalReceived) for ev in tail.poll())
    return False


def _stop_if_never_asked(attempt: Path, wait_s: float) -> None:
    """The cancel's backstop on the node: ask the runner to stop when, ``wait_s`` after
    the cancel, it is neither sealed nor asked (the arm task may have ended without
    asking: a worker Ray tore down, a generator it dropped). Never a second request while
    the first one's grace runs: the runner reads that as "now" (C4)."""
    tail = JournalFollower(attempt / files.EVENTS)
    deadline = time.monotonic() + wait_s
    while True:
        if (attempt / files.SEAL).is_file() or _stop_asked(attempt, tail):
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    _request_stop(attempt, "ray.cancel of this arm (asked by the collect task)")


def collect_task(payload: dict[str, Any]) -> Iterator[dict[str, Any] | bytes]:
    """Bring home an attempt left on this node (after a cancel): wait for its seal while
    its runner lives; say at once what is known when the runner is gone without one."""
    attempt = Path(str(payload["origin"]))
    deadline = time.monotonic() + float(payload["wait_s"])
    runner = _runner_of(payload)
    _stop_if_never_asked(attempt, float(payload.get("asked_wait_s", ASKED_WAIT)))
    gone = False
    while not (attempt / files.SEAL).is_file() and time.monotonic() < deadline:
        if runner is not None and not is_alive(*runner):
            gone = True  # nothing will seal it now; one more look below (it may just have)
            break
        time.sleep(0.2)
    if (attempt / files.SEAL).is_file():
        yield Result(None).to_dict()
        yield from send_items(attempt, int(payload.get("chunk", CHUNK)))
    elif gone and not os.path.lexists(attempt):
        # The runner records its attempt before any launch (C4): none, so nothing ran.
        why = "cancelled before its runner recorded an attempt; nothing was run"
        yield Result(why, nothing_ran=True).to_dict()
    elif gone:
        yield Result(
            f"the runner of {attempt} ended without sealing it; skgate recover on that node "
            "seals what is known"
        ).to_dict()
    else:
        yield Result(f"{attempt} was not sealed in time").to_dict()
    yield End().to_dict()


def _runner_of(payload: Mapping[str, Any]) -> tuple[int, int] | None:
    """The runner's pid and start time, when the task reported both (an older task did
    not: then only the seal or the deadline ends the wait)."""
    pid, ticks = payload.get("runner_pid"), payload.get("runner_start_ticks")
    if isinstance(pid, int) and isinstance(ticks, int):
        return pid, ticks
    return None
