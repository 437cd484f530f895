"""Build directories no start line named (stand-in 2: ``PYTHONWARNINGS=ignore`` hides
torchair's ``warnings.warn`` start line, and a silent cache hit then leaves only its
fresh root). Only this attempt's own, fresh, real directories count (C3)."""

from __future__ import annotations

import os
from pathlib import Path

from skgate.evidence.stage_roots import owned_unannounced_roots

STAMP = "20261202034159383019"


def test_only_fresh_roots_of_owned_processes_that_no_start_line_named(tmp_path: Path) -> None:
    out = tmp_path / "static_kernel_compile_outputs"
    out.mkdir()
    mine, named, foreign, old = (
        out / f"ts{STAMP}_pid{pid}_outputs" for pid in (101, 102, 999, 103)
    )
    for d in (mine, named, foreign, old):
        d.mkdir()
    (out / f"ts{STAMP}_pid104_outputs").write_text("")  # a file, not a directory
    os.symlink(mine, out / f"ts{STAMP}_pid105_outputs")  # a link is never followed
    (out / "static_kernel_cache").mkdir()
    (out / "ts1_pid101_outputs").mkdir()  # not torchair's timestamp
    found = owned_unannounced_roots(
        out,
        before=[(old.name, 0)],
        owned_pids={101, 102, 103, 104, 105},
        announced=[str(named)],
    )
    assert found == [str(mine)]


def test_no_outputs_directory_gives_nothing(tmp_path: Path) -> None:
    assert owned_unannounced_roots(tmp_path / "absent", (), {1}, ()) == []
    assert owned_unannounced_roots(None, (), {1}, ()) == []
