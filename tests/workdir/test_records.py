"""uninstall --stale-records: only records of gone or recycled processes are acted on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skgate.proc import observe
from skgate.workdir.uninstall import stale


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(workdir, ascend_home, marks, canary) with packages P1..P4 produced and installed."""
    work = tmp_path / "work"
    home = tmp_path / "Ascend"
    marks = tmp_path / "marks"
    marks.mkdir()
    canary = tmp_path / "CANARY"
    out = work / "static_kernel_compile_outputs" / "ts1_pid1_outputs"
    out.mkdir(parents=True)
    for pkg in ("P1", "P2", "P3", "P4"):
        (out / f"{pkg}.run").write_bytes(b"")
        script = home / "opp/static_kernel/ai_core" / pkg / "uninstall.sh"
        script.parent.mkdir(parents=True)
        script.write_text(f"#!/bin/sh\ntouch '{marks}/{pkg}'\n", encoding="utf-8")
    full = home / "opp/static_kernel/ai_core/uninstall.sh"
    full.write_text(f"#!/bin/sh\ntouch '{canary}'\n", encoding="utf-8")
    return work, home, marks, canary


def rec(home: Path, pkg: str, pid: object, start: object) -> dict[str, object]:
    return {
        "uninstall_path": f"{home}/opp/static_kernel/ai_core/{pkg}/uninstall.sh",
        "filename": f"{pkg}.run",
        "pid": pid,
        "process_start_time": start,
        "record_create_time": "2026-01-01T00:00:00",
    }


def gone_pid() -> tuple[int, int]:
    """A pid whose process has ended (and been reaped), with its start ticks."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    st = observe.read_stat(proc.pid)
    assert st is not None
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)
    return proc.pid, st.start_ticks


def test_gone_recycled_kept(setup: tuple[Path, Path, Path, Path]) -> None:
    work, home, marks, canary = setup
    me = observe.self_stat()
    dead_pid, dead_ticks = gone_pid()
    boot = stale.boot_time()
    assert boot is not None
    records = {
        "P1": rec(home, "P1", dead_pid, dead_ticks),  # gone
        "P2": rec(home, "P2", me.pid, me.start_ticks),  # alive, same start: keep
        "P3": rec(home, "P3", me.pid, 1),  # pid recycled: start differs
        "P4": rec(home, "P4", me.pid, boot + me.start_ticks / observe.clock_ticks()),  # epoch
    }
    (work / stale.RECORDS).write_text(json.dumps(records), encoding="utf-8")
    res = stale.uninstall_stale_records(work, str(home))
    actions = {c.source: c.action for c in res.candidates}
    assert actions == {
        "record 'P1'": "run",
        "record 'P2'": "kept",
        "record 'P3'": "run",
        "record 'P4'": "kept",
    }
    assert sorted(os.listdir(marks)) == ["P1", "P3"]
    assert not canary.exists()
    assert res.ok
    # The records file is evidence of the scene: left as it was.
    assert json.loads((work / stale.RECORDS).read_text(encoding="utf-8")) == records


def test_hostile_records_are_refused(setup: tuple[Path, Path, Path, Path]) -> None:
    work, home, marks, canary = setup
    dead_pid, dead_ticks = gone_pid()
    records = {
        "full": {
            **rec(home, "P1", dead_pid, dead_ticks),
            "uninstall_path": f"{home}/opp/static_kernel/ai_core/uninstall.sh",
        },
        "P2": rec(home, "P2", "12", 1),
        "P3": "not an object",
        "P4": {
            **rec(home, "P4", dead_pid, dead_ticks),
            "uninstall_path": f"{home}/opp/static_kernel/ai_core/P3/../P4/uninstall.sh",
        },
        "P1": {
            **rec(home, "P1", dead_pid, dead_ticks),
            "uninstall_path": f"{home}/opp/static_kernel/ai_core/P2/uninstall.sh",
        },
    }
    (work / stale.RECORDS).write_text(json.dumps(records), encoding="utf-8")
    res = stale.uninstall_stale_records(work, str(home))
    assert all(c.action == "refused" for c in res.candidates)
    reasons = " | ".join(c.reason for c in res.candidates)
    assert "full-uninstall script" in reasons
    assert "pid missing or invalid" in reasons
    assert "record is not an object" in reasons
    assert "'..'" in reasons
    assert "record key 'P1' names another package" in reasons
    assert not canary.exists()
    assert not os.listdir(marks)
    assert not res.ok


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"P1": {"uninstall_path": "/x", "pid"', "not valid JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b"[" * 100_000, "not valid JSON"),
        (b"\xff\xfe garbage", "not valid JSON"),
    ],
)
def test_truncated_or_hostile_file_never_crashes(
    setup: tuple[Path, Path, Path, Path], content: bytes, why: str
) -> None:
    work, home, marks, _ = setup
    (work / stale.RECORDS).write_bytes(content)
    res = stale.uninstall_stale_records(work, str(home))
    assert res.candidates == ()
    assert why in res.notes[0]
    assert not res.ok
    assert not os.listdir(marks)


def test_symlinked_records_file_is_refused(
    setup: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    work, home, _, _ = setup
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}", encoding="utf-8")
    os.symlink(elsewhere, work / stale.RECORDS)
    res = stale.uninstall_stale_records(work, str(home))
    assert "not a regular file" in res.notes[0]


def test_missing_records_file_is_nothing_to_do(setup: tuple[Path, Path, Path, Path]) -> None:
    work, home, _, _ = setup
    res = stale.uninstall_stale_records(work, str(home))
    assert res.candidates == ()
    assert res.ok


# -- the unit of process_start_time (issue 12: a real safety bug) -------------------------

#: Clock ticks since boot of a process started after ~143 days of uptime at 100 Hz: past
#: 10**9, where the old "small means ticks" rule read it as epoch seconds.
LONG_UPTIME_TICKS = 1_234_567_890


@pytest.fixture
def long_uptime(monkeypatch: pytest.MonkeyPatch) -> int:
    """This test process, seen as started LONG_UPTIME_TICKS after boot (a host up > 116 days)."""
    from skgate.model.frozen import replace as dc_replace

    me = observe.self_stat()
    real = observe.read_stat

    def read_stat(pid: int) -> observe.ProcStat | None:
        st = real(pid)
        return dc_replace(st, start_ticks=LONG_UPTIME_TICKS) if st and pid == me.pid else st

    monkeypatch.setattr(observe, "read_stat", read_stat)
    return me.pid


def test_torchair_ticks_past_1e9_of_a_live_owner_are_kept(
    setup: tuple[Path, Path, Path, Path], long_uptime: int
) -> None:
    """torchair writes ticks (int) beside an ISO record_create_time: compared as ticks,
    whatever their magnitude; a live owner's package is never uninstalled."""
    work, home, marks, _ = setup
    records = {
        "P1": rec(home, "P1", long_uptime, LONG_UPTIME_TICKS),  # alive, same ticks: keep
        "P2": rec(home, "P2", long_uptime, LONG_UPTIME_TICKS + 1),  # recycled pid
    }
    (work / stale.RECORDS).write_text(json.dumps(records), encoding="utf-8")
    res = stale.uninstall_stale_records(work, str(home))
    actions = {c.source: c.action for c in res.candidates}
    assert actions == {"record 'P1'": "kept", "record 'P2'": "run"}
    assert sorted(os.listdir(marks)) == ["P2"]


