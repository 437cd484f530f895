"""Benchmark: the HTML report of a 10,000-process attempt, its size and its render time.

Run by hand (not part of the test suite):

    python bench/bench_report_html.py --processes 10000 --repeat 5

What it measures, on one generated attempt (``make_big_attempt`` of tests/evidence_fixtures:
a leader, one op_compiler, N-2 ``opc`` children 16 at a time, one ``reaped`` event each):

- ``skgate report --format html`` in-process (build the report + render), and the
  Markdown report of the same attempt as the reference (same data, no drawing);
- the size of the HTML file (target < 5 MB);
- headless Chromium loading the file and taking a 1366x768 screenshot (layout + paint),
  wall clock per run, against the same for a one-line page: the difference is what the
  report itself costs the browser; the total includes browser start (target < 2 s).

Medians of ``--repeat`` runs. The machine is shared: expect noise, compare within a run.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skgate.model.phrases import Lang

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from evidence_fixtures import make_big_attempt
from skgate.report import load, markdown
from skgate.report.html import render_html

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1366,768",
)


def chromium_seconds(browser: str, page: Path, work: Path, k: int) -> float:
    profile = work / f"profile-{page.stem}-{k}"
    profile.mkdir()
    argv = [browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={work / 'x.png'}"]
    start = time.perf_counter()
    subprocess.run(
        [*argv, page.resolve().as_uri()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=120,
        start_new_session=True,
    )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=10_000, help="owned processes in the tree")
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, seconds, no targets (CI)"
    )
    args = ap.parse_args()
    if args.quick:
        args.processes, args.repeat = 200, 1
    browser = shutil.which("chromium") or shutil.which("google-chrome")
    with tempfile.TemporaryDirectory(prefix="skgate-bench-html-") as tmp:
        work = Path(tmp)
        attempt = make_big_attempt(work / "root", args.processes)
        html_s, md_s = [], []
        page = ""
        for _ in range(args.repeat):
            t = time.perf_counter()
            page = render_html(load.build_report(attempt), Lang.EN)
            html_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            markdown.render(load.build_report(attempt), Lang.EN, "md")
            md_s.append(time.perf_counter() - t)
        big = work / "big.html"
        big.write_text(page, encoding="utf-8")
        tiny = work / "tiny.html"
        tiny.write_text("<!DOCTYPE html><title>x</title><p>x</p>\n", encoding="utf-8")
        print(
            f"machine {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
            f"load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}"
        )
        bars = page.count('class="bar ')
        strips = page.count('class="strip-frame')
        print(
            f"processes {args.processes}, html bytes {big.stat().st_size}, "
            f"bars {bars}, strips {strips}"
        )
        print(
            f"render html (build+render) median {statistics.median(html_s):.3f} s; "
            f"markdown (reference) median {statistics.median(md_s):.3f} s; "
            f"ratio {statistics.median(html_s) / statistics.median(md_s):.2f}"
        )
        if browser is None:
            print("no chromium: browser timing skipped")
            return
        b_big, b_tiny = [], []
        for k in range(args.repeat):
            # Interleaved, so load on the shared machine hits both alike.
            b_tiny.append(chromium_seconds(browser, tiny, work, k))
            b_big.append(chromium_seconds(browser, big, work, k))
        mb, mt = statistics.median(b_big), statistics.median(b_tiny)
        print(
            f"chromium load+screenshot: report median {mb:.3f} s, one-line page median "
            f"{mt:.3f} s, report's own cost {mb - mt:.3f} s"
        )


if __name__ == "__main__":
    main()
