"""A cancelled Ray arm stops its runner wherever the cancel lands, without Ray.

``ray.cancel`` reaches a streaming task as ``KeyboardInterrupt`` when it lands in the
task's own frame, and as ``GeneratorExit`` at a ``yield`` when it lands in Ray's code
between two items (CI saw the second: the runner was never asked and ran on unsealed, so
the arm read "node lost" instead of interrupted / external). These tests drive the node
side (:func:`arm_task`, :func:`collect_task`) directly, with real runners and a workload
whose child ignores SIGTERM, so they need no cluster and run in the default suite.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ENV, events, read_json, script, wait_file, wait_for
from skgate import api
from skgate.evidence import files
from skgate.model.messages import Result, Started, message_from_dict
from skgate.model.outcomes import VerdictFrom
from skgate.model.request import RunRequest
from skgate.proc.observe import is_alive, read_stat
from skgate.regress import ray_node

#: The leader marks it started, forks a child that ignores SIGTERM (only the grace's
#: SIGKILL ends it), and both wait for a "go" marker that these tests never write.
WORKLOAD = """\
import os, signal, subprocess, sys, time
from pathlib import Path
M = Path(sys.argv[1])
child = subprocess.Popen([sys.executable, "-c", '''
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(flush=True)
while True:
    time.sleep(1)
'''], stdout=subprocess.PIPE)
child.stdout.readline()  # its SIGTERM disposition is set before anyone may signal it
(M / "started.tmp").write_text(f"{os.getpid()} {child.pid}\\n")
(M / "started.tmp").rename(M / "started")
while not (M / "go").exists():
    time.sleep(0.05)
"""

#: Runners and workload processes these tests started, by pid and start time: each one
#: still alive at teardown (a failed test) is ended by pid, never by name or group.
_RUNNERS: list[tuple[int, int]] = []


@pytest.fixture(autouse=True)
def end_runners(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The runner inherits this process's environment (as on a Ray worker): no foreign
    # compiler name may match another test's process.
    monkeypatch.setenv("SKGATE_COMPILER_NAMES", ENV["SKGATE_COMPILER_NAMES"])
    monkeypatch.setenv("PATH", ENV["PATH"])
    yield
    while _RUNNERS:
        pid, ticks = _RUNNERS.pop()
        if is_alive(pid, ticks):
            os.kill(pid, signal.SIGKILL)


def _remember(*pids: int) -> None:
    for pid in pids:
        st = read_stat(pid)
        if st is not None:
            _RUNNERS.append((st.pid, st.start_ticks))


def _workload_started(tmp: Path) -> None:
    _remember(*(int(p) for p in wait_file(tmp / "m" / "started").split()))


def _request(tmp: Path, grace: float) -> RunRequest:
    (tmp / "m").mkdir()
    argv = (*script(tmp, "work.py", WORKLOAD), str(tmp / "m"))
    return RunRequest(argv=argv, cwd=str(tmp), root=str(tmp / "r"), timeout=600, grace=grace)


def _payload(tmp: Path, request: RunRequest) -> dict[str, Any]:
    return {
        "request": request.to_dict(),
        "name": "baseline",
        "work": None,
        "attempt_id": "0001",
        "session": "cancel-test",
        "node_base": str(tmp / "node"),
    }


def _node(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = {"hostname": "h", "node_id": "n" * 16, "task_id": "t", "npu_ids": []}
    monkeypatch.setattr(ray_node, "_node_facts", lambda: dict(facts, visible_devices=None))


def _interrupted_by(attempt: Path, reason: str) -> dict[str, Any]:
    verdict: dict[str, Any] = read_json(attempt / files.VERDICT)
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "external"), verdict
    assert f"C2.4: stopped through skgate stop: {reason}" in verdict["reasons"]
    assert (attempt / files.SEAL).is_file()
    return verdict


def _owned_gone(attempt: Path) -> None:
    own = read_json(attempt / files.OWNERSHIP)
    assert own["owned"], "the attempt owned processes"
    for rec in own["owned"]:
        assert not is_alive(rec["pid"], rec["start_ticks"]), rec


def _start_arm(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Generator[dict[str, Any] | bytes, None, None], Started]:
    """The arm task of a fresh unit, run up to its first item (the runner started)."""
    _node(monkeypatch)
    gen = ray_node.arm_task(_payload(tmp, _request(tmp, grace=0.5)))
    first = next(gen)
    assert isinstance(first, dict)
    started = message_from_dict(first)
    assert isinstance(started, Started)
    _remember(started.runner_pid)
    return gen, started


def test_a_cancel_landing_at_a_yield_still_stops_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen, started = _start_arm(tmp_path, monkeypatch)
    attempt = Path(started.origin)
    # Drain progress until the workload provably runs, then close the generator at its
    # yield: what Ray does when the cancel lands in its own code.
    deadline = time.monotonic() + 60
    while not (tmp_path / "m" / "started").exists():
        assert time.monotonic() < deadline, "the workload never started"
        next(gen)
    _workload_started(tmp_path)
    gen.close()
    # close() returns only once the runner has ended its group and sealed (C2.4, C4).
    assert not any(is_alive(*p) for p in _RUNNERS)
    _interrupted_by(attempt, "ray.cancel of this arm")
    sent = [e["name"] for e in events(attempt) if e["event"] == "signal_sent"]
    assert sent == ["SIGTERM", "SIGKILL"], sent
    _owned_gone(attempt)


def test_a_cancel_at_the_first_yield_still_stops_through_skgate_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen, started = _start_arm(tmp_path, monkeypatch)
    assert started.runner_start_ticks is not None
    # At the very first yield the runner may not even have recorded its attempt yet: it
    # holds its request already, and the cancel waits for the record to stop it by name.
    gen.close()
    assert not is_alive(*_RUNNERS[0])
    verdict = read_json(Path(started.origin) / files.VERDICT)
    assert verdict["state"] in ("not_started", "interrupted"), verdict
    assert any("through skgate stop: ray.cancel of this arm" in r for r in verdict["reasons"])
    if (tmp_path / "m" / "started").exists():
        _workload_started(tmp_path)
        assert not any(is_alive(*p) for p in _RUNNERS)


def _ended_process() -> tuple[int, int]:
    """A process of this test that has ended and been reaped: its pid and start time."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    st = read_stat(proc.pid)  # alive until its stdin closes
    assert proc.stdin is not None and st is not None
    proc.stdin.close()
    proc.wait()
    return (proc.pid, st.start_ticks)


