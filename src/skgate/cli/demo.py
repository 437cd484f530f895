"""Command-line glue for ``skgate demo``: the CANN simulator under the gate.

An area of its own, so ``skgate run`` never loads the simulator (start-up cost).
"""

from __future__ import annotations

import argparse

from skgate.cli.show import print_verdict
from skgate.demo import scenarios as demo_mod
from skgate.report.facts import parse_lang


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
