"""Hand-written SVG for the HTML report: the timeline and the concurrency curve.

Why hand-written SVG and not a charting library: the page must open on an air-gapped
Ascend host and be attachable to an issue (one file, no network), it must stay under
5 MB for 10,000 processes, and its text must be searchable and testable (a browser test
reads the DOM). A few hundred lines of SVG text from :class:`skgate.report.chart.Chart`
do that with no dependency and no JavaScript; a library would have to be inlined
(hundreds of kB) and would draw in a canvas the DOM cannot read.

Every mark carries a ``<title>`` so a pointer shows the exact value. Colours come from
CSS classes in :mod:`skgate.report.html` (one place), so the SVG holds geometry only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from html import escape, unescape

from skgate.model.phrases import C7, Lang
from skgate.report.chart import Bar, Chart, Strip
from skgate.verdict.words import duration

W = 960
LEFT = 190
RIGHT = 24
PLOT = W - LEFT - RIGHT
ROW = 18
AXIS = 26


def _t(text: str) -> str:
    return escape(text, quote=True)


def _n(value: float | int | str) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def el(tag: str, attrs: Mapping[str, float | int | str], text: str = "", title: str = "") -> str:
    """One SVG element; numbers to one decimal, text and title escaped."""
    a = " ".join(f'{k.replace("_", "-")}="{_t(_n(v))}"' for k, v in attrs.items())
    inner = (f"<title>{_t(title)}</title>" if title else "") + _t(text)
    return f"<{tag} {a}>{inner}</{tag}>" if inner else f"<{tag} {a}/>"


#: Width of one character of a small label, in user units (10.5 px text): enough to
#: tell whether a label fits inside a bar.
LABEL_CHAR = 6.5


def _label(x: float, y: float, text: str, cls: str = "lane", anchor: str = "end") -> str:
    return el("text", {"class": cls, "x": x, "y": y, "text_anchor": anchor}, text)


def _vline(cls: str, x: float, top: float, bottom: float, title: str = "") -> str:
    return el("line", {"class": cls, "x1": x, "y1": top, "x2": x, "y2": bottom}, title=title)


class Frame:
    """The drawn time range [lo, hi] in seconds from the attempt's start."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo = lo
        self.hi = max(hi, lo + 1e-3)

    def x(self, t: float) -> float:
        return LEFT + PLOT * (max(self.lo, min(t, self.hi)) - self.lo) / (self.hi - self.lo)


#: Tick steps in seconds: round in the unit :func:`duration` shows them in.
_STEPS = (
    0.1,
    0.2,
    0.5,
    1,
    2,
    5,
    10,
    15,
    20,
    30,
    60,
    120,
    300,
    600,
    900,
    1200,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    432000,
    864000,
)


def _step(span: float) -> float:
    """The smallest round step giving at most 8 ticks over ``span``."""
    for step in _STEPS:
        if span / step <= 8:
            return float(step)
    return span / 8


def frame_of(c: Chart) -> Frame:
    """The drawn range: to the end, extended to the grace end when it is near; a long
    wait before launch (foreign compilers, C4) is cut so the compile itself stays wide."""
    hi = c.t_end
    for t in (c.deadline, c.grace_end):
        if t is not None and hi < t <= c.t_end * 1.5:
            hi = t
    lo = 0.0
    if c.launched is not None and c.launched > 0:
        after = hi - c.launched
        lo = max(0.0, c.launched - max(after * 0.08, 0.0))
        if c.launched - lo < 1e-6:
            lo = 0.0
    return Frame(lo, hi)


def _axis(f: Frame, zero: float, y: float, height: float, lang: Lang) -> list[str]:
    """Ticks in seconds from ``zero`` (the launch when there is one)."""
    out = []
    step = _step(f.hi - f.lo)
    k = math.ceil((f.lo - zero) / step - 1e-9)
    while zero + k * step <= f.hi + step * 1e-4:
        x = f.x(zero + k * step)
        out.append(_vline("grid", x, y, y + height))
        rel = k * step
        text = "0" if k == 0 else ("+" if rel > 0 else "−") + duration(abs(rel), lang)
        out.append(_label(x, y - 6, text, "tick", "middle"))
        k += 1
    return out


