"""Command-line glue for ``skgate demo``: the CANN simulator under the gate.

An area of its own, so ``skgate run`` never loads the simulator (start-up cost).
"""

from __future__ import annotations

import argparse
from typing import Any

from skgate import demo as demo_mod
from skgate.cli.args import add_hook_options
from skgate.cli.show import print_verdict
from skgate.report.facts import parse_lang


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "demo",
        help="run the CANN simulator under the gate",
        description="Run one scenario of skgate's CANN simulator under the gate, as a user "
        "runs their own launcher, print its verdict and report, and check it is the verdict "
        "the scenario must give. The evidence is kept in ./skgate-demo/SCENARIO/ (or "
        "--workdir); the demo prints how to look at it.",
    )
    p.add_argument(
        "--scenario",
        choices=demo_mod.scenario_names(),
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
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    return demo_mod.run_demo(
        args.scenario,
        workdir=args.workdir,
        lang=parse_lang(args.lang),
        as_json=args.json,
        verbose=bool(args.verbose),
        show=print_verdict,
        hooks=demo_mod.HookApprovals(
            tuple(args.approve_hook), args.hook_baseline, bool(args.strict_hooks)
        ),
    )
