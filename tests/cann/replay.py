"""Replays one fixture case of ``tests/fixtures/cann/`` as a launcher under the gate.

``python replay.py CASE_DIR`` in the working directory the case's tree belongs to (the
test has already put the case's ``preexisting`` files there): it writes the rest of the
tree, prints the case's run-log lines (warnings on stderr, the rest on stdout), runs one
stand-in ``op_compiler`` per recorded invocation with the recorded argv, and exits with
the launcher's recorded status. The stand-in is a ``#!/bin/sh`` script named
``op_compiler`` (the kernel names the process after the script), or ``$REPLAY_COMPILER_NAME``
(a test on a shared host, where other users' ``op_compiler`` run, gives it a name of its
own), which lives a moment and exits with the recorded status. Nothing here knows skgate.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main(case_dir: str) -> int:
    case = Path(case_dir)
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    cwd = Path.cwd().resolve()
    tree = case / "tree"
    pre = set(spec.get("preexisting", []))
    templated = set(spec.get("templated_files", []))
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        if path.is_dir() or rel in pre:
            continue
        dest = cwd / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rel in templated:
            dest.write_text(path.read_text(encoding="utf-8").replace("{cwd}", str(cwd)))
        else:
            shutil.copyfile(path, dest)
    for rel in spec.get("empty_dirs", []):
        (cwd / rel).mkdir(parents=True, exist_ok=True)
    for line in spec.get("run_log", []):
        text = line.replace("{cwd}", str(cwd))
        stream = sys.stderr if "Warning" in text or text.startswith("  ") else sys.stdout
        print(text, file=stream, flush=True)
    bins = Path(tempfile.mkdtemp(prefix="replay-bin-"))
    try:
        for i, inv in enumerate(spec.get("op_compiler", [])):
            d = bins / str(i)
            d.mkdir()
            stub = d / os.environ.get("REPLAY_COMPILER_NAME", "op_compiler")
            stub.write_text(f"#!/bin/sh\nsleep 0.3\nexit {int(inv['exit_status'])}\n")
            stub.chmod(0o755)
            argv = [str(stub), *(a.replace("{cwd}", str(cwd)) for a in inv["argv"][1:])]
            subprocess.run(argv, check=False, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(bins, ignore_errors=True)
    return int(spec.get("launcher_exit_status", 0))


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main(sys.argv[1]))
