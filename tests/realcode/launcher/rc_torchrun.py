"""torchrun in miniature: start N local ranks of the launcher and wait for them.

Each worker gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE (= N) and starts in a
session of its own, as torch's elastic agent starts its workers
(``start_new_session=True`` on POSIX: torch 2.13.0 wheel,
``torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py``
l.63-68). Exit status: the first non-zero of the workers, else 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def main() -> int:
    n = int(sys.argv[1])
    launcher = Path(__file__).resolve().parent / "rc_launcher.py"
    workers = []
    for rank in range(n):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank)}
        env.update(WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n))
        argv = [sys.executable, str(launcher), *sys.argv[2:]]
        workers.append(subprocess.Popen(argv, env=env, start_new_session=True))
    codes = [w.wait() for w in workers]
    return next((c for c in codes if c != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
