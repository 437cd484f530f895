"""The executor seam without Ray (issue 15): evidence transfer, progress board, host facts.

These run in the default suite; the Ray executor itself is tested on a real cluster in
test_ray_exec.py (marker ``ray``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_skgate
from evidence_fixtures import make_attempt
from skgate.evidence import ledger, seal, transfer
from skgate.model.errors import EvidenceError
from skgate.model.records import State
from skgate.regress.controls import HOST_IDENTITY, HOST_KEYS, compare_controls
from skgate.regress.executor import ArmState, Board
from skgate.regress.progress import jsonl_listener


def _sealed(tmp: Path) -> Path:
    attempt = make_attempt(tmp / "node-root", 3, State.SUCCEEDED)
    (attempt / "run.log").write_bytes(b"line\n" * 5000)  # several chunks at chunk=4096
    seal.seal_attempt(attempt, chain=False)
    return attempt


def _receive(items: list[Any], root: Path, **kw: Any) -> transfer.Incoming:
    inc = transfer.Incoming(root, "0003", **kw)
    for item in items:
        inc.feed(item)
    return inc


def test_a_sealed_attempt_streams_home_verified_and_indexed_with_its_node(
    tmp_path: Path,
) -> None:
    attempt = _sealed(tmp_path)
    items = list(transfer.send_items(attempt, chunk=4096))
    assert max(len(i) for i in items if isinstance(i, bytes)) <= 4096
    assert sum(1 for i in items if isinstance(i, bytes)) > 5
    root = tmp_path / "driver"
    target = ledger.allocate(root, "0003")
    node = {"hostname": "h1", "node_id": "n" * 56, "task_id": "t1"}
    verdict = _receive(items, root).commit(target, node, str(attempt))
    assert verdict.state is State.SUCCEEDED and verdict.attempt == str(target)
    assert (target / "run.log").read_bytes() == (attempt / "run.log").read_bytes()
    assert seal.verify(root) == []
    assert ledger.nodes(root) == {"0003": node}
    assert not (root / transfer.INCOMING).exists()


def test_a_byte_changed_in_transit_is_refused_and_nothing_appears(tmp_path: Path) -> None:
    attempt = _sealed(tmp_path)
    items = list(transfer.send_items(attempt, chunk=4096))
    k = next(i for i, x in enumerate(items) if isinstance(x, bytes))
    chunk = items[k]
    assert isinstance(chunk, bytes)
    items[k] = bytes([chunk[0] ^ 1]) + chunk[1:]
    root = tmp_path / "driver"
    target = ledger.allocate(root, "0003")
    inc = _receive(items, root)
    with pytest.raises(EvidenceError, match="seal does not match"):
        inc.commit(target, {}, "x")
    inc.discard()
    assert list(target.iterdir()) == [] and not (root / ledger.LEDGER).exists()
    assert not (root / transfer.INCOMING).exists()


@pytest.mark.parametrize("name", ["../escape", "/abs", "a//b", "./x"])
def test_a_hostile_file_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(EvidenceError, match="plain relative path"):
        _receive([{"kind": "files", "files": [{"name": name, "size": 1}]}], tmp_path)


def test_evidence_over_the_bound_stays_on_its_node(tmp_path: Path) -> None:
    attempt = _sealed(tmp_path)
    items = list(transfer.send_items(attempt))
    with pytest.raises(EvidenceError, match="exceed the bound"):
        _receive(items[:1], tmp_path / "driver", max_bytes=1000)


def test_the_board_tells_listeners_and_jsonl_writes_the_same_rows() -> None:
    out = io.StringIO()
    board = Board(["a#1", "b#1"], [jsonl_listener(out)])
    board.update("a#1", state=ArmState.PREFLIGHT, node="h/1")
    board.update("a#1", state=ArmState.WAITING, note="foreign compiler opc[7]")
    board.update("a#1", stages={"error_logs": 0, "succ_logs": 2})
    board.update("a#1", state=ArmState.SUCCEEDED, final=True)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["state"] for r in rows] == ["preflight", "waiting", "waiting", "succeeded"]
    assert rows[1]["note"] == "foreign compiler opc[7]"
    assert rows[2]["stages"] == {"error_logs": 0, "succ_logs": 2} and rows[2]["provisional"]
    assert rows[-1]["provisional"] is False
    assert board.rows()[1]["state"] == "queued"


def _control(**host: Any) -> dict[str, Any]:
    base = {"hostname": "h1", "machine": "aarch64", "kernel": "Linux 5.10", "cpu_count": 192}
    return {"request": {}, "controls": {"host": {**base, "cpu_model": "Kunpeng-920", **host}}}


def test_host_facts_that_change_compiles_make_arms_incomparable_unless_declared() -> None:
    ref = _control()
    other_name = _control(hostname="h2")
    assert compare_controls(ref, other_name, (), HOST_IDENTITY) == []
    for key, value in (("cpu_model", "x86"), ("cpu_count", 96), ("cann_version", "8.0.RC3")):
        diff = compare_controls(ref, _control(hostname="h2", **{key: value}), (), HOST_IDENTITY)
        assert [d.key for d in diff] == [f"host.{key}"] and not diff[0].declared
        # hosts_may_differ = true in the matrix: every host fact is ignored.
        assert compare_controls(ref, _control(**{key: value}), (), HOST_KEYS) == []


def test_ray_executor_without_ray_or_cluster_is_one_line_exit_2_nothing_recorded(
    tmp_path: Path,
) -> None:
    matrix = {
        "baseline": {"argv": ["true"], "jobs": 1, "timeout": 60},
        "arm": [{"name": "seed", "cache_seed": 7}],
    }
    (tmp_path / "m.json").write_text(json.dumps(matrix), encoding="utf-8")
    # Port 1 on loopback: nothing listens there (a closed port answers at once).
    args = ("regress", "--matrix", "m.json", "--root", "r", "--executor", "ray")
    proc = run_skgate(*args, "--ray-address", "127.0.0.1:1", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "skgate[ray]" in lines[0] or "no Ray cluster answers at 127.0.0.1:1" in lines[0]
    assert not (tmp_path / "r").exists()
