"""prepare(): frozen controls, env evidence, interpreter discovery, foreign compilers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import wait_for
from skgate.evidence.files import write_json_new
from skgate.evidence.ledger import end_entries, read_ledger
from skgate.model.errors import UsageError
from skgate.model.events import Event
from skgate.model.request import RunRequest
from skgate.preflight import jobs, profiler
from skgate.preflight.prepare import env_delta, find_interpreter, prepare, render_lines
from skgate.proc.observe import is_alive, read_stat
from skgate.runner.run import run_here

NOBODY = "skgt-none-xyz"  # a compiler name nobody runs: other agents' opc stay invisible


def req(tmp_path: Path, argv: tuple[str, ...] | None = None, **kw: Any) -> RunRequest:
    env = dict(kw.pop("env", {}))
    env.setdefault("SKGATE_COMPILER_NAMES", NOBODY)
    return RunRequest(
        argv=argv or (sys.executable, "-c", "pass"),
        cwd=str(tmp_path),
        root=str(tmp_path / "runs"),
        env=env,
        lease_timeout=kw.pop("lease_timeout", 0.0),
        **kw,
    )


def fake_attempt(
    root: Path, name: str, value: int, state: str | None = None, **jobs_extra: Any
) -> None:
    d = root / "attempts" / name
    d.mkdir(parents=True)
    write_json_new(
        d / "control.json",
        {"schema": "skgate.control/1", "controls": {"jobs": {"value": value, **jobs_extra}}},
    )
    if state is not None:
        write_json_new(d / "verdict.json", {"schema": "skgate.verdict/1", "state": state})


def test_jobs_frozen_exported_and_recorded(tmp_path: Path) -> None:
    plan = prepare(req(tmp_path, jobs="3"), tmp_path / "runs")
    assert plan.blocked == ()
    assert plan.env[jobs.JOBS_VAR] == "3"
    assert plan.controls["jobs"]["value"] == 3
    assert plan.controls["env"]["delta"]["added"][jobs.JOBS_VAR] == "3"
    json.dumps(plan.controls)  # control.json must be able to hold it


def test_recorded_host_is_the_host_the_jobs_decision_saw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C5: controls.host records the facts ``auto`` decided from, probed once, even
    when the host changes during preflight (a cgroup limit or the memory moving)."""
    real = jobs.probe_host
    reads = iter(range(1, 100))

    def moving() -> dict[str, Any]:
        return {**real(), "affinity": [0], "affinity_count": 1, "mem_available": next(reads)}

    monkeypatch.setattr(jobs, "probe_host", moving)
    plan = prepare(req(tmp_path), tmp_path / "runs")
    host, decided = plan.controls["host"], plan.controls["jobs"]["inputs"]
    assert host["mem_available"] == decided["memory_available"] == 1
    assert host["affinity_count"] == decided["affinity_count"] == 1