def _deadline(c: Chart, f: Frame, top: float, bottom: float, lang: Lang) -> list[str]:
    zh = lang is Lang.ZH
    out: list[str] = []
    if c.deadline is None:
        return out
    if c.deadline > f.hi:
        left = duration(c.deadline - (c.launched or 0.0), lang)
        far = f"冻结截止 +{left} →" if zh else f"frozen deadline at +{left} →"
        return [_label(W - RIGHT, top + 11, far, "deadline-label")]
    x = f.x(c.deadline)
    if c.grace_end is not None:
        x2 = f.x(c.grace_end)
        g = ("宽限期 " if zh else "grace ") + duration(c.grace or 0, lang)
        box: dict[str, float | int | str] = {
            "class": "grace",
            "x": x,
            "y": top,
            "width": max(x2 - x, 1.0),
        }
        out.append(el("rect", {**box, "height": bottom - top}, title=g))
    t = duration(c.timeout or 0, lang)
    label = f"冻结截止（超时 {t}）" if zh else f"frozen deadline (timeout {t})"
    out.append(_vline("deadline", x, top, bottom, label))
    out.append(_label(x - 4, top + 11, label, "deadline-label"))
    return out


#: Badge radius and the least distance between two badges' centres (no overlap, a gap).
BADGE_R = 7.0
BADGE_GAP = 2 * BADGE_R + 3


Box = tuple[float, float, float, float]  # left, top, right, bottom


def label_boxes(parts: list[str], classes: tuple[str, ...]) -> list[Box]:
    """The boxes of the drawn labels of ``classes`` (end and deadline labels), estimated
    from their text: badges are placed clear of them (issue 30)."""
    boxes: list[Box] = []
    for m in _TEXT.finditer("".join(parts)):
        if m.group(1).split()[0] not in classes:
            continue
        x, y, text = float(m.group(2)), float(m.group(3)), unescape(m.group(5))
        width = sum(LABEL_CHAR if ord(ch) < 0x2E80 else 2 * LABEL_CHAR for ch in text)
        left = (
            x if m.group(4) == "start" else x - width / 2 if m.group(4) == "middle" else x - width
        )
        boxes.append((left, y - 10, left + width, y + 3))
    return boxes


_TEXT = re.compile(
    r'<text class="([^"]*)" x="([-\d.]+)" y="([-\d.]+)" text-anchor="(\w+)">([^<]*)</text>'
)


def _clear(x: float, y: float, blocked: list[Box]) -> bool:
    r = BADGE_R + 1
    return all(x + r <= b[0] or x - r >= b[2] or y + r <= b[1] or y - r >= b[3] for b in blocked)