def test_unknown_boot_time_keeps_records_it_cannot_compare(
    setup: tuple[Path, Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/stat unreadable (no btime): epoch records of a live pid cannot be compared,
    so they are kept ("cannot tell" is never "stale")."""
    work, home, marks, _ = setup
    me = observe.self_stat()
    monkeypatch.setattr(stale, "boot_time", lambda: None)
    no_create = {
        k: v for k, v in rec(home, "P2", me.pid, 1_700_000_000).items() if k != "record_create_time"
    }
    records = {
        "P1": rec(home, "P1", me.pid, 1_700_000_000.5),  # epoch float
        "P2": no_create,  # int, no create time: ticks differ, epoch unknown
        "P3": rec(home, "P3", me.pid, "2026-01-01T00:00:00"),  # ISO
    }
    (work / stale.RECORDS).write_text(json.dumps(records), encoding="utf-8")
    res = stale.uninstall_stale_records(work, str(home))
    assert {c.action for c in res.candidates} == {"kept"}
    assert all("cannot be compared" in c.reason for c in res.candidates)
    assert not os.listdir(marks)


def test_boot_time_reads_btime_or_says_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = stale.boot_time()
    assert real is not None and real > 0
    import builtins

    opened = builtins.open

    def fake_open(path: object, *a: object, **kw: object) -> object:
        if path == "/proc/stat":
            raise PermissionError(13, "Permission denied", "/proc/stat")
        return opened(path, *a, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "open", fake_open)
    assert stale.boot_time() is None


def test_an_int_without_create_time_matches_as_ticks_or_as_epoch_seconds(
    setup: tuple[Path, Path, Path, Path],
) -> None:
    work, home, marks, _ = setup
    me = observe.self_stat()
    boot = stale.boot_time()
    assert boot is not None
    epoch = int(boot + me.start_ticks / observe.clock_ticks())

    def bare(pkg: str, start: object) -> dict[str, object]:
        return {k: v for k, v in rec(home, pkg, me.pid, start).items() if k != "record_create_time"}

    records = {"P1": bare("P1", me.start_ticks), "P2": bare("P2", epoch), "P3": bare("P3", 7)}
    (work / stale.RECORDS).write_text(json.dumps(records), encoding="utf-8")
    res = stale.uninstall_stale_records(work, str(home))
    actions = {c.source: c.action for c in res.candidates}
    assert actions == {"record 'P1'": "kept", "record 'P2'": "kept", "record 'P3'": "run"}
    assert sorted(os.listdir(marks)) == ["P3"]


@pytest.mark.parametrize("start", ["nan", "1e400", "-inf", float("nan"), float("inf")])
def test_a_start_time_that_is_no_time_keeps_a_live_owners_record(
    setup: tuple[Path, Path, Path, Path], start: object
) -> None:
    """``"process_start_time": "nan"`` (or "1e400", or JSON's NaN and Infinity) of a live
    pid read as "start time differs" and ran its package's uninstall.sh: NaN compares
    unequal to every start time. No time is "cannot tell", and the record is kept (C4)."""
    work, home, marks, _ = setup
    me = observe.self_stat()
    (work / stale.RECORDS).write_text(
        json.dumps({"P1": rec(home, "P1", me.pid, start)}), encoding="utf-8"
    )
    res = stale.uninstall_stale_records(work, str(home))
    assert [c.action for c in res.candidates] == ["kept"], res.candidates
    assert not os.listdir(marks)
