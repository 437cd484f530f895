"""``skgate status --watch``: a live, read-only view of one attempt.

Instead of guessing from ``*_compile_error.log`` files or ``ps`` output, a person watches
what the gate knows: the state in C2/C7 words, time left before the frozen deadline, the
owned processes that still live (with their CPU and memory, via psutil), and the last
provisional artifact counts the runner observed. Nothing here sends a signal or writes
a file (C2.1): it only reads the attempt directory and ``/proc``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from skgate.evidence import files
from skgate.evidence.journal import iter_journal
from skgate.evidence.load import load_census, load_ownership
from skgate.model.events import Launched, Observation
from skgate.model.records import State, Verdict
from skgate.read.liveness import current_verdict, live_owned
from skgate.verdict.words import duration, headline

STYLE = {
    State.IN_PROGRESS: "bold cyan",
    State.SUCCEEDED: "bold green",
    State.FAILED: "bold red",
    State.INTERRUPTED: "bold yellow",
    State.UNKNOWN: "bold magenta",
    State.NOT_STARTED: "bold",
}


@dataclass(frozen=True)
class LiveProcess:
    pid: int
    name: str
    escaped: bool
    cpu_percent: float | None
    rss_mib: float | None


@dataclass(frozen=True)
class View:
    attempt: Path
    verdict: Verdict
    seconds_left: float | None
    live: tuple[LiveProcess, ...]
    counts: dict[str, Any] | None
    #: The counts come from the final census (census.json), not a live observation.
    counts_final: bool = False


def _last_events(attempt: Path) -> tuple[float | None, dict[str, Any] | None]:
    deadline: float | None = None
    counts: dict[str, Any] | None = None
    for ev in iter_journal(attempt / files.EVENTS):
        if isinstance(ev, Launched) and ev.deadline_wall is not None:
            deadline = float(ev.deadline_wall)
        elif isinstance(ev, Observation) and ev.counts is not None:
            counts = dict(ev.counts)
    return deadline, counts


class Sampler:
    """psutil handles kept between refreshes: CPU % is a rate, so it needs two readings of
    the same process (the first reading of a new handle is always 0 and is not shown)."""

    def __init__(self) -> None:
        self._procs: dict[tuple[int, int], psutil.Process] = {}

    def stats(self, pid: int, start_ticks: int) -> tuple[float | None, float | None]:
        key = (pid, start_ticks)
        first = key not in self._procs
        try:
            proc = self._procs.get(key) or psutil.Process(pid)
            self._procs[key] = proc
            with proc.oneshot():
                cpu = proc.cpu_percent(interval=None)
                rss = proc.memory_info().rss / (1 << 20)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            self._procs.pop(key, None)
            return None, None
        return (None if first else cpu), rss


def snapshot(attempt: Path, sampler: Sampler | None = None) -> View:
    """What the gate knows about ``attempt`` now (read-only)."""
    sampler = sampler or Sampler()
    verdict = current_verdict(attempt)
    if verdict.breach is not None:
        # Sealed evidence changed (issue 28): shown by that alone, nothing else read.
        return View(attempt, verdict, None, (), None)
    deadline, counts = _last_events(attempt)
    live: list[LiveProcess] = []
    if verdict.state is State.IN_PROGRESS:
        # Identity is (pid, start time), same boot only: a recycled pid is never shown.
        for p in live_owned(load_ownership(attempt)):
            cpu, rss = sampler.stats(p.pid, p.start_ticks)
            live.append(LiveProcess(p.pid, p.name, p.escaped, cpu, rss))
    left = None if deadline is None else deadline - time.time()
    # Once the runner took its census (after the tree ended), that is what the view ends
    # on: the last provisional observation is stale by then (issue 12).
    census = load_census(attempt)
    if census is not None:
        counts = {
            "error_logs": census.error_logs,
            "succ_logs": census.succ_logs,
            "run_packages": census.run_packages,
        }
        return View(attempt, verdict, left, tuple(live), counts, counts_final=not census.live)
    return View(attempt, verdict, left, tuple(live), counts)


def render(view: View) -> Group:
    state = view.verdict.state
    head = Text(headline(view.verdict), style=STYLE[state])
    if view.verdict.cause:
        head.append(f" (cause: {view.verdict.cause.value})")
    facts = Table.grid(padding=(0, 2))
    facts.add_row("attempt", str(view.attempt))
    if view.seconds_left is not None and state is State.IN_PROGRESS:
        facts.add_row("frozen deadline in", duration(max(view.seconds_left, 0.0)))
    if view.counts is not None and view.counts_final:
        facts.add_row(
            "final artifact census",
            f"{view.counts.get('error_logs', 0)} error-named files, "
            f"{view.counts.get('succ_logs', 0)} succ logs, "
            f"{view.counts.get('run_packages', 0)} .run",
        )
    elif view.counts is not None:
        facts.add_row(
            "last observed artifacts",
            f"{view.counts.get('error_logs', 0)} provisional error-named files (C1), "
            f"{view.counts.get('succ_logs', 0)} succ logs, "
            f"{view.counts.get('run_packages', 0)} .run",
        )
    parts: list[Any] = [head, facts]
    if view.live:
        table = Table(title=f"owned processes alive: {len(view.live)}", show_edge=False)
        for col in ("pid", "name", "group", "cpu %", "rss MiB"):
            table.add_column(col)
        for p in view.live:
            table.add_row(
                str(p.pid),
                p.name,
                "escaped (never signalled)" if p.escaped else "own group",
                "-" if p.cpu_percent is None else f"{p.cpu_percent:.0f}",
                "-" if p.rss_mib is None else f"{p.rss_mib:.0f}",
            )
        parts.append(table)
    if state is not State.IN_PROGRESS:
        parts.extend(Text(f"- {r}") for r in view.verdict.reasons)
    return Group(*parts)


def watch(
    attempt: Path,
    *,
    interval: float = 2.0,
    console: Console | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Verdict:
    """Show the live view until the attempt is no longer in progress; return its verdict."""
    console = console or Console()
    sampler = Sampler()
    view = snapshot(attempt, sampler)
    with Live(render(view), console=console, auto_refresh=False) as live:
        while view.verdict.state is State.IN_PROGRESS:
            sleep(interval)
            view = snapshot(attempt, sampler)
            live.update(render(view), refresh=True)
    if not console.is_terminal:
        # rich ends its live view with a newline on a terminal only; piped output is a
        # text file, whose last line ends with one too (issue 30).
        console.line()
    return view.verdict
