"""What the HTML report draws: the attempt over time, as plain numbers (no drawing here).

:func:`chart_of` reads an attempt's events (``events.jsonl``) and its ownership manifest
and returns a :class:`Chart`: the time range, one bar per owned process (leader,
``op_compiler`` stages, ``opc`` children, escaped ones marked), the provisional census
over time, the signals with who sent them, the frozen deadline and grace, the waits for
foreign compilers, and the number of owned ``opc`` alive over time against the frozen and
the effective jobs. :mod:`skgate.report.svg` turns it into SVG.

Large trees are aggregated so the page stays small and fast (issue 14: 10,000 processes
under 5 MB and 2 s): above :data:`MAX_BARS` processes, the leader, every ``op_compiler``,
every escaped process and every process that ended by a signal or a non-zero exit (up to
:data:`MAX_BARS` in all) keep their own bar; all other ``opc`` children are drawn as one
density strip per parent stage (how many were alive in each of :data:`BINS` time slices).
The concurrency curve is computed exactly (a sweep over every process) and then reduced
to at most :data:`BINS` points by keeping each slice's maximum, so no peak is lost.

Times are seconds from the attempt's start (``created``, else ``launched``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from skgate.model.events import (
    Event,
    Finished,
    ForeignWait,
    ForeignWaitEnd,
    Launched,
    LeaderExited,
    Observation,
    Reaped,
    SignalReceived,
    SignalSent,
    Timeout,
)
from skgate.model.phrases import Lang
from skgate.model.records import Ownership, ProcessRecord
from skgate.model.signals import signal_name
from skgate.verdict.words import SIGNAL_REASONS_ZH

MAX_BARS = 60
BINS = 240


@dataclass(frozen=True)
class Bar:
    pid: int
    label: str
    role: str  # leader | op_compiler | opc | other
    start: float
    end: float
    open_end: bool  # still alive at the last record
    ended: str  # "exit 0", "SIGKILL", "" when unknown
    escaped: bool
    depth: int


@dataclass(frozen=True)
class Strip:
    """Aggregated ``opc`` children of one parent: alive count per time slice."""

    label: str
    short: str
    count: int
    slices: tuple[int, ...]


@dataclass(frozen=True)
class Mark:
    t: float
    kind: str  # signal_sent | signal_received | timeout | leader_exited | finished
    label: str


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    label: str


@dataclass(frozen=True)
class Chart:
    t_end: float
    launched: float | None
    deadline: float | None
    grace_end: float | None
    timeout: float | None
    grace: float | None
    bars: tuple[Bar, ...]
    strips: tuple[Strip, ...]
    aggregated: int  # processes drawn in strips instead of bars
    owned_total: int
    marks: tuple[Mark, ...]
    foreign: tuple[Span, ...]
    census: tuple[tuple[float, int, int, int], ...]  # t, error-named, succ, .run
    census_final: bool
    concurrency: tuple[tuple[float, int], ...]
    peak_opc: int
    frozen_jobs: int | None
    effective_jobs: tuple[int, ...] = field(default=())


def role_of(p: ProcessRecord, leader_pid: int | None) -> str:
    if leader_pid is not None and p.pid == leader_pid:
        return "leader"
    base = os.path.basename(p.argv[0]) if p.argv else ""
    for name in (base, p.name):
        if name == "op_compiler":
            return "op_compiler"
        if name == "opc":
            return "opc"
    return "other"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _t0(events: Sequence[Event], ownership: Ownership | None) -> float | None:
    for e in events:
        t = _num(e.t)
        if t is not None:
            return t
    if ownership is not None and ownership.owned:
        return min(p.first_seen for p in ownership.owned)
    return None


def _shown_name(p: ProcessRecord, role: str) -> str:
    # A compiler is named as it was invoked (argv[0]); comm may be the interpreter's.
    return role if role in ("op_compiler", "opc") else p.name


def _ended(p: ProcessRecord, lang: Lang) -> str:
    if p.exit_signal is not None:
        return signal_name(p.exit_signal)
    if p.exit_status is not None:
        return f"{'退出码' if lang is Lang.ZH else 'exit'} {p.exit_status}"
    return ""


def _depths(procs: Sequence[ProcessRecord]) -> dict[int, int]:
    by_pid = {p.pid: p for p in procs}
    depth: dict[int, int] = {}
    for p in procs:
        d, q, seen = 0, p, set()
        while q.ppid in by_pid and q.ppid not in seen and d < 32:
            seen.add(q.pid)
            q = by_pid[q.ppid]
            d += 1
        depth[p.pid] = d
    return depth


def _tree_order(procs: Sequence[ProcessRecord]) -> list[ProcessRecord]:
    """Parents before children, siblings by first seen (a depth-first walk)."""
    by_pid = {p.pid: p for p in procs}
    kids: dict[int, list[ProcessRecord]] = {}
    roots: list[ProcessRecord] = []
    for p in procs:
        if p.ppid in by_pid and p.ppid != p.pid:
            kids.setdefault(p.ppid, []).append(p)
        else:
            roots.append(p)
    out: list[ProcessRecord] = []
    seen: set[int] = set()
    stack = sorted(roots, key=lambda p: (p.first_seen, p.pid), reverse=True)
    while stack:
        p = stack.pop()
        if p.pid in seen:
            continue
        seen.add(p.pid)
        out.append(p)
        stack += sorted(kids.get(p.pid, ()), key=lambda c: (c.first_seen, c.pid), reverse=True)
    out += [p for p in procs if p.pid not in seen]
    return out


def _sweep(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, int]]:
    points: list[tuple[float, int]] = []
    for a, b in intervals:
        points.append((a, 1))
        points.append((max(a, b), -1))
    # At one instant an end before a start: a process replaced by another is not two.
    points.sort(key=lambda x: (x[0], x[1]))
    out: list[tuple[float, int]] = [(0.0, 0)]
    alive = 0
    for t, d in points:
        alive += d
        if out and out[-1][0] == t:
            out[-1] = (t, alive)
        else:
            out.append((t, alive))
    return out


def _reduce(curve: list[tuple[float, int]], t_end: float) -> list[tuple[float, int]]:
    """At most BINS points, keeping the maximum of each slice (peaks survive)."""
    if len(curve) <= BINS * 2 or t_end <= 0:
        return curve
    width = t_end / BINS
    out: list[tuple[float, int]] = []
    i = 0
    level = 0
    for b in range(BINS):
        lo, hi = b * width, (b + 1) * width
        peak = level
        while i < len(curve) and curve[i][0] < hi:
            level = curve[i][1]
            peak = max(peak, level)
            i += 1
        out.append((lo, peak))
    out.append((t_end, level))
    return out


def _slices(intervals: Sequence[tuple[float, float]], t_end: float) -> tuple[int, ...]:
    counts = [0] * BINS
    if t_end <= 0:
        return tuple(counts)
    width = t_end / BINS
    for a, b in intervals:
        lo = max(0, min(BINS - 1, int(a / width)))
        hi = max(lo, min(BINS - 1, int(b / width)))
        for k in range(lo, hi + 1):
            counts[k] += 1
    return tuple(counts)


def _foreign_spans(events: Sequence[Event], t0: float, lang: Lang) -> list[Span]:
    """Waits for compilers this attempt does not own (``foreign_wait`` .. ``_end``, C4)."""
    spans: list[Span] = []
    start: float | None = None
    what = ""
    for e in events:
        t = _num(e.t)
        if t is None or not isinstance(e, (ForeignWait, ForeignWaitEnd)):
            continue
        if isinstance(e, ForeignWait):
            start = t - t0
            pids = [str(p.get("pid")) for p in e.blockers if isinstance(p, dict)]
            shown = ", ".join(pids[:5]) + (" ..." if len(pids) > 5 else "")
            what = (
                f"等待外部编译进程（pid {shown}），从未触碰（C4）"
                if lang is Lang.ZH
                else f"waited for foreign compilers (pid {shown}), never touched (C4)"
            )
        elif start is not None:
            spans.append(Span(start, t - t0, what))
            start = None
    if start is not None:
        # No end recorded (the runner died waiting): the wait lasts to the last record.
        ends = [_num(e.t) for e in events]
        last = max((t for t in ends if t is not None), default=t0 + start)
        spans.append(Span(start, last - t0, what))
    return spans


def _mark_label(e: Event, lang: Lang) -> str | None:
    zh = lang is Lang.ZH
    if isinstance(e, SignalSent):
        sname = e.name or (signal_name(e.signal) if e.signal is not None else "?")
        reason = e.reason
        target = e.target
        by = "运行器" if zh else "runner"
        shown = str(target)
        if zh and shown.startswith("process group "):
            shown = "进程组 " + shown.removeprefix("process group ")
        to = f" → {shown}" if target is not None else ""
        if reason and zh:
            why = f"（{SIGNAL_REASONS_ZH.get(str(reason), str(reason))}）"
        else:
            why = f" ({reason})" if reason else ""
        return f"{sname}: {by}{to}{why}"
    if isinstance(e, SignalReceived):
        sname = e.name or (signal_name(e.signal) if e.signal is not None else "?")
        sender = e.sender_pid
        who = f"pid {sender}" if sender is not None else ("外部" if zh else "outside")
        return f"{sname} ← {who}" if not zh else f"{sname} ← {who}（外部信号）"
    if isinstance(e, Timeout):
        return "冻结超时触发" if zh else "frozen timeout fired"
    if isinstance(e, LeaderExited):
        if e.exit_signal is not None:
            end = signal_name(e.exit_signal)
        else:
            end = f"{'退出码' if zh else 'exit'} {e.exit_status}"
        return f"{'顶层进程结束' if zh else 'leader ended'}: {end}"
    return None


def chart_of(
    events: Sequence[Event],
    ownership: Ownership | None,
    *,
    frozen_jobs: int | None,
    effective_jobs: Sequence[int] = (),
    census_final: bool = False,
    now: float | None = None,
    lang: Lang = Lang.EN,
) -> Chart | None:
    """The attempt over time, or None when there is nothing with a time to draw."""
    t0 = _t0(events, ownership)
    if t0 is None:
        return None
    procs = list(ownership.owned) if ownership is not None else []
    leader_pid = ownership.leader.pid if ownership and ownership.leader else None
    reaped_at: dict[int, float] = {}
    launched = deadline = timeout = grace = None
    last_t = 0.0
    marks: list[Mark] = []
    census: list[tuple[float, int, int, int]] = []
    finished = False
    for e in events:
        t = _num(e.t)
        if t is None:
            continue
        rel = t - t0
        last_t = max(last_t, rel)
        if isinstance(e, Launched):
            launched = rel
            timeout, grace = _num(e.timeout), _num(e.grace)
            dw = _num(e.deadline_wall)
            deadline = dw - t0 if dw is not None else (rel + timeout if timeout else None)
        elif isinstance(e, (Reaped, LeaderExited)) and e.pid is not None:
            reaped_at[e.pid] = rel
        elif isinstance(e, Observation) and e.counts is not None:
            c = e.counts
            census.append(
                (
                    rel,
                    int(c.get("error_logs", 0)),
                    int(c.get("succ_logs", 0)),
                    int(c.get("run_packages", 0)),
                )
            )
        elif isinstance(e, Finished):
            finished = True
        label = _mark_label(e, lang)
        if label is not None:
            marks.append(Mark(rel, e.event_name, label))
    if leader_pid is not None and launched is not None:
        for e in events:
            if isinstance(e, LeaderExited) and e.pid is None:
                t = _num(e.t)
                if t is not None:
                    reaped_at[leader_pid] = t - t0
    for p in procs:
        last_t = max(last_t, p.last_seen - t0)
    if not finished and now is not None:
        last_t = max(last_t, now - t0)
    t_end = max(last_t, 1e-3)

    def span(p: ProcessRecord) -> tuple[float, float, bool]:
        a = p.first_seen - t0
        done = p.exit_status is not None or p.exit_signal is not None or p.pid in reaped_at
        b = reaped_at.get(p.pid, p.last_seen - t0)
        if not done and not finished:
            return a, t_end, True
        return a, max(a, b), False

    ordered = _tree_order(procs)
    depth = _depths(procs)
    roles = {p.pid: role_of(p, leader_pid) for p in procs}
    keep: list[ProcessRecord]
    strips: list[Strip] = []
    aggregated = 0
    if len(procs) <= MAX_BARS:
        keep = ordered
    else:
        notable = [
            p
            for p in ordered
            if roles[p.pid] in ("leader", "op_compiler")
            or p.escaped
            or p.exit_signal is not None
            or (p.exit_status not in (None, 0))
        ]
        keep = notable[:MAX_BARS]
        kept = {p.pid for p in keep}
        groups: dict[int, list[ProcessRecord]] = {}
        for p in ordered:
            if p.pid not in kept:
                groups.setdefault(p.ppid, []).append(p)
        by_pid = {p.pid: p for p in procs}
        for parent, members in groups.items():
            aggregated += len(members)
            owner = by_pid.get(parent)
            where = f"{owner.name} {parent}" if owner else f"ppid {parent}"
            label = (
                f"{len(members)} 个子进程（{where}）"
                if lang is Lang.ZH
                else f"{len(members)} children of {where}"
            )
            kinds = {roles[p.pid] for p in members}
            kind = kinds.pop() if len(kinds) == 1 else ("进程" if lang is Lang.ZH else "processes")
            short = f"{len(members)} × {kind}"
            slices = _slices([span(p)[:2] for p in members], t_end)
            strips.append(Strip(label, short, len(members), slices))
    bars = []
    for p in keep:
        a, b, open_end = span(p)
        bars.append(
            Bar(
                pid=p.pid,
                label=f"{_shown_name(p, roles[p.pid])} {p.pid}",
                role=roles[p.pid],
                start=a,
                end=b,
                open_end=open_end,
                ended=_ended(p, lang),
                escaped=p.escaped,
                depth=depth.get(p.pid, 0),
            )
        )
    opc = [span(p)[:2] for p in procs if roles[p.pid] == "opc"]
    curve = _sweep(opc)
    peak = max((n for _, n in curve), default=0)
    grace_end = deadline + grace if deadline is not None and grace is not None else None
    return Chart(
        t_end=t_end,
        launched=launched,
        deadline=deadline,
        grace_end=grace_end,
        timeout=timeout,
        grace=grace,
        bars=tuple(bars),
        strips=tuple(strips),
        aggregated=aggregated,
        owned_total=len(procs),
        marks=tuple(marks),
        foreign=tuple(_foreign_spans(events, t0, lang)),
        census=tuple(census),
        census_final=census_final,
        concurrency=tuple(_reduce(curve, t_end)),
        peak_opc=peak,
        frozen_jobs=frozen_jobs,
        effective_jobs=tuple(effective_jobs),
    )
