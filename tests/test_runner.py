"""The supervised runner with real processes: ownership, natural return, frozen timeout.

Every workload here is a small Python script started by the gate; tests synchronise on
marker files the workload writes, and end every process they started themselves by pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    ENV,
    Reaper,
    events,
    gated_run,
    pid_alive,
    read_json,
    run_skgate,
    script,
    start_skgate,
    unrecord_end,
    wait_file,
    wait_for,
)

SUMMARY_OK = "[summary] stage=compile inputs=2 succeeded=2 failed=0"

# Written atomically (temp + rename) so a test never reads half a marker.
PRELUDE = """\
import os, signal, sys, time
from pathlib import Path
M = Path(sys.argv[1])
def mark(name, text=""):
    tmp = M / (name + ".tmp")
    tmp.write_text(f"{text}\\n")
    tmp.rename(M / name)
def wait_go(name="go"):
    while not (M / name).exists():
        time.sleep(0.01)
"""


def attempt_of(root: Path, n: int = 1) -> Path:
    return root / "attempts" / f"{n:04d}"


def owned_pids(attempt: Path) -> list[tuple[int, int]]:
    own = read_json(attempt / "ownership.json")
    return [(p["pid"], p["start_ticks"]) for p in own["owned"]]


def same_process_alive(pid: int, start_ticks: int) -> bool:
    from skgate.proc.observe import is_alive

    return is_alive(pid, start_ticks)


def test_success_records_everything_and_leaves_nothing_alive(tmp_path: Path) -> None:
    cmd = script(
        tmp_path,
        "ok.py",
        PRELUDE + f"print('compiling'); print({SUMMARY_OK!r}); mark('done')\n",
    )
    res = gated_run(tmp_path, [*cmd, str(tmp_path)], "--json", quiet=False)
    assert res.returncode == 0, res.stderr
    verdict = read_json(attempt_of(tmp_path / "r") / "verdict.json")
    assert verdict["state"] == "succeeded"
    assert verdict["cause"] is None
    assert verdict["exit_status"] == 0
    assert verdict["attempt"].endswith("attempts/0001")
    printed = __import__("json").loads(res.stdout)
    assert printed["state"] == "succeeded" and printed["reasons"]
    att = attempt_of(tmp_path / "r")
    for name in ("control.json", "ownership.json", "events.jsonl", "run.log", "summary.txt"):
        assert (att / name).exists(), name
    assert (att / "summary.txt").read_text() == SUMMARY_OK + "\n"
    assert "compiling" in (att / "run.log").read_text()
    own = read_json(att / "ownership.json")
    assert own["complete"] is True
    assert own["leader"]["pid"] == own["pgid"] == own["sid"]
    assert not any(same_process_alive(p, t) for p, t in owned_pids(att))
    names = [e["event"] for e in events(att)]
    assert names[0] == "created" and names[-1] == "finished"
    assert "signal_sent" not in names


def test_nonzero_exit_after_natural_return_is_failed(tmp_path: Path) -> None:
    bad = "[summary] stage=compile inputs=2 succeeded=1 failed=1"
    cmd = script(tmp_path, "bad.py", f"import sys; print({bad!r}); sys.exit(1)\n")
    res = gated_run(tmp_path, cmd)
    assert res.returncode == 1
    assert "naturally returned final compiler failures" in res.stdout


def test_missing_summary_is_unknown_never_failed(tmp_path: Path) -> None:
    cmd = script(tmp_path, "nosum.py", "import sys; sys.exit(3)\n")
    res = gated_run(tmp_path, cmd)
    assert res.returncode == 1  # exit status 3 after natural return: failed (C2.3)
    cmd = script(tmp_path, "nosum0.py", "print('no summary here')\n")
    res = gated_run(tmp_path, cmd)
    assert res.returncode == 5
    assert "final aggregate summary" in res.stdout


@pytest.mark.slow
def test_timeout_kills_only_own_group_even_what_ignores_sigterm(
    tmp_path: Path, reaper: Reaper
) -> None:
    # A foreign process that existed before the launch: it must survive the timeout (C4).
    foreign = reaper.popen(
        subprocess.Popen(
            [sys.executable, "-c", "import signal; signal.pause()"], start_new_session=True
        )
    )
    body = PRELUDE + (
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "if os.fork() == 0:\n"
        "    mark('child.pid', os.getpid())\n"
        "    while True: signal.pause()\n"
        "mark('leader.pid', os.getpid())\n"
        "while True: signal.pause()\n"
    )
    cmd = script(tmp_path, "hang.py", body)
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--timeout",
            "1",
            "--grace",
            "0.5",
            "--quiet",
            "--json",
            "--",
            *cmd,
            str(tmp_path),
            cwd=tmp_path,
        )
    )
    child = int(wait_file(tmp_path / "child.pid"))
    leader = int(wait_file(tmp_path / "leader.pid"))
    reaper.add(child)
    reaper.add(leader)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    assert not pid_alive(child) and not pid_alive(leader)
    assert pid_alive(foreign.pid), "a process the attempt does not own was touched"
    verdict = read_json(attempt_of(tmp_path / "r") / "verdict.json")
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "timeout")
    sent = [e for e in events(attempt_of(tmp_path / "r")) if e["event"] == "signal_sent"]
    assert [(e["name"], e["reason"]) for e in sent] == [
        ("SIGTERM", "timeout"),
        ("SIGKILL", "grace-expired"),
    ]
    assert all(e["target"] == f"process group {leader}" for e in sent)


def test_leader_exits_early_runner_waits_and_status_reads_in_progress(
    tmp_path: Path, reaper: Reaper
) -> None:
    body = PRELUDE + (
        "if os.fork() == 0:\n"
        "    mark('orphan.pid', os.getpid())\n"
        "    wait_go()\n"
        f"    print({SUMMARY_OK!r}, flush=True)\n"
        "    os._exit(0)\n"
        "os._exit(0)\n"
    )
    cmd = script(tmp_path, "early.py", body)
    proc = reaper.popen(
        start_skgate("run", "--root", "r", "--quiet", "--", *cmd, str(tmp_path), cwd=tmp_path)
    )
    orphan = reaper.add(int(wait_file(tmp_path / "orphan.pid")))
    att = attempt_of(tmp_path / "r")
    wait_for(lambda: any(e["event"] == "leader_exited" for e in events(att)), what="leader exit")
    # Another process asks while the leader is gone and the orphan lives: in progress.
    st = run_skgate("status", str(att), "--json", cwd=tmp_path)
    assert st.returncode == 6, st.stdout + st.stderr
    assert __import__("json").loads(st.stdout)["state"] == "in_progress"
    assert proc.poll() is None, "the runner must wait for the orphaned descendant"
    (tmp_path / "go").write_text("")
    proc.wait(timeout=30)
    assert proc.returncode == 0
    assert not pid_alive(orphan)
    own = read_json(att / "ownership.json")
    rec = [p for p in own["owned"] if p["pid"] == orphan]
    assert rec and rec[0]["exit_status"] == 0  # reaped by the runner as subreaper


def test_escaped_process_is_waited_for_and_never_signalled(tmp_path: Path, reaper: Reaper) -> None:
    body = PRELUDE + (
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    mark('escaped.pid', os.getpid())\n"
        "    wait_go()\n"
        "    os._exit(0)\n"
        f"print({SUMMARY_OK!r}, flush=True)\n"
    )
    cmd = script(tmp_path, "esc.py", body)
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--scan-interval",
            "0.05",
            "--",
            *cmd,
            str(tmp_path),
            cwd=tmp_path,
        )
    )
    escaped = reaper.add(int(wait_file(tmp_path / "escaped.pid")))
    att = attempt_of(tmp_path / "r")
    wait_for(
        lambda: (
            (att / "ownership.json").exists()
            and escaped in read_json(att / "ownership.json")["escaped"]
        ),
        what="the escaped process in the manifest",
    )
    assert proc.poll() is None
    (tmp_path / "go").write_text("")
    proc.wait(timeout=30)
    assert proc.returncode == 0
    verdict = read_json(att / "verdict.json")
    assert verdict["escaped"] == 1
    assert any("left the process group" in r for r in verdict["reasons"])
    assert not any(e["event"] == "signal_sent" for e in events(att))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_to_runner_is_forwarded_and_recorded_as_external(
    tmp_path: Path, reaper: Reaper, sig: signal.Signals
) -> None:
    body = PRELUDE + "mark('leader.pid', os.getpid())\nwhile True: signal.pause()\n"
    cmd = script(tmp_path, "wait.py", body)
    proc = reaper.popen(
        start_skgate("run", "--root", "r", "--quiet", "--", *cmd, str(tmp_path), cwd=tmp_path)
    )
    leader = reaper.add(int(wait_file(tmp_path / "leader.pid")))
    att = attempt_of(tmp_path / "r")
    wait_for(lambda: any(e["event"] == "launched" for e in events(att)), what="launch")
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert proc.returncode == 4
    assert not pid_alive(leader)
    verdict = read_json(att / "verdict.json")
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "external")
    received = [e["name"] for e in events(att) if e["event"] == "signal_received"]
    assert received == [sig.name]


def test_status_after_runner_died_reads_in_progress_then_unknown(
    tmp_path: Path, reaper: Reaper
) -> None:
    body = PRELUDE + "mark('leader.pid', os.getpid())\nwait_go()\n"
    cmd = script(tmp_path, "slow.py", body)
    proc = reaper.popen(
        start_skgate("run", "--root", "r", "--quiet", "--", *cmd, str(tmp_path), cwd=tmp_path)
    )
    leader = reaper.add(int(wait_file(tmp_path / "leader.pid")))
    att = attempt_of(tmp_path / "r")
    wait_for((att / "ownership.json").exists, what="ownership manifest")
    proc.kill()  # the runner itself dies without a verdict (we started it: by pid)
    proc.wait()
    st = run_skgate("status", str(att), cwd=tmp_path)
    assert st.returncode == 6, st.stdout
    assert pid_alive(leader), "status must never signal"
    (tmp_path / "go").write_text("")
    wait_for(lambda: not pid_alive(leader), what="the workload to end")
    st = run_skgate("status", str(att), "--json", cwd=tmp_path)
    assert st.returncode == 5
    got = __import__("json").loads(st.stdout)
    assert "verdict.json" in " ".join(got["missing"])
    assert any("runner died before the verdict was written" in r for r in got["reasons"])


def test_classify_recomputes_the_same_verdict(tmp_path: Path) -> None:
    cmd = script(tmp_path, "ok.py", f"print({SUMMARY_OK!r})\n")
    att = gated_run(tmp_path, cmd).attempt
    res = run_skgate("classify", str(att), "--json", cwd=tmp_path)
    assert res.returncode == 0
    again = __import__("json").loads(res.stdout)
    recorded = read_json(att / "verdict.json")
    assert again == recorded


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--bogus", "--", "true"], "unrecognized arguments"),
        (["run", "true"], "missing '--'"),
        (["run", "--timeout", "abc", "--", "true"], "not a number"),
        (["run", "--timeout", "-5", "--", "true"], "non-negative"),
        (["run", "--timeout", "0", "--", "true"], "more than 0"),
        (["run", "--jobs", "0", "--", "true"], "positive integer"),
        (["run", "--"], "no command after"),
        (["classify", "/nonexistent/attempt"], "no such attempt"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    res = run_skgate(*args, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert needle in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "skgate-runs" / "attempts").exists()


def test_missing_command_is_recorded_not_started_exit_3(tmp_path: Path) -> None:
    res = gated_run(tmp_path, ["no-such-command-skgate"], quiet=False)
    assert res.returncode == 3
    assert "Traceback" not in res.stderr
    verdict = read_json(attempt_of(tmp_path / "r") / "verdict.json")
    assert verdict["state"] == "not_started"
    assert any("command not found" in r for r in verdict["reasons"])


def test_unwritable_root_refuses_to_launch(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    blocker = tmp_path / "root-is-a-file"
    blocker.write_text("")
    cmd = script(tmp_path, "touch.py", f"open({str(canary)!r}, 'w').close()\n")
    res = gated_run(tmp_path, cmd, root=str(blocker), quiet=False)
    # Bad input (issue 23): nothing is recorded, so it is exit 2, not "recorded as not started".
    assert res.returncode == 2
    assert "not a directory" in res.stderr.lower() and "choose a writable --root" in res.stderr
    assert "Traceback" not in res.stderr
    assert not canary.exists(), "nothing may run unrecorded"


def test_python_api_returns_the_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skgate.api import run
    from skgate.model.records import State

    # The runner child inherits this process's environment: on a shared host another
    # user's opc must not be this run's foreign compiler (issue 28 s10).
    monkeypatch.setenv("SKGATE_COMPILER_NAMES", ENV["SKGATE_COMPILER_NAMES"])

    cmd = script(tmp_path, "ok.py", f"print({SUMMARY_OK!r})\n")
    verdict = run(cmd, root=tmp_path / "r", cwd=tmp_path, timeout=30)
    assert verdict.state is State.SUCCEEDED
    assert verdict.attempt is not None and Path(verdict.attempt).is_dir()
    assert os.path.samefile(verdict.attempt, attempt_of(tmp_path / "r"))


def test_live_observations_are_journalled_as_provisional(tmp_path: Path, reaper: Reaper) -> None:
    outputs = tmp_path / "static_kernel_compile_outputs" / "ts1_pid1_outputs" / "x_compile_log"
    body = PRELUDE + (
        f"out = Path({str(outputs)!r}); out.mkdir(parents=True)\n"
        "(out / 'a_compile_error.log').write_text('created before opc starts')\n"
        "mark('leader.pid', os.getpid())\n"
        "wait_go()\n"
        "(out / 'a_compile_error.log').rename(out / 'a_compile_succ.log')\n"
        f"print({SUMMARY_OK!r})\n"
    )
    cmd = script(tmp_path, "obs.py", body)
    proc = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--scan-interval",
            "0.02",
            "--",
            *cmd,
            str(tmp_path),
            cwd=tmp_path,
        )
    )
    reaper.add(int(wait_file(tmp_path / "leader.pid")))
    att = attempt_of(tmp_path / "r")
    # The first observation may fire before the workload made its error log (Python
    # start-up can take longer than a scan); only events journalled after the marker,
    # which the workload writes after the log, are sure to have seen it.
    after_marker = len(events(att))
    seen = wait_for(
        lambda: [e for e in events(att)[after_marker:] if e["event"] == "observation"],
        what="an observation event after the workload made its error log",
    )
    assert seen[0]["provisional"] is True
    assert seen[0]["counts"]["error_logs"] == 1
    assert seen[0]["owned_alive"] >= 1
    (tmp_path / "go").write_text("")
    proc.wait(timeout=30)
    # C1: the error-named file seen while live was provisional; the compile succeeded.
    assert proc.returncode == 0
    assert read_json(att / "census.json")["totals"]["error_logs"] == 0


# -- hardening found by the audit -----------------------------------------------------


@pytest.mark.slow
def test_stalled_terminal_never_delays_the_frozen_timeout(tmp_path: Path, reaper: Reaper) -> None:
    """The echo goes to a pipe nobody reads: supervision must still stop at the deadline."""
    body = "import sys\nwhile True:\n    sys.stdout.write('x' * 4096 + '\\n')\n"
    cmd = script(tmp_path, "chatty.py", body)
    proc = reaper.popen(
        start_skgate(
            "run", "--root", "r", "--timeout", "1", "--grace", "0.5", "--", *cmd, cwd=tmp_path
        )
    )
    # stdout is a pipe this test does not read until the verdict exists: an echo that
    # blocked the supervision loop would keep the timeout from ever firing.
    att = attempt_of(tmp_path / "r")
    wait_for((att / "verdict.json").exists, timeout=60, what="the verdict")
    verdict = read_json(att / "verdict.json")
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "timeout")
    marks = {e["event"]: e["mono"] for e in events(att)}
    assert marks["timeout"] - marks["launched"] < 5  # fired on time, not when drained
    assert (att / "run.log").stat().st_size > 1 << 20  # the evidence kept everything
    assert proc.stdout is not None
    proc.stdout.read()  # now let the runner print its verdict and exit
    proc.wait(timeout=60)
    assert proc.returncode == 4


def test_stale_outputs_of_an_earlier_run_do_not_decide_the_verdict(tmp_path: Path) -> None:
    stale = tmp_path / "static_kernel_compile_outputs" / "ts1_pid1_outputs" / "log"
    stale.mkdir(parents=True)
    (stale / "old_compile_error.log").write_text("from a run last week\n")
    (stale.parent / "static_kernel_old.run").write_text("")
    cmd = script(tmp_path, "ok.py", f"print({SUMMARY_OK!r})\n")
    res = gated_run(tmp_path, cmd, "--json")
    assert res.returncode == 0, res.stdout
    verdict = read_json(attempt_of(tmp_path / "r") / "verdict.json")
    assert verdict["census"]["preexisting"] == 1
    assert verdict["census"]["totals"]["error_logs"] == 0
    assert any(
        "1 entry already in the outputs directory before launch was not counted" in r
        for r in verdict["reasons"]
    )
    # An old .run cannot satisfy --package required for this attempt.
    res = gated_run(tmp_path, cmd, "--package", "required", root="r2")
    assert res.returncode == 1
    assert "no .run package" in res.stdout


def test_damaged_journal_field_is_one_line_exit_2(tmp_path: Path) -> None:
    cmd = script(tmp_path, "ok.py", f"print({SUMMARY_OK!r})\n")
    att = gated_run(tmp_path, cmd).attempt
    journal = att / "events.jsonl"
    journal.write_text(journal.read_text().replace('"escaped_alive":0', '"escaped_alive":null'))
    # The attempt is sealed: every read checks the seal first (issue 28), so classify
    # answers unknown naming the changed journal, and verify names it too.
    res = run_skgate("classify", str(att), cwd=tmp_path)
    assert res.returncode == 5, (res.stdout, res.stderr)
    assert res.stdout.startswith("UNKNOWN: evidence changed after sealing: events.jsonl")
    res = run_skgate("verify", str(att), cwd=tmp_path)
    assert res.returncode == 1
    assert "events.jsonl" in res.stdout + res.stderr
    # Unsealed (as a runner killed before its seal leaves it), the damaged field itself
    # is the one-line refusal: classify recomputes from the files.
    (att / "seal.json").unlink()
    unrecord_end(att)  # nor its seal's hash in the ledger
    res = run_skgate("classify", str(att), cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert "escaped_alive" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_missing_journal_or_manifest_is_unknown_never_a_result(tmp_path: Path) -> None:
    cmd = script(tmp_path, "ok.py", f"print({SUMMARY_OK!r})\n")
    first, second = gated_run(tmp_path, cmd).attempt, gated_run(tmp_path, cmd).attempt
    (first / "events.jsonl").unlink()
    res = run_skgate("classify", str(first), "--json", cwd=tmp_path)
    assert res.returncode == 5, res.stdout + res.stderr
    # Sealed attempts: the missing file is named as a change after sealing (issue 28).
    assert "events.jsonl" in " ".join(__import__("json").loads(res.stdout)["missing"])
    (second / "ownership.json").unlink()
    res = run_skgate("classify", str(second), "--json", cwd=tmp_path)
    assert res.returncode == 5, res.stdout + res.stderr
    assert "ownership" in " ".join(__import__("json").loads(res.stdout)["missing"])
    # Unsealed (its seal and the ledger's record of it gone, as a runner killed before
    # its seal leaves it), the classifier itself says what is missing (C2.5).
    (first / "seal.json").unlink()
    unrecord_end(first)
    res = run_skgate("classify", str(first), "--json", cwd=tmp_path)
    assert res.returncode == 5, res.stdout + res.stderr
    assert "event journal" in " ".join(__import__("json").loads(res.stdout)["missing"])


STUBBORN = PRELUDE + (
    "def on_term(signum, frame):\n"
    "    mark('got-term')\n"
    "signal.signal(signal.SIGTERM, on_term)\n"
    "mark('leader.pid', os.getpid())\n"
    "while True: signal.pause()\n"
)


def _stubborn_run(
    tmp_path: Path, reaper: Reaper, grace: str
) -> tuple[subprocess.Popen[str], int, Path]:
    """A run of STUBBORN (it ignores SIGTERM) once launched: the runner, leader, attempt."""
    cmd = script(tmp_path, "stubborn.py", STUBBORN)
    proc = reaper.popen(
        start_skgate(
            "run", "--root", "r", "--quiet", "--grace", grace, "--", *cmd, str(tmp_path),
            cwd=tmp_path,
        )
    )  # fmt: skip
    leader = reaper.add(int(wait_file(tmp_path / "leader.pid")))
    att = attempt_of(tmp_path / "r")
    wait_for(lambda: any(e["event"] == "launched" for e in events(att)), what="launch")
    return proc, leader, att


def test_external_sigterm_ends_a_workload_that_ignores_it_after_the_grace(
    tmp_path: Path, reaper: Reaper
) -> None:
    """Issue 21 s4: the forwarded SIGTERM used to be the end of it, and a workload that
    ignored it ran on with the runner (status INTERRUPTED, wait in progress). Told to
    stop, the runner ends its own group: the signal, the frozen grace, then SIGKILL."""
    proc, leader, att = _stubborn_run(tmp_path, reaper, grace="0.5")
    proc.send_signal(signal.SIGTERM)  # once only
    proc.wait(timeout=30)
    assert proc.returncode == 4
    assert not pid_alive(leader)
    sent = [(e["name"], e["reason"]) for e in events(att) if e["event"] == "signal_sent"]
    assert sent == [("SIGTERM", "forwarded"), ("SIGKILL", "grace-expired")]
    verdict = read_json(att / "verdict.json")
    assert (verdict["state"], verdict["cause"]) == ("interrupted", "external")


def test_a_second_stop_signal_kills_the_group_at_once(tmp_path: Path, reaper: Reaper) -> None:
    proc, leader, att = _stubborn_run(tmp_path, reaper, grace="600")
    proc.send_signal(signal.SIGTERM)
    wait_file(tmp_path / "got-term")
    # The workload ignored the forwarded SIGTERM and lives on: the grace runs (600 s).
    assert pid_alive(leader)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)  # asked again: now
    proc.wait(timeout=30)
    assert proc.returncode == 4
    assert not pid_alive(leader)
    sent = [(e["name"], e["reason"]) for e in events(att) if e["event"] == "signal_sent"]
    assert sent == [("SIGTERM", "forwarded"), ("SIGKILL", "escalated")]
    assert "send it again" in (proc.stderr.read() if proc.stderr else "")


def test_api_refuses_infinite_controls(tmp_path: Path) -> None:
    from skgate.api import run
    from skgate.model.errors import UsageError

    for kw in ({"timeout": float("inf")}, {"grace": float("nan")}):
        with pytest.raises(UsageError):
            run(["true"], root=tmp_path / "r", cwd=tmp_path, **kw)  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists()


def test_unwritable_ledger_refuses_and_leaves_a_readable_attempt(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "ledger.jsonl").mkdir(parents=True)  # the ledger path cannot be appended to
    canary = tmp_path / "canary"
    cmd = script(tmp_path, "touch.py", f"open({str(canary)!r}, 'w').close()\n")
    res = gated_run(tmp_path, cmd, root=str(root), quiet=False)
    assert res.returncode == 3, res.stderr
    assert "ledger" in res.stderr
    assert "Traceback" not in res.stderr
    assert not canary.exists()
    verdict = read_json(attempt_of(root) / "verdict.json")
    assert verdict["state"] == "not_started"
