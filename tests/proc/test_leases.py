"""Device leases (C4): one flock per device, all or nothing, markers for inheritance."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Reaper, wait_for
from skgate.model.request import RunRequest
from skgate.preflight.prepare import prepare
from skgate.proc import leases

# A child that runs prepare() for device 0, records when it got the lease, "works"
# until a go-file appears, then records the release time and releases.
HOLDER = r"""
import os, sys, time
from pathlib import Path
from skgate.model.events import Preflight, PreflightStep
from skgate.model.request import RunRequest
from skgate.preflight.prepare import prepare
root, tag, out, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
def put(name, text):
    # Markers appear whole (write, then rename): the test reads them as soon as they exist.
    tmp = out / (name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, out / name)
def emit(event):
    if isinstance(event, Preflight) and event.step_kind is PreflightStep.LEASE_WAIT:
        put(tag + ".waiting", str(event.details.get("holder")))
req = RunRequest(argv=(sys.executable, "-c", "pass"), cwd=str(out), root=str(out / tag),
                 jobs="1", devices=(0,), lease_timeout=60.0,
                 env={"SKGATE_LEASE_ROOT": root, "SKGATE_COMPILER_NAMES": "skgt-none-xyz"})
plan = prepare(req, out / tag, emit)
assert not plan.blocked, plan.blocked
assert plan.env["SUPERKERNEL_DEVICE_LEASE_HELD"] == "1"
put(tag + ".held", repr(time.monotonic()))
while not go.exists():
    time.sleep(0.02)
