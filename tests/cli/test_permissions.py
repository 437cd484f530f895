"""Unreadable roots and attempts, and report targets that are not regular files (issue 12).

Every command answers a permission or type problem with one line naming the path and
what to do (exit 2), never "internal error". CI runs as root, which reads anything: the
command then runs in a forked child that dropped to a throwaway uid (the modules it needs
are imported first, so it reads no file of the checkout after dropping).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_skgate
from skgate.cli import main as cli_main

NOBODY = 65534


def as_other_user(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``skgate ARGS`` as a user without access (root drops to NOBODY in a child)."""
    for area in cli_main.AREAS:
        importlib.import_module(f"skgate.cli.{area}")
    importlib.import_module("skgate.cli.watch")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            os.chdir(cwd)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            # pytest's capture replaced sys.stdout/stderr: write to the pipe instead.
            sys.stdout = sys.stderr = os.fdopen(write, "w", encoding="utf-8")
            code = cli_main.main(args)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            code = 99
        os._exit(code)
    os.close(write)
    out = b""
    while chunk := os.read(read, 1 << 16):
        out += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


@pytest.fixture
def finished_root(tmp_path: Path) -> Iterator[Path]:
    cmd = [sys.executable, "-c", "print('[summary] stage=a inputs=1 succeeded=1 failed=0')"]
    assert run_skgate("run", "--root", "r", "--quiet", "--", *cmd, cwd=tmp_path).returncode == 0
    tmp_path.chmod(0o755)
    yield tmp_path / "r"
    for p in (tmp_path / "r", tmp_path / "r" / "attempts" / "0001"):
        p.chmod(0o755)


COMMANDS = [
    ["status", "r"],
    ["status", "r/attempts/0001"],
    ["status", "--all", "r"],
    ["status", "--watch", "r/attempts/0001"],
    ["report", "r"],
    ["verify", "r"],
    ["classify", "r/attempts/0001"],
    ["retry", "r/attempts/0001"],
    ["recover", "r"],
]


@pytest.mark.parametrize("locked", ["r", "r/attempts/0001"])
@pytest.mark.parametrize("args", COMMANDS, ids="-".join)
def test_unreadable_root_or_attempt_is_one_line_exit_2(
    finished_root: Path, locked: str, args: list[str]
) -> None:
    base = finished_root.parent
    (base / locked).chmod(0)
    code, out = as_other_user(args, base)
    assert code == 2, out
    assert out.count("\n") == 1 and out.startswith("skgate: "), out
    assert "internal error" not in out and "Traceback" not in out
    assert "Permission denied" in out and "check its permissions" in out
    assert locked in out  # names the path (or a file inside it)


def test_report_force_replaces_only_regular_files(finished_root: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    for path, needle in ((link, "symbolic link"), (fifo, "not a regular file")):
        res = run_skgate("report", str(finished_root), "-o", str(path), "--force", cwd=tmp_path)
        assert res.returncode == 2, res
        assert needle in res.stderr and res.stderr.count("\n") == 1
    assert link.is_symlink() and target.read_text() == "keep me\n"
    assert fifo.is_fifo()
    if Path("/dev/full").exists():
        res = run_skgate("report", str(finished_root), "-o", "/dev/full", "--force", cwd=tmp_path)
        assert res.returncode == 2 and "not a regular file" in res.stderr
        assert Path("/dev/full").is_char_device()
    plain = tmp_path / "old.md"
    plain.write_text("old\n")
    res = run_skgate("report", str(finished_root), "-o", str(plain), "--force", cwd=tmp_path)
    assert res.returncode == 0, res
    assert plain.read_text() != "old\n"
