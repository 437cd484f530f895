"""start / wait / stop with real processes: runs that outlive their caller (issue 13).

Every workload waits for a marker file the test writes, so each assertion about a live
attempt is made while the attempt is provably live; nothing sleeps for a fixed time.
Processes the tests start themselves (callers, foreign compilers) are ended by pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    ENV,
    POLL_INTERVAL,
    SKGATE,
    Reaper,
    events,
    pid_alive,
    read_json,
    run_skgate,
    script,
    start_skgate,
    wait_file,
    wait_for,
)
from skgate.evidence.digest import sha256_file
from skgate.evidence.stops import SCHEMA_STOP_REQUEST, stop_pending
from skgate.proc.observe import is_alive, read_stat

SUMMARY_OK = "[summary] stage=compile inputs=1 succeeded=1 failed=0"

#: A workload that marks it started, spawns a child in its group, waits for "go", then
#: returns naturally with a summary. The child ignores SIGTERM (so only the grace's
#: SIGKILL ends it) and exits on its own when "go" appears.
WORKLOAD = f"""\
import os, signal, subprocess, sys, time
from pathlib import Path
M = Path(sys.argv[1])
child = subprocess.Popen([sys.executable, "-c", '''
import signal, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, signal.SIG_IGN)
M = Path(sys.argv[1])
while not (M / "go").exists():
    time.sleep(0.01)
''', str(M)])
tmp = M / "started.tmp"
tmp.write_text(f"{{os.getpid()}} {{child.pid}}\\n")
tmp.rename(M / "started")
while not (M / "go").exists():
    time.sleep(0.01)
