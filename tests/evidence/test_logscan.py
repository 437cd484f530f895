"""Streaming log evidence (summary.py): C3 archiving, C2.5 contradictions, bounded memory."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import skgate.evidence.logscan_fast as logscan_fast
from skgate.evidence.logscan import MAX_KEPT_LINE, MAX_LIST, LogScanner
from skgate.evidence.logscan_fast import scan_file_fast
from skgate.evidence.logscan_file import NO_GREP_ENV, scan_file
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.logscan import LogScan
from skgate.model.records import Evidence, State
from skgate.model.request import validate_patterns
from skgate.verdict.classify import classify

ROOT = "/w/static_kernel_compile_outputs/ts20261101120000123456_pid4242_outputs"
UNINSTALL = (
    "/usr/local/Ascend/opp/static_kernel/ai_core/static_kernel_20261101120001_4242/uninstall.sh"
)
USER_PATTERN = r"^STAGE (?P<stage>\w+): (?P<succeeded>\d+)/(?P<inputs>\d+) ok, (?P<failed>\d+) bad$"

LOG = (
    "launcher: jobs=8 (NPU_STATIC_KERNEL_COMPILE_JOBS)\r\n"
    f"Rank 0: Starting static kernel compilation, the build directory is {ROOT}\r\n"
    "opc progress 10%\n"
    "[summary] stage=compile inputs=4 succeeded=4 failed=0\n"
    "[summary] stage=package inputs=1 succeeded=1 failed=0\r\n"
    "[summary] total time 12.5s\n"
    "generate run package static_kernel_20261101120001_4242.run success\n"
    "Warning: If the process exits abnormally, you must manually uninstall the static kernel "
    f"package by executing: {UNINSTALL}\n"
    "STAGE link: 3/3 ok, 0 bad\n"
    "a line that mentions [summary] in the middle is not a summary line\n"
    "inference finished: 10 steps\n"
).encode()


def scan(data: bytes, patterns: tuple[str, ...] = (), marker: str | None = None) -> LogScan:
    sc = LogScanner(patterns, marker)
    sc.feed(data)
    return sc.finish()


def test_extracts_every_kind_of_line() -> None:
    res = scan(LOG, (USER_PATTERN,), r"inference finished")
    # C3: [summary] lines verbatim (CR stripped), user-matched lines too, in log order.
    assert res.summary.lines == (
        "[summary] stage=compile inputs=4 succeeded=4 failed=0",
        "[summary] stage=package inputs=1 succeeded=1 failed=0",
        "[summary] total time 12.5s",
        "STAGE link: 3/3 ok, 0 bad",
    )
    assert [(s.name, s.inputs, s.succeeded, s.failed) for s in res.summary.stages] == [
        ("compile", 4, 4, 0),
        ("package", 1, 1, 0),
        ("link", 3, 3, 0),
    ]
    assert res.summary.problems == ()
    assert res.summary.all_succeeded
    assert res.completion_seen
    assert res.completion_lines == ("inference finished: 10 steps",)
    assert res.result_roots == (ROOT,)
    assert res.packages == ("static_kernel_20261101120001_4242.run",)
    assert res.uninstall_paths == (UNINSTALL,)
    assert res.compiler_errors == ()
    assert res.lines == 11
    assert res.bytes == len(LOG)
    assert res.summary_text().splitlines() == list(res.summary.lines)


def test_compiler_error_and_failed_stage() -> None:
    log = (
        b"[summary] stage=compile inputs=4 succeeded=3 failed=1\n"
        b"execute op_compiler error, msg: opc exited 1 for HcPre\n"
    )
    res = scan(log)
    assert res.compiler_errors == ("execute op_compiler error, msg: opc exited 1 for HcPre",)
    assert res.summary.consistent
    assert res.summary.total_failed == 1
    assert not res.completion_seen


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["[summary] stage=compile inputs=4 succeeded=3 failed=0"], "!= inputs 4"),
        (
            [
                "[summary] stage=compile inputs=4 succeeded=4 failed=0",
                "[summary] stage=compile inputs=4 succeeded=3 failed=1",
            ],
            "reported twice with different numbers",
        ),
        (["[summary] stage=compile inputs=-1 succeeded=-1 failed=0"], "negative count"),
        (["[summary] stage=compile inputs=4 succeeded=four failed=0"], "not integers"),
        (["[summary] stage=compile inputs=4"], "not integers"),
    ],
)
def test_contradictory_summary_makes_unknown(lines: list[str], problem: str) -> None:
    res = scan(("\n".join(lines) + "\n").encode())
    assert any(problem in p for p in res.summary.problems), res.summary.problems
    # The classifier must then say unknown (C2.5), even with a natural exit 0 or 1.
    for status in (0, 1):
        verdict = classify(
            Evidence(
                launched=True,
                ownership_recorded=True,
                leader_ended=True,
                leader_exit_status=status,
                tree_ended=True,
                runner_finished=True,
                summary=res.summary,
            )
        )
        assert verdict.state is State.UNKNOWN


def test_same_stage_repeated_with_same_numbers_is_fine() -> None:
    line = b"[summary] stage=compile inputs=2 succeeded=2 failed=0\n"
    res = scan(line * 3)
    assert len(res.summary.stages) == 1
    assert len(res.summary.lines) == 3
    assert res.summary.consistent


def test_invalid_utf8_is_kept_with_backslash_escapes() -> None:
    res = scan(b"[summary] stage=c\xff inputs=1 succeeded=1 failed=0\r\n")
    assert res.summary.lines == ("[summary] stage=c\\xff inputs=1 succeeded=1 failed=0",)
    assert res.summary.stages[0].name == "c\\xff"


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(LOG)), max_size=12))
def test_any_chunking_gives_the_same_result(cuts: list[int]) -> None:
    whole = scan(LOG, (USER_PATTERN,), r"inference finished")
    sc = LogScanner((USER_PATTERN,), r"inference finished")
    prev = 0
    for cut in [*sorted(cuts), len(LOG)]:
        sc.feed(LOG[prev:cut])
        prev = cut
    assert sc.finish() == whole


def test_long_line_is_truncated_not_loaded_whole() -> None:
    # A 3 MB line fed in small pieces: the scanner keeps only max_line bytes of it.
    sc = LogScanner(max_line=1024)
    sc.feed(b"[summary] stage=x inputs=1 succeeded=1 failed=0 ")
    for _ in range(3 * 1024):
        sc.feed(b"y" * 1024)
        assert len(sc._carry) <= 1024  # bounded memory while the line grows
    sc.feed(b"\nSTARTTAIL\n" + b"z" * 5000 + b"\nend\n")
    res = sc.finish()
    assert res.truncated_lines == 2
    assert res.lines == 4
    (kept,) = res.summary.lines
    assert len(kept) == 1024
    # A summary line cut short is not trustworthy evidence (C2.5).
    assert any("cut short" in p for p in res.summary.problems)


def test_long_lines_inside_one_block_are_counted() -> None:
    data = b"a\n" + b"b" * 3000 + b"\n" + b"c" * 100 + b"\n" + b"d" * 2000 + b"\n"
    sc = LogScanner(max_line=1024)
    sc.feed(data)
    res = sc.finish()
    assert res.truncated_lines == 2
    assert res.lines == 4


def test_hit_beyond_kept_part_of_long_line_is_ignored() -> None:
    data = b"x" * 2000 + b" generate run package p.run success\n"
    res = scan_bytes_maxline(data, 1024)
    assert res.packages == ()
    assert res.truncated_lines == 1


def scan_bytes_maxline(data: bytes, max_line: int) -> LogScan:
    sc = LogScanner(max_line=max_line)
    sc.feed(data)
    return sc.finish()


def test_partial_last_line_is_flushed_and_finish_is_idempotent() -> None:
    sc = LogScanner()
    sc.feed(b"hello\n[summary] stage=a inputs=1 succeeded=1 failed=0")
    first = sc.finish()
    assert first.lines == 2
    assert first.summary.stages[0].name == "a"
    assert sc.finish() is first
    with pytest.raises(RuntimeError):
        sc.feed(b"more")


def test_lists_are_capped_and_counted() -> None:
    n = MAX_LIST + 7
    data = b"".join(b"execute op_compiler error, msg: e%d\n" % i for i in range(n))
    res = scan(data)
    assert len(res.compiler_errors) == MAX_LIST
    assert res.omitted["compiler_errors"] == 7


def test_uninstall_paths_deduplicated_and_quoted_forms() -> None:
    data = (
        f"run: '{UNINSTALL}'\n{UNINSTALL}\nbash {UNINSTALL}; echo\n"
        "see ai_core/uninstall.sh.bak and uninstall.sh alone\n"
    ).encode()
    res = scan(data)
    assert res.uninstall_paths == (UNINSTALL,)


@pytest.mark.parametrize(
    ("patterns", "marker", "needle"),
    [
        (["("], None, "not a valid regular expression"),
        ([r"(?P<stage>\w+) (?P<inputs>\d+)"], None, "(?P<succeeded>...)"),
        ([], "[", "--completion-marker"),
        ([], "", "empty"),
    ],
)
def test_validate_patterns_refuses_bad_input(
    patterns: list[str], marker: str | None, needle: str
) -> None:
    with pytest.raises(UsageError) as info:
        validate_patterns(patterns, marker)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_validate_patterns_accepts_good_input() -> None:
    validate_patterns([USER_PATTERN], r"done")


def test_round_trip_and_bad_files(tmp_path: Path) -> None:
    res = scan(LOG, (USER_PATTERN,), r"inference")
    data = json.loads(json.dumps(res.to_dict()))
    assert data["schema"] == "skgate.logscan/1"
    assert LogScan.from_dict(data) == res
    with pytest.raises(EvidenceError, match="unsupported schema version"):
        LogScan.from_dict({**data, "schema": "skgate.logscan/9"})
    with pytest.raises(EvidenceError, match="missing field 'packages'"):
        LogScan.from_dict({k: v for k, v in data.items() if k != "packages"})
    with pytest.raises(EvidenceError, match="wrong type"):
        LogScan.from_dict({**data, "lines": "many"})


def test_scan_file_and_growing_log(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    with pytest.raises(EvidenceError, match="run log missing"):
        scan_file(log)
    log.write_bytes(LOG[:200])
    partial = scan_file(log, chunk=64)
    log.write_bytes(LOG)
    full = scan_file(log, (USER_PATTERN,), "inference finished", chunk=64)
    assert full == scan(LOG, (USER_PATTERN,), "inference finished")
    assert partial.lines < full.lines


def test_scanner_follows_a_log_being_written(tmp_path: Path) -> None:
    # A writer thread appends while the scanner tails the file; the result equals a
    # one-shot scan of the final file (the runner's live use).
    log = tmp_path / "run.log"
    log.write_bytes(b"")
    done = threading.Event()

    def writer() -> None:
        with log.open("ab") as fh:
            for i in range(0, len(LOG), 37):
                fh.write(LOG[i : i + 37])
                fh.flush()
        done.set()

    t = threading.Thread(target=writer)
    sc = LogScanner((USER_PATTERN,))
    t.start()
    with log.open("rb") as fh:
        while True:
            finished = done.is_set()
            data = fh.read(50)
            if data:
                sc.feed(data)
            elif finished:
                break
    t.join()
    assert sc.finish() == scan(LOG, (USER_PATTERN,))


def test_user_pattern_is_line_based() -> None:
    # \s+ could match across a newline in a block search; per-line semantics must win.
    pat = r"S (?P<stage>\w+)\s+(?P<inputs>\d+) (?P<succeeded>\d+) (?P<failed>\d+)"
    res = scan(b"S a\n1 1 0\nS b 2 2 0\n", (pat,))
    assert [s.name for s in res.summary.stages] == ["b"]


# -- the grep path of scan_file (finished logs) ---------------------------------------------

needs_grep = pytest.mark.skipif(
    shutil.which("grep") is None or shutil.which("wc") is None, reason="needs grep and wc"
)

ROOT_LINE = f"Starting static kernel compilation, the build directory is {ROOT}".encode()


def corpus() -> dict[str, bytes]:
    big = 3 << 20  # a multi-MB line, far over the default 64 KiB kept per line
    return {
        "empty": b"",
        "example_crlf": LOG,
        "no_trailing_newline": b"a\n[summary] stage=a inputs=1 succeeded=1 failed=0",
        "only_newlines": b"\n\n\r\n",
        "invalid_utf8_and_nul": (
            b"\xff\xfe[summary] not at start\n"
            b"  \t[summary] stage=n\x00ul inputs=2 succeeded=2 failed=0\r\n"
            b"\x00\x00 generate run package p\xff.run success\n"
            b"execute op_compiler error, msg: \xc3\x28 bad\r\n"
            b"run \x00/a/b/uninstall.sh\n"
        ),
        "summary_leading_space": b"   [summary] stage=x inputs=1 succeeded=1 failed=0\n"
        b"\x0b\x0c[summary] raw\nx [summary] stage=y inputs=1 succeeded=1 failed=0\n",
        "contradictions": (
            b"[summary] stage=c inputs=4 succeeded=3 failed=0\n"
            b"[summary] stage=c inputs=4 succeeded=4 failed=0\n"
            b"[summary] stage=d inputs=-1 succeeded=-1 failed=0\n"
            b"[summary] stage=e inputs=4 succeeded=four failed=0\n"
            b"[summary] inputs=1 succeeded=1 failed=0\n"
        ),
        "multi_mb_lines": (
            b"[summary] stage=big inputs=1 succeeded=1 failed=0 "
            + b"y" * big
            + b" generate run package after.run success\n"
            + ROOT_LINE
            + b" "
            + b"z" * big
            + b"uninstall.sh\n"
            + b"q" * (65536 - 10)
            + ROOT_LINE  # the literal straddles the kept prefix: not a hit
            + b"\n"
            + b"w" * big  # long last line without a newline
        ),
    }


@needs_grep
@pytest.mark.parametrize("name", sorted(corpus()))
def test_grep_path_equals_python_path(tmp_path: Path, name: str) -> None:
    data = corpus()[name]
    log = tmp_path / "run.log"
    log.write_bytes(data)
    fast = scan_file_fast(log)
    python = scan_file(log, use_grep=False)
    # The grep path really ran, also on logs with launcher error messages whose lines go
    # on over lines grep does not list (read by offset, issue 29).
    assert fast is not None
    assert fast == python
    # Both equal the live scanner fed in odd pieces (the runner's path).
    sc = LogScanner()
    for i in range(0, len(data), 777_777):
        sc.feed(data[i : i + 777_777])
    assert sc.finish() == python


def test_corpus_results_are_what_the_contract_asks(tmp_path: Path) -> None:
    c = corpus()
    res = scan(c["multi_mb_lines"])
    assert res.truncated_lines == 4
    assert res.lines == 4
    # Hits beyond (or across) the kept 64 KiB of a line are ignored; the root at the start
    # of a long line is kept, cut to the stored length.
    (root,) = res.result_roots
    assert root.startswith(f"{ROOT} zzz")
    assert len(root) == MAX_KEPT_LINE
    assert res.packages == ()
    assert res.uninstall_paths == ()
    assert any("cut short" in p for p in res.summary.problems)
    res = scan(c["summary_leading_space"])
    assert [s.name for s in res.summary.stages] == ["x"]
    assert len(res.summary.lines) == 2
    res = scan(c["no_trailing_newline"])
    assert res.lines == 2
    assert res.summary.stages[0].name == "a"
    assert len(scan(c["contradictions"]).summary.problems) == 5


def test_literal_across_the_kept_prefix_is_ignored_in_any_chunking() -> None:
    # The literal starts inside the kept 256 bytes but ends after them: whether the line
    # arrives whole or in pieces, it is no hit (and does not break the root parser).
    data = b"q" * 250 + ROOT_LINE + b"\nok\n"
    whole = scan_bytes_maxline(data, 256)
    assert whole.result_roots == ()
    sc = LogScanner(max_line=256)
    sc.feed(data[:100])
    sc.feed(data[100:])
    assert sc.finish() == whole


FRAGMENTS = [
    b"[summary]",
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\xff",
    b"\xc3\xa9",
    b"stage=a ",
    b"stage=b ",
    b"inputs=2 ",
    b"succeeded=1 ",
    b"failed=1",
    b"failed=x",
    ROOT_LINE,
    b"generate run package p.run success",
    b"execute op_compiler error, msg: e",
    b"/opt/x/uninstall.sh",
    b"x" * 100,
    b"y" * 300,
    # The launcher's lines (launcher_lines): warnings whose error message goes on over
    # lines that hold no literal, ended by the source line, a blank or a new warning.
    b"/t/static_kernel.py:241: UserWarning: ",
    b"Rank 1: ",
    b"execute op_compiler error, msg: boom\n",
    b"  detail of the error\n",
    b"  warnings.warn(msg)\n",
    b"\n\n",
    b"Starting static kernel compilation, the build directory is /w/o",
    b"starting static kernel compilation for multi card, the build directory is /w/m",
    b"static kernel compilation",
    b"Static kernel cache hit: /c/k",
    b"No matching cache found for key : k1",
    b"no run files were found, the static compilation might have failed",
    b"Verifying archive integrity...",
    b"Uncompressing STATIC KERNEL RUN PACKAGE",
    b"you must manually uninstall the static kernel package by executing: /s/uninstall.sh",
]


@needs_grep
@settings(max_examples=80, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=60))
def test_grep_path_equals_python_path_property(parts: list[bytes]) -> None:
    data = b"".join(parts)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.log"
        log.write_bytes(data)
        fast = scan_file_fast(log, max_line=256)
        python = scan_file(log, use_grep=False, max_line=256)
        assert fast == python
        if any(len(e["message"]) > 1 for e in python.launcher.compiler_errors):
            event("a launcher message over several lines")


def _python_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, max_line: int = 0) -> LogScan | None:
        raise AssertionError("the grep path must not run here")

    monkeypatch.setattr(logscan_fast, "scan_file_fast", refuse)


def test_no_grep_env_and_user_regexes_keep_the_python_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(LOG)
    expected = scan(LOG, (USER_PATTERN,), "inference finished")
    plain = scan(LOG)
    _python_only(monkeypatch)
    # User regexes are Python regexes: never translated for grep.
    assert scan_file(log, (USER_PATTERN,), "inference finished", use_grep=True) == expected
    monkeypatch.setenv(NO_GREP_ENV, "1")
    assert scan_file(log, use_grep=True) == plain
    monkeypatch.delenv(NO_GREP_ENV)
    assert scan_file(log) == plain  # below GREP_MIN_BYTES by default


def _fake_tools(tmp_path: Path, grep_script: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    grep = bin_dir / "grep"
    grep.write_text("#!/bin/sh\n" + grep_script)
    grep.chmod(0o755)
    wc = shutil.which("wc")
    assert wc is not None
    (bin_dir / "wc").symlink_to(wc)
    return str(bin_dir)


@needs_grep
@pytest.mark.parametrize(
    "grep_script",
    [
        "exit 2\n",  # grep fails
        "echo 'garbage without a line number'\nexit 0\n",  # output it cannot parse
        # The log grows while grep reads it: not a finished log.
        f'echo more >> "$SKGATE_TEST_LOG"\nexec {shutil.which("grep")} "$@"\n',
    ],
)
def test_failing_grep_falls_back_to_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grep_script: str
) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(LOG)
    monkeypatch.setenv("SKGATE_TEST_LOG", str(log))
    monkeypatch.setenv("PATH", _fake_tools(tmp_path, grep_script))
    assert scan_file_fast(log) is None
    assert scan_file(log, use_grep=True) == scan(log.read_bytes())


def test_missing_grep_falls_back_to_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(LOG)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert scan_file_fast(log) is None
    assert scan_file(log, use_grep=True) == scan(LOG)
    with pytest.raises(EvidenceError, match="run log missing"):
        scan_file(tmp_path / "absent.log", use_grep=True)


@needs_grep
@pytest.mark.parametrize("length", [255, 256, 257, 258, 600])
@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n"])
def test_grep_path_long_line_boundaries(tmp_path: Path, length: int, ending: bytes) -> None:
    # Lines just under, at and over max_line, in the middle and at the end of the log.
    line = b"[summary] stage=s inputs=1 succeeded=1 failed=0 "
    line += b"p" * (length - len(line))
    data = b"ok\n" + line + b"\n" + b"q" * length + b"\n" + line + ending
    log = tmp_path / "run.log"
    log.write_bytes(data)
    fast = scan_file_fast(log, max_line=256)
    assert fast is not None
    assert fast == scan_file(log, use_grep=False, max_line=256)
    last = length + len(ending.rstrip(b"\n"))  # a CR belongs to the line
    assert fast.truncated_lines == 2 * (length > 256) + (last > 256)


def test_open_launcher_message_hands_each_line_once() -> None:
    # A hit line inside an open error message (here a package line) must not hand the
    # lines after it to the message a second time when the block ends with the message
    # still open (the live feed's case: a compile's output arrives in small pieces).
    data = b"execute op_compiler error, msg: e\ngenerate run package p.run success\n  detail\n"
    sc = LogScanner()
    sc.feed(data)
    res = sc.finish()
    (err,) = res.launcher.compiler_errors
    assert err["message"] == ["e", "generate run package p.run success", "  detail"]
    assert res.packages == ("p.run",)
