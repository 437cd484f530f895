"""Views of a matrix's :class:`~skgate.regress.executor.Board` while it runs: a live table
(arm, node, state, elapsed, provisional stage counts) and the same rows as JSON lines.

Every count shown while a unit runs is provisional (C1): it comes from the runner's
``observation`` events, never from a verdict.
"""

from __future__ import annotations

import json
import threading
from typing import IO, Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from skgate.regress.executor import ArmStatus, Listener


def jsonl_listener(stream: IO[str]) -> Listener:
    """Each change of a unit as one JSON line (schema ``skgate.regress-progress/1``)."""
    lock = threading.Lock()

    def hear(arm: ArmStatus, now: float) -> None:
        line = json.dumps(
            {"schema": "skgate.regress-progress/1", "t": now, **arm.to_dict(now)},
            ensure_ascii=False,
        )
        with lock:
            stream.write(line + "\n")
            stream.flush()

    return hear


def _stages(counts: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "-"


def table(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="skgate regress: arms (counts provisional until sealed, C1)")
    for col in ("arm", "node", "state", "elapsed", "stages", "note"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            str(r["arm"]),
            str(r["node"]),
            str(r["state"]),
            f"{r['elapsed_s']:.0f}s",
            _stages(r["stages"]),
            str(r["note"])[:60],
        )
    return t


class LiveTable:
    """A rich live table redrawn on every change (and at most 4 times a second)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.rows: dict[str, dict[str, Any]] = {}
        self.live = Live(console=console, refresh_per_second=4, transient=False)
        self._lock = threading.Lock()

    def listener(self) -> Listener:
        def hear(arm: ArmStatus, now: float) -> None:
            with self._lock:
                self.rows[arm.key] = arm.to_dict(now)
                self.live.update(table(list(self.rows.values())))

        return hear

    def __enter__(self) -> LiveTable:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)