def test_jobs_differing_from_earlier_attempt_blocks_unless_varied(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    fake_attempt(root, "0001", 4)
    fake_attempt(root, "0002", 8, state="not_started")  # never launched: not a reference
    fake_attempt(root, "0003", 16, varied=True)  # a declared diagnostic arm
    same = prepare(req(tmp_path, jobs="4"), root)
    assert same.blocked == ()
    assert same.controls["jobs"]["compared_with"] == [{"attempt": "0001", "value": 4}]
    other = prepare(req(tmp_path, jobs="8"), root)
    assert len(other.blocked) == 1
    assert "attempt 0001" in other.blocked[0]
    assert "--vary jobs" in other.blocked[0]
    varied = prepare(req(tmp_path, jobs="8", vary=("jobs",)), root)
    assert varied.blocked == ()
    assert varied.controls["jobs"]["varied"] is True


def test_bad_jobs_and_schedule_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        prepare(req(tmp_path, jobs="0"), tmp_path / "runs")
    with pytest.raises(UsageError):
        prepare(req(tmp_path, jobs="1", profiler_schedule="wait=1"), tmp_path / "runs")


def test_profiler_schedule_exported_through_one_variable(tmp_path: Path) -> None:
    plan = prepare(
        req(tmp_path, jobs="1", profiler_schedule="active=2,wait=1,warmup=0"), tmp_path / "runs"
    )
    text = "wait=1,warmup=0,active=2,repeat=0,skip_first=0"
    assert plan.env[profiler.ENV_VAR] == text
    assert plan.controls["profiler"]["schedule"]["active"] == 2
    assert profiler.schedule_from_env(plan.env) == profiler.ProfilerSchedule(1, 0, 2)
    inherited = prepare(
        req(tmp_path, jobs="1", env={profiler.ENV_VAR: "wait=0,warmup=0,active=1"}),
        tmp_path / "runs",
    )
    assert inherited.controls["profiler"]["source"] == f"inherited {profiler.ENV_VAR}"
    none = prepare(req(tmp_path, jobs="1"), tmp_path / "runs")
    assert profiler.ENV_VAR not in none.env or profiler.ENV_VAR in os.environ


def test_env_delta_redacts_secrets_and_unsets(tmp_path: Path) -> None:
    runner = {"PATH": os.environ["PATH"], "KEEP": "1", "DROP": "x", "API_TOKEN": "old"}
    request = req(
        tmp_path,
        jobs="1",
        env={"API_TOKEN": "s3cret", "DB_PASSWORD": "pw", "NEW": "n", "KEEP": "2"},
        unset_env=("DROP",),
    )
    plan = prepare(request, tmp_path / "runs", runner_env=runner)
    delta = plan.controls["env"]["delta"]
    assert delta["removed"] == ["DROP"]
    assert delta["added"]["DB_PASSWORD"] == "<redacted>"
    assert delta["added"]["NEW"] == "n"
    assert delta["changed"]["KEEP"] == {"from": "1", "to": "2"}
    assert delta["changed"]["API_TOKEN"] == {"from": "<redacted>", "to": "<redacted>"}
    assert "s3cret" not in json.dumps(plan.controls)
    assert plan.env["API_TOKEN"] == "s3cret"  # the workload still gets the real value
    assert "DROP" not in plan.env


def test_env_delta_keyboard_is_not_a_secret_url_password_is() -> None:
    d = env_delta(
        {},
        {
            "KEYBOARD": "us",
            "SSH_KEY": "k",
            "MONKEY": "m",
            "PIP_INDEX_URL": "https://bob:hunter2@pypi.example/simple",
        },
    )
    assert d["added"] == {
        "KEYBOARD": "us",
        "MONKEY": "m",
        "SSH_KEY": "<redacted>",
        "PIP_INDEX_URL": "https://bob:<redacted>@pypi.example/simple",
    }


def test_pythonpath_ordered_with_existence(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    pp = os.pathsep.join([str(a), str(tmp_path / "missing")])
    plan = prepare(req(tmp_path, jobs="1", env={"PYTHONPATH": pp}), tmp_path / "runs")
    entries = plan.controls["pythonpath"]
    assert [(e["path"], e["exists"]) for e in entries] == [
        (str(a), True),
        (str(tmp_path / "missing"), False),
    ]


def test_host_and_interpreter_facts_recorded(tmp_path: Path) -> None:
    plan = prepare(req(tmp_path, jobs="1"), tmp_path / "runs")
    host = plan.controls["host"]
    assert host["affinity_count"] >= 1
    assert host["kernel"]
    assert host["skgate_version"]
    assert host["mem_total"] > 0
    py = plan.controls["python"]
    assert py["version"] == ".".join(map(str, sys.version_info[:3]))
    assert py["how"] == "command argv[0]"


def test_interpreter_from_shebang_env_and_flags(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    link = bindir / "python3"
    link.symlink_to(sys.executable)
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\nprint(1)\n")
    script.chmod(0o755)
    env = {"PATH": f"{bindir}{os.pathsep}/usr/bin:/bin"}
    got = find_interpreter(req(tmp_path, argv=(str(script),)), env)
    assert (got.path, got.how) == (str(link), f"shebang of {script}")
    got = find_interpreter(req(tmp_path, argv=("env", "A=1", "python3", "-sE", "x.py")), env)
    assert got.path == str(link)
    assert got.flags == ("-s", "-E")
    assert got.command_is_python
    got = find_interpreter(req(tmp_path, argv=("python3", "-X", "dev", "-c", "pass")), env)
    assert got.flags == ()
    got = find_interpreter(req(tmp_path, argv=("sh", "run.sh")), env)
    assert got.how == "python3 on the workload PATH"


def test_missing_interpreter_blocks_only_when_the_command_is_python(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    sh = tmp_path / "run.sh"
    sh.write_text("#!/bin/sh\n")
    sh.chmod(0o755)
    env = {"PATH": str(empty)}
    plan = prepare(req(tmp_path, argv=(str(sh),), jobs="1", env=env), tmp_path / "runs")
    assert plan.blocked == ()
    assert plan.controls["hooks"]["skipped"] is True
    plan = prepare(req(tmp_path, argv=("python3", "x.py"), jobs="1", env=env), tmp_path / "runs")
    assert len(plan.blocked) == 1
    assert "not found" in plan.blocked[0]


# --------------------------------------------------------------------------- foreign


def start_compiler(tmp_path: Path, name: str) -> subprocess.Popen[bytes]:
    """A process named like a compiler (comm via prctl and argv[0]); it runs until its
    stdin closes, so the test ends it without any signal."""
    marker = tmp_path / f"{name}.started"
    code = (
        "import ctypes, pathlib, sys\n"
        "ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n"
        "pathlib.Path(sys.argv[2]).write_text('1')\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [name, "-c", code, name, str(marker)], executable=sys.executable, stdin=subprocess.PIPE
    )
    wait_for(marker.exists, what=f"marker {marker}", timeout=30)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End our own child: close its stdin (it exits by itself), kill by pid if needed."""
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def opc(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_compiler(tmp_path, "opc")
    try:
        yield proc
    finally:
        stop(proc)


def test_foreign_opc_refuse_blocks_and_is_left_alive(
    tmp_path: Path, opc: subprocess.Popen[bytes]
) -> None:
    stat = read_stat(opc.pid)
    assert stat is not None
    assert stat.name == "opc"
    request = req(tmp_path, jobs="1", foreign_policy="refuse", env={"SKGATE_COMPILER_NAMES": "opc"})
    plan = prepare(request, tmp_path / "runs")
    assert any("foreign compiler" in r and "--foreign refuse" in r for r in plan.blocked)
    assert opc.pid in {p.pid for p in plan.foreign}
    assert opc.pid in {p["pid"] for p in plan.controls["foreign"]["seen"]}
    assert is_alive(opc.pid, stat.start_ticks)  # never signalled (C4)
    assert opc.poll() is None


def test_foreign_wait_is_visible_and_journalled_until_it_ends(tmp_path: Path) -> None:
    """The wait names each blocker (pid, name, age, never signalled) and how to stop it,
    prints progress, and journals foreign_wait / foreign_wait_end with the duration.
    The foreign compiler ends on its own once two progress lines were seen."""
    name = "opc" + uuid.uuid4().hex[:8]
    proc = start_compiler(tmp_path, name)
    events: list[tuple[str, dict[str, Any]]] = []
    lines: list[str] = []

    def emit(event: Event) -> None:
        record = event.to_dict()
        fields = {k: v for k, v in record.items() if k not in ("schema", "t", "event")}
        events.append((event.event_name, fields))

    def notify(line: str) -> None:
        lines.append(line)
        if sum("still waiting" in x for x in lines) == 2:
            assert proc.stdin is not None
            proc.stdin.close()  # the foreign compiler finishes on its own
            proc.wait(timeout=30)

    try:
        request = req(tmp_path, jobs="1", lease_timeout=60.0, env={"SKGATE_COMPILER_NAMES": name})
        plan = prepare(request, tmp_path / "runs", emit, notify=notify, progress_every=0.2)
    finally:
        stop(proc)
    assert plan.blocked == ()
    names = [e for e, _ in events]
    assert names == ["foreign_wait", "foreign_wait_end"]
    start, end = events[0][1], events[1][1]
    assert [b["pid"] for b in start["blockers"]] == [proc.pid]
    assert start["timeout"] == 60.0
    assert end["outcome"] == "cleared"
    assert end["waited_s"] > 0
    assert [b["pid"] for b in end["blockers"]] == [proc.pid]
    first = lines[0]
    assert f"{name}[{proc.pid}]" in first
    assert "age " in first and "never signalled (C4)" in first
    assert "--foreign refuse" in first and "--lease-timeout" in first
    assert "foreign compilers gone" in lines[-1]
    schema = json.loads(files("skgate").joinpath("schemas/event.json").read_text())
    for event, fields in events:  # as the journal writes them, with its own fields
        jsonschema.validate(
            {"schema": "skgate.event/1", "event": event, "t": 0.0, **fields}, schema
        )
    assert [p.pid for p in plan.foreign] == [proc.pid]
    assert plan.controls["foreign"]["alive_at_end"] == 0


def test_blockers_wait_wakes_at_exit_and_checks_start_time(tmp_path: Path) -> None:
    from skgate.preflight.foreign import Blockers

    proc = start_compiler(tmp_path, "opc" + uuid.uuid4().hex[:8])
    stat = read_stat(proc.pid)
    assert stat is not None
    blockers = Blockers()
    try:
        blockers.add(proc.pid, stat.start_ticks + 1)  # same pid, other start: not it
        assert blockers.alive == 0
        blockers.add(proc.pid, stat.start_ticks)
        assert blockers.alive == 1
        assert proc.stdin is not None
        proc.stdin.close()
        t0 = time.monotonic()
        while blockers.alive and time.monotonic() - t0 < 60:
            blockers.wait(60.0)  # returns at the exit, not after 60 s
        assert blockers.alive == 0
        assert time.monotonic() - t0 < 30
    finally:
        blockers.close()
        stop(proc)


def test_foreign_wait_times_out_blocked(tmp_path: Path) -> None:
    name = "opc" + uuid.uuid4().hex[:8]
    proc = start_compiler(tmp_path, name)
    try:
        request = req(tmp_path, jobs="1", lease_timeout=0.4, env={"SKGATE_COMPILER_NAMES": name})
        plan = prepare(request, tmp_path / "runs")
        assert any("still running after" in r for r in plan.blocked)
        assert proc.poll() is None
    finally:
        stop(proc)


def test_render_lines_show_blocks_and_fingerprints(tmp_path: Path) -> None:
    site = tmp_path / "pp"
    site.mkdir()
    (site / "sitecustomize.py").write_text("X = 1\n")
    plan = prepare(req(tmp_path, jobs="1", env={"PYTHONPATH": str(site)}), tmp_path / "runs")
    text = "\n".join(render_lines(plan))
    fp = plan.controls["hooks"]["findings"][0]["fingerprint"]
    assert fp in text
    assert "BLOCKED" in text
    assert "--approve-hook" in text


# --------------------------------------------------------------------------- CLI


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from skgate.cli.main import main

    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_preflight_exit_codes_and_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text("X = 1\n")
    common = [
        "--root",
        str(tmp_path / "runs"),
        "--jobs",
        "2",
        "--env",
        f"SKGATE_COMPILER_NAMES={NOBODY}",
    ]
    cmd = ["--", sys.executable, "-c", "pass"]
    code, out, _ = run_cli(["preflight", *common, *cmd], capsys)
    assert code == 0
    assert "preflight clean" in out
    hooked = [*common, "--env", f"PYTHONPATH={patch}"]
    code, out, _ = run_cli(["preflight", *hooked, "--json", *cmd], capsys)
    assert code == 3
    data = json.loads(out)
    assert data["schema"] == "skgate.preflight/1"
    assert data["would_block"] is True
    fp = data["controls"]["hooks"]["findings"][0]["fingerprint"]
    code, out, _ = run_cli(["preflight", *hooked, "--approve-hook", fp, *cmd], capsys)
    assert code == 0
    base = tmp_path / "baseline.json"
    code, out, _ = run_cli(["preflight", *hooked, "--freeze-baseline", str(base), *cmd], capsys)
    assert code == 0
    assert json.loads(base.read_text())["fingerprints"] == [fp]
    code, _, err = run_cli(["preflight", *hooked, "--freeze-baseline", str(base), *cmd], capsys)
    assert code == 2
    assert "already exists" in err
    code, out, _ = run_cli(["preflight", *hooked, "--hook-baseline", str(base), *cmd], capsys)
    assert code == 0
    (patch / "sitecustomize.py").write_text("X = 2\n")  # content changed: approval lapses
    code, out, _ = run_cli(["preflight", *hooked, "--hook-baseline", str(base), *cmd], capsys)
    assert code == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--jobs", "0"], "--jobs 0"),
        (["--jobs", "-2"], "--jobs -2"),
        (["--python", "/nonexistent/python3"], "does not exist"),
        (["--profiler-schedule", "wait=1,active=x"], "profiler schedule"),
        (["--hook-baseline", "/nonexistent/b.json"], "does not exist"),
    ],
)
def test_cli_preflight_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    code, _out, err = run_cli(["preflight", "--root", str(tmp_path), *args], capsys)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_compiler_names_and_job_memory_come_from_the_request(tmp_path: Path) -> None:
    """The run's own options (--compiler-name, --job-memory-mb) are frozen in control.json
    and win over the environment variables kept for compatibility."""
    request = req(
        tmp_path,
        jobs="auto",
        compiler_names=("my-compiler",),
        job_memory_mb=1 << 40,
        env={"SKGATE_COMPILER_NAMES": "other", "SKGATE_JOB_MEMORY_MB": "1"},
    )
    plan = prepare(request, tmp_path / "runs")
    assert plan.controls["foreign"]["names"] == ["my-compiler"]
    assert plan.controls["jobs"]["inputs"]["job_memory_mb"] == 1 << 40
    assert plan.controls["jobs"]["value"] == 1  # a budget larger than memory: one job


def test_earlier_jobs_come_from_the_ledger_when_it_records_them(tmp_path: Path) -> None:
    """A runner puts the frozen jobs value in its ledger end entry, so the next preflight
    of the root reads one file instead of every attempt's control.json; what it decides
    is the same either way (attempts without such an entry are read from their files)."""
    root = tmp_path / "runs"
    first = run_here(req(tmp_path, jobs="4", quiet=True))
    blocked = run_here(req(tmp_path, jobs="8", quiet=True))  # C5: not started, never a ref
    assert first.attempt and blocked.state.value == "not_started"
    ends = end_entries(root)
    assert ends["0001"]["jobs"] == {"value": 4, "varied": False}
    assert ends["0002"]["state"] == "not_started"
    fake_attempt(root, "0003", 16)  # an attempt with no end entry (older skgate, crash)
    via_ledger = prepare(req(tmp_path, jobs="4"), root)
    expected = [{"attempt": "0001", "value": 4}, {"attempt": "0003", "value": 16}]
    assert via_ledger.controls["jobs"]["compared_with"] == expected
    # The ledger alone decides for attempts it records: their control.json is not parsed
    # (here one rewritten to say 99 after the fact still counts as the 4 it froze).
    control = root / "attempts" / "0001" / "control.json"
    control.unlink()
    write_json_new(control, {"schema": "skgate.control/1", "controls": {"jobs": {"value": 99}}})
    assert prepare(req(tmp_path, jobs="4"), root).controls["jobs"]["compared_with"] == expected
    assert [e["event"] for e in read_ledger(root)] == ["start", "end", "start", "end"]


def test_an_end_entry_spelt_otherwise_is_read_from_the_attempts_files(tmp_path: Path) -> None:
    """end_entries parses only the lines that spell the end event as skgate writes it
    (issue 29: parsing every line cost each run 0.015 ms per attempt of the root). An
    entry spelt otherwise (here a ledger rewritten with spaces) is not found there, and
    the comparison reads that attempt's own files instead: the same answer."""
    root = tmp_path / "runs"
    run_here(req(tmp_path, jobs="4", quiet=True))
    run_here(req(tmp_path, jobs="8", quiet=True))  # C5: not started, never a reference
    assert set(end_entries(root)) == {"0001", "0002"}
    before = prepare(req(tmp_path, jobs="4"), root).controls["jobs"]["compared_with"]
    ledger = root / "ledger.jsonl"
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    ledger.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    assert end_entries(root) == {}
    after = prepare(req(tmp_path, jobs="4"), root).controls["jobs"]["compared_with"]
    assert after == before == [{"attempt": "0001", "value": 4}]
