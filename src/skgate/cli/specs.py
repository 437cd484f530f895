"""The argparse specs of every command: options, help and which handler runs it.

Built without importing any command's code (issue 22 s5): ``skgate CMD --help`` and a
usage error load this module, :mod:`skgate.cli.args` and :mod:`skgate.cli.table` only.
Each handler is named by a :class:`~skgate.cli.table.Handler` (its area module and
function) and imported only when its command runs. The few values a spec shows that live
in command code (demo scenarios, report languages and formats, the matrix repeat bound)
are copied here; tests/cli/test_specs.py keeps each copy equal to its source, and the table equal to
what these specs register.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from skgate.cli.args import (
    DEFAULT_ROOT,
    add_hook_options,
    add_package_option,
    add_run_options,
    positive_seconds,
    seconds,
)
from skgate.cli.table import SUMMARY, Handler

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RAW = argparse.RawDescriptionHelpFormatter

#: ``skgate.demo.scenario_names()``.
DEMO_SCENARIOS = (
    "diagnose",
    "escape",
    "hang-timeout",
    "ignore-sigterm",
    "input-failure",
    "leader-exits-early",
    "stale-cache",
    "success",
    "torchair-cache-hit",
    "torchair-multicard",
    "torchair-success",
    "torchair-swallowed-failure",
)
#: ``skgate.report.facts.LANGS`` and ``FORMATS``.
REPORT_LANGS = ("en", "zh")
REPORT_FORMATS = ("md", "json", "html")
#: ``skgate.regress.matrix.load.MAX_REPEATS``.
MAX_REPEATS = 20


def repeats(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"{text!r}: use a whole number 1..{MAX_REPEATS}")
    return int(text)


def spec_run(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate run`` (handler in :mod:`skgate.cli.run`)."""
    p = sub.add_parser(
        "run",
        help=SUMMARY["run"],
        description="Run COMMAND in its own session under the gate and print its verdict.",
    )
    add_run_options(p)
    p.add_argument("--quiet", action="store_true", help="do not echo the command's output")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    p.add_argument(
        "--events",
        choices=["jsonl"],
        default=None,
        help="write every journal event to stdout as one JSON object per line as it "
        "happens, then a final 'verdict' line (schemas/event.json); the command's output "
        "goes to stderr",
    )
    # Catches a command given without '--', to say exactly that instead of a vague error.
    p.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(handler=Handler("skgate.cli.run", "cmd_run"), exit_at_once=True)


