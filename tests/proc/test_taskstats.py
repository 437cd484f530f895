"""Every owned process keeps its name, however short it lives (issue 28 s7).

The issue's reproducer: 200 children of 10 ms each gave 191-199 records named ``opc``
(fewer on a loaded host) because the runner reads ``/proc/<pid>/stat`` and ``cmdline`` on
the exec event, and a 10 ms process is often gone by then. The kernel's exit records
(taskstats) carry the name the exec set, sent before the parent can reap the process,
so they do not race the exit.

What "named opc" means: ``(exec -a opc sleep 0.01)`` sets argv[0] only; the kernel's name
(``comm``) is ``sleep``, and no exit record keeps argv. The end-to-end test therefore runs
a program file that is called by the compiler's name, as an installed compiler is; the
``exec -a`` variant is measured in ``bench/bench_names.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest

from conftest import gated_run
from skgate.evidence import files
from skgate.proc import taskstats
from skgate.proc.observe import clock_ticks, is_compiler, read_stat
from skgate.proc.owned import OwnedTree, Proc
from skgate.proc.taskstats import ExitRecord, parse

FAMILY = 31


def _datagram(pid: int, ppid: int, comm: bytes, btime: int) -> bytes:
    """One exit message as the kernel sends it: genl header, AGGR_PID{PID, STATS}."""
    stats = bytearray(400)
    struct.pack_into("=H", stats, 0, 16)
    struct.pack_into("=I", stats, 4, 256)  # exit code
    stats[80 : 80 + len(comm)] = comm
    struct.pack_into("=III", stats, 128, pid, ppid, btime)

    def nla(kind: int, payload: bytes) -> bytes:
        size = 4 + len(payload)
        return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)

    body = struct.pack("=BBH", 3, 1, 0) + nla(
        4, nla(1, struct.pack("=I", pid)) + nla(3, bytes(stats))
    )
    return struct.pack("=IHHII", 16 + len(body), FAMILY, 0, 0, 0) + body


def test_an_exit_record_is_parsed_with_its_name_pid_and_start() -> None:
    data = _datagram(4321, 1234, b"opc", 1_700_000_000) + _datagram(7, 1, b"sleep", 5)
    got = parse(data, FAMILY)
    assert got == [
        ExitRecord(4321, 1234, "opc", 1_700_000_000, 256),
        ExitRecord(7, 1, "sleep", 5, 256),
    ]
    assert parse(data, FAMILY + 1) == []  # another family's message is not ours


class _Queued:
    """A listener socket with datagrams queued (what ``recv`` returns, then empty)."""

    def __init__(self, *datagrams: bytes) -> None:
        self.queue = list(datagrams)

    def recv(self, _size: int, _flags: int = 0) -> bytes:
        if not self.queue:
            raise BlockingIOError
        return self.queue.pop(0)


def test_drain_keeps_only_the_records_of_the_pids_of_interest() -> None:
    """Issue 29: the listener hears every exit of the machine; a foreign record is
    skipped before it is parsed, and nothing of interest is lost, whatever the layout."""
    ours, theirs = _datagram(4321, 1, b"opc", 9), _datagram(77, 1, b"bash", 9)
    glued = _datagram(78, 1, b"make", 9) + _datagram(4322, 1, b"opc", 9)  # two messages
    sock = _Queued(theirs, ours, glued, theirs)
    records = taskstats.ExitRecords(sock, FAMILY, b"0\0")  # type: ignore[arg-type]
    got = records.drain(interest={4321, 4322})
    assert [(r.pid, r.comm) for r in got] == [(4321, "opc"), (4322, "opc")]
    sock.queue = [theirs, ours]
    assert [r.pid for r in records.drain()] == [77, 4321]  # no interest: every record


def test_a_record_names_only_the_process_born_at_its_start_second() -> None:
    """C4: never a pid alone: a record whose start differs is another process's."""
    tree = OwnedTree()
    me = read_stat(os.getpid())
    assert me is not None
    p = Proc(me, ("bash",), 0.0, "events")
    p.argv_late = True
    tree.procs[(p.pid, p.start_ticks)] = p
    tree.unnamed[p.pid] = p  # the state an exec event leaves behind
    born = int(tree.boot_wall + p.start_ticks / clock_ticks())
    assert not tree.exit_names([ExitRecord(p.pid, 1, "opc", born - 100, 0)])
    assert p.name == me.name
    assert tree.exit_names([ExitRecord(p.pid, 1, "opc", born, 0)])
    assert p.name == "opc" and tree.named_at_exit == 1
    assert b'"e":"name"' in tree.journal_lines()


def _exit_records_here() -> str | None:
    try:
        taskstats.open_exit_records().close()
    except taskstats.ExitRecordsUnavailable as exc:
        return str(exc)
    return None


@pytest.mark.slow
def test_two_hundred_compilers_of_ten_ms_are_all_named(tmp_path: Path) -> None:
    why = _exit_records_here()
    if why is not None:
        pytest.skip(f"no kernel exit records here: {why}")
    name = "skg-ts-opc"
    (tmp_path / "bin").mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", tmp_path / "bin" / name)
    loop = f"for i in $(seq 200); do {tmp_path / 'bin' / name} 0.01; done"
    run = gated_run(
        tmp_path,
        ["bash", "-c", loop],
        "--verdict-from",
        "exit-status",
        env={"SKGATE_COMPILER_NAMES": name},
        timeout=300,
    )
    assert run.returncode == 0, run.output
    manifest = json.loads((run.attempt / files.OWNERSHIP).read_text())
    named = [p for p in manifest["owned"] if is_compiler(p["name"], p.get("argv", []), (name,))]
    assert len(named) == 200, (len(named), manifest["coverage"])
    cov = manifest["coverage"]
    assert cov["exit_names"] == "taskstats"
    verdict = json.loads((run.attempt / files.VERDICT).read_text())
    c3 = next(r for r in verdict["reasons"] if r.startswith("C3:"))
    if cov["named_at_exit"]:
        assert "exit records (taskstats) named" in c3, c3
