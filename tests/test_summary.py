"""Streaming log evidence (summary.py): C3 archiving, C2.5 contradictions, bounded memory."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgate.classify import classify
from skgate.errors import EvidenceError, UsageError
from skgate.model import Evidence, State
from skgate.summary import (
    MAX_LIST,
    LogScan,
    LogScanner,
    scan_file,
    validate_patterns,
)

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