child.wait()
print({SUMMARY_OK!r})
"""


def valid(name: str, data: Any) -> Any:
    """``data`` as the shipped schema ``name`` documents it (src/skgate/schemas)."""
    jsonschema = pytest.importorskip("jsonschema")
    text = resources.files("skgate").joinpath(f"schemas/{name}.json").read_text("utf-8")
    jsonschema.Draft202012Validator(json.loads(text)).validate(data)
    return data


def workload(tmp: Path) -> list[str]:
    markers = tmp / "m"
    markers.mkdir(exist_ok=True)
    return [*script(tmp, "work.py", WORKLOAD), str(markers)]


def started_pids(tmp: Path) -> tuple[int, int]:
    leader, child = wait_file(tmp / "m" / "started").split()
    return int(leader), int(child)


#: Detached runners the tests of this module started: (markers dir, pid, start ticks).
_DETACHED: list[tuple[Path, int, int]] = []


@pytest.fixture(autouse=True)
def end_detached_runners() -> Iterator[None]:
    """A failed test must not leave a detached runner and its workload alive (issue 21).

    At teardown the workload is let go (its "go" marker: a natural return, nothing
    signalled), and a runner still alive after a bound is ended by pid, checked by its
    start time so a reused pid is never hit.
    """
    yield
    while _DETACHED:
        markers, pid, ticks = _DETACHED.pop()
        markers.mkdir(exist_ok=True)
        (markers / "go").write_text("\n")
        deadline = time.monotonic() + 60
        while is_alive(pid, ticks) and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
        if is_alive(pid, ticks):
            os.kill(pid, signal.SIGKILL)


def start(tmp: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = run_skgate(
        "start", "--root", "r", "--json", *extra, "--", *workload(tmp), cwd=tmp, env=env
    )
    assert res.returncode == 0, res.stdout + res.stderr
    started: dict[str, Any] = valid("start", json.loads(res.stdout))
    st = read_stat(int(started["runner_pid"]))
    if st is not None:
        _DETACHED.append((tmp / "m", st.pid, st.start_ticks))
    return started


def waiting_for_blockers(att: Path) -> dict[str, Any]:
    """The attempt's ``foreign_wait`` record, once its detached runner wrote it (``start``
    returns once the attempt is recorded, before preflight: issue 29)."""
    return wait_for(  # type: ignore[no-any-return]
        lambda: next((e for e in events(att) if e["event"] == "foreign_wait"), None),
        what="the detached runner to wait for the foreign compiler",
        timeout=60,
    )


def foreign_compiler(reaper: Reaper, name: str) -> subprocess.Popen[Any]:
    """A compiler-named process this attempt does not own (its own session)."""
    foreign = reaper.popen(
        subprocess.Popen(
            [name, "-c", "import signal; signal.pause()"],
            executable=sys.executable,
            start_new_session=True,
        )
    )
    wait_for(lambda: pid_alive(foreign.pid), "the foreign compiler")
    return foreign


def identity(pid: int) -> tuple[int, int, int, int] | None:
    st = read_stat(pid)
    return None if st is None else (st.pid, st.start_ticks, st.pgid, st.sid)


def test_start_outlives_the_callers_process_group(tmp_path: Path, reaper: Reaper) -> None:
    # The caller is an agent's tool: a process group that start runs in, killed whole
    # (SIGKILL) right after start returns, as a tool timeout does.
    out = tmp_path / "start.json"
    caller = reaper.popen(
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import subprocess, sys, signal\n"
                "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
                f"open({str(out)!r} + '.tmp', 'w').write(r.stdout)\n"
                "import os; os.rename(" + repr(str(out)) + " + '.tmp', " + repr(str(out)) + ")\n"
                "signal.pause()\n",
                *SKGATE,
                "start",
                "--root",
                "r",
                "--json",
                "--",
                *workload(tmp_path),
            ],
            cwd=tmp_path,
            env=ENV,
            start_new_session=True,
        )
    )
    started = json.loads(wait_file(out))
    # Issue 29: answered once the attempt is recorded; the launch follows in the runner.
    assert started["state"] == "in_progress" and started["phase"] == "preflight"
    leader, child = started_pids(tmp_path)
    runner = started["runner_pid"]
    r_id, c_id = identity(runner), identity(caller.pid)
    assert r_id is not None and c_id is not None
    # Detached: another session and group than the caller, and not the caller's child.
    assert r_id[3] != c_id[3] and r_id[2] != c_id[2]
    assert read_stat(runner) is not None and read_stat(runner).ppid != caller.pid  # type: ignore[union-attr]
    os.killpg(caller.pid, signal.SIGKILL)
    caller.wait(timeout=30)
    assert pid_alive(runner) and pid_alive(leader) and pid_alive(child)
    (tmp_path / "m" / "go").write_text("\n")
    # A third process waits: exit 0 on the natural return.
    res = run_skgate("wait", started["attempt"], "--quiet", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    verdict = read_json(Path(started["attempt"]) / "verdict.json")
    assert verdict["state"] == "succeeded" and verdict["natural_return"] is True
    assert (Path(started["attempt"]) / "seal.json").is_file()


def test_start_returns_while_the_workload_runs_and_keeps_no_caller_pipe(
    tmp_path: Path,
) -> None:
    # run_skgate captures stdout/stderr through pipes and returns only at their end of
    # file: if the detached runner kept a caller's descriptor, this would hang until
    # the workload ended (it waits for "go", which comes only after the return).
    started = start(tmp_path)
    leader, _ = started_pids(tmp_path)
    assert pid_alive(leader)
    assert not (Path(started["attempt"]) / "verdict.json").exists()
    (tmp_path / "m" / "go").write_text("\n")
    assert run_skgate("wait", started["attempt"], "--quiet", cwd=tmp_path).returncode == 0


@pytest.mark.slow
def test_bounded_wait_exits_6_and_touches_nothing(tmp_path: Path) -> None:
    started = start(tmp_path)
    att = Path(started["attempt"])
    leader, child = started_pids(tmp_path)
    before = {pid: identity(pid) for pid in (leader, child, started["runner_pid"])}
    t0 = time.monotonic()
    res = run_skgate("wait", str(att), "--max", "0.5", "--json", cwd=tmp_path)
    took = time.monotonic() - t0
    assert res.returncode == 6, res.stdout + res.stderr
    assert took >= 0.5
    out = valid("wait", json.loads(res.stdout))
    assert out["outcome"] == "in_progress" and out["state"] == "in_progress"
    assert 0 < out["deadline_remaining_s"] <= 10800
    assert 0.5 <= out["waited_s"] < took
    assert "elapsed" in res.stderr  # the progress line
    # The process table: the same processes (pid and start time), alive, unsignalled.
    after = {pid: identity(pid) for pid in before}
    assert after == before and all(pid_alive(p) for p in before)
    assert not [e for e in events(att) if e["event"].startswith("signal")]
    (tmp_path / "m" / "go").write_text("\n")
    assert run_skgate("wait", str(att), "--quiet", cwd=tmp_path).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["removed", "replaced", "copied"])
def test_an_attempt_removed_while_it_runs_is_waited_for_and_stopped(
    tmp_path: Path, how: str
) -> None:
    """Its directory removed under its live runner (issue 28; tests/evidence/
    test_removed_runner.py). On 5312471 ``wait`` answered unknown at once, ``stop`` said
    ``runner_gone``, and the runner itself died at its next manifest write, leaving the
    child that ignores SIGTERM running unsupervised. Now the runner the ledger's start
    entry names is waited for and stopped, through itself alone, and it supervises its
    command to the end: the SIGKILL of the grace included. ``copied``: another root's
    succeeded attempt put in its place (on d18624a, read SUCCEEDED while the command ran,
    and its seal chained by the runner at its end; tests/evidence/test_copied_in.py)."""
    if how == "copied":
        other = run_skgate(
            "run",
            "--root",
            "r1",
            "--quiet",
            "--verdict-from",
            "exit-status",
            "--",
            "true",
            cwd=tmp_path,
        )
        assert other.returncode == 0, other.stdout + other.stderr
    started = start(tmp_path, "--grace", "0.5")
    att = Path(started["attempt"])
    leader, child = started_pids(tmp_path)
    first = json.loads((tmp_path / "r" / "ledger.jsonl").read_text().splitlines()[0])
    assert first["event"] == "start" and first["runner"]["pid"] == started["runner_pid"]
    shutil.rmtree(att)
    if how == "replaced":
        att.mkdir()  # ``rm -rf`` then ``mkdir``: a directory without its evidence
    copy = {}
    if how == "copied":  # ``rm -rf`` then ``cp -a``: another attempt's evidence
        shutil.copytree(tmp_path / "r1" / "attempts" / "0001", att, symlinks=True)
        copy = {f.name: f.read_bytes() for f in att.iterdir()}
    # status says the run goes on: an unknown of now is never taken for its end.
    now = run_skgate("status", "r", cwd=tmp_path)
    assert now.returncode == 5, now.stdout + now.stderr
    runs = f"its runner (pid {started['runner_pid']}) still runs, and its command may too"
    assert now.stdout.splitlines()[0].endswith(runs)
    if how == "copied":
        assert "; another attempt's evidence stands in its place" in now.stdout
        # No command acts on the copy (on 5057472 ``retry`` ran the copy's command, its
        # runner's liveness checked by the copy's controls, after moving the working
        # directory's outputs into it while this run went on).
        outputs = tmp_path / "static_kernel_compile_outputs"
        outputs.mkdir(exist_ok=True)
        (outputs / "this-run.txt").write_text("in use\n")
        retried = run_skgate("retry", str(att), cwd=tmp_path)
        assert retried.returncode == 2, retried.stdout + retried.stderr
        assert "another attempt's evidence stands in its place" in retried.stderr
        assert (outputs / "this-run.txt").read_text() == "in use\n"
        assert not (att / "scene").exists()
        assert len(list((tmp_path / "r1" / "attempts").iterdir())) == 1  # nothing run
    bounded = run_skgate("wait", "r", "--max", "0.5", "--json", cwd=tmp_path)
    assert bounded.returncode == 6, bounded.stdout + bounded.stderr
    out = valid("wait", json.loads(bounded.stdout))
    assert (out["outcome"], out["state"]) == ("in_progress", "unknown")
    assert "still runs" in bounded.stderr
    assert pid_alive(leader) and pid_alive(child)  # waiting touched nothing (C1)
    stop = run_skgate("stop", "r", "--json", cwd=tmp_path)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    stopped = valid("stop", json.loads(stop.stdout))
    assert stopped["action"] == "requested"
    # No journal is left to acknowledge it: stop returned once the runner had ended.
    assert stopped["message"].endswith("how it ended: its command ended by SIGTERM")
    # SIGTERM to the runner's own group, then (the child ignores it) SIGKILL after the
    # grace: the runner ends them, and wait returns once the runner has ended.
    done = run_skgate("wait", "r", cwd=tmp_path)
    assert done.returncode == 5, done.stdout + done.stderr
    assert done.stdout.startswith("UNKNOWN: evidence removed: the attempt directory is gone")
    assert not pid_alive(leader) and not pid_alive(child)
    assert not (tmp_path / "m" / "go").exists()  # ended by the stop, not by a natural return
    last = json.loads((tmp_path / "r" / "ledger.jsonl").read_text().splitlines()[-1])
    assert (last["event"], last["state"]) == ("end", "unknown")
    assert "was removed while its runner ran" in last["removed"]
    # The leader ended by the SIGTERM the runner sent its group (its default disposition).
    assert last["ended"] == {"timeout_fired": False, "exit_status": None, "exit_signal": 15}
    said = "its runner recorded in the root's ledger how it ended: its command ended by SIGTERM"
    assert done.stdout.splitlines()[0].endswith(said)
    again = run_skgate("stop", "r", cwd=tmp_path)
    assert again.returncode == 5 and "nothing was signalled" in again.stdout
    if how == "replaced":
        assert list(att.iterdir()) == []  # the runner wrote nothing into it, nor did stop
    if how == "copied":
        assert {f.name: f.read_bytes() for f in att.iterdir()} == copy  # nothing written
        assert last["seal_sha256"] is None  # the copy's seal is never chained as its own
        verify = run_skgate("verify", "r", cwd=tmp_path)
        assert verify.returncode == 1 and "holds another attempt's evidence" in verify.stdout


@pytest.mark.slow
def test_a_runner_whose_directory_is_removed_still_enforces_its_timeout(
    tmp_path: Path,
) -> None:
    """Nobody asks it anything: the frozen timeout still fires (C2.4), and the grace's
    SIGKILL still reaches the child that ignores SIGTERM; the run ends unknown (exit 5),
    never with a crash or an orphan."""
    opts = ("--root", "r", "--timeout", "3", "--grace", "0.5")
    run = start_skgate("run", *opts, "--", *workload(tmp_path), cwd=tmp_path)
    try:
        leader, child = started_pids(tmp_path)
        shutil.rmtree(tmp_path / "r" / "attempts" / "0001")
        out, err = run.communicate(timeout=60)
        assert run.returncode == 5, out + err
        assert out.startswith("UNKNOWN: evidence removed: the attempt directory is gone")
        assert out.splitlines()[0].endswith("how it ended: the frozen timeout fired")
        assert "the frozen timeout fired" in err and "internal error" not in err
        assert "Traceback" not in err
        # The timeout ended them: "go" (their natural return) is only written below.
        assert not pid_alive(leader) and not pid_alive(child)
    finally:
        # Whatever failed above, nothing of ours outlives the test: the workload's own
        # natural return first, then the runner, by its pid.
        (tmp_path / "m" / "go").write_text("\n")
        if run.poll() is None:
            run.kill()
        run.communicate()


@pytest.mark.slow
def test_stop_interrupts_through_the_runner_only(tmp_path: Path, reaper: Reaper) -> None:
    foreign = reaper.popen(
        subprocess.Popen(
            [sys.executable, "-c", "import signal; signal.pause()"], start_new_session=True
        )
    )
    started = start(tmp_path, "--grace", "0.5")
    att = Path(started["attempt"])
    leader, child = started_pids(tmp_path)
    ids = [(p, read_stat(p).start_ticks) for p in (leader, child)]  # type: ignore[union-attr]
    res = run_skgate("stop", str(att), "--reason", "agent budget spent", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert valid("stop", json.loads(res.stdout))["action"] == "requested"
    res = run_skgate("wait", str(att), "--quiet", "--json", cwd=tmp_path)
    assert res.returncode == 4, res.stdout + res.stderr
    verdict = read_json(att / "verdict.json")
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "external")
    assert "C2.4: stopped through skgate stop: agent budget spent" in verdict["reasons"]
    evs = events(att)
    sent = [e for e in evs if e["event"] == "signal_sent" and e.get("delivered")]
    # SIGTERM to the own group, then (the child ignores it) SIGKILL after the grace.
    assert [e["name"] for e in sent] == ["SIGTERM", "SIGKILL"]
    assert all(e["target"] == f"process group {leader}" for e in sent)
    received = [e for e in evs if e["event"] == "signal_received"]
    assert received[0]["stop_request"]["reason"] == "agent budget spent"
    assert not any(is_alive(p, t) for p, t in ids), "owned processes outlived the stop"
    assert foreign.poll() is None and pid_alive(foreign.pid), "a foreign process was hit"

    # stop on a finished attempt changes nothing: same files, same bytes, no request.
    files_before = {p.name: sha256_file(p) for p in att.iterdir()}
    # Issue 21 s4: the request was removed when the attempt ended.
    assert not (tmp_path / "r" / "stop-requests" / f"{att.name}.stop.json").exists()
    res = run_skgate("stop", str(att), "--reason", "again", "--json", cwd=tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout)["action"] == "already_final"
    assert {p.name: sha256_file(p) for p in att.iterdir()} == files_before
    assert not (tmp_path / "r" / "stop-requests" / f"{att.name}.stop.json").exists()
    assert run_skgate("verify", "r", cwd=tmp_path).returncode == 0


def test_a_dead_runner_is_never_signalled_and_wait_says_so_at_once(
    tmp_path: Path, reaper: Reaper
) -> None:
    proc = reaper.popen(
        subprocess.Popen(
            [*SKGATE, "run", "--root", "r", "--quiet", "--", *workload(tmp_path)],
            cwd=tmp_path,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    leader, child = started_pids(tmp_path)
    reaper.add(leader)
    reaper.add(child)
    proc.kill()  # the runner dies without a verdict; its workload lives on (reparented)
    proc.wait()
    att = tmp_path / "r" / "attempts" / "0001"
    t0 = time.monotonic()
    res = run_skgate("wait", str(att), "--quiet", "--json", cwd=tmp_path)
    assert res.returncode == 5, res.stdout + res.stderr
    assert valid("wait", json.loads(res.stdout))["outcome"] == "runner_gone"
    assert time.monotonic() - t0 < 20
    res = run_skgate("stop", str(att), "--reason", "x", cwd=tmp_path)
    assert res.returncode == 5, res.stdout + res.stderr
    assert "nothing was signalled" in res.stdout
    assert pid_alive(leader) and pid_alive(child)
    assert not (tmp_path / "r" / "stop-requests").exists()


def test_a_foreign_compiler_is_waited_for_by_the_detached_runner(
    tmp_path: Path, reaper: Reaper
) -> None:
    # A name nothing else on a shared machine uses, so only this test's process blocks.
    name = f"opc-agents-{os.getpid()}"
    env = {"SKGATE_COMPILER_NAMES": name}
    foreign = foreign_compiler(reaper, name)
    t0 = time.monotonic()
    started = start(tmp_path, env=env)
    assert time.monotonic() - t0 < 30  # at once: not after the 600 s lease timeout
    assert (started["state"], started["phase"]) == ("in_progress", "preflight")
    att = Path(started["attempt"])
    waiting_for_blockers(att)
    res = run_skgate("status", str(att), "--json", cwd=tmp_path, env=env)
    assert res.returncode == 6, res.stdout + res.stderr
    status = json.loads(res.stdout)
    assert status["state"] == "in_progress"
    assert any("waiting for blockers" in r and f"[{foreign.pid}]" in r for r in status["reasons"])
    waits = [e for e in events(att) if e["event"] == "foreign_wait"]
    assert [p["pid"] for p in waits[0]["blockers"]] == [foreign.pid]
    # The runner's own log names the blocker (the detached runner's stderr).
    assert f"[{foreign.pid}]" in (att / "runner.log").read_text()
    assert not (tmp_path / "m" / "started").exists(), "launched while a blocker lived"
    foreign.terminate()  # the test's own process, by its handle; never by the gate
    foreign.wait(timeout=30)
    started_pids(tmp_path)
    (tmp_path / "m" / "go").write_text("\n")
    assert run_skgate("wait", str(att), "--quiet", cwd=tmp_path, env=env).returncode == 0


def test_event_streams_are_the_journal_then_the_verdict(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(
        (Path(__file__).parent.parent / "src/skgate/schemas/event.json").read_text()
    )
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "go").write_text("\n")
    res = run_skgate(
        "run", "--root", "r", "--events", "jsonl", "--", *workload(tmp_path), cwd=tmp_path
    )
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    for line in lines:
        jsonschema.validate(line, schema)
    att = tmp_path / "r" / "attempts" / "0001"
    journal = events(att)
    assert lines[:-1] == journal
    assert [e["event"] for e in lines][:1] == ["created"]
    assert {"launched", "leader_exited", "tree_ended", "finished"} <= {e["event"] for e in lines}
    assert lines[-1]["event"] == "verdict" and lines[-1]["state"] == "succeeded"
    assert SUMMARY_OK in res.stderr  # the workload's output goes to stderr, not the stream
    res = run_skgate("wait", str(att), "--follow", "--quiet", cwd=tmp_path)
    followed = [json.loads(x) for x in res.stdout.splitlines()]
    assert followed[:-1] == journal and followed[-1]["verdict"]["state"] == "succeeded"


def test_the_library_api_starts_without_forking_a_threaded_caller(tmp_path: Path) -> None:
    from skgate import api

    (tmp_path / "m").mkdir()
    started = api.start(
        workload(tmp_path),
        root=tmp_path / "r",
        cwd=tmp_path,
        env={k: ENV[k] for k in ("PATH", "SKGATE_COMPILER_NAMES")},
    )
    assert started.state == "in_progress"
    first = api.wait(started.attempt, max_seconds=0)
    assert first.exit_code == 6
    (tmp_path / "m" / "go").write_text("\n")
    result = api.wait(started.attempt, max_seconds=60)
    assert (result.outcome, result.exit_code) == ("final", 0)
    assert api.stop(started.attempt, "late").action == "already_final"


def test_stop_while_waiting_for_a_blocker_launches_nothing(tmp_path: Path, reaper: Reaper) -> None:
    name = f"opc-agents-stop-{os.getpid()}"
    env = {"SKGATE_COMPILER_NAMES": name}
    foreign = foreign_compiler(reaper, name)
    started = start(tmp_path, env=env)
    att = Path(started["attempt"])
    waiting_for_blockers(att)
    res = run_skgate("stop", str(att), "--reason", "not today", "--json", cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_skgate("wait", str(att), "--quiet", cwd=tmp_path, env=env)
    assert res.returncode == 3, res.stdout + res.stderr
    verdict = read_json(att / "verdict.json")
    assert verdict["state"] == "not_started"
    assert any("through skgate stop: not today" in r for r in verdict["reasons"])
    assert not (tmp_path / "m" / "started").exists()
    assert foreign.poll() is None and pid_alive(foreign.pid)


def sig_ignored(pid: int, signum: int) -> bool:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("SigIgn:"):
            return bool(int(row.split()[1], 16) >> (signum - 1) & 1)
    raise AssertionError("no SigIgn line")


def test_nohup_start_keeps_the_inherited_sighup_ignore(tmp_path: Path, reaper: Reaper) -> None:
    # Detaching touches no signal disposition: under nohup the runner still ignores
    # SIGHUP (seen while it waits for a blocker, before the supervisor takes over).
    name = f"opc-agents-nohup-{os.getpid()}"
    env = {**ENV, "SKGATE_COMPILER_NAMES": name}
    foreign = foreign_compiler(reaper, name)
    res = subprocess.run(
        ["nohup", *SKGATE, "start", "--root", "r", "--json", "--", *workload(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    started = valid("start", json.loads(res.stdout))
    waiting_for_blockers(Path(started["attempt"]))
    assert sig_ignored(started["runner_pid"], signal.SIGHUP)
    foreign.terminate()
    foreign.wait(timeout=30)
    started_pids(tmp_path)
    (tmp_path / "m" / "go").write_text("\n")
    res = run_skgate("wait", started["attempt"], "--quiet", cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_compiler_stage_is_announced_in_the_stream_with_its_inputs(tmp_path: Path) -> None:
    # A stand-in op_compiler under a name only this test uses (the compiler names decide
    # what a stage is, and which processes are foreign): argv[0] is that name, -p its
    # input directory with three op JSONs.
    name = f"op_compiler-agents-{os.getpid()}"
    params = tmp_path / "params"
    params.mkdir()
    for i in range(3):
        (params / f"op{i}.json").write_text("{}")
    body = (
        "import subprocess, sys\n"
        f"subprocess.run([{name!r}, '-c', 'import time; time.sleep(0.3)', "
        f"'-p', {str(params)!r}, '-o', 'out'], executable=sys.executable, check=True)\n"
    )
    res = run_skgate(
        "run",
        "--root",
        "r",
        "--events",
        "jsonl",
        "--scan-interval",
        "0.05",
        "--",
        *script(tmp_path, "stage.py", body),
        cwd=tmp_path,
        env={"SKGATE_COMPILER_NAMES": name},
    )
    lines = [valid("event", json.loads(x)) for x in res.stdout.splitlines()]
    seen = [e for e in lines if e["event"] == "stage_seen"]
    assert [(e["inputs"], e["params_dir"]) for e in seen] == [(3, str(params))], res.stderr


def test_start_names_the_attempt_when_its_runner_dies_before_reporting(tmp_path: Path) -> None:
    """Issue 21 s4: the runner's early ``recorded`` line, with no reply after it, means
    it died after recording an attempt: say which, with the unfinished exit code (5)."""
    from skgate.api.reply import read_started
    from skgate.model.errors import UnfinishedError
    from skgate.model.request import RunRequest

    att = tmp_path / "r" / "attempts" / "0001"
    request = RunRequest(argv=("true",), root=str(tmp_path / "r"), cwd=str(tmp_path))
    r, w = os.pipe()
    os.write(w, (json.dumps({"recorded": str(att)}) + "\n").encode())
    os.close(w)
    with pytest.raises(UnfinishedError) as got:
        read_started(r, request)
    assert got.value.exit_code == 5
    assert f"after it recorded {att}" in str(got.value)


def test_a_stop_reason_stays_on_one_line(tmp_path: Path, reaper: Reaper) -> None:
    """``skgate stop --reason $'x\\n  - C2.2: ...'`` printed a second line in status and
    the report that read like one of skgate's reasons (and an escape recoloured the
    terminal). Given so, it is refused on one line, exit 2, nothing requested; a request
    file written by hand is read with its control characters escaped."""
    started = start(tmp_path, "--grace", "0.5")
    att = Path(started["attempt"])
    hostile = "budget\n  - C2.2: the command returned naturally\x1b[31m"
    res = run_skgate("stop", str(att), "--reason", hostile, cwd=tmp_path)
    assert res.returncode == 2, res
    assert res.stderr.count("\n") == 1 and "give it on one line" in res.stderr, res.stderr
    request = tmp_path / "r" / "stop-requests" / f"{att.name}.stop.json"
    assert not request.exists()
    request.parent.mkdir(exist_ok=True)
    request.write_text(json.dumps({"schema": SCHEMA_STOP_REQUEST, "reason": hostile}))
    assert stop_pending(att) == {
        "reason": "budget\\n  - C2.2: the command returned naturally\\x1b[31m",
        "requested_by_pid": None,
        "requested_at": None,
    }
    request.unlink()
    res = run_skgate("stop", str(att), "--reason", "done", cwd=tmp_path)
    assert res.returncode == 0, res
    assert run_skgate("wait", str(att), "--quiet", cwd=tmp_path).returncode == 4