def spec_status(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate status`` (handler in :mod:`skgate.cli.run`)."""
    p = sub.add_parser(
        "status",
        help=SUMMARY["status"],
        description="The current state of an attempt (or of the latest attempt of an evidence "
        "root), recorded if it finished, else a live read-only look. Never sends a signal, "
        "never writes evidence.",
    )
    p.add_argument(
        "target",
        nargs="?",
        default=str(DEFAULT_ROOT),
        metavar="ATTEMPT|ROOT",
        help="an attempt directory, or an evidence root for its latest attempt "
        "(default %(default)s)",
    )
    p.add_argument("--all", action="store_true", help="every attempt of a root")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    p.add_argument(
        "--watch",
        action="store_true",
        help="live read-only view until the attempt is no longer in progress",
    )
    p.add_argument("--interval", type=positive_seconds, default=2.0, help=argparse.SUPPRESS)
    p.set_defaults(handler=Handler("skgate.cli.run", "cmd_status"))


def spec_classify(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate classify`` (handler in :mod:`skgate.cli.run`)."""
    p = sub.add_parser(
        "classify",
        help=SUMMARY["classify"],
        description="Recompute the verdict of a finished attempt from its files alone, in the "
        "fixed C2 order (a pure function of the evidence: the same files always give the "
        "same verdict). Writes nothing.",
    )
    p.add_argument("target", metavar="ATTEMPT", help="the attempt directory to classify")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    p.set_defaults(handler=Handler("skgate.cli.run", "cmd_classify"))


def spec_demo(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate demo`` (handler in :mod:`skgate.cli.demo`)."""
    p = sub.add_parser(
        "demo",
        help=SUMMARY["demo"],
        description="Run one scenario of skgate's CANN simulator under the gate, as a user "
        "runs their own launcher, print its verdict and report, and check it is the verdict "
        "the scenario must give. The evidence is kept in ./skgate-demo/SCENARIO/ (or "
        "--workdir); the demo prints how to look at it.",
    )
    p.add_argument(
        "--scenario",
        choices=DEMO_SCENARIOS,
        default="success",
        help="what to show (default %(default)s)",
    )
    p.add_argument(
        "--workdir",
        default=None,
        help="where to run and keep the evidence (default: ./skgate-demo/SCENARIO)",
    )
    p.add_argument(
        "--lang", choices=["en", "zh"], default="en", help="language of the report shown"
    )
    p.add_argument(
        "--json", action="store_true", help="print the verdict as JSON on stdout (no report)"
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="also show the workload's output, every reason and the whole report (default: "
        "the verdict, three lines of why and where the evidence is)",
    )
    # A stock interpreter may carry start-up hooks: the demo is approved like a run (C6).
    add_hook_options(p)
    p.set_defaults(handler=Handler("skgate.cli.demo", "cmd_demo"))


def spec_preflight(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate preflight`` (handler in :mod:`skgate.cli.preflight`)."""
    p = sub.add_parser(
        "preflight",
        help=SUMMARY["preflight"],
        description=(
            "Run the pre-launch checks of 'skgate run' without launching anything. "
            "Exit 0: a run would start; 3: it would be blocked; 2: bad input."
        ),
    )
    # The same control options as 'skgate run': a run's command line can be checked as is.
    add_run_options(p)
    p.add_argument(
        "--freeze-baseline",
        default=None,
        metavar="FILE",
        help="write every current finding to FILE as an approval baseline (once, never "
        "overwritten)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=Handler("skgate.cli.preflight", "cmd_preflight"))


def spec_report(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate report`` (handler in :mod:`skgate.cli.evidence`)."""
    p = sub.add_parser(
        "report",
        help=SUMMARY["report"],
        description="Render the verdict, reasons, timeline, controls, ownership, census and "
        "verbatim [summary] lines of an attempt (or of every attempt in an evidence root, "
        "oldest first) in the contract's words (C7).",
    )
    p.add_argument(
        "target",
        nargs="?",
        default=str(DEFAULT_ROOT),
        metavar="ATTEMPT|ROOT",
        help="an attempt directory, an evidence root (every attempt), or a regress session "
        "(default %(default)s)",
    )
    p.add_argument(
        "--lang", choices=REPORT_LANGS, default="en", help="report language (default %(default)s)"
    )
    p.add_argument(
        "--format",
        choices=REPORT_FORMATS,
        default="md",
        dest="fmt",
        help="md (Markdown), json (schema skgate.report/1, for controllers) or html (one "
        "self-contained page with a timeline; write it with -o) (default %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report to FILE (atomically: temp file, fsync, rename); refuses an "
        "existing FILE unless --force, and never writes inside an attempt directory or an "
        "evidence root's attempts/ (evidence is append-only)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with -o: replace FILE if it exists (never evidence: attempt directories and "
        "attempts/ stay refused)",
    )
    p.set_defaults(handler=Handler("skgate.cli.evidence", "cmd_report"))


def spec_lint_report(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate lint-report`` (handler in :mod:`skgate.cli.evidence`)."""
    p = sub.add_parser(
        "lint-report",
        help=SUMMARY["lint-report"],
        description="Print FILE:LINE: RULE message for each claim that breaks C7 (for "
        "example 'compile failed' from error-named files alone).",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="report files to check")
    p.add_argument("--attempt", metavar="ATTEMPT", help="the attempt the reports are about")
    p.set_defaults(handler=Handler("skgate.cli.evidence", "cmd_lint"))


def spec_check_outputs(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate check-outputs`` (handler in :mod:`skgate.cli.evidence`)."""
    p = sub.add_parser(
        "check-outputs",
        help=SUMMARY["check-outputs"],
        description="Upstream's sk_check_static_kernel_outputs, contract-aware (C8): *.run "
        "is the success artifact, an error log with no .run after natural return a failure. "
        "Without --attempt the judgement rests on file names alone and says so: natural "
        "return is not verified.",
    )
    p.add_argument("directory", metavar="DIR", help="the outputs directory to check")
    add_package_option(
        p, "required: no .run is a failure; optional: it is not (C8; default %(default)s)"
    )
    p.add_argument(
        "--attempt",
        metavar="ATTEMPT",
        help="the attempt that produced DIR: judge only after its natural return",
    )
    p.add_argument(
        "--opp",
        metavar="DIR",
        default=None,
        help="the OPP directory whose installed manifests (static_kernel/ai_core/<package>/"
        "config/<soc>/binary_info_config.json) are checked (default: $ASCEND_OPP_PATH) (C8)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=Handler("skgate.cli.evidence", "cmd_check_outputs"))


def spec_verify(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate verify`` (handler in :mod:`skgate.cli.workdir`)."""
    p = sub.add_parser(
        "verify",
        help=SUMMARY["verify"],
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
    p.set_defaults(handler=Handler("skgate.cli.workdir", "cmd_verify"))


def spec_recover(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate recover`` (handler in :mod:`skgate.cli.workdir`)."""
    p = sub.add_parser(
        "recover",
        help=SUMMARY["recover"],
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
    p.set_defaults(handler=Handler("skgate.cli.workdir", "cmd_recover"))


def spec_retry(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate retry`` (handler in :mod:`skgate.cli.workdir`)."""
    p = sub.add_parser(
        "retry",
        help=SUMMARY["retry"],
        description="A clean retry (C2.4, C4): preserve the attempt's working-directory "
        "outputs into its scene, then run the same command with the same frozen controls "
        "as a new attempt linked to it. The retried attempt is never rewritten.",
    )
    p.add_argument("attempt", help="the attempt directory to retry")
    p.add_argument("--root", default=None, help="evidence root (default: the attempt's own)")
    p.add_argument("--json", action="store_true", help="print the new verdict as JSON")
    p.set_defaults(handler=Handler("skgate.cli.workdir", "cmd_retry"))


def spec_cleanup(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate cleanup`` (handler in :mod:`skgate.cli.workdir`)."""
    p = sub.add_parser(
        "cleanup",
        help=SUMMARY["cleanup"],
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
    p.set_defaults(handler=Handler("skgate.cli.workdir", "cmd_cleanup"))


def spec_uninstall(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate uninstall`` (handler in :mod:`skgate.cli.workdir`)."""
    p = sub.add_parser(
        "uninstall",
        help=SUMMARY["uninstall"],
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
    p.set_defaults(handler=Handler("skgate.cli.workdir", "cmd_uninstall"))


def spec_regress(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate regress`` (handler in :mod:`skgate.cli.regress`)."""
    p = sub.add_parser(
        "regress",
        help=SUMMARY["regress"],
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
    p.add_argument("--repeats", type=repeats, default=None, help="--matrix: runs per arm")
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
    p.set_defaults(handler=Handler("skgate.cli.regress", "cmd_regress"))


def spec_start(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate start`` (handler in :mod:`skgate.cli.agents`)."""
    p = sub.add_parser(
        "start",
        help=SUMMARY["start"],
        description="Everything 'skgate run' does, but the runner detaches (own session, "
        "no terminal, not in the caller's process group) and this returns as soon as the "
        "attempt is recorded and the command launched, refused, or waiting for a foreign "
        "compiler or lease (the runner waits, never the caller). Prints the attempt "
        "directory.",
        formatter_class=RAW,
    )
    add_run_options(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print {attempt, state, phase, runner_pid, waiting_for} as JSON",
    )
    p.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(handler=Handler("skgate.cli.agents", "cmd_start"), exit_at_once=True)


def spec_wait(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate wait`` (handler in :mod:`skgate.cli.agents`)."""
    p = sub.add_parser(
        "wait",
        help=SUMMARY["wait"],
        description="Wait for the final verdict of an attempt (or of the newest attempt of "
        "a root), woken by the kernel (inotify, pidfd), never signalling anything. Progress "
        "goes to stderr; error-named file counts are provisional (C1).",
        formatter_class=RAW,
    )
    p.add_argument(
        "target",
        nargs="?",
        default=str(DEFAULT_ROOT),
        metavar="ATTEMPT|ROOT",
        help="attempt directory, or evidence root for its newest attempt (default %(default)s)",
    )
    p.add_argument(
        "--max",
        type=seconds,
        default=None,
        metavar="S",
        help="return after S seconds with exit 6 if still in progress (default: no bound)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the wait result (state, progress, verdict)"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="write every journal event (from the first) to stdout as JSON lines while "
        "waiting, then a final 'verdict' line",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr while waiting")
    p.add_argument(
        "--progress-every",
        type=seconds,
        default=5.0,
        metavar="S",
        help="seconds between progress lines (default %(default)s)",
    )
    p.set_defaults(handler=Handler("skgate.cli.agents", "cmd_wait"), exit_at_once=True)


def spec_stop(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate stop`` (handler in :mod:`skgate.cli.agents`)."""
    p = sub.add_parser(
        "stop",
        help=SUMMARY["stop"],
        description="Ask the runner of ATTEMPT to end its own process group as on an "
        "external interruption (SIGTERM, grace, SIGKILL to that group only; C4), recorded "
        "with the reason: the verdict is interrupted/external. Signals the runner only, "
        "never the workload, and nothing when the runner is gone.",
        formatter_class=RAW,
    )
    p.add_argument("target", metavar="ATTEMPT", help="the attempt directory to stop")
    p.add_argument("--reason", default="", metavar="TEXT", help="why, recorded in the evidence")
    p.add_argument("--json", action="store_true", help="print the stop result as JSON")
    p.set_defaults(handler=Handler("skgate.cli.agents", "cmd_stop"), exit_at_once=True)


def spec_mcp(sub: argparse._SubParsersAction[Any]) -> None:
    """``skgate mcp`` (handler in :mod:`skgate.cli.agents`)."""
    p = sub.add_parser(
        "mcp",
        help=SUMMARY["mcp"],
        description="A Model Context Protocol server on stdin/stdout with the tools start, "
        "status, wait, stop, report, check_outputs and preflight; each returns the JSON "
        "of the matching CLI command's --json. Needs the optional extra: "
        "pip install 'skgate[mcp]'.",
        formatter_class=RAW,
    )
    p.add_argument(
        "--max-wait",
        type=seconds,
        default=None,
        metavar="S",
        help="upper bound on the wait tool's max_seconds (default 240, under an agent's "
        "tool time limit)",
    )
    p.set_defaults(handler=Handler("skgate.cli.agents", "cmd_mcp"))


#: Each command's spec, by its name in :data:`skgate.cli.table.COMMANDS`: a command
#: builds its own parser only (start-up, issue 22 s5).
SPECS: dict[str, Callable[[argparse._SubParsersAction[Any]], None]] = {
    "run": spec_run,
    "status": spec_status,
    "classify": spec_classify,
    "demo": spec_demo,
    "preflight": spec_preflight,
    "report": spec_report,
    "lint-report": spec_lint_report,
    "check-outputs": spec_check_outputs,
    "verify": spec_verify,
    "recover": spec_recover,
    "retry": spec_retry,
    "cleanup": spec_cleanup,
    "uninstall": spec_uninstall,
    "regress": spec_regress,
    "start": spec_start,
    "wait": spec_wait,
    "stop": spec_stop,
    "mcp": spec_mcp,
}
