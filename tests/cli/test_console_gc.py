"""The console entry raises the cyclic collector's first threshold before any command's
start-up imports (issue 29: at CPython's 700 a ``skgate run`` paid about 4 ms of
collections before its command ran), and leaves the collector on."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ENV
from skgate.cli.console import GC_THRESHOLD

#: Runs the console entry in a fresh interpreter up to the hand-over to ``cli.main``,
#: which is replaced by a report of the collector's state at that instant.
PROBE = """\
import gc, json, sys
import skgate.cli.main as main
before = gc.get_threshold()


def report():
    print(json.dumps({"before": before, "now": gc.get_threshold(), "on": gc.isenabled(),
                      "main_loaded": "skgate.cli.run" in sys.modules}))
    sys.exit(0)


main.entry = report
sys.argv = ["skgate", "run", "--", "true"]
from skgate.cli.console import entry
entry()
"""


def test_the_console_entry_raises_the_young_threshold_and_keeps_the_collector_on() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=ENV, capture_output=True, text=True, check=True
    )
    got = json.loads(done.stdout)
    assert got["before"] != list(GC_THRESHOLD)  # the interpreter's default (3.11: 700)
    assert got["now"] == list(GC_THRESHOLD) and GC_THRESHOLD[0] > 700
    assert got["on"] is True
    assert got["main_loaded"] is False  # set before the command's own imports
