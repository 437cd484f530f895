"""The exit status is the answer, whatever became of the text (cli/output.py).

A failed run piped into a reader that stops early (``| grep -q``, ``| head``) exited 0,
"succeeded", before the guard; with stdout closed it ended in a traceback, and on a full
disk it called itself a bug. Here every one of those ends with the failed verdict's
status (1), no traceback, and one line only where something worth saying happened."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_quick import SCRIPT, _ended

from conftest import ENV

FAILED = 1  # skgate.model.exits: failed, naturally returned final failures


def _ended_full(args: list[str]) -> tuple[int, bytes, bytes]:
    """stdout on /dev/full: every write fails with ENOSPC."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), *args],
            env=ENV,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    return done.returncode, b"", done.stderr


def _end(args: list[str], stdout: str) -> tuple[int, bytes, bytes]:
    return _ended_full(args) if stdout == "full" else _ended(args, stdout)


@pytest.fixture(scope="module")
def failed_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("failed")
    code, out, err = _ended(
        ["run", "--root", str(work / "r"), "--verdict-from", "exit-status", "--", "false"], "read"
    )
    assert code == FAILED and b"FAILED" in out, err
    return work / "r"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this host")
@pytest.mark.parametrize("stdout", ["broken", "closed", "full"])
@pytest.mark.parametrize("json", [[], ["--json"]])
def test_status_of_a_failed_attempt_keeps_its_exit_status(
    failed_root: Path, stdout: str, json: list[str]
) -> None:
    code, _, err = _end(["status", *json, str(failed_root)], stdout)
    assert code == FAILED, err
    assert b"Traceback" not in err and b"internal error" not in err
    if stdout == "full":
        assert err.decode().splitlines() == [
            "skgate: could not write to standard output (No space left on device); the exit "
            "status is still the answer's (see `skgate status`)"
        ]
    else:  # a closed pipe or descriptor: the reader's choice, nothing to say
        assert err == b""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this host")
@pytest.mark.parametrize("stdout", ["broken", "closed", "full"])
def test_a_failed_run_never_exits_0_when_its_output_cannot_be_written(
    tmp_path: Path, stdout: str
) -> None:
    root = tmp_path / "r"
    code, _, err = _end(
        ["run", "--root", str(root), "--verdict-from", "exit-status", "--", "false"], stdout
    )
    assert code == FAILED, err
    assert b"Traceback" not in err and b"internal error" not in err
    # The record says the same as the exit status.
    again, out, _ = _ended(["status", str(root)], "read")
    assert again == FAILED and out.startswith(b"FAILED")
