"""Parent side of the hook probes: one probe interpreter in its own session, bounded by a
deadline, its result read from the file it wrote (never from its stdout)."""

from __future__ import annotations

import ast
import contextlib
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def wait_exit(proc: subprocess.Popen[bytes], deadline: float) -> int:
    """Wait for ``proc`` until ``deadline``, woken by its pidfd the moment it exits.

    ``Popen.wait(timeout=...)`` polls with growing sleeps (up to 50 ms each), which is
    most of a probe's cost; a pidfd becomes readable exactly at exit.
    """
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    try:
        ready, _, _ = select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
    finally:
        os.close(pidfd)
    if not ready:
        raise subprocess.TimeoutExpired(proc.args, deadline)
    return proc.wait()


class Probe:
    """One probe subprocess; several run at once (each is an interpreter start-up)."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None, out: Path
    ) -> None:
        self.argv = list(argv)
        self.out = out
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in result()
        self.problem: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            self.proc = subprocess.Popen(
                self.argv,
                env=dict(env),
                cwd=cwd if cwd and os.path.isdir(cwd) else None,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                start_new_session=True,  # its own group: a timeout ends exactly it (C4)
            )
        except OSError as exc:
            self.problem = f"cannot execute {self.argv[0]} ({exc.strerror})"

    def result(self, deadline: float) -> tuple[Any | None, str | None]:
        """Wait until ``deadline`` (monotonic); return (parsed result, None) or (None, why)."""
        with self.log:
            if self.proc is None:
                return None, self.problem
            try:
                code = wait_exit(self.proc, deadline)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)  # the probe's own session
                self.proc.wait()
                return None, f"probe {self.argv[0]} did not finish in time (killed)"
            self.log.seek(0)
            raw = self.log.read()[-2000:].decode("utf-8", "backslashreplace")
        tail = raw.strip().splitlines()
        last = tail[-1] if tail else "no output"
        if code != 0:
            return None, f"probe {self.argv[0]} exited with status {code}: {last}"
        try:
            return ast.literal_eval(self.out.read_text(encoding="utf-8")), None
        except (OSError, ValueError, SyntaxError, MemoryError, RecursionError):
            return None, f"probe {self.argv[0]} wrote no result: {last}"
