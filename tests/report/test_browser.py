"""The HTML report in a real headless Chromium: no console message, the headline, the
timeline and the reasons in the rendered DOM, and screenshots at desktop and phone width.

Marked ``browser``; skipped (and saying so) when no Chromium is installed. ``.ci/run``
installs Debian's ``chromium`` so CI runs it. Set ``SKGATE_SCREENSHOTS=DIR`` to keep the
screenshots (a person looks at them: issue 14); otherwise they go to the test's tmp dir.

Chromium runs in its own session (``start_new_session``), so its whole process group is
ours: on a hang the group is ended by its id while the leader is still unreaped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evidence_fixtures import (
    ev,
    make_attempt,
    make_many,
    make_plain_command,
    make_sigkill_timeout,
    make_swallowed_failure,
)
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.report import facts, load
from skgate.report.html import render_html
from skgate.verdict.words import phrase, state_words

# A headless browser per page: also left out of the fast selection (README, Development).
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium installed (.ci/run installs Debian's chromium)"
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = Path(os.path.realpath(tmp)) / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    argv = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        # The leader is not reaped yet, so the group id is still ours alone.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def shots_dir(tmp: Path) -> Path:
    keep = os.environ.get("SKGATE_SCREENSHOTS")
    out = Path(keep) if keep else tmp / "shots"
    out.mkdir(parents=True, exist_ok=True)
    return out


Case = Callable[[Path], Path]

CASES: dict[str, Case] = {
    "success": lambda root: make_attempt(root, 1, State.SUCCEEDED),
    "swallowed-failure": make_swallowed_failure,
    "timeout-sigkill": make_sigkill_timeout,
    "plain-command": lambda root: make_plain_command(root, 0),
    "root-50": lambda root: (make_many(root, 50), root)[1],
}

#: Run inside a copy of the page (the page itself has no script and its CSP forbids one):
#: writes each timeline badge's box and each headline band's colour into the DOM.
PROBE = """<script>
addEventListener("load", () => {
  const out = document.createElement("pre");
  out.id = "probe";
  const boxes = [...document.querySelectorAll("svg.timeline circle.badge")].map((c) => {
    const r = c.getBoundingClientRect();
    return [c.closest("svg").dataset.n, r.left, r.top, r.right, r.bottom];
  });
  const bands = [...document.querySelectorAll(".verdict")].map(
    (b) => [b.dataset.tone, getComputedStyle(b).backgroundColor]);
  out.textContent = JSON.stringify({boxes, bands});
  document.body.appendChild(out);
});
</script>"""


def probe(tmp: Path, html: str, width: int) -> dict[str, Any]:
    """What the browser laid out: badge boxes (by timeline) and band colours."""
    return run_probe(tmp, html, width, script=PROBE, svg_tag='<svg class="timeline"', name="probe")


def run_probe(
    tmp: Path, html: str, width: int, *, script: str, svg_tag: str, name: str
) -> dict[str, Any]:
    """Lay out a copy of the page (its CSP removed, ``script`` added, each ``svg_tag``
    numbered) in Chromium at ``width`` and return what the script wrote into the DOM."""
    import json
    import re

    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    n = iter(range(1000))
    html = re.sub(re.escape(svg_tag), lambda m: f'{m.group(0)} data-n="{next(n)}"', html)
    page = tmp / f"{name}-{width}.html"
    page.write_text(html.replace("</body>", script + "</body>"), encoding="utf-8")
    dom = chromium(
        tmp,
        f"--window-size={width},900",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.resolve().as_uri(),
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.DOTALL)
    assert found, "the probe did not run"
    data: dict[str, Any] = json.loads(html_unescape(found.group(1)))
    return data


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


def overlapping(boxes: list[list[Any]]) -> list[tuple[Any, Any]]:
    bad = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if a[0] == b[0] and a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]:
                bad.append((a, b))
    return bad


@needs_chromium
@pytest.mark.parametrize("width", [1366, 390])
def test_timeline_markers_never_overlap_in_the_browser(tmp_path: Path, width: int) -> None:
    # The deadline, SIGTERM, the leader's exit and SIGKILL fall within a second of each
    # other: their numbered badges must still not overlap (issue 23), nor in the close-up.
    attempt = make_sigkill_timeout(tmp_path / "ev")
    # Two stop signals from outside in the same second: six marks at the deadline.
    with (attempt / "events.jsonl").open("a", encoding="utf-8") as fh:
        for t, name in ((7200.4, "signal_received"), (7200.6, "signal_received")):
            fh.write(json.dumps(ev(name, t, signal=15, name="SIGTERM")) + "\n")
    rep = load.build_report(attempt)
    page = render_html(rep, Lang.EN)
    got = probe(tmp_path, page, width)
    assert len(got["boxes"]) >= 4
    assert overlapping(got["boxes"]) == []
    shot = shots_dir(tmp_path) / f"markers-{width}.png"
    res = chromium(
        tmp_path,
        f"--window-size={width},900",
        f"--screenshot={shot}",
        (tmp_path / f"probe-{width}.html").resolve().as_uri(),
    )
    assert res.returncode == 0 and png_size(shot) == (width, 900)


@needs_chromium
def test_headline_colour_tells_a_compile_from_a_plain_command_and_a_stage(tmp_path: Path) -> None:
    # Green only for a compile that compiled; a plain command's declared exit status and
    # a failed op_compiler stage each have a colour and words of their own (issue 23).
    cases = {
        "compiled": make_attempt(tmp_path / "a", 1, State.SUCCEEDED),
        "declared": make_plain_command(tmp_path / "b", 0),
        "stage": make_swallowed_failure(tmp_path / "c"),
    }
    colours = {}
    for tone, attempt in cases.items():
        rep = load.build_report(attempt)
        (band,) = probe(tmp_path, render_html(rep, Lang.EN), 1366)["bands"]
        assert band[0] == f"t-{tone}"
        colours[tone] = band[1]
    assert colours["compiled"] == "rgb(30, 123, 52)"  # --ok
    assert len(set(colours.values())) == 3, colours


@needs_chromium
@pytest.mark.parametrize("lang", list(Lang))
@pytest.mark.parametrize("name", list(CASES))
def test_page_renders_without_console_messages(tmp_path: Path, name: str, lang: Lang) -> None:
    target = CASES[name](tmp_path / "ev")
    rep = load.build_report(target)
    page = tmp_path / f"{name}-{lang}.html"
    page.write_text(render_html(rep, lang), encoding="utf-8")
    url = page.resolve().as_uri()

    dom = chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The page has no script and loads nothing: any console line is a fault (a CSP
    # violation from a stray resource would show here).
    assert console_lines(dom.stderr) == []
    html = dom.stdout
    first = rep.attempts[0]
    words = state_words(first.verdict, lang)
    assert words in html, "headline missing from the rendered DOM"
    assert 'class="timeline"' in html and "<svg" in html
    assert phrase("reasons", lang) in html
    assert facts.headline(first, lang) in html

    out = shots_dir(tmp_path)
    for label, size in (("desktop", (1366, 768)), ("phone", (390, 844))):
        png = out / f"{name}-{lang}-{label}.png"
        shot = chromium(tmp_path, f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", url)
        assert shot.returncode == 0, shot.stderr[-2000:]
        assert console_lines(shot.stderr) == []
        assert png_size(png) == size


#: Lays out every part of a copy of the page with its <details> open, then writes into the
#: DOM each table's overflow past its container and the boxes of the timeline's labels
#: and badges (the badge's own number is inside its circle by design).
LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const tables = [...document.querySelectorAll("table")].map((t) => {
    const p = t.parentElement;
    return [t.className || t.closest("section,details")?.className || "",
            p.scrollWidth - p.clientWidth,
            t.getBoundingClientRect().right - p.getBoundingClientRect().right];
  });
  const marks = "svg.timeline text:not(.badge-n):not(.tick), svg.timeline circle.badge";
  const boxes = [...document.querySelectorAll(marks)].map((e) => {
    const r = e.getBoundingClientRect();
    return [e.closest("svg").dataset.n, r.left, r.top, r.right, r.bottom,
            e.textContent || e.getAttribute("class")];
  }).filter((b) => b[3] > b[1] && b[4] > b[2]);
  // Each badge and the vertical lines it must not sit on: every mark and deadline line
  // but its own (the mark line drawn just before it).
  const crossed = [];
  document.querySelectorAll("svg.timeline").forEach((svg) => {
    const vertical = [...svg.querySelectorAll("line.mark, line.deadline")]
      .filter((l) => l.getAttribute("x1") === l.getAttribute("x2"));
    let own = null;
    for (const e of svg.querySelectorAll("line, circle.badge")) {
      if (e.tagName === "line" && vertical.includes(e) && e.classList.contains("mark")) own = e;
      if (e.tagName !== "circle") continue;
      const c = e.getBoundingClientRect();
      for (const l of vertical) {
        const r = l.getBoundingClientRect();
        const x = (r.left + r.right) / 2;
        const across = x > c.left + 0.5 && x < c.right - 0.5;
        if (l !== own && across && r.top < c.bottom && c.top < r.bottom)
          crossed.push([e.getAttribute("class"), l.getAttribute("class"), x]);
      }
    }
  });
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({tables, boxes, crossed});
  document.body.appendChild(out);
});
</script>"""


