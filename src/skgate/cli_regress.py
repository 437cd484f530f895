"""Command-line glue for the regression gate (placeholder until the area lands)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this area's subcommands (each sets ``handler=fn(args) -> int``)."""
