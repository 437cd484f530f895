"""Kill a skgate command with SIGKILL at one of its ledger, seal or scene steps (issue 28).

The crash-instant suite (``test_crash.py``) polls the evidence and fires when an instant
shows; a step that lasts microseconds (a seal linked, its temporary name not yet removed)
is hit only now and then that way. Here the command runs under a small wrapper that
counts its steps as it takes them and SIGKILLs itself right after the chosen one, so
every step is hit, every time:

* ``ledger:<kind>:before`` / ``ledger:<kind>:after``: around each ledger append;
* ``temp:<file>``, ``link:<file>``, ``written:<file>``: a watched evidence file written
  under its temporary name, linked to its final name, its temporary name removed;
* ``scene:mkdir``, ``move:<name>``: a cleanup's scene made, one output moved into it.

``steps(trace)`` reads back the steps a run took (with ``at=0`` nothing is killed): a
sweep runs once to learn them, then once per step.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import env_in

WRAPPER = """\
import os, signal, sys
from pathlib import Path

trace, at = Path(sys.argv[1]), int(sys.argv[2])
from skgate.evidence import files, ledger
from skgate.workdir import cleanup

WATCHED = {"seal.json", "verdict.json", "manifest.json"}
taken = [0]


def step(label):
    taken[0] += 1
    with open(trace, "a") as fh:
        fh.write(label + "\\n")
    if taken[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)


def wrap(module, name, label, before=False):
    orig = getattr(module, name)

    def wrapped(*args, **kwargs):
        which = label(*args, **kwargs)
        if which and before:
            step(which + ":before")
        out = orig(*args, **kwargs)
        if which:
            step(which + (":after" if before else ""))
        return out

    setattr(module, name, wrapped)


def watched(path):
    path = Path(path)
    return path.name if path.name in WATCHED else None


wrap(ledger, "append_entry", lambda root, event, fields: f"ledger:{event}", before=True)
wrap(files, "_create_temp", lambda path, text: watched(path) and f"temp:{watched(path)}")
wrap(files, "_link_new", lambda tmp, path: watched(path) and f"link:{watched(path)}")
wrap(files, "replace_text", lambda path, *a, **k: watched(path) and f"written:{watched(path)}")
wrap(cleanup, "_new_scene", lambda attempt: "scene:mkdir")
rename = os.rename


def moved(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
    rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
    if dst_dir_fd is not None:
        step(f"move:{os.fsdecode(dst)}")


os.rename = moved
from skgate.cli.main import main

sys.exit(main(sys.argv[3:]))
"""


def run_until(
    trace: Path, at: int, *args: str, cwd: Path, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``skgate ARGS`` SIGKILLed right after its ``at``-th step (0: never)."""
    return subprocess.run(
        [sys.executable, "-c", WRAPPER, str(trace), str(at), *args],
        cwd=cwd,
        env=env_in(cwd),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def steps(trace: Path) -> list[str]:
    try:
        return trace.read_text().splitlines()
    except FileNotFoundError:
        return []
