"""Command-line glue for the ledger area: ``verify``, ``recover``, ``retry``, ``cleanup``,
``uninstall``.

Thin: parse, call the library, print, return an exit status. ``verify``, ``cleanup`` and
``uninstall`` exit 1 when anything changed, was refused or failed; ``recover``,
``cleanup`` and ``retry`` refuse with ``StillLiveError`` (exit 6, naming the pids, nothing
touched) while anything the attempt owns may live (``skgate.liveness``, issue 21).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from skgate.cli.show import print_verdict
from skgate.evidence import seal
from skgate.evidence.files import DEFAULT_ROOT, require_dir, require_file
from skgate.evidence.ledger import resolve
from skgate.workdir import cleanup as artifacts
from skgate.workdir import recover
from skgate.workdir import retry as clean_retry
from skgate.workdir.uninstall import core as uninstall
from skgate.workdir.uninstall import stale


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this area's subcommands (each sets ``handler=fn(args) -> int``)."""
    p = sub.add_parser(
        "verify",
        help="check seals and the ledger's hash chain; exit 1 naming what changed",
        description="Check that every sealed file of an attempt (or of every attempt of a "
        "root) still matches its seal, that preserved scenes match their manifests, and that "
        "the root's hash-chained ledger is intact. Names each change; changes nothing.",
    )
    p.add_argument(
        "target",
        nargs="?",
        default=str(DEFAULT_ROOT),
        metavar="ATTEMPT|ROOT",
        help="an attempt directory or an evidence root (default %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_verify)

    p = sub.add_parser(
        "recover",
        help="finish an attempt whose runner died (census labelled late, verdict, seal, "
        "ledger end); idempotent",
        description="Finish what can honestly be finished of an attempt (or every attempt "
        "of a root) whose runner died before its verdict, seal or ledger end: files the "
        "runner had not written are made now (the census is labelled late), the verdict "
        "says it was recovered and why, then the seal and the ledger's end entry. A sealed "
        "and indexed attempt is left alone. Without --adopt nothing is ever signalled.",
    )
    p.add_argument("target", nargs="?", default=str(DEFAULT_ROOT), help="ATTEMPT or ROOT")
    p.add_argument(
        "--adopt",
        action="store_true",
        help="first take over supervision of a live tree whose runner died: wait for its "
        "natural return, or at its frozen deadline SIGTERM, the frozen grace, then SIGKILL "
        "to its own processes only (held by pidfd); then recover it",
    )
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(handler=cmd_recover)

    p = sub.add_parser(
        "retry",
        help="clean retry: preserve the attempt's scene, rerun the same frozen controls",
        description="A clean retry (C2.4, C4): preserve the attempt's working-directory "
        "outputs into its scene, then run the same command with the same frozen controls "
        "as a new attempt linked to it. The retried attempt is never rewritten.",
    )
    p.add_argument("attempt", help="the attempt directory to retry")
    p.add_argument("--root", default=None, help="evidence root (default: the attempt's own)")
    p.add_argument("--json", action="store_true", help="print the new verdict as JSON")
    p.set_defaults(handler=cmd_retry)

    p = sub.add_parser(
        "cleanup",
        help="preserve the working-directory outputs into their attempt's scene, then clear",
        description="Upstream's cleanup of a working directory (C8), made safe: first move "
        "static_kernel_compile_outputs, aclnn_static_shape_kernel_outputs, "
        ".static_kernel_records.json, sk_meta and kernel_meta into the scene of the attempt "
        "that produced them, then leave the directory clear. Refuses while an owned process "
        "of that attempt is alive.",
    )
    p.add_argument("--workdir", default=".", help="working directory (default: .)")
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="evidence root (default %(default)s)")
    p.add_argument("--attempt", default=None, help="attempt that produced the outputs")
    p.add_argument(
        "--all", action="store_true", help="also preserve and clear log/, tmp/, profiling/"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_cleanup)

    p = sub.add_parser(
        "uninstall",
        help="run only validated package uninstall.sh scripts (from a log or stale records)",
        description="Run only per-package uninstall.sh scripts that are exactly "
        "$ASCEND_HOME_PATH/opp/static_kernel/ai_core/<package>/uninstall.sh for a .run this "
        "attempt produced (C8): no '..', no symbolic link, no redirect, never the "
        "full-uninstall ai_core/uninstall.sh. Every candidate and its outcome are recorded.",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--from-log", metavar="LOG", default=None, help="run log to scan")
    mode.add_argument(
        "--stale-records",
        action="store_true",
        help="act on .static_kernel_records.json entries whose process is gone",
    )
    p.add_argument("--outputs", default=None, help="outputs dir whose .run files are allowed")
    p.add_argument("--ascend-home", default=None, help="install root (default: $ASCEND_HOME_PATH)")
    p.add_argument("--workdir", default=".", help="working directory (--stale-records)")
    p.add_argument("--dry-run", action="store_true", help="validate only; run nothing")
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="evidence root for the record")
    p.add_argument("--record", default=None, help="record file (default: ROOT/uninstall/...)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_uninstall)


def cmd_recover(args: argparse.Namespace) -> int:
    done = recover.recover(
        Path(args.target), notify=lambda line: print(line, file=sys.stderr), adopt=args.adopt
    )
    if args.json:
        print(recover.dumps(done))
    else:
        for line in recover.render(done):
            print(line)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    target = Path(args.target)
    problems = seal.verify(target)
    count = len(resolve(target))
    if args.json:
        print(json.dumps({"target": str(target), "ok": not problems, "problems": problems}))
    elif problems:
        for problem in problems:
            # An interrupted or unfinished attempt is not a changed one (issue 12).
            print(f"{seal.problem_kind(problem).upper()}: {problem}")
        print(f"verify: {len(problems)} problem(s) in {target}", file=sys.stderr)
    else:
        print(f"OK: {count} attempt(s) in {target}: seals match, ledger chain intact")
    return 1 if problems else 0


def cmd_retry(args: argparse.Namespace) -> int:
    attempt = Path(args.attempt)
    root = Path(args.root) if args.root else None
    verdict, result = clean_retry.retry(attempt, root)
    if result.scene:
        print(f"scene of {attempt} preserved in {result.scene}", file=sys.stderr)
    for name, reason in result.refused:
        print(f"left in place: {name}: {reason}", file=sys.stderr)
    print_verdict(verdict, args.json)
    return verdict.exit_code


def cmd_cleanup(args: argparse.Namespace) -> int:
    result = artifacts.cleanup(
        Path(args.workdir),
        Path(args.root),
        attempt=Path(args.attempt) if args.attempt else None,
        include_optional=args.all,
    )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        for m in result.moved:
            print(f"preserved {m.source} -> {result.scene}/{m.name} ({m.method})")
        for name, reason in result.refused:
            print(f"REFUSED {name}: {reason}")
        if not result.moved and not result.refused:
            print(f"nothing to clean in {result.workdir}")
    return 0 if result.ok else 1


def cmd_uninstall(args: argparse.Namespace) -> int:
    home = args.ascend_home if args.ascend_home is not None else os.environ.get("ASCEND_HOME_PATH")
    log: Path | None = None
    workdir = Path(args.workdir)
    if args.from_log is not None:
        log = Path(args.from_log)
        require_file(log, "log file", "pass the run log that printed the uninstall.sh paths")
    else:
        require_dir(
            workdir, "working directory", "pass the directory the compile ran in", follow_links=True
        )
    record = Path(args.record) if args.record else uninstall.default_record_path(Path(args.root))
    # The record exists before anything runs: if it cannot be created, nothing runs (exit
    # 2); each script is filled in as it runs, so a crash mid-way still shows what ran.
    writer = uninstall.RecordWriter.create(record)
    if log is not None:
        outputs = Path(args.outputs) if args.outputs else uninstall.outputs_for_log(log)
        result = uninstall.uninstall_from_log(
            log, outputs, home, dry_run=args.dry_run, record=writer
        )
    else:
        outputs_arg = Path(args.outputs) if args.outputs else None
        result = stale.uninstall_stale_records(
            workdir, home, outputs=outputs_arg, dry_run=args.dry_run, record=writer
        )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        for c in result.candidates:
            status = "" if c.exit_status is None else f" (exit {c.exit_status})"
            print(f"{c.action.upper()}{status}: {c.path!r} [{c.source}]: {c.reason}")
        for note in result.notes:
            print(f"REFUSED: {note}")
        if not result.candidates and not result.notes:
            print("no uninstall candidates found")
        print(f"record: {record}", file=sys.stderr)
    return 0 if result.ok else 1


__all__ = ["register"]
