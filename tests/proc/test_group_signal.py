"""The Supervisor's group signal and launch refusal (issue 21 s4), on real processes.

The processes are started here, in their own session (so each is its own group, as the
leader is), and ended here by pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skgate.model.events import Event
from skgate.model.running import Coverage, ProcessRecord
from skgate.proc.sources import Sources
from skgate.proc.supervise import Supervisor, SupervisorConfig


class Heard:
    """A SupervisorObserver that keeps what it is told."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: Event) -> object:
        self.events.append(event.to_dict())  # as the journal would write it
        return None

    def output(self, data: bytes) -> None:
        pass

    def manifest(
        self, records: list[ProcessRecord], complete: bool, coverage: Coverage | None
    ) -> None:
        pass

    def journal(self, data: bytes) -> None:
        pass

    def tick(self, live: int) -> None:
        pass

    def process(self, record: ProcessRecord) -> None:
        pass

    def scan(self, alive: list[tuple[int, int]]) -> None:
        pass

    def note(self, line: str) -> None:
        pass

    def stop_request(self) -> dict[str, Any] | None:
        return None


class FakeLeaf:
    """A cgroup leaf whose cgroup.kill is recorded (and kills its members by pid)."""

    def __init__(self, members: list[int]) -> None:
        self._members = members
        self.killed = False

    def members(self) -> list[int]:
        return list(self._members)

    def kill(self) -> bool:
        self.killed = True
        for pid in self._members:
            os.kill(pid, signal.SIGKILL)
        return True


def supervisor(tmp_path: Path, leaf: FakeLeaf | None = None) -> tuple[Supervisor, Heard]:
    heard = Heard()
    config = SupervisorConfig(
        (sys.executable, "-c", "pass"), env={}, cwd=str(tmp_path), timeout=60.0, grace=1.0
    )
    return Supervisor(config, heard, Sources(leaf=leaf)), heard  # type: ignore[arg-type]


@pytest.fixture
def group() -> Iterator[subprocess.Popen[bytes]]:
    # A process that waits on its stdin: it ends when the test closes it or kills it.
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stdin is not None:
        proc.stdin.close()


def sent(heard: Heard) -> dict[str, Any]:
    got = [e for e in heard.events if e["event"] == "signal_sent"]
    assert len(got) == 1
    return got[0]


def test_sigkill_goes_through_cgroup_kill_when_the_leaf_is_the_group(
    tmp_path: Path, group: subprocess.Popen[bytes]
) -> None:
    leaf = FakeLeaf([group.pid])
    sup, heard = supervisor(tmp_path, leaf)
    sup._signal_group(group.pid, signal.SIGKILL, "grace-expired")
    assert leaf.killed
    assert group.wait(timeout=30) == -signal.SIGKILL
    ev = sent(heard)
    assert (ev["delivered"], ev["via"]) == (True, "cgroup.kill")


def test_a_leaf_with_a_process_outside_the_group_is_never_killed_whole(
    tmp_path: Path, group: subprocess.Popen[bytes]
) -> None:
    # C4: a member that is not in the group (an escapee, or put there from outside) is
    # never signalled, so cgroup.kill is not used: the group signal is.
    stranger = os.getpid()  # in the "leaf" but not in the group; must not be hit
    leaf = FakeLeaf([group.pid, stranger])
    sup, heard = supervisor(tmp_path, leaf)
    sup._signal_group(group.pid, signal.SIGKILL, "grace-expired")
    assert not leaf.killed
    assert group.wait(timeout=30) == -signal.SIGKILL
    ev = sent(heard)
    assert ev["delivered"] is True and "via" not in ev


def test_an_ended_group_is_not_signalled_and_the_record_says_why(
    tmp_path: Path, group: subprocess.Popen[bytes]
) -> None:
    assert group.stdin is not None
    group.stdin.close()
    group.wait(timeout=30)
    sup, heard = supervisor(tmp_path)
    sup._signal_group(group.pid, signal.SIGKILL, "grace-expired")
    ev = sent(heard)
    assert ev["delivered"] is False
    assert ev["not_sent"] == "the process group has no live member left"


class SignalOnPlacing(Sources):
    """Sources whose placement (the leaf's migration lock) sees a stop signal arrive."""

    def placing(self) -> Any:
        # The Python handler runs before the next bytecode of this (main) thread.
        os.kill(os.getpid(), signal.SIGTERM)
        return super().placing()


def test_a_stop_signal_before_the_fork_refuses_the_launch(tmp_path: Path) -> None:
    # Issue 21 s4: a signal that came after the handover check but before the fork used
    # to launch the workload and then interrupt it; now nothing is forked.
    heard = Heard()
    marker = tmp_path / "ran"
    config = SupervisorConfig(
        (sys.executable, "-c", f"open({str(marker)!r}, 'w')"),
        env=dict(os.environ),
        cwd=str(tmp_path),
        timeout=60.0,
        grace=1.0,
    )
    sup = Supervisor(config, heard, SignalOnPlacing())
    sup.install_handlers()
    try:
        proc = sup.launch()
        stops = sup.pending_stops()
    finally:
        sup.restore_handlers()
    if proc is not None:  # the defect: end what was started, then fail
        proc.wait(timeout=30)
    assert proc is None
    assert stops == [signal.SIGTERM]
    assert not marker.exists()