def _collect_for(attempt: Path, runner: tuple[int, int]) -> tuple[list[Any], float]:
    payload = {
        "origin": str(attempt),
        "runner_pid": runner[0],
        "runner_start_ticks": runner[1],
        "wait_s": 60.0,
        "asked_wait_s": 0.2,
    }
    t0 = time.monotonic()
    items = list(ray_node.collect_task(payload))
    return items, time.monotonic() - t0


def test_the_collect_task_says_at_once_that_nothing_ran(tmp_path: Path) -> None:
    attempt = tmp_path / "r" / "attempts" / "0001"
    items, took = _collect_for(attempt, _ended_process())
    said = message_from_dict(items[0])
    assert isinstance(said, Result) and said.nothing_ran, said
    assert took < 30, "it waited for a runner that is gone"
    assert message_from_dict(items[-1]).KIND.value == "end"


def test_a_runner_gone_without_a_seal_is_never_nothing_ran(tmp_path: Path) -> None:
    attempt = tmp_path / "r" / "attempts" / "0001"
    attempt.mkdir(parents=True)  # recorded, so something may have been launched
    items, took = _collect_for(attempt, _ended_process())
    said = message_from_dict(items[0])
    assert isinstance(said, Result) and not said.nothing_ran
    assert said.error is not None and "ended without sealing it" in said.error
    assert "skgate recover" in said.error
    assert took < 30


def _detached(tmp: Path, grace: float) -> Path:
    (tmp / "m").mkdir()
    started = api.start(
        [*script(tmp, "work.py", WORKLOAD), str(tmp / "m")],
        root=tmp / "r",
        cwd=tmp,
        grace=grace,
        env={k: ENV[k] for k in ("PATH", "SKGATE_COMPILER_NAMES")},
    )
    _remember(started.runner_pid)
    _workload_started(tmp)
    return Path(started.attempt)


def _collect(attempt: Path, asked_wait_s: float) -> list[Any]:
    payload = {"origin": str(attempt), "wait_s": 60.0, "asked_wait_s": asked_wait_s}
    return list(ray_node.collect_task(payload))


def test_the_collect_task_asks_a_runner_nobody_asked(tmp_path: Path) -> None:
    attempt = _detached(tmp_path, grace=0.5)
    items = _collect(attempt, asked_wait_s=0.2)
    assert message_from_dict(items[0]) == Result(None), items[0]
    assert any(isinstance(i, bytes) for i in items), "the sealed attempt was not sent"
    _interrupted_by(attempt, "ray.cancel of this arm (asked by the collect task)")
    _owned_gone(attempt)


