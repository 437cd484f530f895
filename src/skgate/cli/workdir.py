"""Command-line glue for the ledger area: ``verify``, ``recover``, ``retry``, ``cleanup``,
``uninstall``.

Thin: parse, call the library, print, return an exit status. ``verify``, ``cleanup`` and
``uninstall`` exit 1 when anything changed, was refused or failed; ``recover``,
``cleanup`` and ``retry`` refuse with ``StillLiveError`` (exit 6, naming the pids, nothing
touched) while anything the attempt owns may live (``skgate.read.liveness``, issue 21).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from skgate.cli.show import print_verdict
from skgate.evidence import seal, unsealed
from skgate.evidence.files import require_dir, require_file
from skgate.evidence.ledger import resolve
from skgate.workdir import cleanup as artifacts
from skgate.workdir import recover
from skgate.workdir import retry as clean_retry
from skgate.workdir.uninstall import core as uninstall
from skgate.workdir.uninstall import stale


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
    found = seal.find_problems(target)
    problems = [str(p) for p in found]
    count = len(resolve(target, prelaunch=True, removed=True))
    waiting = unsealed.waiting_notes(target)  # issue 30: waiting is not "the runner died"
    if args.json:
        print(
            json.dumps(
                {
                    "target": str(target),
                    "ok": not problems,
                    "problems": problems,
                    # Each problem's kind, in order: "unfinished" (recover finishes it) or
                    # "changed" (issue 12), so a reader never matches words either.
                    "kinds": ["unfinished" if p.unfinished else "changed" for p in found],
                    "waiting": waiting,
                }
            )
        )
        return 1 if problems else 0
    for note in waiting:
        print(f"WAITING: {note}")
    if problems:
        for problem in found:
            # An interrupted or unfinished attempt is not a changed one (issue 12): the
            # problem's kind says which, never a word of its line.
            print(f"{'UNFINISHED' if problem.unfinished else 'CHANGED'}: {problem}")
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
    # A dry run runs nothing and so records nothing: it only prints (issue 30).
    writer = None if args.dry_run else uninstall.RecordWriter.create(record)
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
        if writer is not None:
            print(f"record: {record}", file=sys.stderr)
    return 0 if result.ok else 1
