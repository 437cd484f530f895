"""The foreign-compiler scan (C4) reads raw bytes first and parses only the processes that
may match (issue 29): on any process table it finds exactly what the rule finds when it
parses every process (``stat`` and ``cmdline`` of each, then :func:`is_compiler`), the
way the scan did before. Fake tables in a temporary directory give it odd shapes: names
with parentheses, spaces and bytes that are not UTF-8, zombies, kernel threads (empty
argv), argv rewritten without NULs, argv longer than one read, interpreters running a
script, unreadable or malformed files, excluded pids and names the byte test cannot
serve (a backslash, an undecodable environment value)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as s

from skgate.proc import observe

#: After ``python3\0`` its NUL is the last byte of the second 4096-byte read.
LONG_FLAG = b"-" + b"x" * 8182
WORDS = [
    b"opc",
    b"op_compiler",
    b"/usr/local/Ascend/bin/opc",
    b"./op_compiler",
    b"python3",
    b"/usr/bin/python3.11",
    b"/usr/bin/env",
    b"sh",
    b"-c",
    b"-u",
    b"a\\b",
    b"caf\xc3\xa9",
    b"caf\xe9",
    b"\xff",
    b"x" * 5000,
    LONG_FLAG,
    b"/x/opc.py",
    b"opcx",
    b"",
]
NAMES = [b"opc", b"op_compiler", b"python3", b"op(c) x", b"a\\b", b"caf\xc3\xa9", b"\xff", b"sh"]
WANTED = ["opc", "op_compiler", "python3", "sh", "a\\b", "café", "caf\udce9", "op(c) x", "x"]


def stat_line(pid: int, name: bytes, state: bytes, ppid: int) -> bytes:
    # Field 3 (state) on: ppid, pgid, sid, then zeros up to field 20 (threads: 1) and
    # field 22 (start time).
    rest = [ppid, pid, pid] + [0] * 14 + [1, 0, 4242 + pid] + [0] * 30
    return b"%d (%s) %s %s\n" % (pid, name, state, " ".join(map(str, rest)).encode())


process = s.fixed_dictionaries(
    {
        "name": s.sampled_from(NAMES),
        "state": s.sampled_from([b"S", b"R", b"Z", b"X", b"D"]),
        "stat": s.sampled_from(["ok", "ok", "ok", "malformed", "missing"]),
        "argv": s.none() | s.lists(s.sampled_from(WORDS), max_size=5),
        "nul_end": s.booleans(),
        "rewritten": s.booleans(),
    }
)


def make_table(root: Path, procs: Sequence[dict[str, object]]) -> list[int]:
    """Write ``procs`` as pids 100, 101, ... under ``root``; return the pids."""
    (root / "self").mkdir()  # not a pid: skipped as the real /proc's is
    pids = []
    for i, p in enumerate(procs):
        pid = 100 + i
        d = root / str(pid)
        d.mkdir()
        if p["stat"] == "ok":
            (d / "stat").write_bytes(stat_line(pid, p["name"], p["state"], 1))  # type: ignore[arg-type]
        elif p["stat"] == "malformed":
            (d / "stat").write_bytes(b"%d %s S 1 2 3" % (pid, p["name"]))
        argv = p["argv"]
        if argv is not None:
            sep = b" " if p["rewritten"] else b"\0"  # setproctitle-style: one word
            raw = sep.join(argv)  # type: ignore[arg-type]
            if argv and p["nul_end"]:
                raw += b"\0"
            (d / "cmdline").write_bytes(raw)
        pids.append(pid)
    return pids


def rule_on_every_process(
    root: str, names: Sequence[str], exclude: set[int]
) -> list[tuple[observe.ProcStat, tuple[str, ...]]]:
    """The scan as it was: every process's stat parsed, then its argv, then the rule."""
    table = {}
    for entry in os.listdir(root):
        if entry.isdigit():
            raw = observe._read_small(f"{root}/{entry}/stat")
            st = observe.parse_stat(raw) if raw is not None else None
            if st is not None:
                table[int(entry)] = st
    found = []
    for st in table.values():
        if st.pid in exclude or st.zombie:
            continue
        raw = observe._read_small(f"{root}/{st.pid}/cmdline")
        argv = () if raw is None else observe.parse_cmdline(raw)
        if observe.is_compiler(st.name, argv, names):
            found.append((st, argv))
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    procs=s.lists(process, max_size=8),
    names=s.lists(s.sampled_from(WANTED), min_size=1, max_size=3),
    excluded=s.sets(s.integers(100, 108), max_size=2),
)
def test_the_byte_scan_finds_what_the_rule_finds_on_every_process(
    procs: list[dict[str, object]], names: list[str], excluded: set[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        make_table(Path(tmp), procs)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(observe, "_PROC_ROOT", tmp)
            got = observe.compiler_processes(names, exclude=excluded)
        assert got == rule_on_every_process(tmp, names, excluded)


@pytest.mark.parametrize(
    ("name", "argv", "found"),
    [
        (b"opc", None, True),  # a kernel thread or unreadable argv: the name decides
        (b"bash", [b"/bin/bash", b"-e", b"/opt/x/opc", b"a.json"], True),
        (b"python3", [b"python3", b"-u", b"x" * 5000, b"/x/op_compiler"], False),
        (b"python3", [b"/usr/bin/python3", b"x" * 5000 + b"/op_compiler", b"-p"], True),
        (b"python3", [b"python3", LONG_FLAG, b"/x/opc"], True),  # its third word: a 3rd read
        (b"caf\xe9", [b"caf\xe9"], False),  # not UTF-8: never the name "café"
        (b"x", [b"/usr/local/bin/op_compiler"], True),
    ],
)
def test_table_cases(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: bytes,
    argv: list[bytes] | None,
    found: bool,
) -> None:
    make_table(
        tmp_path,
        [
            {
                "name": name,
                "state": b"S",
                "stat": "ok",
                "argv": argv,
                "nul_end": True,
                "rewritten": False,
            }
        ],
    )
    monkeypatch.setattr(observe, "_PROC_ROOT", str(tmp_path))
    got = observe.compiler_processes(("opc", "op_compiler", "café"))
    assert [st.pid for st, _ in got] == ([100] if found else [])
    assert got == rule_on_every_process(str(tmp_path), ("opc", "op_compiler", "café"), set())


def test_the_names_the_byte_test_cannot_serve_are_judged_by_the_rule_alone() -> None:
    assert observe._needles(("opc", "op_compiler")) == frozenset({b"opc", b"op_compiler"})
    assert observe._needles(("opc", "a\\b")) is None
    assert observe._needles(("opc", "caf\udce9")) is None
