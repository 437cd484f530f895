"""``recover --adopt`` keeps C4 as ``run`` does, and status is never final while an owned
process lives (issue 28 s1, s2, s3).

The reproducers of the issue, each with its own compiler name (a TERM-ignoring
``skg-adopt-opc``) so that no other user's compiler is ever this test's:

* s1: a workload that does ``setsid bash -c 'sleep 300' &``; the runner is SIGKILLed and
  ``recover --adopt`` runs past the deadline. The adopter sent SIGTERM to the escape;
  ``run`` never signals one (C4: watched and reported, never signalled).
* s2: during the grace (after the deadline, or after an external SIGTERM) a
  TERM-ignoring opc lives, and ``status`` already said interrupted (exit 4).
* s3: without a cgroup, a child forked after the runner died was invisible: ``status``
  said unknown, ``recover`` sealed under it, ``recover --adopt`` signalled only the
  leader. ``SKGATE_OWNERSHIP_SOURCES=events,scan`` is what a non-root user has.

Every wait is on a marker file or a journal record, never a fixed sleep; every process
the test makes is ended by pid and start time at teardown (the ``reaper``).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from conftest import Reaper, events, pid_alive, run_skgate, start_skgate, wait_file, wait_for
from skgate.evidence import files

OPC = "skg-adopt-opc"
ENV = {"SKGATE_COMPILER_NAMES": OPC}

#: A compiler that ignores SIGTERM (only SIGKILL ends it), with our own name as argv[0].
STUBBORN = (
    f"(trap '' TERM; exec -a {OPC} python3 -c "
    "'import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    'open("opc.tmp", "w").write(f"{os.getpid()}\\n"); os.rename("opc.tmp", "opc.pid"); '
    "time.sleep(300)') &\n"
)

#: s1: an escape (its own session) beside a TERM-ignoring opc in the group.
ESCAPE_WORKLOAD = (
    "setsid bash -c 'echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 300' &\n"
    + STUBBORN
    + "exec sleep 300\n"
)

#: s3: nothing is forked until ``go`` exists (the runner is dead by then); the leader
#: then ends, and only the late child lives.
LATE_CHILD_WORKLOAD = (
    "while [ ! -e go ]; do sleep 0.05; done\n"
    + STUBBORN
    + "while [ ! -e opc.pid ]; do sleep 0.05; done\n"
    "exit 0\n"
)


def _sent(attempt: Path) -> list[dict[str, Any]]:
    return [e for e in events(attempt) if e.get("event") == "signal_sent"]


def _names(attempt: Path) -> list[str]:
    return [str(e.get("event")) for e in events(attempt)]


def _launched(attempt: Path) -> dict[str, Any]:
    return next(e for e in events(attempt) if e.get("event") == "launched")


def _in_procs(attempt: Path, pid: int) -> bool:
    try:
        text = (attempt / files.PROCS).read_text()
    except FileNotFoundError:
        return False
    return any(json.loads(line).get("pid") == pid for line in text.splitlines() if line)


def _start(work: Path, reaper: Reaper, body: str, *options: str, env: dict[str, str]) -> Path:
    (work / "wl.sh").write_text(body)
    reaper.popen(
        start_skgate(
            "run", "--root", "r", "--quiet", *options, "--", "bash", "wl.sh",
            cwd=work, env=env,
        )
    )  # fmt: skip
    attempt = work / "r" / "attempts" / "0001"
    wait_for((attempt / files.CONTROL).exists, "control.json", timeout=30)
    return attempt


def _kill_runner(attempt: Path) -> None:
    runner = json.loads((attempt / files.CONTROL).read_text())["runner"]["pid"]
    os.kill(runner, signal.SIGKILL)
    wait_for(lambda: not pid_alive(runner), "the runner to die")


@pytest.mark.slow
def test_adopt_signals_only_the_own_group_never_an_escape(tmp_path: Path, reaper: Reaper) -> None:
    work = tmp_path / "w"
    work.mkdir()
    attempt = _start(work, reaper, ESCAPE_WORKLOAD, "--timeout", "8", "--grace", "6", env=ENV)
    escape = reaper.add(int(wait_file(work / "esc.pid")))
    opc = reaper.add(int(wait_file(work / "opc.pid")))
    wait_for(lambda: _in_procs(attempt, escape) and _in_procs(attempt, opc), "both on record")
    leader = reaper.add(_launched(attempt)["pid"])  # ended at teardown, even on failure
    _kill_runner(attempt)

    adopter = reaper.popen(start_skgate("recover", "--adopt", str(attempt), cwd=work, env=ENV))
    wait_for(
        lambda: any(e["name"] == "SIGTERM" for e in _sent(attempt)),
        "the adopter's SIGTERM at the frozen deadline",
        timeout=60,
    )
    # s2: the opc ignores SIGTERM and lives through the grace: not final yet (C2.1).
    assert pid_alive(opc)
    status = run_skgate("status", str(attempt), cwd=work, env=ENV)
    assert status.returncode == 6, status
    assert status.stdout.startswith("IN PROGRESS"), status.stdout

    adopter.communicate(timeout=60)
    sent = _sent(attempt)
    # s1: the escape is never signalled, by neither signal (C4).
    assert escape not in {e.get("pid") for e in sent}, sent
    assert pid_alive(escape)
    # The own group only, TERM then KILL after the grace (the runner's own policy).
    assert {e["target"] for e in sent} == {f"process group {leader}"}, sent
    assert [e["name"] for e in sent if e.get("pid") == opc] == ["SIGTERM", "SIGKILL"], sent
    assert not pid_alive(opc)
    names = _names(attempt)
    assert names.index("adopted") < names.index("timeout") < names.index("signal_sent")
    ended = next(e for e in events(attempt) if e["event"] == "adopted_tree_ended")
    assert ended["how"] == "deadline" and ended["still_alive"] == [escape], ended


@pytest.mark.slow
def test_status_is_in_progress_during_the_grace_of_a_stop_signal(
    tmp_path: Path, reaper: Reaper
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    attempt = _start(work, reaper, STUBBORN + "wait\n", "--grace", "60", env=ENV)
    runner_proc = reaper.procs[-1]
    opc = reaper.add(int(wait_file(work / "opc.pid")))
    runner_proc.send_signal(signal.SIGTERM)
    wait_for(lambda: _sent(attempt), "the SIGTERM to the group")
    assert pid_alive(opc)  # it ignores SIGTERM: the grace runs

    status = run_skgate("status", str(attempt), cwd=work, env=ENV)
    assert status.returncode == 6, status
    assert "being stopped" in status.stdout, status.stdout
    waited = run_skgate("wait", "--max", "0.2", "--json", str(attempt), cwd=work, env=ENV)
    assert waited.returncode == 6, waited
    assert json.loads(waited.stdout)["state"] == "in_progress", waited.stdout

    runner_proc.send_signal(signal.SIGTERM)  # a second one: SIGKILL now (C2.4)
    _, err = runner_proc.communicate(timeout=60)
    assert runner_proc.returncode == 4
    # The group was signalled: the runner never says its processes are "never signalled".
    assert "never signalled" not in err, err
    final = run_skgate("status", str(attempt), cwd=work, env=ENV)
    assert final.returncode == 4 and final.stdout.startswith("INTERRUPTED"), final


@pytest.mark.slow
def test_without_a_cgroup_a_child_forked_after_the_runner_died_is_owned(
    tmp_path: Path, reaper: Reaper
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    env = {**ENV, "SKGATE_OWNERSHIP_SOURCES": "events,scan"}
    attempt = _start(work, reaper, LATE_CHILD_WORKLOAD, "--timeout", "12", "--grace", "1", env=env)
    wait_for((attempt / files.OWNERSHIP).exists, "the first manifest")
    launched = _launched(attempt)
    assert launched["cgroup"] is None  # the precondition: no leaf lists the late child
    leader = reaper.add(launched["pid"])
    _kill_runner(attempt)
    (work / "go").write_text("")
    child = reaper.add(int(wait_file(work / "opc.pid")))
    wait_for(lambda: not pid_alive(leader), "the leader to end")
    assert not _in_procs(attempt, child)  # forked after the runner died: not on record

    status = run_skgate("status", str(attempt), cwd=work, env=env)
    assert status.returncode == 6, status
    rec = run_skgate("recover", str(attempt), cwd=work, env=env)
    assert rec.returncode == 6 and str(child) in rec.stderr, rec
    assert not (attempt / files.SEAL).exists()

    adopt = run_skgate("recover", "--adopt", str(attempt), cwd=work, env=env, timeout=90)
    assert adopt.returncode == 0, adopt
    assert not pid_alive(child)
    adopted = next(e for e in events(attempt) if e["event"] == "adopted")
    assert child in adopted["pids"] and "session" in adopted["sources"], adopted
    assert "no cgroup leaf" in adopted["note"]
    sent = _sent(attempt)
    assert [e["name"] for e in sent if e.get("pid") == child] == ["SIGTERM", "SIGKILL"], sent
    verdict = json.loads((attempt / files.VERDICT).read_text())
    assert verdict["state"] == "unknown"
    # s9: the C3 line claims no more than the record.
    c3 = verdict["reasons"][-1]
    assert "every fork, exec and exit" not in c3 and "the runner died after" in c3, c3


@pytest.mark.slow
def test_a_stop_signal_to_the_adopter_ends_the_group_as_the_runner_would(
    tmp_path: Path, reaper: Reaper
) -> None:
    """One policy for both (C2.4, C4): SIGTERM to ``recover --adopt`` goes to the
    attempt's own group, SIGKILL follows the frozen grace, as for ``run``. Before, the
    adopter simply died and the tree ran on unsupervised again."""
    work = tmp_path / "w"
    work.mkdir()
    attempt = _start(work, reaper, STUBBORN + "exec sleep 300\n", "--grace", "2", env=ENV)
    opc = reaper.add(int(wait_file(work / "opc.pid")))
    wait_for(lambda: _in_procs(attempt, opc), "the opc on record")
    leader = reaper.add(_launched(attempt)["pid"])  # ended at teardown, even on failure
    _kill_runner(attempt)
    adopter = reaper.popen(start_skgate("recover", "--adopt", str(attempt), cwd=work, env=ENV))
    wait_for(lambda: "adopted" in _names(attempt), "the adoption in the journal")
    adopter.send_signal(signal.SIGTERM)
    adopter.communicate(timeout=60)
    assert adopter.returncode == 0
    assert not pid_alive(opc)
    sent = _sent(attempt)
    assert [e["name"] for e in sent if e.get("pid") == opc] == ["SIGTERM", "SIGKILL"], sent
    assert {e["target"] for e in sent} == {f"process group {leader}"}
    assert "signal_received" in _names(attempt)
    ended = next(e for e in events(attempt) if e["event"] == "adopted_tree_ended")
    assert ended["how"] == "stopped"
    assert json.loads((attempt / files.VERDICT).read_text())["state"] == "unknown"


def test_the_session_rule_never_claims_a_recycled_session() -> None:
    """C4: the session id is the leader's pid. A stranger's session can only carry that
    number after every member ended and the pid was reused: its leader then lives with
    another start time, or its members started before our leader did."""
    from skgate.proc.observe import ProcStat
    from skgate.read.liveness import LeaderRef, session_members

    ours = LeaderRef(pid=500, start_ticks=1000, pgid=500, sid=500)
    late_child = ProcStat(640, "opc", "S", 1, 500, 500, 1200)
    other_group = ProcStat(641, "opc", "S", 640, 641, 500, 1300)  # same session
    stranger = ProcStat(700, "opc", "S", 1, 700, 700, 1100)
    table = {640: late_child, 641: other_group, 700: stranger}
    assert set(session_members(ours, table)) == {640, 641}
    # The leader's pid names another process now: the session is a stranger's.
    reused = {**table, 500: ProcStat(500, "bash", "S", 1, 500, 500, 5000)}
    assert session_members(ours, reused) == {}
    # Members born before our leader cannot be ours; a zombie is not alive.
    older = ProcStat(650, "opc", "S", 1, 500, 500, 900)
    dead = ProcStat(651, "opc", "Z", 1, 500, 500, 1500)
    assert set(session_members(ours, {650: older, 651: dead, 640: late_child})) == {640}
    # The leader itself, alive, is a member of its own session.
    alive_leader = ProcStat(500, "bash", "S", 1, 500, 500, 1000)
    assert set(session_members(ours, {500: alive_leader})) == {500}