def test_the_collect_task_never_asks_twice_so_the_grace_is_kept(tmp_path: Path) -> None:
    attempt = _detached(tmp_path, grace=3.0)
    assert api.stop(str(attempt), "the arm task asked").action == "requested"
    items = _collect(attempt, asked_wait_s=0.2)
    assert message_from_dict(items[0]) == Result(None), items[0]
    _interrupted_by(attempt, "the arm task asked")
    evs = events(attempt)
    assert len([e for e in evs if e["event"] == "signal_received"]) == 1
    sent = [e for e in evs if e["event"] == "signal_sent"]
    assert [e["name"] for e in sent] == ["SIGTERM", "SIGKILL"]
    # A second request would have been "now": SIGKILL at once instead of after the grace.
    assert sent[1]["mono"] - sent[0]["mono"] >= 3.0 * 0.9, sent
    _owned_gone(attempt)


def test_the_backstop_does_not_wait_for_a_sealed_attempt(tmp_path: Path) -> None:
    attempt = _detached(tmp_path, grace=0.5)
    assert api.stop(str(attempt), "done").action == "requested"
    assert api.wait(str(attempt), max_seconds=60).outcome == "final"
    t0 = time.monotonic()
    items = _collect(attempt, asked_wait_s=30.0)
    assert time.monotonic() - t0 < 15, "a sealed attempt was waited for"
    assert message_from_dict(items[0]) == Result(None)


#: A stand-in Ray worker: it runs one arm task and follows it, as a worker does.
WORKER = """\
import json, sys
from skgate.regress import ray_node
ray_node._node_facts = lambda: {
    "hostname": "h", "node_id": "n" * 16, "task_id": "t", "npu_ids": [],
    "visible_devices": None,
}
gen = ray_node.arm_task(json.loads(sys.argv[1]))
print(json.dumps(next(gen)), flush=True)
for _ in gen:
    pass
"""

#: Marks itself started, then returns naturally once the test writes "go".
UNTIL_GO = """\
import sys, time
from pathlib import Path
M = Path(sys.argv[1])
(M / "started.tmp").write_text("started\\n")
(M / "started.tmp").rename(M / "started")
while not (M / "go").exists():
    time.sleep(0.05)
"""


def _direct_children(pid: int) -> list[tuple[int, int]]:
    found = []
    for entry in os.listdir("/proc"):
        st = read_stat(int(entry)) if entry.isdigit() else None
        if st is not None and st.ppid == pid:
            found.append((st.pid, st.start_ticks))
    return found


def test_a_worker_exit_never_leaves_the_compile_unsupervised(tmp_path: Path) -> None:
    """Issue 28 s9: Ray SIGKILLs a worker's direct children when the worker exits
    (``RAY_kill_child_processes_on_worker_exit``, on by default). The runner used to be
    one of them: it died and its workload ran on unsupervised. Now the runner is not a
    child of the task: it survives, the workload returns naturally and the attempt is
    sealed with the natural verdict."""
    (tmp_path / "m").mkdir()
    argv = (*script(tmp_path, "work.py", UNTIL_GO), str(tmp_path / "m"))
    request = RunRequest(
        argv=argv,
        cwd=str(tmp_path),
        root=str(tmp_path / "r"),
        timeout=600,
        grace=0.5,
        verdict_from=VerdictFrom.EXIT_STATUS,
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, json.dumps(_payload(tmp_path, request))],
        stdout=subprocess.PIPE,
        env={**ENV, "SKGATE_COMPILER_NAMES": ENV["SKGATE_COMPILER_NAMES"]},
        start_new_session=True,
    )
    assert worker.stdout is not None
    try:
        # Bounded: a worker that never answers fails the test, it never hangs the suite.
        ready, _, _ = select.select([worker.stdout], [], [], 120)
        assert ready, "the worker wrote no Started message in 120 s"
        started = message_from_dict(json.loads(worker.stdout.readline()))
        assert isinstance(started, Started) and started.runner_start_ticks is not None
        runner = (started.runner_pid, started.runner_start_ticks)
        _RUNNERS.append(runner)
        wait_file(tmp_path / "m" / "started", timeout=60)
        # What Ray does at the worker's exit: SIGKILL each direct child, then the worker.
        for child in _direct_children(worker.pid):
            if is_alive(*child):
                os.kill(child[0], signal.SIGKILL)
        worker.kill()
        worker.wait()
        assert is_alive(*runner), "the runner died with the worker"
        (tmp_path / "m" / "go").touch()
        attempt = Path(started.origin)
        wait_for((attempt / files.SEAL).is_file, "the seal", timeout=60)
        verdict = read_json(attempt / files.VERDICT)
        assert verdict["state"] == "succeeded", verdict
        assert not any(e["event"] == "signal_sent" for e in events(attempt))
    finally:
        # Whatever failed, the workload returns on its own: it only waits for "go".
        (tmp_path / "m" / "go").touch()
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stdout.close()
