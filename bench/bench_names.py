"""Does every owned process keep its name, however short it lives (issue 28 s7)?

By hand: ``python bench/bench_names.py [--children 200] [--rounds 3]``; ``--quick`` (20
children, one round of each kind: seconds) is the smoke run ``bench/run_all.py --quick``
makes in CI (issue 29: every bench runs there, so none can rot unseen).

Each round runs one gated attempt whose leader starts ``--children`` processes of about
10 ms, one after another, in one of two ways:

* ``argv0``: ``(exec -a NAME sleep 0.01)``, the issue's reproducer: the kernel's name of
  the process (``comm``) is ``sleep``; only its argv says NAME, and argv can be read only
  while the process lives;
* ``comm``: a program file called NAME (a copy of ``sleep``), as a compiler installed
  under its own name is: the kernel's name is NAME from the exec to the exit.

It then counts the records of ``ownership.json`` that ``is_compiler`` recognises as NAME
(by name, argv[0] or the script an interpreter runs), and says which source named them
(the C3 line, and ``exit_names`` / ``named_at_exit`` of the manifest's coverage).
Nothing is signalled: each run ends on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from skgate.proc.observe import is_compiler

SKGATE = [sys.executable, "-m", "skgate"]
NAME = "skg-bench-opc"


def workload(kind: str, n: int, bindir: Path) -> str:
    if kind == "argv0":
        return f"for i in $(seq {n}); do (exec -a {NAME} sleep 0.01); done\n"
    return f"for i in $(seq {n}); do {bindir / NAME} 0.01; done\n"


def one(kind: str, n: int, tmp: Path) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(dir=tmp))
    bindir = work / "bin"
    bindir.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", bindir / NAME)
    (work / "wl.sh").write_text(workload(kind, n, bindir))
    env = {**os.environ, "SKGATE_COMPILER_NAMES": NAME}
    subprocess.run(
        [*SKGATE, "run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--",
         "bash", "wl.sh"],
        cwd=work, env=env, capture_output=True, check=False, timeout=600,
    )  # fmt: skip
    attempt = work / "r" / "attempts" / "0001"
    manifest = json.loads((attempt / "ownership.json").read_text())
    procs = manifest.get("owned", [])
    named = sum(1 for p in procs if is_compiler(p.get("name", ""), p.get("argv", []), (NAME,)))
    argv = sum(1 for p in procs if p.get("argv") and os.path.basename(p["argv"][0]) == NAME)
    verdict = json.loads((attempt / "verdict.json").read_text())
    c3 = next((r for r in verdict["reasons"] if r.startswith("C3:")), "")
    shutil.rmtree(work, ignore_errors=True)
    return {
        "kind": kind,
        "children": n,
        "named": named,
        "argv_named": argv,
        "exit_names": manifest.get("coverage", {}).get("exit_names"),
        "named_at_exit": manifest.get("coverage", {}).get("named_at_exit"),
        "c3": c3,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--children", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kinds", default="argv0,comm")
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: 20 children, 1 round, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.children, args.rounds = 20, 1
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            for _ in range(args.rounds):
                got = one(kind, args.children, Path(tmp))
                print(json.dumps(got, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