put(tag + ".released", repr(time.monotonic()))
plan.release()
"""


def wait_path(path: Path) -> None:
    wait_for(path.exists, what=str(path), timeout=30)


def test_two_runs_on_one_device_never_overlap(tmp_path: Path) -> None:
    root = tmp_path / "leases"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        a = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(root), "a", str(tmp_path), str(tmp_path / "go-a")]
        )
        procs.append(a)
        wait_path(tmp_path / "a.held")
        b = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(root), "b", str(tmp_path), str(tmp_path / "go-b")]
        )
        procs.append(b)
        wait_path(tmp_path / "b.waiting")  # b saw the device busy ...
        assert not (tmp_path / "b.held").exists()  # ... and did not take it
        assert str(a.pid) in (tmp_path / "b.waiting").read_text()  # it knows the holder
        (tmp_path / "go-a").write_text("")
        wait_path(tmp_path / "b.held")
        a_released = float((tmp_path / "a.released").read_text())
        b_held = float((tmp_path / "b.held").read_text())
        assert b_held >= a_released
        (tmp_path / "go-b").write_text("")
        assert a.wait(timeout=30) == 0
        assert b.wait(timeout=30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()  # our own child, by pid
                p.wait()


def test_busy_device_times_out_blocked_and_all_or_nothing(tmp_path: Path) -> None:
    env = {leases.LEASE_ROOT_VAR: str(tmp_path)}
    mine = leases.acquire([1], env, timeout=0)
    assert mine.lease is not None
    got = leases.acquire([1, 0], env, timeout=0.3, poll=0.05)
    assert got.lease is None
    assert "device 1 is leased by another run" in got.blocked[0]
    assert f"pid {os.getpid()}" in got.blocked[0]
    # The wait did not sit on device 0 (all or nothing).
    assert not leases.is_locked(tmp_path, 0)
    mine.lease.release()
    mine.lease.release()  # idempotent
    again = leases.acquire([0, 1], env, timeout=0)
    assert again.lease is not None
    assert again.blocked == ()
    assert again.env == {
        leases.HELD_VAR: "1",
        leases.IDS_VAR: "0,1",
        leases.ROOT_VAR: str(tmp_path),
    }
    again.lease.release()


@pytest.mark.parametrize(
    ("markers", "needle"),
    [
        ({leases.HELD_VAR: "1"}, "partial"),
        ({leases.IDS_VAR: "0"}, "partial"),
        ({leases.HELD_VAR: "yes", leases.IDS_VAR: "0", leases.ROOT_VAR: "/x"}, "is not '1'"),
        ({leases.HELD_VAR: "1", leases.IDS_VAR: "a,b", leases.ROOT_VAR: "/x"}, "list of ids"),
    ],
)
def test_partial_or_bad_markers_fail_closed(markers: dict[str, str], needle: str) -> None:
    got = leases.acquire([0], markers, timeout=0)
    assert got.lease is None
    assert needle in got.blocked[0]


def test_inherited_lease_verified_and_conflicts_fail_closed(tmp_path: Path) -> None:
    parent = leases.acquire([0, 1], {leases.LEASE_ROOT_VAR: str(tmp_path)}, timeout=0)
    assert parent.lease is not None
    inherited = dict(parent.env)
    ok = leases.acquire([1], inherited, timeout=0)
    assert ok.blocked == ()
    assert ok.controls["mode"] == "inherited"
    assert ok.controls["verified"] is True
    outside = leases.acquire([2], inherited, timeout=0)
    assert "not among the inherited lease" in outside.blocked[0]
    other_root = leases.acquire([0], {**inherited, leases.LEASE_ROOT_VAR: "/elsewhere"}, timeout=0)
    assert "conflicts" in other_root.blocked[0]
    parent.lease.release()
    # Markers that claim a lease nobody holds are a lie: fail closed.
    stale = leases.acquire([0], inherited, timeout=0)
    assert "nobody holds" in stale.blocked[0]


def test_prepare_exports_markers_and_release(tmp_path: Path) -> None:
    req = RunRequest(
        argv=(sys.executable, "-c", "pass"),
        cwd=str(tmp_path),
        root=str(tmp_path / "runs"),
        jobs="1",
        devices=(3,),
        lease_timeout=0,
        env={leases.LEASE_ROOT_VAR: str(tmp_path / "l"), "SKGATE_COMPILER_NAMES": "skgt-none"},
    )
    plan = prepare(req, tmp_path / "runs")
    assert plan.blocked == ()
    assert plan.env[leases.IDS_VAR] == "3"
    assert plan.controls["leases"]["mode"] == "acquired"
    assert leases.is_locked(tmp_path / "l", 3)
    second = prepare(req, tmp_path / "runs")
    assert any("device 3 is leased" in r for r in second.blocked)
    plan.release()
    plan.release()
    assert not leases.is_locked(tmp_path / "l", 3)


def test_lease_is_held_by_the_workload_even_if_the_runner_dies(
    tmp_path: Path, reaper: Reaper
) -> None:
    """C4: the lease covers the whole owned tree, not just the runner's lifetime."""
    from conftest import events, script, start_skgate, wait_file

    lease_root = tmp_path / "leases"
    body = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "m = Path(sys.argv[1])\n"
        "(m / 'w.tmp').write_text(f'{os.getpid()}\\n'); (m / 'w.tmp').rename(m / 'w.pid')\n"
        "while not (m / 'go').exists():\n"
        "    time.sleep(0.01)\n"
    )
    cmd = script(tmp_path, "work.py", body)
    runner = reaper.popen(
        start_skgate(
            "run",
            "--root",
            "r",
            "--quiet",
            "--devices",
            "0",
            "--env",
            f"SKGATE_LEASE_ROOT={lease_root}",
            "--",
            *cmd,
            str(tmp_path),
            cwd=tmp_path,
        )
    )
    workload = reaper.add(int(wait_file(tmp_path / "w.pid")))
    att = tmp_path / "r" / "attempts" / "0001"
    wait_for(lambda: any(e["event"] == "launched" for e in events(att)), what="launch")
    assert leases.is_locked(lease_root, 0)
    runner.kill()  # the runner dies (we started it; by pid)
    runner.wait()
    assert leases.is_locked(lease_root, 0), "the lease ended with the runner, not the tree"
    (tmp_path / "go").write_text("")
    wait_for(lambda: not leases.is_locked(lease_root, 0), what="the lease to end with the tree")
    assert workload
