"""A foreign-compiler wait end to end: ``skgate run`` waits (never signalling), says so,
and the report shows the wait with its blockers and duration (C4, issue 13 section 5).

The blocker is a process of this test named like a compiler; it ends on its own as soon
as the attempt's journal shows the wait began (driven by the journal, not by sleeps).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import wait_for
from skgate.demo.scenarios import HookApprovals, scenario_request
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.model.request import RunRequest
from skgate.report.markdown import render_attempt_markdown
from skgate.runner.run import run_here

BLOCKER = r"""
import ctypes, glob, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
open(sys.argv[3], "w").write("up")
while not any("foreign_wait" in open(p).read() for p in glob.glob(sys.argv[2])):
    time.sleep(0.01)
"""


def test_run_waits_visibly_and_the_report_shows_the_wait(tmp_path: Path) -> None:
    name = "opc" + uuid.uuid4().hex[:8]
    root = tmp_path / "runs"
    up = tmp_path / "up"
    journal = str(root / "attempts" / "*" / "events.jsonl")
    blocker = subprocess.Popen(
        [name, "-c", BLOCKER, name, journal, str(up)], executable=sys.executable
    )
    notes: list[str] = []
    try:
        wait_for(up.exists, what="blocker started", timeout=30)
        request = RunRequest(
            argv=(sys.executable, "-c", "pass"),
            cwd=str(tmp_path),
            root=str(root),
            jobs="1",
            compiler_names=(name,),
            lease_timeout=120.0,
            quiet=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
            unset_env=tuple(k for k in os.environ if k.startswith("PYTHON")),
        )
        verdict = run_here(request, None, notes.append)
    finally:
        blocker.wait(timeout=60)
    # No [summary] line from 'python -c pass': the verdict is unknown, but it launched.
    assert verdict.state is not State.NOT_STARTED
    assert blocker.returncode == 0  # it ended on its own: never signalled (C4)
    assert f"{name}[{blocker.pid}]" in notes[0]
    assert "never signalled (C4)" in notes[0]
    assert "--foreign refuse" in notes[0]
    assert verdict.attempt is not None
    text = (Path(verdict.attempt) / "events.jsonl").read_text()
    events = [json.loads(x) for x in text.splitlines()]
    names = [e["event"] for e in events]
    assert names.index("foreign_wait") < names.index("foreign_wait_end") < names.index("launched")
    en = render_attempt_markdown(Path(verdict.attempt), lang=Lang.EN)
    assert "waiting for foreign compilers (never signalled, C4)" in en
    assert f"blockers: {name}[{blocker.pid}]" in en
    assert "every blocker ended on its own" in en
    assert en.count("preflight checked") <= 1
    zh = render_attempt_markdown(Path(verdict.attempt), lang=Lang.ZH)
    assert "等待外部编译进程（从不发送信号，C4）" in zh
    assert f"阻塞进程：{name}[{blocker.pid}]" in zh


def test_demo_takes_the_hook_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from skgate.cli.main import main

    req = scenario_request(
        "success", tmp_path, hooks=HookApprovals(("a" * 64,), str(tmp_path / "b.json"), True)
    )
    assert (req.approved_hooks, req.hook_baseline, req.strict_hooks) == (
        ("a" * 64,),
        str(tmp_path / "b.json"),
        True,
    )
    # Bad input is refused before anything runs (exit 2, one line).
    code = main(["demo", "--workdir", str(tmp_path / "w"), "--approve-hook", "xyz"])
    err = capsys.readouterr().err
    assert code == 2
    assert "64 hex" in err
    assert main(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--strict-hooks" in out and "--hook-baseline" in out and "--approve-hook" in out


def test_a_wait_without_anyone_to_tell_sleeps_instead_of_spinning() -> None:
    """A runner with no notify (a Ray arm's) waited with a progress time left in the
    past: every later wait was a zero-timeout poll, a busy loop that starved the compile
    it waited for on a 2-core CI host. The wait must sleep: little CPU for its wall time."""
    from skgate.preflight import foreign

    name = f"skgate-fc-{os.getpid()}"
    blocker = subprocess.Popen([name, "30"], executable="/bin/sleep")
    try:
        keys = foreign._records({}, (name,))
        assert len(keys) == 1
        cpu0, wall0 = time.process_time(), time.monotonic()
        outcome = foreign._wait(keys, {}, (name,), deadline=wall0 + 1.5, notify=None, every=0.05)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    finally:
        blocker.kill()  # our own child, by its handle
        blocker.wait()
    assert outcome == "timed_out" and wall >= 1.4
    assert cpu < 0.5 * wall, (cpu, wall)  # before the fix: cpu close to wall
