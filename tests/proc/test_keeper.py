"""The pipe keeper (skgate.proc.keeper): the compile's output pipe outlives the runner (C4)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import wait_for
from skgate.proc.keeper import KEPT_LOG, PipeKeeper, keeper_draining


def _pipe() -> tuple[int, int]:
    return os.pipe2(os.O_CLOEXEC)


def test_a_normal_end_leaves_no_file_and_no_process(tmp_path: Path) -> None:
    r, w = _pipe()
    keeper = PipeKeeper.start(r, tmp_path)
    assert keeper is not None
    assert keeper_draining(tmp_path)  # ready means it holds the lock
    os.close(w)
    keeper.release()
    assert not (tmp_path / KEPT_LOG).exists() and not keeper_draining(tmp_path)
    assert keeper._proc.returncode == 0
    os.close(r)


def test_when_the_runner_is_gone_the_keeper_drains_until_the_writers_are(tmp_path: Path) -> None:
    r, w = _pipe()
    os.set_blocking(r, False)  # as the runner reads it (the flag is shared with the keeper)
    keeper = PipeKeeper.start(r, tmp_path)
    assert keeper is not None
    os.close(r)  # the runner's own copy gone: only the keeper still reads
    # As if the runner died: its end of the liveness pipe closes without a word.
    os.close(keeper._alive_w)
    keeper._alive_w = -1
    os.write(w, b"printed after the runner died\n")  # no EPIPE: a reader is left
    assert keeper_draining(tmp_path)  # still draining: the attempt is not finished
    os.write(w, b"[summary] last line\n")
    os.close(w)  # the compile's natural return: the last writer is gone
    keeper._proc.wait(timeout=20)
    wait_for(lambda: not keeper_draining(tmp_path), "the lock released")
    text = (tmp_path / KEPT_LOG).read_bytes()
    assert text == b"printed after the runner died\n[summary] last line\n"


def test_a_file_already_in_the_way_means_no_keeper_never_a_write_through_it(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.write_text("not evidence")
    attempt = tmp_path / "a"
    attempt.mkdir()
    (attempt / KEPT_LOG).symlink_to(outside)
    r, w = _pipe()
    assert PipeKeeper.start(r, attempt) is None
    assert outside.read_text() == "not evidence"
    for fd in (r, w):
        os.close(fd)


def test_no_lock_no_draining(tmp_path: Path) -> None:
    assert not keeper_draining(tmp_path)
    (tmp_path / KEPT_LOG).write_bytes(b"left by a keeper that ended")
    assert not keeper_draining(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs (root only)")
def test_a_full_disk_never_stops_the_draining(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        r, w = _pipe()
        keeper = PipeKeeper.start(r, disk)
        assert keeper is not None
        os.close(r)
        os.close(keeper._alive_w)
        keeper._alive_w = -1
        chunk = b"x" * 4095 + b"\n"
        for _ in range(256):  # 1 MiB into a 64 KiB disk: every write still goes through
            assert os.write(w, chunk) == len(chunk)
        os.close(w)
        assert keeper._proc.wait(timeout=20) == 0
        assert 0 < (disk / KEPT_LOG).stat().st_size <= 64 * 1024
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_keeper_that_does_not_end_is_killed_at_the_timeout_and_reaped(tmp_path: Path) -> None:
    """release() waits for the keeper's exit (on its pidfd), up to its timeout: one that
    never reads the runner's word is then killed by its own handle and reaped."""
    alive_r, alive_w = _pipe()
    # A stand-in keeper that never reads the liveness pipe: our own child.
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        keeper = PipeKeeper(proc, alive_w, tmp_path / KEPT_LOG)
        keeper.release(timeout=0.2)
        assert proc.returncode == -9  # killed, and reaped (returncode is set)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        os.close(alive_r)
