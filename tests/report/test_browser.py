"""The HTML report in a real headless Chromium: no console message, the headline, the
timeline and the reasons in the rendered DOM, and screenshots at desktop and phone width.

Marked ``browser``; skipped (and saying so) when no Chromium is installed. ``.ci/run``
installs Debian's ``chromium`` so CI runs it. Set ``SKGATE_SCREENSHOTS=DIR`` to keep the
screenshots (a person looks at them: issue 14); otherwise they go to the test's tmp dir.

Chromium runs in its own session (``start_new_session``), so its whole process group is
ours: on a hang the group is ended by its id while the leader is still unreaped.
"""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from evidence_fixtures import (
    make_attempt,
    make_many,
    make_sigkill_timeout,
    make_swallowed_failure,
)
from skgate.model.records import State
from skgate.report import facts, load
from skgate.report.html import render_html
from skgate.verdict.words import WORDS, phrase

pytestmark = pytest.mark.browser


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
    "root-50": lambda root: (make_many(root, 50), root)[1],
}


@needs_chromium
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(CASES))
def test_page_renders_without_console_messages(tmp_path: Path, name: str, lang: str) -> None:
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
    words = WORDS[first.verdict.state][lang]
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
