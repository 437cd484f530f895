"""StopSignals.restore(late=...): a stop signal after the last ledger entry, in a process
about to exit (the command line), is said in one line, never a KeyboardInterrupt traceback
(CI run of 8993802: SIGINT landed in threading._shutdown after seal.json), and a second one
of the same kind ends the process at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    from skgate.proc.signals import StopSignals

    stops = StopSignals()
    stops.install()
    late = None if sys.argv[1] == "plain" else (lambda m: os.write(2, (m + "\\n").encode()))
    stops.restore(late=late)
    for _ in range(int(sys.argv[2])):
        os.kill(os.getpid(), signal.SIGINT)
    print("exited normally", flush=True)
    """
)


def _run(mode: str, count: int) -> subprocess.CompletedProcess[str]:
    # The child starts with SIGINT at Python's default (not inherited ignored), which is
    # what the test relies on: set it explicitly.
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(count)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_plain_restore_gives_back_pythons_default() -> None:
    # The contrast: without ``late`` the library restores exactly what it found.
    done = _run("plain", 1)
    assert "KeyboardInterrupt" in done.stderr
    assert "exited normally" not in done.stdout


def test_one_late_signal_is_said_and_the_exit_goes_on() -> None:
    done = _run("late", 1)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "exited normally\n"
    assert done.stderr == "skgate: SIGINT received after the attempt was recorded\n"


@pytest.mark.parametrize("count", [2, 3])
def test_a_second_late_signal_of_the_same_kind_ends_at_once(count: int) -> None:
    done = _run("late", count)
    assert done.returncode == 128 + signal.SIGINT
    assert "exited normally" not in done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.count("received after the attempt was recorded") == 1
