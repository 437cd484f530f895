"""The fast paths of the log scan give the pure-Python scan's answer, and are taken (C3, issue 29).

``scan_file`` on a finished log finds candidate lines with needles searched in windows of
the log (the anchor path, ``logscan_anchor``) or with ``grep`` (``logscan_fast``), and
reads the lines of an open launcher error message by offset; ``LogScanner.feed`` reads
every byte. These tests compare them on logs built to reach the states where they could
part: multi-line launcher messages, lines that close a message without being grep
triggers, long lines, candidates at window and range edges, CRLF, a missing final newline.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

import skgate.evidence.logscan_anchor as logscan_anchor
import skgate.evidence.logscan_fast as logscan_fast
from skgate.evidence.logscan import GREP_TRIGGERS, LITERALS, LogScanner
from skgate.evidence.logscan_file import GREP_MIN_BYTES, scan_file
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


def watch_paths(m: pytest.MonkeyPatch, taken: list[str]) -> None:
    """Record which fast path answers ``scan_file``, and forbid the whole Python pass."""
    for module, name, label in (
        (logscan_anchor, "scan_file_anchored", "anchor"),
        (logscan_fast, "scan_file_fast", "grep"),
    ):
        plain = getattr(module, name)

        def watched(*args: Any, _plain: Any = plain, _label: str = label, **kw: Any) -> Any:
            result = _plain(*args, **kw)
            if result is not None:
                taken.append(_label)
            return result

        m.setattr(module, name, watched)

    def no_feed(self: LogScanner, data: bytes | bytearray | memoryview) -> None:
        raise AssertionError("scan_file fell back to the whole Python pass")

    m.setattr(LogScanner, "feed", no_feed)


def both_paths(
    data: bytes, monkeypatch: pytest.MonkeyPatch, max_line: int = 64 * 1024
) -> tuple[LogScan, LogScan]:
    """(scan_file's answer with a fast path forced and ``feed`` forbidden, full scan)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.log"
        log.write_bytes(data)
        taken: list[str] = []
        with monkeypatch.context() as m:
            watch_paths(m, taken)
            fast = scan_file(log, use_grep=True, max_line=max_line)
        assert len(taken) == 1  # one fast path answered, nothing else did
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
    b"s" * 1100,  # longer than the anchor path's window in this test (4 * 257 bytes)
]
#: Covers of the triggers the anchor path is also run with (besides its own plan): one
#: rare byte each where there is one, the literals themselves, one byte each.
COVERS = [
    (b"u", b"h", b"V", b"tatic kernel c", b"install failed"),
    GREP_TRIGGERS,
    tuple(bytes([t[-1]]) for t in GREP_TRIGGERS),
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
@given(
    lines=LOG_LINES,
    endings=st.lists(st.sampled_from([b"\n", b"\r\n"])),
    last=st.booleans(),
    cover=st.sampled_from([None, *COVERS]),
)
# The log's last line long and unterminated, in the last window or longer than a window.
@example(lines=[b"u", b"r" * 300], endings=[], last=False, cover=None)
@example(lines=[b"u", b"s" * 1100 + b"install failed"], endings=[], last=False, cover=None)
def test_random_logs_give_the_same_answer_on_every_path(
    lines: list[bytes], endings: list[bytes], last: bool, cover: tuple[bytes, ...] | None
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
        # The anchor path with its own plan for this log or a given cover, read in windows
        # of 4 * (max_line + 1) bytes (the least it takes), so candidates fall at edges; in
        # one range, or two side by side, the second one's search paused after each
        # candidate (its cap) and resumed once the first range is handed.
        for parts, cap in ((1, None), (2, None), (2, 1)):
            with pytest.MonkeyPatch.context() as monkeypatch:
                monkeypatch.setattr(logscan_anchor, "WINDOW", 1)
                # Lines of an open message read 64 bytes first (then the 1 KiB window).
                monkeypatch.setattr(logscan_fast, "LINES_WINDOW", 64)
                if cap is not None:
                    monkeypatch.setattr(logscan_fast, "DRAIN_CAP", cap)
                anchored = logscan_anchor.scan_file_anchored(
                    log, 256, force=True, needles=cover, parts=parts
                )
            assert anchored == full
    needles = cover or logscan_anchor.plan(data).needles
    if not any(n in data for n in needles):
        event("no needle in the log")
    elif len(data) > 4 * 257:
        event("more than one window")
        if any(any(n in data[k - 300 : k + 300] for n in needles) for k in (1028, 2056)):
            event("a needle within 300 bytes of a window edge")
    if any(len(x) > 4 * 257 for x in data.split(b"\n")):
        event("a line longer than the window")
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


def noise_log(path: Path, size: int, noise: bytes, hits: bytes) -> bytes:
    """``size`` bytes of ``noise`` lines with ``hits`` in the middle and at the end."""
    body = noise * (size // 2 // len(noise))
    data = body + hits + body + hits
    path.write_bytes(data)
    return data


def default_scan(log: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], LogScan]:
    """(the fast paths that answered, the answer) of scan_file left to choose its path."""
    taken: list[str] = []
    with monkeypatch.context() as m:
        watch_paths(m, taken)
        result = scan_file(log)
    return taken, result


HITS = (
    b"[summary] stage=compile inputs=3 succeeded=3 failed=0\n"
    + error_message(2, 2)
    + b"Rank 0: Starting static kernel compilation, the build directory is /w/out\n"
    + b"generate run package static_kernel_1.run success\n"
    + b"static_kernel_1.run install failed, msg: no space\n"
)


@needs_grep
def test_a_log_without_the_anchor_bytes_takes_the_anchor_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 29: compile noise that holds none of the bytes the plan anchors on (no `u`,
    # `h`, `V`...) is skipped at memchr speed; scan_file (default: no path forced) takes
    # the anchor path, never grep nor the whole Python pass, with the full scan's answer.
    log = tmp_path / "run.log"
    data = noise_log(log, GREP_MIN_BYTES + (1 << 20), b"[INFO] 06:00 opc[42] compiling 17%\n", HITS)
    needles = logscan_anchor.plan(logscan_anchor.sample_of_path(log)).needles
    assert not any(n in data.replace(HITS, b"") for n in needles)
    taken, result = default_scan(log, monkeypatch)
    assert taken == ["anchor"]
    assert result == full_scan(data)
    assert result.packages == ("static_kernel_1.run",)
    assert len(result.launcher.compiler_errors) == 2  # HITS is in the log twice


@needs_grep
def test_a_log_dense_in_candidates_takes_the_grep_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # When every needle the plan could choose occurs on most lines (here each noise line
    # holds every trigger but one), the anchor path's estimate is above the grep path's
    # (measured: on the bench's log full of launcher messages grep's is the faster) and
    # scan_file takes grep.
    log = tmp_path / "run.log"
    noise = b" ".join(GREP_TRIGGERS[1:])
    data = noise_log(log, GREP_MIN_BYTES + (1 << 20), noise.replace(b"\n", b"") + b"\n", HITS)
    assert not logscan_anchor.plan(logscan_anchor.sample_of_path(log)).cheaper
    taken, result = default_scan(log, monkeypatch)
    assert taken == ["grep"]
    assert result == full_scan(data)


@settings(max_examples=100, deadline=None)
@given(sample=st.lists(st.sampled_from([*PIECES, b"\n", b"u", b"install"])).map(b"".join))
def test_every_plan_covers_every_trigger(sample: bytes) -> None:
    chosen = logscan_anchor.plan(sample)
    for trigger in GREP_TRIGGERS:
        assert any(needle in trigger for needle in chosen.needles), trigger
    # No needle is redundant: each covers a trigger no other needle covers.
    for needle in chosen.needles:
        rest = [n for n in chosen.needles if n != needle]
        assert not all(any(n in t for n in rest) for t in GREP_TRIGGERS)


def test_needles_that_miss_a_trigger_are_refused(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(HITS)
    with pytest.raises(ValueError, match="cover every trigger"):
        logscan_anchor.scan_file_anchored(log, needles=(b"u",))


@needs_grep
def test_without_wc_the_anchor_path_steps_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(HITS)
    monkeypatch.setenv("PATH", str(tmp_path))  # no wc (nor grep) on it
    assert logscan_anchor.scan_file_anchored(log, force=True) is None
    assert scan_file(log, use_grep=True) == full_scan(HITS)  # the Python scan answers
