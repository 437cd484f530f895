"""The scan's pace while process events are healthy (issue 29, C3).

The scan backs off while the events connector is open, lost nothing and the scans agree
with it, and snaps back on any disagreement, lost event or owned change. A process the
events miss is still found by a later scan. The clock is driven by the test (the pace is
computed from the ``now`` it is given), so nothing here depends on timing.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import wait_for
from skgate.proc.owned import SEEN_EVENTS, SEEN_SCAN
from skgate.proc.scanpace import BACKOFF_MAX, ScanPace
from skgate.proc.sources import Sources
from skgate.proc.supervise import Supervisor, SupervisorConfig


class Heard:
    """A SupervisorObserver that ignores what it is told (this test reads the tree)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class BlindConnector:
    """A healthy events connector that reports nothing: every owned process is one the
    events missed, so only the scan can find it."""

    def __init__(self) -> None:
        self.overruns = 0
        self.received = 0
        self.exit_records = None
        self.doorbell = None

    def stream(self, limit: int = 4096, interest: Any = None) -> Iterator[Any]:
        return iter(())


def sources(conn: Any) -> Any:
    return SimpleNamespace(connector=conn, exit_records=None)


def quiet_scans(pace: ScanPace, src: Any, n: int, now: float = 0.0) -> list[float]:
    got = []
    for _ in range(n):
        pace.after_scan(now, src, agreed=True)
        got.append(pace.interval)
        now = pace.next_at
    return got


def test_quiet_scans_back_off_up_to_the_cap() -> None:
    pace = ScanPace(1.0)
    assert quiet_scans(pace, sources(BlindConnector()), 6) == [2.0, 4.0, 8.0, 8.0, 8.0, 8.0]
    assert BACKOFF_MAX == 8


def test_without_events_the_scan_never_backs_off() -> None:
    # C3: without the connector the scan is the record; its interval is the configured one.
    assert quiet_scans(ScanPace(0.5), sources(None), 4) == [0.5] * 4


def test_a_disagreeing_scan_snaps_back() -> None:
    pace, src = ScanPace(1.0), sources(BlindConnector())
    quiet_scans(pace, src, 3)
    pace.after_scan(100.0, src, agreed=False)
    assert (pace.interval, pace.next_at) == (1.0, 101.0)


def test_a_lost_event_snaps_back_once_then_backs_off_again() -> None:
    conn = BlindConnector()
    pace, src = ScanPace(1.0), sources(conn)
    quiet_scans(pace, src, 3)
    conn.overruns += 1  # the kernel dropped events (ENOBUFS)
    pace.after_scan(10.0, src, agreed=True)
    assert pace.interval == 1.0
    assert quiet_scans(pace, src, 2, 11.0) == [2.0, 4.0]


def test_an_exit_record_overrun_is_a_lost_event_too() -> None:
    records = SimpleNamespace(overruns=0)
    src: Any = SimpleNamespace(connector=BlindConnector(), exit_records=records)
    pace = ScanPace(1.0)
    quiet_scans(pace, src, 3)
    records.overruns = 2
    pace.after_scan(10.0, src, agreed=True)
    assert pace.interval == 1.0


def test_an_owned_change_brings_the_next_scan_within_the_configured_interval() -> None:
    pace, src = ScanPace(1.0), sources(BlindConnector())
    quiet_scans(pace, src, 4)  # the next scan is 8 s after the last
    due = pace.next_at
    pace.snap_back(due - 7.5)
    assert (pace.interval, pace.next_at) == (1.0, due - 6.5)
    pace.snap_back(due - 6.9)  # never later than a scan already due
    assert pace.next_at == due - 6.5


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[tuple[Supervisor, Path]]:
    """A supervised leader that forks a child once ``go`` exists, under blind events."""
    script = (
        "import os, subprocess, sys, time\n"
        "go, done = sys.argv[1], sys.argv[2]\n"
        "while not os.path.exists(go): time.sleep(0.01)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'],"
        " stdin=subprocess.PIPE)\n"
        "open(done, 'w').write(str(child.pid))\n"
        "child.wait()\n"
    )
    argv = (sys.executable, "-c", script, str(tmp_path / "go"), str(tmp_path / "done"))
    config = SupervisorConfig(argv, env={}, cwd=str(tmp_path), timeout=60.0, grace=1.0)
    sup = Supervisor(config, Heard(), Sources(connector=BlindConnector()))  # type: ignore[arg-type]
    proc = sup.launch()
    assert proc is not None
    sup.track_leader(0.0)
    try:
        yield sup, tmp_path
    finally:
        # End what this test started, by its own process group (C4).
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_process_the_events_miss_is_still_found_and_the_scan_snaps_back(
    leader: tuple[Supervisor, Path],
) -> None:
    sup, tmp = leader
    now = 0.0
    for _ in range(5):  # nothing new: the scans agree with the (silent, healthy) events
        sup._scan(now)
        now = sup._pace.next_at
    assert sup._pace.interval == BACKOFF_MAX * 1.0
    (tmp / "go").write_text("")
    child = int(wait_for(lambda: (tmp / "done").exists() and (tmp / "done").read_text(), "fork"))
    sup._scan(now)
    found = [p for p in sup.owned.procs.values() if p.pid == child]
    assert len(found) == 1
    assert SEEN_SCAN in found[0].seen_by and SEEN_EVENTS not in found[0].seen_by
    assert sup.owned.missed_by_events() == 1  # the cross-check says so (C3)
    assert (sup._pace.interval, sup._pace.next_at) == (1.0, now + 1.0)
