"""Artifact census (census.py): C3 counts per result root, no symlink following."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skgate.evidence.census import FirstNames, count_tree, is_result_root, take_census
from skgate.model.records import Census


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


def make_tree(out: Path) -> None:
    r1 = out / "ts20261101120000000001_pid11_outputs"
    r2 = out / "ts20261101120000000002_pid22_outputs"
    for i in range(3):
        touch(r1 / "a_compile_log" / f"static_kernel_HcPre_{i}_11_d0_compile_succ.log")
    touch(r1 / "a_compile_log" / "static_kernel_X_11_d0_compile_error.log")
    touch(r1 / "static_kernel_20261101120001_11.run")
    touch(r2 / "b_compile_log" / "deep" / "er_compile_error.log")
    touch(r2 / "b_compile_log" / "er2_compile_error.log")
    touch(r2 / "11_opcompile" / "op.json")
    touch(out / "static_kernel_cache" / "CANN-8.5_910B.json")
    touch(out / "stray_compile_error.log")
    touch(out / "misc" / "old.run")


def test_counts_per_root_and_total(tmp_path: Path) -> None:
    out = tmp_path / "static_kernel_compile_outputs"
    make_tree(out)
    c = take_census(out, live=True)
    assert c.exists
    assert c.live
    by_root = {r.root: (r.error_logs, r.succ_logs, r.run_packages) for r in c.roots}
    assert by_root == {
        "ts20261101120000000001_pid11_outputs": (1, 3, 1),
        "ts20261101120000000002_pid22_outputs": (2, 0, 0),
        ".": (1, 0, 1),
    }
    assert (c.error_logs, c.succ_logs, c.run_packages) == (4, 3, 2)
    assert c.outputs == str(out)
    # It serialises as the shared census.json shape and reads back.
    data = json.loads(json.dumps(c.to_dict()))
    assert data["totals"] == {"error_logs": 4, "succ_logs": 3, "run_packages": 2}
    assert Census.from_dict(data) == c


def test_missing_outputs(tmp_path: Path) -> None:
    c = take_census(tmp_path / "nope", live=False)
    assert not c.exists
    assert c.roots == ()
    assert not c.live


def test_symlinks_are_not_followed_nor_counted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    for i in range(5):
        touch(elsewhere / f"x{i}_compile_error.log")
    touch(elsewhere / "p.run")
    root = out / "ts1_pid1_outputs"
    root.mkdir(parents=True)
    (root / "link_dir").symlink_to(elsewhere, target_is_directory=True)
    (root / "link.run").symlink_to(elsewhere / "p.run")
    (out / "ts2_pid2_outputs").symlink_to(elsewhere, target_is_directory=True)
    c = take_census(out, live=False)
    assert [(r.root, r.error_logs, r.run_packages) for r in c.roots] == [("ts1_pid1_outputs", 0, 0)]
    # An outputs path that is itself a symlink is not this attempt's outputs.
    link_out = tmp_path / "link_out"
    link_out.symlink_to(out, target_is_directory=True)
    assert not take_census(link_out, live=False).exists


def test_empty_result_root_is_listed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "ts9_pid9_outputs").mkdir(parents=True)
    c = take_census(out, live=True)
    assert [r.root for r in c.roots] == ["ts9_pid9_outputs"]
    assert c.error_logs == c.succ_logs == c.run_packages == 0


def test_unreadable_subdir_is_skipped(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root reads any directory; the case cannot be built.
        return
    out = tmp_path / "out"
    touch(out / "ts1_pid1_outputs" / "ok_compile_succ.log")
    locked = out / "ts1_pid1_outputs" / "locked"
    touch(locked / "x_compile_error.log")
    locked.chmod(0)
    try:
        c = take_census(out, live=True)
    finally:
        locked.chmod(0o755)
    assert c.succ_logs == 1


def test_result_root_names() -> None:
    assert is_result_root("ts20261101120000123456_pid4242_outputs")
    assert not is_result_root("static_kernel_cache")
    assert not is_result_root("ts1_pid2_outputs.bak")


def test_unreadable_directory_is_counted_not_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skgate.evidence import census as census_mod

    outputs = tmp_path / "static_kernel_compile_outputs"
    locked = outputs / "ts1_pid1_outputs" / "locked"
    locked.mkdir(parents=True)
    (outputs / "ts1_pid1_outputs" / "a_compile_error.log").write_text("")
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        # Root reads any directory, so permissions cannot make one unreadable here.
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    c = census_mod.take_census(outputs, live=False)
    assert c.unreadable == 1
    assert c.error_logs == 1
    assert c.to_dict()["unreadable"] == 1


def test_count_tree_collects_the_first_names_when_asked(tmp_path: Path) -> None:
    # check-outputs lists names through the census walker (one walker, one set of C8
    # rules): the counts are the same with or without names, and the names are capped.
    out = tmp_path / "out"
    make_tree(out)
    (out / "link.run").symlink_to(out / "static_kernel_cache" / "CANN-8.5_910B.json")
    plain = count_tree(str(out))
    names = FirstNames(limit=2)
    assert count_tree(str(out), None, names) == plain == (4, 3, 2)
    assert len(names.errors) == 2
    assert all(n.endswith("_compile_error.log") and not n.startswith("/") for n in names.errors)
    # With names, each directory is read in name order (subdirectories: last pushed first).
    assert names.runs == [
        "ts20261101120000000001_pid11_outputs/static_kernel_20261101120001_11.run",
        "misc/old.run",
    ]


def test_a_torch_npu_2_7_run_is_counted_in_its_own_outputs_directory(tmp_path: Path) -> None:
    """Issue 27: 2.7.1 writes ``aclnn_static_shape_kernel_outputs/<ts>_<pid>_outputs``
    (static_kernel.py l.267, l.273-274); with no outputs directory given, that is the
    one counted, never ``exists: false`` with totals 0."""
    from skgate.evidence.census import census_outputs, is_result_root, take_census, top_entries

    default = tmp_path / "static_kernel_compile_outputs"
    legacy = tmp_path / "aclnn_static_shape_kernel_outputs"
    legacy.mkdir()
    (legacy / "20261101000000000001_7_outputs").mkdir()  # an earlier run's
    before = top_entries(default) | top_entries(legacy)
    root = legacy / "20261203000000000001_41_outputs"
    (root / "41_compile_log").mkdir(parents=True)
    (root / "41_compile_log" / "Add_x_compile_succ.log").write_text("")
    (root / "static_kernel_1_41.run").write_text("")
    assert is_result_root(root.name)
    chosen = census_outputs(default, legacy, before)
    assert chosen == legacy
    c = take_census(chosen, live=False, exclude=before)
    assert c.exists and c.succ_logs == 1 and c.run_packages == 1 and c.preexisting == 1
    assert [r.root for r in c.roots] == [root.name]
    # Given an outputs directory, or with new entries in the default one, it is that one.
    assert census_outputs(default, None, before) == default
    default.mkdir()
    (default / "ts20261203000000000002_pid42_outputs").mkdir()
    assert census_outputs(default, legacy, before) == default
