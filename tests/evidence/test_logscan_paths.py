"""The grep path of the log scan gives the pure-Python scan's answer, and is taken (C3, issue 29).

``scan_file`` on a finished log lists candidate lines with ``grep`` and reads the lines of
an open launcher error message by offset; ``LogScanner.feed`` reads every byte. These tests
compare both on logs built to reach the states where they could part: multi-line launcher
messages, lines that close a message without being grep triggers, long lines, CRLF, a
missing final newline.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import skgate.evidence.logscan_fast as logscan_fast
from skgate.evidence.logscan import GREP_TRIGGERS, LITERALS, LogScanner
from skgate.evidence.logscan_file import scan_file
from skgate.model.logscan import LogScan

needs_grep = pytest.mark.skipif(
    shutil.which("grep") is None or shutil.which("wc") is None, reason="needs grep and wc"
)

WARNING = b"/w/torchair/static_kernel.py:241: UserWarning: "


def error_message(rank: int, n: int, detail: bytes = b"  E10001: kernel failed") -> bytes:
    """A torchair compiler-error warning whose message goes on over ``n`` more lines."""
    head = WARNING + b"Rank %d: execute op_compiler error, msg: opc exited 1\n" % rank
    return head + (detail + b"\n") * n + b"  warnings.warn(msg)\n"


def full_scan(data: bytes, max_line: int = 64 * 1024) -> LogScan:
    sc = LogScanner(max_line=max_line)
    sc.feed(data)
    return sc.finish()


def both_paths(
    data: bytes, monkeypatch: pytest.MonkeyPatch, max_line: int = 64 * 1024
) -> tuple[LogScan, LogScan]:
    """(scan_file's answer with the grep path forced and ``feed`` forbidden, full scan)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.log"
        log.write_bytes(data)
        taken: list[bool] = []
        plain = logscan_fast.scan_file_fast

        def watched(path: Path, max_line: int = 64 * 1024) -> LogScan | None:
            result = plain(path, max_line)
            taken.append(result is not None)
            return result

        def no_feed(self: LogScanner, data: bytes | bytearray | memoryview) -> None:
            raise AssertionError("scan_file fell back to the whole Python pass")

        with monkeypatch.context() as m:
            m.setattr(logscan_fast, "scan_file_fast", watched)
            m.setattr(LogScanner, "feed", no_feed)
            fast = scan_file(log, use_grep=True, max_line=max_line)
        assert taken == [True]  # the grep path answered, nothing else did
    return fast, full_scan(data, max_line)


@needs_grep
def test_launcher_error_messages_keep_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 29: a log with `execute op_compiler error` lines whose messages go on over
    # several lines used to make scan_file throw grep's answer away and read every byte.
    data = (
        b"[INFO] opc compiling static_kernel_0\n"
        + error_message(0, 2)
        + b"[INFO] opc compiling static_kernel_1\r\n"
        + error_message(1, 3, b"  see the compile log\r")
        + b"[summary] stage=compile inputs=2 succeeded=0 failed=2\n"
        + b"execute op_compiler error, msg: bare\nlast line without newline"
    )
    fast, full = both_paths(data, monkeypatch)
    assert fast == full
    messages = [e["message"] for e in full.launcher.compiler_errors]
    assert messages == [
        ["opc exited 1", *["  E10001: kernel failed"] * 2],
        ["opc exited 1", *["  see the compile log"] * 3],  # the CR is not kept
        ["bare", "last line without newline"],
    ]
    assert full.launcher.ranks == (0, 1)
    assert len(full.compiler_errors) == 3


@needs_grep
@pytest.mark.parametrize(
    "closing",
    [
        b"Uncompressing STATIC KERNEL RUN PACKAGE static_kernel_1.run",
        b"a bare static kernel compilation note",
    ],
)
def test_a_literal_that_is_no_trigger_closes_the_message_on_both_paths(
    monkeypatch: pytest.MonkeyPatch, closing: bytes
) -> None:
    # Such a line is no grep hit, but feed() hands it to on_line, which closes the open
    # message: the grep path, reading it by offset, must close it too (it used to go on
    # adding the following lines to the message).
    data = b"execute op_compiler error, msg: boom\n" + closing + b"\nnot part of it\n"
    fast, full = both_paths(data, monkeypatch)
    assert fast == full
    (error,) = full.launcher.compiler_errors
    assert error["message"] == ["boom", closing.decode()]


PIECES = [
    b"",
    b"  ",
    b"\xff",
    b"plain compile noise",
    b"[summary] stage=a inputs=1 succeeded=1 failed=0",
    b"[summary] stage=a inputs=2 succeeded=1 failed=0",  # its problem names its line
    b"Rank 1: ",
    WARNING,
    b"execute op_compiler error, msg: boom",
    b"  detail of the error",
    b"  warnings.warn(msg)",
    b"Uncompressing STATIC KERNEL RUN PACKAGE",
    b"static kernel compilation",
    b"Starting static kernel compilation, the build directory is /w/o",
    b"Static kernel cache hit: /c/k",
    b"generate run package p.run success",
    b"p.run install failed, msg: x",
    b"/s/uninstall.sh",
    b"q" * 120,
    b"r" * 300,  # longer than max_line (256) on its own
]
#: One line: a few pieces, so literals also meet long runs and each other.
LINE = st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map(b"".join)
#: A launcher error message: its head line, lines that go on, and what may end it.
MESSAGE = st.tuples(
    st.sampled_from([b"", WARNING, WARNING + b"Rank 3: "]),
    st.lists(LINE, max_size=4),
).map(lambda t: [t[0] + b"execute op_compiler error, msg: boom", *t[1]])
LOG_LINES = st.lists(st.one_of(LINE.map(lambda x: [x]), MESSAGE), max_size=25).map(
    lambda blocks: [line for block in blocks for line in block]
)


@needs_grep
@settings(max_examples=150, deadline=None)
@given(lines=LOG_LINES, endings=st.lists(st.sampled_from([b"\n", b"\r\n"])), last=st.booleans())
def test_random_logs_give_the_same_answer_on_both_paths(
    lines: list[bytes], endings: list[bytes], last: bool
) -> None:
    cut = [line + (endings[i % len(endings)] if endings else b"\n") for i, line in enumerate(lines)]
    data = b"".join(cut)
    if cut and not last:
        data = data[: -len(b"\n")]  # no final newline (a CRLF keeps its CR)
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, full = both_paths(data, monkeypatch, max_line=256)
    assert fast == full
    # The same cut into byte ranges scanned by greps side by side (on a big log, one per
    # core): line numbers and open messages carry over the range boundaries.
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.log"
        log.write_bytes(data)
        for parts in (2, 3):
            assert logscan_fast.scan_file_fast(log, 256, parts=parts) == full
    middle = data.find(b"\n", len(data) // 2)
    if 0 <= middle < len(data) - 1:
        event("two ranges")
        if b"op_compiler error" in b"".join(data[:middle].split(b"\n")[-3:]):
            event("a range starts at most 3 lines after an error line")
    # The states where the two paths could part, counted by hypothesis (its statistics
    # show how often each is reached: pytest --hypothesis-show-statistics).
    if any(len(e["message"]) > 1 for e in full.launcher.compiler_errors):
        event("a launcher message over several lines")
    if any("line" in p for p in full.summary.problems):
        event("a problem naming a line number")
    if full.truncated_lines:
        event("a line longer than max_line")
    if b"\r\n" in data:
        event("CRLF")
    if data and not data.endswith(b"\n"):
        event("no final newline")
    for before, after in itertools.pairwise(data.split(b"\n")):
        literal = any(x in after for x in LITERALS)
        trigger = any(x in after for x in GREP_TRIGGERS)
        if b"op_compiler error" in before and literal and not trigger:
            event("a message closed by a literal that is no grep trigger")


@needs_grep
def test_a_failing_range_grep_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Any grep of a cut log failing makes the whole grep path unusable: scan_file then
    # answers with the full scan (C3: the answer never depends on the path).
    data = (b"[summary] stage=a inputs=1 succeeded=1 failed=0\n" + error_message(0, 2)) * 50
    log = tmp_path / "run.log"
    log.write_bytes(data)
    real = shutil.which("grep")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "grep"
    # The grep that reads a pipe (a range before the last) fails; the others work.
    fake.write_text(f'#!/bin/sh\nif [ -p /dev/stdin ]; then exit 2; fi\nexec {real} "$@"\n')
    fake.chmod(0o755)
    wc = shutil.which("wc")
    assert wc is not None
    (bin_dir / "wc").symlink_to(wc)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert logscan_fast.scan_file_fast(log, parts=2) is None
    assert logscan_fast.scan_file_fast(log, parts=1) == full_scan(data)
