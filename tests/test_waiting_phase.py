"""One answer for an attempt whose runner waits for a foreign compiler (issue 30, item 1).

Reproducer: a foreign compiler runs (``exec -a NAME sleep 60`` with NAME in
``SKGATE_COMPILER_NAMES``), then ``skgate start -- sleep 1``: the detached runner records
the attempt and waits before launch (C4: foreign compilers are waited for, never
signalled). Before this change ``status ROOT`` said "no attempts yet" (exit 2),
``status --all`` printed nothing, ``report`` "Attempts: none", ``verify`` "the runner
died, run skgate recover", ``status ATTEMPT`` "the compile is still running", and
``stop`` promised "interrupted/external". Now every read says "WAITING for 1 foreign
compiler (named: PID NAME); nothing launched yet": the in-progress phase before launch
(C2.1), a typed phase of ``in_progress``, not a sixth state.

Each test starts its own foreign process under a unique name and ends it by pid at
teardown, even on failure; the detached runner then launches ``sleep 1`` and ends, and is
waited for.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import ENV, SKGATE, events, pid_alive, run_skgate, wait_for
from skgate.model.exits import EXIT_IN_PROGRESS

pytestmark = pytest.mark.slow

WAITING = "WAITING for 1 foreign compiler (named: "
NOTHING = "nothing launched yet"


@dataclass(frozen=True)
class Foreign:
    """A foreign compiler of this test only: its pid, its name, the env that names it."""

    pid: int
    name: str
    env: dict[str, str]


@pytest.fixture
def foreign(tmp_path: Path) -> Iterator[Foreign]:
    name = f"skgate-test-foreign-{secrets.token_hex(4)}"
    proc = subprocess.Popen(["bash", "-c", f"exec -a {name} sleep 60"], cwd=tmp_path)
    env = {"SKGATE_COMPILER_NAMES": name}
    try:
        # Seen by /proc under its name before any run looks for it (no fixed sleep).
        wait_for(lambda: _argv0(proc.pid) == name, "the foreign process to exec")
        yield Foreign(proc.pid, name, env)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)  # ours, by pid (never by name)
        proc.wait(timeout=30)
        # A detached runner of this test launches its 'sleep 1' once the foreign one
        # is gone: wait for it to end, so nothing of the test is left running.
        root = tmp_path / "r"
        if (root / "attempts").is_dir():
            run_skgate("wait", str(root), "--max", "60", cwd=tmp_path, env=env, timeout=90)


def _argv0(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return None


def _start(tmp: Path, foreign: Foreign) -> Path:
    started = run_skgate(
        "start", "--root", "r", "--json", "--", "sleep", "1", cwd=tmp, env=foreign.env
    )
    assert started.returncode == 0, started
    record = json.loads(started.stdout)
    # Issue 29: start answers once the attempt is recorded; the wait is the runner's.
    assert record["phase"] == "preflight", record
    attempt = Path(record["attempt"])
    wait_for(
        lambda: any(
            e["event"] == "foreign_wait" and [b["pid"] for b in e["blockers"]] == [foreign.pid]
            for e in events(attempt)
        ),
        what="the detached runner to wait for the foreign compiler",
        timeout=60,
    )
    return attempt


def test_every_read_says_waiting_and_nothing_launched(tmp_path: Path, foreign: Foreign) -> None:
    attempt = _start(tmp_path, foreign)
    named = f"{WAITING}{foreign.pid} {foreign.name}); {NOTHING}"
    env = foreign.env

    for target in ("r", str(attempt)):
        status = run_skgate("status", target, cwd=tmp_path, env=env)
        assert status.returncode == EXIT_IN_PROGRESS, status
        assert status.stdout.startswith(named), status
        assert "still running" not in status.stdout, status
    listed = run_skgate("status", "--all", "r", cwd=tmp_path, env=env)
    assert named in listed.stdout and listed.returncode == EXIT_IN_PROGRESS, listed
    as_json = json.loads(run_skgate("status", "r", "--json", cwd=tmp_path, env=env).stdout)
    assert as_json["state"] == "in_progress", as_json
    assert as_json["extra"]["waiting"]["phase"] == "waiting_for_blockers", as_json
    assert as_json["extra"]["waiting"]["foreign"] == [{"pid": foreign.pid, "name": foreign.name}]

    report = run_skgate("report", "r", cwd=tmp_path, env=env)
    assert "Attempts: none" not in report.stdout and "- none" not in report.stdout, report
    assert f"waiting for 1 foreign compiler (named: {foreign.pid} {foreign.name})" in report.stdout
    assert "compilation is live" not in report.stdout, report
    zh = run_skgate("report", "--lang", "zh", "r", cwd=tmp_path, env=env)
    assert (
        f"等待 1 个外部编译进程（{foreign.pid} {foreign.name}）；尚未启动任何进程" in zh.stdout
    ), zh
    html = run_skgate("report", "--format", "html", "r", cwd=tmp_path, env=env)
    assert f"waiting for 1 foreign compiler (named: {foreign.pid} {foreign.name})" in html.stdout

    for target in ("r", str(attempt)):
        checked = run_skgate("verify", target, cwd=tmp_path, env=env)
        assert checked.returncode == 0, checked
        assert "recover" not in checked.stdout and "died" not in checked.stdout, checked
        assert f"WAITING: {attempt.name}: {named}" in checked.stdout, checked

    waited = run_skgate("wait", str(attempt), "--max", "1", cwd=tmp_path, env=env)
    assert waited.returncode == EXIT_IN_PROGRESS, waited
    assert waited.stdout.startswith(named), waited

    stopped = run_skgate("stop", str(attempt), "--json", cwd=tmp_path, env=env)
    record = json.loads(stopped.stdout)
    assert stopped.returncode == 0, stopped
    assert "not started: nothing ran" in record["message"], record
    assert "interrupted" not in record["message"], record
    final = run_skgate("wait", str(attempt), "--max", "30", "--json", cwd=tmp_path, env=env)
    assert json.loads(final.stdout)["state"] == "not_started", final
    assert pid_alive(foreign.pid), "the foreign compiler was signalled (C4)"


def test_run_says_whom_it_waits_for_and_preflight_is_not_clean(
    tmp_path: Path, foreign: Foreign
) -> None:
    pre = run_skgate("preflight", "--", "true", cwd=tmp_path, env=foreign.env)
    assert "preflight clean" not in pre.stdout, pre
    assert f"would WAIT for 1 foreign compiler (named: {foreign.pid} {foreign.name})" in pre.stdout

    run = subprocess.Popen(
        [*SKGATE, "run", "--root", "r", "--verdict-from", "exit-status", "--", "true"],
        cwd=tmp_path,
        env={**ENV, **foreign.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        journal = tmp_path / "r" / "attempts" / "0001" / "events.jsonl"
        wait_for(lambda: journal.is_file() and "foreign_wait" in journal.read_text(), "the wait")
        # The person is told before the wait ends: the line is on stderr already.
        os.kill(foreign.pid, signal.SIGTERM)
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    first = err.splitlines()[0]
    assert "waiting for 1 foreign compiler" in first and f"{foreign.name}[{foreign.pid}]" in first
    assert run.returncode == 0, (out, err)


async def _mcp(tmp: Path, foreign: Foreign) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in ENV.items() if k in ("PATH", "HOME")} | foreign.env
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skgate", "mcp", "--max-wait", "1"], env=env, cwd=tmp
    )
    got: dict[str, Any] = {}
    async with Client(params) as client:
        started = await client.call_tool(
            "start", {"command": ["sleep", "1"], "root": str(tmp / "r"), "cwd": str(tmp)}
        )
        attempt = json.loads(getattr(started.content[0], "text", "{}"))["attempt"]
        # Issue 29: start answers once the attempt is recorded; the wait follows.
        wait_for(
            lambda: any(e["event"] == "foreign_wait" for e in events(Path(attempt))),
            what="the detached runner to wait for the foreign compiler",
            timeout=60,
        )
        for tool, args in (("status", {}), ("stop", {"reason": "test"})):
            result = await client.call_tool(tool, {"attempt": attempt, **args})
            got[tool] = result.structured_content or json.loads(
                getattr(result.content[0], "text", "{}")
            )
    return got


def test_the_waiting_phase_is_the_protocol_s_phase() -> None:
    from skgate.model.protocol import AttemptPhase
    from skgate.model.running import Waiting

    assert Waiting().to_dict()["phase"] == AttemptPhase.WAITING_FOR_BLOCKERS.value


def test_mcp_status_and_stop_say_waiting(tmp_path: Path, foreign: Foreign) -> None:
    pytest.importorskip("mcp", reason="the optional extra skgate[mcp] is not installed")
    import anyio

    got = anyio.run(_mcp, tmp_path, foreign)
    status = got["status"]
    assert status["state"] == "in_progress", status
    assert status["extra"]["waiting"]["foreign"] == [{"pid": foreign.pid, "name": foreign.name}]
    assert "not started: nothing ran" in got["stop"]["message"], got["stop"]


def test_demo_says_whom_it_waits_for(tmp_path: Path, foreign: Foreign) -> None:
    demo = subprocess.Popen(
        [*SKGATE, "demo", "--scenario", "success", "--workdir", str(tmp_path / "demo")],
        cwd=tmp_path,
        env={**ENV, **foreign.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        journal = tmp_path / "demo" / "skgate-runs" / "attempts" / "0001" / "events.jsonl"
        wait_for(lambda: journal.is_file() and "foreign_wait" in journal.read_text(), "the wait")
        os.kill(foreign.pid, signal.SIGTERM)
        out, err = demo.communicate(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert "waiting for 1 foreign compiler" in err and f"{foreign.name}[{foreign.pid}]" in err, err
    assert demo.returncode == 0, (out, err)
