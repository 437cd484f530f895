"""Process handles: identity by pid and start time, a pidfd that wakes on exit."""

from __future__ import annotations

import signal
import subprocess
import sys

from skgate.evidence.follow import wait_readable
from skgate.proc.handle import ProcessHandle
from skgate.proc.observe import read_stat


def test_a_handle_signals_its_process_and_wakes_when_it_exits() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        st = read_stat(proc.pid)
        assert st is not None
        handle = ProcessHandle.open(proc.pid, st.start_ticks)
        assert handle is not None and handle.exact and handle.alive()
        assert wait_readable([handle.fileno()], 0) == []
        assert handle.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert wait_readable([handle.fileno()], 10) == [handle.fileno()]
        assert not handle.alive()
        handle.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_wrong_start_time_gives_no_handle() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        st = read_stat(proc.pid)
        assert st is not None
        # Same pid, another start time: a recycled pid must never be taken for the runner.
        assert ProcessHandle.open(proc.pid, st.start_ticks + 1) is None
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
