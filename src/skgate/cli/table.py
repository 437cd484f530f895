"""The static command table: every command, its area and its one-line help (issue 22 s5).

``skgate --help`` and a usage error of the top-level parser come from this table alone,
without importing any command's code or spec; ``skgate CMD ...`` loads only the spec of
CMD's area (:mod:`skgate.cli.specs`) and, when it runs, its handler's module.
tests/cli/test_specs.py keeps the table equal to what the specs register and to the
command order of the exit-code table (:data:`skgate.model.exits.COMMANDS`).
"""

from __future__ import annotations

import os
import sys

# Plain classes, not ``typing.NamedTuple``: ``skgate --help`` never imports ``typing``
# (a tenth of its start-up). Type checkers treat this name as ``typing.TYPE_CHECKING``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable


class Command:
    """One command: its name, the area module that handles it, its one-line help."""

    __slots__ = ("area", "name", "summary")

    def __init__(self, name: str, area: str, summary: str) -> None:
        self.name = name
        self.area = area
        self.summary = summary


class Handler:
    """A command's handler, by module and function name: imported only when it runs."""

    __slots__ = ("function", "module")

    def __init__(self, module: str, function: str) -> None:
        self.module = module
        self.function = function

    def __repr__(self) -> str:
        return f"Handler({self.module!r}, {self.function!r})"

    def __call__(self, args: argparse.Namespace) -> int:
        # ``__import__`` with a from-list gives the module itself, without the
        # ``importlib`` package (start-up, issue 29).
        fn: Callable[[argparse.Namespace], int] = getattr(
            __import__(self.module, fromlist=[self.function]), self.function
        )
        return fn(args)


#: What skgate is, the first line of ``skgate --help``.
DESCRIPTION = "Process-safety gate for Ascend SuperKernel static compilation."

#: The one-word command lines skgate.cli.top answers without the parser (with ``skgate``
#: alone); every other command line is argparse's.
TOP_ANSWERS = ("-h", "--help", "--version")

#: The command areas (``skgate.cli.<area>``), in the order ``skgate --help`` lists them.
AREAS = ("run", "demo", "preflight", "evidence", "workdir", "regress", "agents")

#: Every command, in the order ``skgate --help`` lists them.
COMMANDS = (
    Command("run", "run", "run a command under the gate: skgate run [options] -- COMMAND..."),
    Command("status", "run", "read-only state of an attempt or the latest of a root"),
    Command("classify", "run", "recompute a verdict from the archived evidence alone"),
    Command("demo", "demo", "run the CANN simulator under the gate"),
    Command(
        "preflight",
        "preflight",
        "check start-up hooks, jobs, foreign compilers and leases: skgate preflight "
        "[options] [-- COMMAND...]",
    ),
    Command(
        "report", "evidence", "render an attempt or every attempt of a root in the C7 language"
    ),
    Command(
        "lint-report", "evidence", "check a report against the contract's language (C1, C2, C7)"
    ),
    Command("check-outputs", "evidence", "C8 output check, only after natural return"),
    Command(
        "verify", "workdir", "check seals and the ledger's hash chain; exit 1 naming what changed"
    ),
    Command(
        "recover",
        "workdir",
        "finish an attempt whose runner died (census labelled late, verdict, seal, ledger "
        "end); idempotent",
    ),
    Command(
        "retry",
        "workdir",
        "clean retry: preserve the attempt's scene, rerun the same frozen controls",
    ),
    Command(
        "cleanup",
        "workdir",
        "preserve the working-directory outputs into their attempt's scene, then clear",
    ),
    Command(
        "uninstall",
        "workdir",
        "run only validated package uninstall.sh scripts (from a log or stale records)",
    ),
    Command(
        "regress",
        "regress",
        "compile-health gate (--health) or one-factor diagnosis (--matrix) (C6)",
    ),
    Command(
        "start",
        "agents",
        "run a command under a detached runner and return at once: skgate start "
        "[options] -- COMMAND...",
    ),
    Command("wait", "agents", "wait read-only for an attempt's verdict, at most --max seconds"),
    Command(
        "stop", "agents", "ask an attempt's runner to interrupt it (the one sanctioned way to stop)"
    ),
    Command("mcp", "agents", "serve skgate's tools to an AI agent over MCP (stdio)"),
)

COMMAND_AREA = {c.name: c.area for c in COMMANDS}
SUMMARY = {c.name: c.summary for c in COMMANDS}


def columns() -> int:
    """``shutil.get_terminal_size().columns`` (``COLUMNS``, else the terminal, else 80),
    without importing ``shutil`` and its compression modules (issue 22 s5)."""
    try:
        found = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        found = 0
    if found <= 0:
        try:
            found = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            found = 0
    return found if found > 0 else 80
