# ruff: noqa: E501 - real log lines are long; they are kept whole on purpose
"""torchair's lines as they appear in a run log: warnings, Rank prefixes, stdout or stderr."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from skgate.evidence.launcher_lines import split_line
from skgate.evidence.logscan import LogScanner
from skgate.evidence.logscan_file import scan_file

LOG = b"""\
/usr/lib/python3/site-packages/torchair/npugraph_ex/_acl_concrete_graph/static_kernel.py:241: UserWarning: Starting static kernel compilation, the build directory is /w/static_kernel_compile_outputs/ts1_pid2_outputs
  warnings.warn(
/x/static_kernel.py:250: UserWarning: Rank 1: starting static kernel compilation for multi card, the build directory is /w/o/ts3_pid4_outputs
  warnings.warn(
/x/static_kernel.py:301: UserWarning: Rank 1: execute op_compiler error, msg: [ERROR] first line
second line of stderr
  third, indented
  warnings.warn(f"{prefix}execute op_compiler error, msg: {e.stderr}")
after the message
/x/static_kernel.py:120: UserWarning: No matching cache found for key : abc123
  warnings.warn(
Static kernel cache hit: /w/o/ts1_pid2_outputs/static_kernel_1_2.run
/x/static_kernel.py:130: UserWarning: no run files were found, the static compilation might have failed, it is recommended to delete the compilation cache and recompile.
  warnings.warn(
Verifying archive integrity...  100%   SHA256 checksums are OK. All good.
Uncompressing STATIC KERNEL RUN PACKAGE  100%
Rank 0: Warning: If the process exits abnormally, you must manually uninstall the static kernel package by executing: /h/opp/static_kernel/ai_core/static_kernel_1_2/uninstall.sh
"""


def test_every_kind_is_recognised() -> None:
    s = LogScanner()
    s.feed(LOG)
    scan = s.finish()
    f = scan.launcher
    assert [(x["rank"], x["multi_card"]) for x in f.starts] == [(None, False), (1, True)]
    assert f.starts[1]["root"] == "/w/o/ts3_pid4_outputs"
    (err,) = f.compiler_errors
    assert err["rank"] == 1
    assert err["message"] == ["[ERROR] first line", "second line of stderr", "  third, indented"]
    assert f.cache_misses[0]["key"] == "abc123"
    assert f.cache_hits[0]["path"] == "/w/o/ts1_pid2_outputs/static_kernel_1_2.run"
    assert f.no_run_files[0].endswith("delete the compilation cache and recompile.")
    assert (f.installs, f.uninstall_warnings, f.ranks) == (1, 1, (0, 1))
    assert scan.compiler_errors and scan.uninstall_paths


def test_same_result_in_any_chunking_and_from_a_file(tmp_path: Path) -> None:
    whole = LogScanner()
    whole.feed(LOG)
    expected = whole.finish()
    for size in (1, 7, 64, 333):
        s = LogScanner()
        for i in range(0, len(LOG), size):
            s.feed(LOG[i : i + size])
        assert s.finish() == expected, size
    log = tmp_path / "run.log"
    log.write_bytes(LOG)
    assert scan_file(log, use_grep=True) == expected  # the grep path gives way here
    assert scan_file(log, use_grep=False) == expected


def test_skip_lines_and_the_bare_start_of_torch_npu_2_7_are_kept() -> None:
    """Issue 27: 2.7.1's start line names no directory (static_kernel.py l.27); the
    launcher's own skip words are kept verbatim, so an empty root is not over-read."""
    from skgate.evidence.launcher_lines import LauncherCollector

    c = LauncherCollector()
    for line in (
        "/x/static_kernel.py:27: UserWarning: Starting static kernel compilation",
        "/x/static_kernel.py:159: UserWarning: Rank 1: skipping static kernel compilation "
        "for multi card: local Gloo probe failed or timed out (probe timeout 180s).",
        "/x/static_kernel.py:354: UserWarning: Failed to execute dump json: boom",
    ):
        c.on_line(line)
    facts = c.result()
    assert facts.bare_starts == 1 and not facts.starts
    assert len(facts.skips) == 2 and "Gloo probe failed" in facts.skips[0]


# What split_line means, written the plain way: the warning header as the lazy prefix
# regex finds it, then a ``Rank N: `` at the start of what is left. The module finds both
# with one search (issue 29: it runs once per hit); the two must never differ.
_PLAIN_HEADER = re.compile(r"^.*?:\d+: (?P<category>[A-Za-z_]\w*(?:Warning|Error)): ")
_PLAIN_RANK = re.compile(r"^Rank (?P<rank>\d+): ")


def plain_split(text: str) -> tuple[str | None, int | None, str]:
    category, msg = None, text
    m = _PLAIN_HEADER.match(msg)
    if m is not None:
        category, msg = m.group("category"), msg[m.end() :]
    r = _PLAIN_RANK.match(msg)
    return category, int(r.group("rank")) if r is not None else None, msg[r.end() :] if r else msg


PIECES = ["a.py:1: UserWarning: ", ":2: ", "Rank 3: ", "Rank x: ", "Warning: ", "x:12: FooError: "]
PIECES += [" ", "msg", ":", "1", "Rank ", "RuntimeWarning", ": ", "\n", "\r", "\u00e9", "\u0663"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_split_line_is_header_then_rank(text: str) -> None:
    assert split_line(text) == plain_split(text)
