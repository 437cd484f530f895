"""Issue 27: preflight reads the workload's torch-npu from its dist-info, never importing it."""

from __future__ import annotations

import os
from pathlib import Path

from skgate.preflight.torch_npu import find_torch_npu, render, search_dirs, torch_npu_record


def _install(site: Path, version: str, metadata: str | None = None) -> Path:
    d = site / f"torch_npu-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(
        metadata
        if metadata is not None
        else f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {version}\n"
    )
    return d


def test_the_first_directory_in_import_order_wins(tmp_path: Path) -> None:
    site, pp = tmp_path / "site", tmp_path / "pp"
    _install(site, "2.14.0")
    _install(pp, "2.7.1.post2")
    dirs = search_dirs([{"entry": str(pp), "path": str(pp), "is_dir": True}], [str(site)])
    assert dirs == [str(pp), str(site)]
    found = find_torch_npu(dirs)
    assert found is not None and found[0] == "2.7.1.post2"
    rec = torch_npu_record(dirs)
    assert rec["release"]["series"] == "2.7" and rec["dist_info"].startswith(str(pp))
    text = "\n".join(render(rec))
    assert "aclnn_static_shape_kernel_outputs" in text and "cpu_count // LOCAL_WORLD_SIZE" in text


def test_metadata_is_never_read_through_a_link(tmp_path: Path) -> None:
    site = tmp_path / "site"
    d = _install(site, "2.9.0.post2", "Version: 9.9.9\n")
    (d / "METADATA").rename(tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", d / "METADATA")
    found = find_torch_npu([str(site)])
    assert found is not None and found[0] == "2.9.0.post2"  # the name, not the link's text


def test_not_found_and_not_in_the_table_are_said(tmp_path: Path) -> None:
    rec = torch_npu_record([str(tmp_path)])
    assert rec["version"] is None and "no torch_npu dist-info" in rec["note"]
    assert torch_npu_record(None)["version"] is None
    _install(tmp_path, "2.8.0")
    other = torch_npu_record([str(tmp_path)])
    assert other["version"] == "2.8.0" and "release" not in other
    assert "not in skgate's release table" in other["note"]
