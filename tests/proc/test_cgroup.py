"""The attempt's cgroup v2 leaf: detection on every host shape, and a real leaf here."""

from __future__ import annotations

import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import wait_for
from skgate.proc import cgroup
from skgate.proc.cgroup import CgroupUnavailable, detect

HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / {mount} rw,relatime - cgroup2 cgroup2 rw
"""
PURE = "41 31 0:38 {root} {mount} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def fake(tmp: Path, cgroup_line: str, mountinfo: str, own: str) -> tuple[Path, Path, Path]:
    mount = tmp / "cg"
    (mount / own).mkdir(parents=True)
    (mount / own / "cgroup.procs").write_text("")
    cg = tmp / "self-cgroup"
    cg.write_text(cgroup_line)
    mi = tmp / "mountinfo"
    mi.write_text(mountinfo.format(mount=mount, root="/"))
    return cg, mi, mount


def test_detect_hybrid_unified_mount(tmp_path: Path) -> None:
    cg, mi, mount = fake(tmp_path, "4:memory:/x\n0::/\n", HYBRID, ".")
    h = detect(cg, mi)
    assert (h.kind, h.own) == ("hybrid", mount)


def test_detect_pure_v2_delegated_user_scope(tmp_path: Path) -> None:
    own = "user.slice/user-1000.slice/user@1000.service/app.slice/run-1.scope"
    cg, mi, mount = fake(tmp_path, f"0::/{own}\n", PURE, own)
    h = detect(cg, mi)
    assert (h.kind, h.own) == ("v2", mount / own)


def test_detect_namespaced_mount_strips_its_root(tmp_path: Path) -> None:
    cg, _, mount = fake(tmp_path, "0::/kubepods/pod1/ctr\n", PURE, "ctr")
    mi = tmp_path / "mi2"
    mi.write_text(PURE.format(mount=mount, root="/kubepods/pod1"))
    assert detect(cg, mi).own == mount / "ctr"


@pytest.mark.parametrize(
    ("cgroup_line", "mountinfo", "why"),
    [
        ("4:memory:/\n1:cpu:/\n", HYBRID, "v1 only"),
        ("0::/\n", "32 31 0:29 / /c rw - cgroup cgroup rw,cpu\n", "no cgroup2"),
        ("0::/elsewhere\n", PURE.replace("{root}", "/mine"), "outside"),
    ],
)
def test_detect_refuses_with_reason(
    tmp_path: Path, cgroup_line: str, mountinfo: str, why: str
) -> None:
    cg = tmp_path / "c"
    cg.write_text(cgroup_line)
    mi = tmp_path / "m"
    mi.write_text(mountinfo.format(mount=tmp_path / "cg", root="/"))
    with pytest.raises(CgroupUnavailable, match=why):
        detect(cg, mi)


def test_unwritable_hierarchy_degrades_with_reason(tmp_path: Path) -> None:
    cg, mi, mount = fake(tmp_path, "0::/\n", HYBRID, ".")
    (mount / "blocker").write_text("")  # mkdir of an existing name fails like EACCES would
    with pytest.raises(CgroupUnavailable, match="cannot create a cgroup"):
        cgroup.Leaf.create("blocker", detect(cg, mi))
    # A directory that is not a real cgroup: moving into it fails, the leaf is removed.
    with pytest.raises(CgroupUnavailable, match="cannot move processes"):
        cgroup.Leaf.create("leaf", detect(cg, mi))
    assert not (mount / "leaf").exists()


def real_leaf(name: str) -> cgroup.Leaf:
    try:
        return cgroup.Leaf.create(name)
    except CgroupUnavailable as exc:
        pytest.skip(f"no writable cgroup v2 here: {exc}")


def test_real_leaf_membership_populated_event_and_removal(tmp_path: Path) -> None:
    leaf = real_leaf(f"skgate-test-{tmp_path.name}")
    try:
        gate = tmp_path / "go"
        with leaf.entered():
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import os, sys, time, pathlib\n"
                    "if os.fork() == 0:\n    os.setsid()\n"  # an escape stays a member
                    "    while not pathlib.Path(sys.argv[1]).exists(): time.sleep(0.01)\n"
                    "    os._exit(0)\n",
                    str(gate),
                ]
            )
        child.wait()
        members = wait_for(leaf.members, "the escaped grandchild in the leaf")
        assert child.pid not in members  # the runner-side child already returned
        assert leaf.populated()
        ep = select.epoll()
        ep.register(leaf.watch_fd(), select.EPOLLIN)
        gate.write_text("")
        deadline_polls = 0
        while leaf.populated():
            ep.poll(20)  # woken by cgroup.events, not by a timer
            leaf.rearm()
            deadline_polls += 1
            assert deadline_polls < 1000, "populated never turned 0"
        ep.close()
        stats = leaf.stats()
        assert stats["usage_usec"] >= 0
        assert "memory_peak_bytes" in stats
        # This process is back in its own cgroup, not left inside the leaf.
        assert str(leaf.path) not in Path("/proc/self/cgroup").read_text()
    finally:
        assert leaf.remove()
    assert not leaf.path.exists()


def test_remove_refuses_a_populated_leaf(tmp_path: Path) -> None:
    leaf = real_leaf(f"skgate-test-busy-{tmp_path.name}")
    with leaf.entered():
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
    try:
        assert child.pid in leaf.members()
        assert not leaf.remove()
        assert leaf.path.exists()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    wait_for(lambda: not leaf.populated(), "the leaf to empty")
    assert leaf.remove()


def _recorded_leaf(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[cgroup.Leaf, list[str]]:
    """A leaf on a fake hierarchy whose moves are only recorded ("home" or "leaf")."""
    own = tmp / "cg"
    (own / "leaf").mkdir(parents=True)
    leaf = cgroup.Leaf(cgroup.Hierarchy(mount=own, own=own, kind="v2"), own / "leaf")
    moves: list[str] = []

    def record(procs: Path, pid: int) -> None:
        moves.append("leaf" if procs.parent == leaf.path else "home")

    monkeypatch.setattr(cgroup, "_write_pid", record)
    return leaf, moves


def test_warming_moves_home_again_until_the_launch_enters_the_leaf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: one warming move leaves the kernel's migration lock quick for about one
    RCU grace period only, so warm() repeats it until the launch's move into the leaf;
    from that move on it never moves the runner home (that would fork the leader
    outside the leaf, C3)."""
    leaf, moves = _recorded_leaf(tmp_path, monkeypatch)
    thread = threading.Thread(target=leaf.warm, args=(60.0,))
    thread.start()
    try:
        assert wait_for(lambda: moves.count("home") >= 3, timeout=10)
    finally:
        with cgroup.MIGRATION_LOCK:
            leaf.enter()
            at_enter = len(moves)
        thread.join(10)
    assert not thread.is_alive()
    assert moves[at_enter - 1] == "leaf" and set(moves[: at_enter - 1]) == {"home"}
    assert len(moves) == at_enter  # nothing after the launch's move


@pytest.mark.parametrize("how", ["once", "stopped", "limit"])
def test_warming_ends_without_a_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """warm() with no limit moves once; with one it ends when ``stop()`` says so (the
    early work was cancelled) or when the limit has passed (a long preflight)."""
    leaf, moves = _recorded_leaf(tmp_path, monkeypatch)
    if how == "once":
        leaf.warm()
        assert moves == ["home"]
        return
    stop = threading.Event()
    limit = 60.0 if how == "stopped" else 0.05
    thread = threading.Thread(target=leaf.warm, args=(limit, stop.is_set))
    thread.start()
    if how == "stopped":
        assert wait_for(lambda: len(moves) >= 2, timeout=10)
        stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert moves and set(moves) == {"home"}
