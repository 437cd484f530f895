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
from typing import Any

from rich.console import Console

from skgate.model.errors import UsageError
from skgate.regress import health as regress
from skgate.regress.executor import Executor, Listener, LocalExecutor
from skgate.regress.matrix.core import render_matrix_markdown, run_matrix
from skgate.regress.matrix.load import MAX_REPEATS, load_matrix
from skgate.regress.progress import LiveTable, jsonl_listener
from skgate.regress.ray_exec import RayExecutor


def _repeats(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"{text!r}: use a whole number 1..{MAX_REPEATS}")
    return int(text)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this area's subcommands (each sets ``handler=fn(args) -> int``)."""
    p = sub.add_parser(
        "regress",
        help="compile-health gate (--health) or one-factor diagnosis (--matrix) (C6)",
        description=(
            "--health: one fresh-root compile with the reference attempt's frozen controls "
            "plus the declared change; passes only on natural return, all stages ok, exit 0 "
            "and the completion marker (C6). --matrix: a baseline and one arm per factor "
            "(startup_hook, profiler, sk_trace, cache_seed, jobs), each in a fresh root, "
            "and an attribution table."
        ),
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--health", action="store_true", help="the compile-health gate")
    mode.add_argument("--matrix", metavar="FILE", help="a diagnosis matrix (TOML or JSON)")
    p.add_argument("--reference", metavar="ATTEMPT", help="--health: the reference attempt")
    p.add_argument(
        "--declare",
        action="append",
        default=[],
        metavar="CHANGE",
        help="--health: the intended change: env:NAME=VALUE, unset:NAME, "
        "profiler-schedule=SPEC, jobs=N, or kernel[:OP,OP] (a kernel change made outside "
        "skgate, touching those op types) (repeatable; none = only source changed)",
    )
    p.add_argument("--note", default=None, help="--health: what changed, for the record")
    p.add_argument("--root", default=None, metavar="DIR", help="a fresh evidence root to use")
    p.add_argument("--repeats", type=_repeats, default=None, help="--matrix: runs per arm")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="--matrix: run the arms here one after the other (local, default) or as Ray "
        "tasks on a cluster (ray; needs skgate[ray])",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="--executor ray: the cluster (default: $RAY_ADDRESS, else the local one)",
    )
    p.add_argument(
        "--events",
        choices=("jsonl",),
        default=None,
        help="--matrix: progress as JSON lines on stderr instead of the live table",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="--matrix: the root holds an earlier run; run only the units without an "
        "intact sealed attempt (after a lost node)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--verbose", action="store_true", help="echo the workload's output (stderr)")
    p.set_defaults(handler=cmd_regress)


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
