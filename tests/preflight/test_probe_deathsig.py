"""A hook probe dies with the runner that started it (issue 21 s4).

A runner SIGKILLed in preflight used to leave its probe interpreters running on their
own. The "runner" here is a helper process started by the test, which starts one probe
that would wait for ever on a pipe; the test SIGKILLs the helper by pid and waits,
through a pidfd, for the probe to end (no sleep: the kernel says when it is gone).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from skgate.proc.observe import is_alive, read_stat

HELPER = r"""
import os, sys
from pathlib import Path
from skgate.preflight.hooks.probe import Probe
out = Path(sys.argv[1])
probe = Probe(
    [sys.executable, "-c", "import signal; signal.pause()"], dict(os.environ), None,
    out / "result",
)
print(probe.proc.pid, flush=True)
sys.stdin.read()  # the test kills this process while it waits here
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_a_probe_ends_when_its_runner_is_killed(tmp_path: Path) -> None:
    helper = subprocess.Popen(
        [sys.executable, "-c", HELPER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    probe_pid = 0
    try:
        assert helper.stdout is not None
        probe_pid = int(helper.stdout.readline())  # written once the probe started
        stat = read_stat(probe_pid)
        assert stat is not None
        pidfd = os.pidfd_open(probe_pid)
        try:
            helper.kill()  # the runner dies in preflight (we started it: by pid)
            helper.wait()
            ready, _, _ = select.select([pidfd], [], [], 30)
        finally:
            os.close(pidfd)
        assert ready, "the probe outlived its runner by 30 s"
        assert not is_alive(probe_pid, stat.start_ticks)
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()
        for f in (helper.stdin, helper.stdout):
            if f is not None:
                f.close()
        if probe_pid:
            stat = read_stat(probe_pid)
            if stat is not None and not stat.zombie:
                os.kill(probe_pid, signal.SIGKILL)  # the defect: end what we caused
