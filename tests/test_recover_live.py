"""Recovery sees the live tree (issue 21 s1): one liveness answer for every command.

The repro of the issue: the runner is SIGKILLed after its leader forked an ``opc`` that
the last manifest (``ownership.json``) does not list. ``status`` said in_progress, but
``recover`` sealed ``unknown`` under the live ``opc``, ``cleanup`` moved its outputs away
and ``retry`` launched beside it, because those three asked the manifest alone. Every
step waits on observable state (a file the workload writes, the process journal), never
on a fixed sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    Reaper,
    events,
    pid_alive,
    run_skgate,
    start_skgate,
    unrecord_end,
    wait_file,
    wait_for,
)
from skgate.evidence import files
from skgate.evidence.intent import INTENT, write_intent
from skgate.model.records import State
from skgate.read.liveness import current_verdict, probe

#: The leader waits for ``fork-go`` (written once the runner's first scan is done),
#: forks an ``opc`` (argv[0] only, as in the issue) that waits for ``release``, writes its
#: pid, and itself waits for ``leader-go``: so the runner can be killed while both live,
#: and the leader can end first, leaving only the ``opc`` the manifest lacks.
WORKLOAD = """\
import os, subprocess, sys, time
from pathlib import Path
here = Path.cwd()
(here / "static_kernel_compile_outputs").mkdir(exist_ok=True)
while not (here / "fork-go").exists():
    time.sleep(0.01)
wait = ("import sys, time\\nfrom pathlib import Path\\n"
        "while not Path(sys.argv[1]).exists(): time.sleep(0.01)")
opc = subprocess.Popen(["opc", "-c", wait, str(here / "release")], executable=sys.executable)
(here / "opc.pid").write_text(f"{opc.pid}\\n")
while not (here / "leader-go").exists():
    time.sleep(0.01)
os._exit(0)
"""


def _procs_has(attempt: Path, pid: int | None, kinds: tuple[str, ...] = ("fork", "seen")) -> bool:
    """A line of ``kinds`` about ``pid`` (any pid: None) in procs.jsonl."""
    try:
        lines = (attempt / files.PROCS).read_text().splitlines()
    except FileNotFoundError:
        return False
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if pid in (None, ev.get("pid")) and ev.get("e") in kinds:
            return True
    return False


def _manifest_pids(attempt: Path) -> set[int]:
    data = json.loads((attempt / files.OWNERSHIP).read_text())
    return {p["pid"] for p in data.get("owned", [])} | (
        {data["leader"]["pid"]} if data.get("leader") else set()
    )


def _orphaned_opc(tmp_path: Path, reaper: Reaper, *options: str) -> tuple[Path, Path, int]:
    """The issue's scene: the runner SIGKILLed, the leader ended, an opc the last
    manifest does not list alive. Returns (workdir, attempt, opc pid)."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "wl.py").write_text(WORKLOAD)
    run = reaper.popen(
        start_skgate(
            "run", "--root", "r", "--quiet", "--scan-interval", "60", *options, "--",
            sys.executable, "wl.py",
            cwd=work,
        )
    )  # fmt: skip
    attempt = work / "r" / "attempts" / "0001"
    # The defect's precondition, made certain: the runner writes a running manifest only
    # in a scan, at most once per scan interval (60 s here). The leader's exec line
    # reaches procs.jsonl at the earliest in the first scan, after that scan read its
    # events, so an opc forked once the line is there is in no manifest before the kill.
    # Forking at once raced the first scan (the opc was listed once in a loaded run).
    # The leader is the only owned process yet: any exec line is its. Without the events
    # source (no CAP_NET_ADMIN) no exec line comes: the launch manifest is waited for.
    wait_for((attempt / files.OWNERSHIP).exists, "the launch manifest")
    sources = json.loads((attempt / files.OWNERSHIP).read_text())["coverage"]["sources"]
    if "events" in sources:
        wait_for(lambda: _procs_has(attempt, None, ("exec",)), "the leader's exec line")
    (work / "fork-go").write_text("")
    opc_pid = int(wait_file(work / "opc.pid"))
    reaper.add(opc_pid)
    control = json.loads((attempt / files.CONTROL).read_text())
    runner = control["runner"]["pid"]
    assert runner == run.pid
    wait_for(lambda: _procs_has(attempt, opc_pid), "the opc fork in procs.jsonl")
    os.kill(runner, signal.SIGKILL)
    run.wait(timeout=30)
    (work / "leader-go").write_text("")
    leader = json.loads((attempt / files.OWNERSHIP).read_text())["leader"]["pid"]
    wait_for(lambda: not pid_alive(leader), "the leader to end")
    # The defect's precondition: the last manifest does not list the live opc.
    assert opc_pid not in _manifest_pids(attempt)
    assert pid_alive(opc_pid)
    return work, attempt, opc_pid


