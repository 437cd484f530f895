"""Command-line glue for the regression gate: ``skgate regress --health | --matrix``.

Exit status:

- ``--health``: 0 pass (later profiling may be accepted), 1 fail (the failed checks are
  named), 2 bad input (nothing run), 3 blocked (not attributable, or the run was blocked
  before launch) or the declared change did not reach the compile (C6: a cache hit, none
  of the touched op types compiled, a stale kernel_meta object, the reference's package);
- ``--matrix``: 0 every arm and the baseline have a valid, consistent result, 1 the
  diagnosis is incomplete (invalid or inconsistent arms, or no clean baseline), 2 bad
  input (nothing run; also: ``--executor ray`` without Ray installed or with no cluster
  answering).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from rich.console import Console

from skgate.model.errors import UsageError
from skgate.regress import health as regress
from skgate.regress.executor import Executor, Listener, LocalExecutor
from skgate.regress.matrix.core import render_matrix_markdown, run_matrix
from skgate.regress.matrix.load import load_matrix
from skgate.regress.progress import LiveTable, jsonl_listener
from skgate.regress.ray_exec import RayExecutor


def _progress(text: str) -> None:
    print(f"skgate regress: {text}", file=sys.stderr, flush=True)


def cmd_regress(args: argparse.Namespace) -> int:
    if getattr(args, "command_argv", None):
        raise UsageError("regress takes no command after '--'; it reruns recorded controls")
    root = Path(args.root) if args.root else None
    if args.health:
        if args.reference is None:
            raise UsageError("--health needs --reference ATTEMPT (a succeeded attempt)")
        if args.repeats is not None:
            raise UsageError("--repeats is for --matrix; the health gate is one run")
        result = regress.health(
            Path(args.reference),
            root=root,
            declared=tuple(args.declare),
            note=args.note,
            quiet=not args.verbose,
        )
        if args.json:
            print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        else:
            print("\n".join(result.lines()))
        return result.exit_code
    if args.reference is not None or args.declare or args.note is not None:
        raise UsageError("--reference, --declare and --note are for --health")
    if args.ray_address is not None and args.executor != "ray":
        raise UsageError("--ray-address is for --executor ray")
    matrix = load_matrix(Path(args.matrix), args.repeats)
    executor: Executor = LocalExecutor()
    if args.executor == "ray":
        ray = RayExecutor(args.ray_address)
        ray.connect()  # bad input (exit 2) before anything is recorded
        executor = ray
    listeners: list[Listener] = []
    live: LiveTable | None = None
    if args.events == "jsonl":
        listeners.append(jsonl_listener(sys.stderr))
    elif sys.stderr.isatty():
        live = LiveTable(Console(stderr=True))
        listeners.append(live.listener())
    try:
        with live if live is not None else contextlib.nullcontext():
            outcome = run_matrix(
                matrix,
                root,
                progress=_progress if not listeners else None,
                quiet=not args.verbose,
                executor=executor,
                listeners=listeners,
                resume=args.resume,
            )
    finally:
        if isinstance(executor, RayExecutor):
            executor.close()
    if args.json:
        print(json.dumps(outcome.to_dict(), ensure_ascii=False, indent=2))
    else:
        print("\n".join(render_matrix_markdown(outcome)))
    return outcome.exit_code
