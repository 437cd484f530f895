"""Read-only process observation: the owned tree, with and without children files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Reaper, wait_file, wait_for
from skgate.proc import observe

# A child that starts a grandchild, says its pid, and waits to be ended by pid.
PARENT = """
import os, signal, subprocess, sys
from pathlib import Path
kid = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
m = Path(sys.argv[1]); (m / "t").write_text(f"{kid.pid}\\n"); (m / "t").rename(m / "kid")
signal.pause()
"""


@pytest.mark.parametrize("children_files", [True, False])
def test_tree_finds_children_and_grandchildren(
    tmp_path: Path, reaper: Reaper, monkeypatch: pytest.MonkeyPatch, children_files: bool
) -> None:
    parent = reaper.popen(subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)]))
    kid = reaper.add(int(wait_file(tmp_path / "kid")))
    reaper.add(parent.pid)
    # False: the path a kernel without CONFIG_PROC_CHILDREN takes (one full scan).
    monkeypatch.setattr(observe, "_children_files", None if children_files else False)
    found = observe.tree(observe.self_stat().pid)
    assert parent.pid in found
    assert kid in found
    assert found[kid].ppid == parent.pid
    assert observe.direct_children(parent.pid) == [kid]


# A child whose second thread starts the grandchild (the kernel lists it under that
# thread's own children file), says its pid, and waits to be ended by pid.
THREADED = """
import signal, subprocess, sys, threading
from pathlib import Path
got, forever = [], threading.Event()
def fork_and_stay():  # the thread lives on: the grandchild stays its child
    got.append(subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"]))
    forever.wait()
t = threading.Thread(target=fork_and_stay, daemon=True)
t.start()
while not got:
    forever.wait(0.01)
m = Path(sys.argv[1]); (m / "t").write_text(f"{got[0].pid}\\n"); (m / "t").rename(m / "kid")
signal.pause()
"""


def test_tree_finds_a_grandchild_forked_by_another_thread(tmp_path: Path, reaper: Reaper) -> None:
    """Issue 29: a single-threaded process's children are read without listing its tasks;
    a process with more threads still has every task's children read."""
    parent = reaper.popen(subprocess.Popen([sys.executable, "-c", THREADED, str(tmp_path)]))
    kid = reaper.add(int(wait_file(tmp_path / "kid")))
    found = observe.tree(observe.self_stat().pid)
    assert found[parent.pid].threads == 2
    assert found[kid].threads == 1
    assert found[kid].ppid == parent.pid
    # It is listed under the forking thread's children only, not the main thread's.
    main = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
    assert str(kid) not in main


def test_a_compiler_script_under_an_interpreter_is_a_compiler() -> None:
    """``#!/usr/bin/env python3`` makes the name and argv[0] the interpreter's (issue 19)."""
    names = ("opc", "op_compiler")
    assert observe.is_compiler(
        "python3", ("/usr/bin/python3", "/opt/bin/op_compiler", "-p", "x"), names
    )
    assert observe.is_compiler("sh", ("/bin/sh", "-e", "/opt/opc", "a.json"), names)
    assert not observe.is_compiler(
        "python3", ("/usr/bin/python3", "/opt/bin/train.py", "op_compiler"), names
    )
    assert not observe.is_compiler("python3", ("/usr/bin/python3", "-c", "pass"), names)
    assert observe.program_name(("/usr/bin/env", "python3", "/x/op_compiler")) == "python3"


def test_read_cmdline_reads_a_long_argv_whole_and_nothing_of_a_gone_process(
    reaper: Reaper,
) -> None:
    # Longer than one read of the os-level reader (64 KiB): C3 keeps the argv the process
    # ran with, never a prefix of it.
    words = ["import signal; signal.pause()", *(f"w{i:06d}" * 40 for i in range(300))]
    proc = reaper.popen(subprocess.Popen([sys.executable, "-c", *words]))
    want = (sys.executable, "-c", *words)
    assert sum(len(w) + 1 for w in want) > 65536
    got = wait_for(lambda: observe.read_cmdline(proc.pid) == want, "argv after the exec")
    assert got
    proc.kill()
    proc.wait()
    assert observe.read_cmdline(proc.pid) == ()  # reaped: no such process