@pytest.mark.slow
def test_recover_cleanup_retry_refuse_while_an_unlisted_opc_lives(
    tmp_path: Path, reaper: Reaper
) -> None:
    work, attempt, opc_pid = _orphaned_opc(tmp_path, reaper)

    status = run_skgate("status", str(attempt), cwd=work)
    assert status.returncode == 6, status
    assert current_verdict(attempt).state is State.IN_PROGRESS
    assert opc_pid in probe(attempt).pids()

    rec = run_skgate("recover", str(attempt), cwd=work)
    assert rec.returncode == 6, rec
    assert str(opc_pid) in rec.stderr and "skgate stop" in rec.stderr, rec.stderr
    assert len(rec.stderr.strip().splitlines()) == 1, rec.stderr
    assert not (attempt / files.VERDICT).exists() and not (attempt / files.SEAL).exists()

    clean = run_skgate("cleanup", "--root", "r", cwd=work)
    assert clean.returncode == 6, clean
    assert str(opc_pid) in clean.stderr, clean.stderr
    assert (work / "static_kernel_compile_outputs").is_dir()

    retry = run_skgate("retry", str(attempt), cwd=work)
    assert retry.returncode == 6, retry
    assert str(opc_pid) in retry.stderr, retry.stderr
    assert not (work / "r" / "attempts" / "0002").exists()

    # Once the opc has returned, recover finishes it: unknown (nobody saw the tree end).
    (work / "release").write_text("")
    wait_for(lambda: not pid_alive(opc_pid), "the opc to end")
    done = run_skgate("recover", str(attempt), cwd=work)
    assert done.returncode == 0, done
    assert json.loads((attempt / files.VERDICT).read_text())["state"] == "unknown"


def test_adopt_supervises_the_orphan_to_its_natural_return(tmp_path: Path, reaper: Reaper) -> None:
    # Issue 21 s1: a compile whose runner died ran on with nobody supervising it.
    work, attempt, opc_pid = _orphaned_opc(tmp_path, reaper)
    adopter = reaper.popen(start_skgate("recover", "--adopt", str(attempt), cwd=work))
    wait_for(lambda: "adopted" in _event_names(attempt), "the adoption in the journal")
    assert adopter.poll() is None  # it supervises while the opc lives
    (work / "release").write_text("")
    out, err = adopter.communicate(timeout=60)
    assert adopter.returncode == 0, out + err
    adopted = next(e for e in events(attempt) if e["event"] == "adopted")
    assert opc_pid in adopted["pids"] and adopted["pidfds"] is True
    assert "adopted_tree_ended" in _event_names(attempt)
    assert "signal_sent" not in _event_names(attempt)  # natural return: nothing signalled
    assert json.loads((attempt / files.VERDICT).read_text())["state"] == "unknown"


@pytest.mark.slow
def test_adopt_enforces_the_frozen_deadline_on_the_owned_processes_only(
    tmp_path: Path, reaper: Reaper
) -> None:
    bystander = reaper.popen(
        subprocess.Popen(["opc", "-c", "import signal; signal.pause()"], executable=sys.executable)
    )
    work, attempt, opc_pid = _orphaned_opc(tmp_path, reaper, "--timeout", "6", "--grace", "1")
    adopter = reaper.popen(start_skgate("recover", "--adopt", str(attempt), cwd=work))
    out, err = adopter.communicate(timeout=60)
    assert adopter.returncode == 0, out + err
    assert not pid_alive(opc_pid)
    names = _event_names(attempt)
    assert names.index("adopted") < names.index("timeout") < names.index("signal_sent")
    sent = [e for e in events(attempt) if e["event"] == "signal_sent"]
    assert {e["pid"] for e in sent} == {opc_pid} and sent[0]["name"] == "SIGTERM"
    assert bystander.poll() is None  # an opc the attempt does not own is never signalled
    assert json.loads((attempt / files.VERDICT).read_text())["state"] == "unknown"


def _event_names(attempt: Path) -> list[str]:
    return [str(e.get("event")) for e in events(attempt)]


def test_intent_without_launched_is_unknown_never_not_started(tmp_path: Path) -> None:
    # Issue 21 s1: a runner SIGKILLed between the fork and its 'launched' entry left an
    # attempt that recover sealed as not_started ("nothing was launched") although the
    # workload ran. The intent, written before the fork, makes it unknown.
    work = tmp_path / "w"
    work.mkdir()
    ok = run_skgate("run", "--root", "r", "--quiet", "--", sys.executable, "-c", "pass", cwd=work)
    attempt = work / "r" / "attempts" / "0001"
    assert (attempt / files.VERDICT).is_file(), ok
    assert (attempt / INTENT).is_file()  # every launch records its intent first
    journal = attempt / files.EVENTS
    rows = journal.read_text().splitlines()
    kept = []
    for row in rows:
        if json.loads(row)["event"] == "launched":
            break
        kept.append(row)
    for name in os.listdir(attempt):
        if name not in (files.CONTROL, files.EVENTS, INTENT, files.RUN_LOG):
            path = attempt / name
            if path.is_file():
                path.unlink()
    journal.write_text("".join(r + "\n" for r in kept))
    unrecord_end(attempt)  # a runner killed before 'launched' never sealed nor ended
    (attempt / files.RUN_LOG).unlink()  # even without run.log, the intent decides
    v = current_verdict(attempt)
    assert v.state is State.UNKNOWN, v
    rec = run_skgate("recover", str(attempt), cwd=work)
    assert rec.returncode == 0, rec
    sealed = json.loads((attempt / files.VERDICT).read_text())
    assert sealed["state"] == "unknown", sealed
    assert any("intent to launch" in r for r in sealed["reasons"]), sealed


def test_intent_names_the_leaf_for_the_liveness_check(tmp_path: Path) -> None:
    # The cgroup leaf of the intent is what the liveness check reads when no 'launched'
    # entry names one; a leaf not made by skgate (a damaged record) is never read.
    attempt = tmp_path / "a"
    attempt.mkdir()
    write_intent(attempt, ["x"], "/sys/fs/cgroup/not-a-skgate-leaf")
    assert probe(attempt).owned == ()
    with pytest.raises(Exception, match="already exists"):
        write_intent(attempt, ["x"], None)