def badge_places(
    xs: list[float],
    top: float,
    bottom: float,
    blocked: list[Box] | None = None,
    lines: tuple[float, ...] = (),
) -> list[tuple[float, float]]:
    """Centres for numbered badges on marks at ``xs``: never two closer than BADGE_GAP,
    never over a label box in ``blocked``, never crossed by another vertical line (the
    other marks' and ``lines``, e.g. the deadline).

    Each badge takes the first row (going down from the top) where its own mark's x is
    clear; else the nearest x to the right or left, one gap at a time across the whole
    plot, with a short leader from its mark line (which still shows where it belongs).
    When every row down to ``bottom`` is full (many signals a few milliseconds apart: a
    stop signals a group's members one by one), a row is added below it: the caller makes
    the picture that much taller (:func:`badges_bottom`). So no two badges ever overlap."""
    avoid = blocked or []
    first = top + 24
    rows = max(1, int((bottom - first - BADGE_R) // BADGE_GAP) + 1)
    placed: list[list[float]] = [[] for _ in range(rows)]
    span = int((W - LEFT - RIGHT) // BADGE_GAP) + 1
    offsets = [0.0] + [side * BADGE_GAP * k for k in range(1, span + 1) for side in (1.0, -1.0)]
    out: list[tuple[float, float]] = []
    for x in xs:
        others = [lx for lx in (*lines, *xs) if abs(lx - x) > 0.5]
        spot = _spot(x, offsets=offsets, others=others, placed=placed, first=first, avoid=avoid)
        if spot is None:  # every row full: a new one below them all, empty
            placed.append([])
            fresh = _spot(x, offsets=offsets, others=others, placed=[[]], first=first, avoid=[])
            # None: a mark line every few pixels across the plot; then on its own mark.
            bx = min(max(x, LEFT + BADGE_R), W - RIGHT - BADGE_R) if fresh is None else fresh[1]
            spot = len(placed) - 1, bx
        placed[spot[0]].append(spot[1])
        out.append((spot[1], first + BADGE_GAP * spot[0]))
    return out


def badges_bottom(places: list[tuple[float, float]]) -> float:
    """The lowest point the badges at ``places`` reach (0 for none)."""
    return max((y for _, y in places), default=-BADGE_R) + BADGE_R


def _spot(
    x: float,
    *,
    offsets: list[float],
    others: list[float],
    placed: list[list[float]],
    first: float,
    avoid: list[Box],
) -> tuple[int, float] | None:
    """(row, x) of the first clear place for a badge of the mark at ``x``, or None."""
    for dx in offsets:
        bx = x + dx
        if not LEFT + BADGE_R <= bx <= W - RIGHT - BADGE_R:
            continue
        if any(abs(bx - lx) < BADGE_R + 1.5 for lx in others):
            continue
        for level, row in enumerate(placed):
            y = first + BADGE_GAP * level
            if all(abs(bx - o) >= BADGE_GAP for o in row) and _clear(bx, y, avoid):
                return level, bx
    return None


def _marks(
    c: Chart,
    xs: list[float],
    places: list[tuple[float, float]],
    top: float,
    bottom: float,
) -> list[str]:
    out: list[str] = []
    for i, (m, x, (bx, by)) in enumerate(zip(c.marks, xs, places, strict=True), 1):
        out.append(_vline(f"mark {m.kind}", x, top, bottom, m.label))
        if bx != x:  # moved aside: a short leader from its mark line
            leader: dict[str, float | int | str] = {"class": f"mark {m.kind}", "x1": x}
            leader.update({"y1": by, "x2": bx, "y2": by})
            out.append(el("line", leader))
        out.append(el("circle", {"class": f"badge {m.kind}", "cx": bx, "cy": by, "r": BADGE_R}))
        out.append(_label(bx, by + 3.5, str(i), "badge-n", "middle"))
    return out


def _lane_rect(cls: str, a: float, b: float, y: float, title: str, **extra: float | str) -> str:
    attrs: dict[str, float | int | str] = {"class": cls, "x": a, "y": y + 2}
    attrs.update({"width": max(b - a, 2.0), "height": ROW - 5, **extra})
    return el("rect", attrs, title=title)


def _bar(bar: Bar, fr: Frame, zero: float, y: float, lang: Lang) -> list[str]:
    zh = lang is Lang.ZH
    a, b = fr.x(bar.start), fr.x(bar.end)
    name = bar.label if len(bar.label) <= 22 else bar.label[:21] + "…"
    out = [_label(LEFT - 8, y + 12, name)]
    tip = f"{bar.label}: {bar.start - zero:+.2f} s → {bar.end - zero:+.2f} s"
    tip += f", {bar.ended}" if bar.ended else ""
    if bar.open_end:
        tip += "，仍存活" if zh else ", still alive"
    if bar.escaped:
        tip += (
            "，已脱离进程组（C4：只观察，从未发送信号）"
            if zh
            else ", escaped the group (C4: watched, never signalled)"
        )
    cls = (
        f"bar {bar.role}" + (" escaped" if bar.escaped else "") + (" open" if bar.open_end else "")
    )
    if bar.end < fr.lo or bar.start > fr.hi:
        return out  # outside a close-up frame: the row keeps its name, no bar
    out.append(_lane_rect(cls, a, b, y, tip, rx=2))
    end_text = bar.ended
    if bar.escaped:
        end_text = (end_text + " " if end_text else "") + ("已脱离" if zh else "escaped")
    if bar.open_end:
        end_text = "存活" if zh else "alive"
    if end_text:
        # Always at the bar's end, the instant it names: after the bar when there is room,
        # else ending at it (inside the bar, white, when the bar is long enough to hold it).
        # Never at the bar's start, where an exit or a SIGKILL would read as at launch.
        anchor = "start" if b + 60 < W - RIGHT else "end"
        inside = anchor == "end" and b - a >= LABEL_CHAR * len(end_text) + 8
        tx = b + 4 if anchor == "start" else b - 4
        cls_t = "end-label" + (" killed" if bar.ended.startswith("SIG") else "")
        cls_t += " inbar" if inside else ""
        out.append(_label(tx, y + 12, end_text, cls_t, anchor))
    return out


def _strip(s: Strip, c: Chart, fr: Frame, y: float) -> list[str]:
    out = [_label(LEFT - 8, y + 12, s.short)]
    peak = max(s.slices) or 1
    width = c.t_end / len(s.slices)
    for k, n in enumerate(s.slices):
        x0, x1 = fr.x(k * width), fr.x((k + 1) * width)
        if n and x1 > x0:
            attrs: dict[str, float | int | str] = {
                "class": "strip",
                "x": x0,
                "y": y + 2,
                "width": x1 - x0 + 0.3,
            }
            out.append(
                el("rect", {**attrs, "height": ROW - 5, "fill_opacity": 0.15 + 0.85 * n / peak})
            )
    frame: dict[str, float | int | str] = {
        "class": "strip-frame",
        "x": LEFT,
        "y": y + 2,
        "width": PLOT,
        "height": ROW - 5,
    }
    out.append(el("rect", frame, title=s.label))
    return out


def end_frame(c: Chart) -> Frame | None:
    """A close-up of the end when the deadline fired late in a long run.

    On a 2 h run a 30 s grace is a hair on the full-width axis: the signals, the grace
    and the SIGKILL overlap. This frame starts a little before the deadline so they read.
    """
    if c.deadline is None or c.deadline > c.t_end:
        return None
    start = c.launched or 0.0
    tail = c.t_end - c.deadline
    if tail >= 0.15 * (c.t_end - start):
        return None
    lead = max(tail * 0.6, (c.grace or 0.0) * 0.5, 1.0)
    return Frame(max(start, c.deadline - lead), c.t_end + max(tail * 0.05, 0.2))


def timeline_svg(
    c: Chart, lang: Lang, frame: Frame | None = None, zero: float | None = None
) -> str:
    """Processes as bars (and density strips), foreign waits, census, signals, deadline.

    Ticks count from ``zero`` (default: the launch)."""
    zh = lang is Lang.ZH
    fr = frame or frame_of(c)
    zero = (c.launched or 0.0) if zero is None else zero
    y = AXIS + 30.0
    body: list[str] = []
    for f in c.foreign:
        a, b = fr.x(f.start), fr.x(f.end)
        label = f.label
        cut = f.start < fr.lo
        total = duration(f.end - f.start, lang)
        if cut:
            label += f"（共 {total}，左侧已截断）" if zh else f" ({total} in all, cut at the left)"
        body.append(_label(LEFT - 8, y + 12, "外部等待" if zh else "foreign wait"))
        body.append(_lane_rect("foreign", a, b, y, label))
        if cut:
            body.append(_label(a + 4, y + 12, "← " + total, "end-label", "start"))
        y += ROW
    for bar in c.bars:
        body += _bar(bar, fr, zero, y, lang)
        y += ROW
    for s in c.strips:
        body += _strip(s, c, fr, y)
        y += ROW
    # Census over time: error-named (provisional until natural return), succ, .run.
    y += 10
    chart_h = 70.0
    if c.census:
        body += _census(c, fr, y, chart_h, lang)
        y += chart_h + 16
    height = y + 8
    deadline = _deadline(c, fr, AXIS, height - 8, lang)
    labels = label_boxes(body + deadline, ("end-label", "deadline-label", "lane"))
    lines = tuple(
        float(x) for x in re.findall(r'<line class="deadline" x1="([-\d.]+)"', "".join(deadline))
    )
    xs = [fr.x(m.t) for m in c.marks]
    places = badge_places(xs, AXIS, height - 8, labels, lines)
    if badges_bottom(places) + 4 > height - 8:  # rows of badges added below: taller
        height = badges_bottom(places) + 12
        deadline = _deadline(c, fr, AXIS, height - 8, lang)
    rows = _axis(fr, zero, AXIS, height - AXIS - 8, lang) + body + deadline
    rows += _marks(c, xs, places, AXIS, height - 8)
    return _svg("timeline", height, "时间线" if zh else "Timeline", rows)


def _svg(cls: str, height: float, title: str, parts: list[str]) -> str:
    return (
        f'<svg class="{cls}" viewBox="0 0 {W} {height:.0f}" role="img" aria-label="{_t(title)}" '
        'xmlns="http://www.w3.org/2000/svg">' + "".join(parts) + "</svg>"
    )


def _steps(points: list[tuple[float, float]]) -> str:
    """A step polyline through (x, y) points: horizontal, then vertical."""
    out: list[str] = []
    prev: float | None = None
    for x, y in points:
        if prev is not None:
            out.append(f"{x:.1f},{prev:.1f}")
        out.append(f"{x:.1f},{y:.1f}")
        prev = y
    return " ".join(out)


def _census(c: Chart, fr: Frame, y: float, h: float, lang: Lang) -> list[str]:
    zh = lang is Lang.ZH
    top = max(max(e, s, r) for _, e, s, r in c.census) or 1
    out = [el("rect", {"class": "census-bg", "x": LEFT, "y": y, "width": PLOT, "height": h})]
    if c.census_final:
        label = "最终产物统计" if zh else "census (final)"
        err_name = "error 命名文件" if zh else "error-named files"
    else:
        label = "产物统计（暂时性）" if zh else "census (provisional)"
        err_name = C7["provisional"][lang]
    out.append(_label(LEFT - 8, y + 12, label))
    out.append(_label(LEFT - 8, y + h, "0", "tick"))
    out.append(_label(LEFT - 8, y + 26, str(top), "tick"))
    series = (
        (1, "err", err_name),
        (2, "succ", "succ 日志" if zh else "succ logs"),
        (3, "run", ".run 包" if zh else ".run packages"),
    )
    for idx, cls, name in series:
        pts = [(fr.x(row[0]), y + h - (h - 6) * row[idx] / top) for row in c.census]
        pts.append((fr.x(c.t_end), pts[-1][1]))
        attrs = {"class": f"series {cls}", "points": _steps(pts)}
        out.append(el("polyline", attrs, title=f"{name}: {c.census[-1][idx]}"))
    return out


def concurrency_svg(c: Chart, lang: Lang) -> str:
    """Owned opc alive over time, against the frozen jobs and the effective -j (C5)."""
    zh = lang is Lang.ZH
    fr = frame_of(c)
    h = 150.0
    top = AXIS + 8.0
    ymax = max(c.peak_opc, c.frozen_jobs or 0, *c.effective_jobs, 1) + 1
    out = _axis(fr, c.launched or 0.0, AXIS, h, lang)

    def yy(n: float) -> float:
        return top + h - h * n / ymax

    out.append(_label(LEFT - 8, yy(0), "0", "tick"))
    out.append(_label(LEFT - 8, yy(ymax - 1) + 4, str(ymax - 1), "tick"))
    out.append(_label(LEFT - 8, top + h / 2, "存活的自有 opc" if zh else "owned opc alive"))
    pts = [(fr.x(t), yy(n)) for t, n in c.concurrency]
    if pts:
        pts.append((fr.x(c.t_end), pts[-1][1]))
    peak = f"{'峰值' if zh else 'peak'} {c.peak_opc}"
    out.append(el("polyline", {"class": "series opc", "points": _steps(pts)}, title=peak))
    if c.frozen_jobs is not None:
        y = yy(c.frozen_jobs)
        lab = f"冻结并发数 {c.frozen_jobs}" if zh else f"frozen jobs {c.frozen_jobs}"
        out.append(
            el("line", {"class": "jobs frozen", "x1": LEFT, "y1": y, "x2": W - RIGHT, "y2": y})
        )
        out.append(_label(W - RIGHT - 4, y - 4, lab, "jobs-label"))
    for j in sorted(set(c.effective_jobs)):
        y = yy(j)
        lab = f"实际 -j {j}" if zh else f"effective -j {j}"
        out.append(
            el("line", {"class": "jobs effective", "x1": LEFT, "y1": y, "x2": W - RIGHT, "y2": y})
        )
        out.append(_label(LEFT + 6, y - 4, lab, "jobs-label eff", "start"))
    return _svg("concurrency", top + h + 12, "并发曲线" if zh else "Concurrency", out)