def layout(tmp: Path, html: str, width: int) -> dict[str, Any]:
    return run_probe(tmp, html, width, script=LAYOUT_PROBE, svg_tag="<svg", name="layout")


@needs_chromium
@pytest.mark.parametrize("lang", list(Lang))
@pytest.mark.parametrize("width", [1000, 1400, 1600])
def test_no_label_overlaps_another_and_no_table_overflows(
    tmp_path: Path, width: int, lang: Lang
) -> None:
    """Boxes, not pixels (issue 30): at desktop widths, in en and zh, the timeline's labels
    and badges never overlap one another, and no table is wider than its card (the
    verdict pill of a swallowed failure once widened the attempts table)."""
    cases = {
        "timeout-sigkill": make_sigkill_timeout(tmp_path / "a"),
        "swallowed-failure": make_swallowed_failure(tmp_path / "b"),
    }
    root = tmp_path / "root"
    make_many(root, 6)
    swallowed = make_swallowed_failure(root, 7)
    make_attempt(root, 8, State.SUCCEEDED, retry_of=str(swallowed))
    cases["root"] = root
    for name, target in cases.items():
        got = layout(tmp_path, render_html(load.build_report(target), lang), width)
        wide = [t for t in got["tables"] if t[1] > 1 or t[2] > 1]
        assert wide == [], (name, wide)
        assert got["boxes"], name
        assert overlapping(got["boxes"]) == [], (name, overlapping(got["boxes"]))
        assert got["crossed"] == [], (name, got["crossed"])
