"""Issue 27: each way torchair's real code runs no op_compiler is found on disk (C2).

The build directories are laid out as the releases lay them out (torch-npu 2.9.0.post2
and 2.14.0, ``npugraph_ex/_acl_concrete_graph/static_kernel.py``: ``get_compile_dir``,
``_get_blacklist_dir``, ``_find_and_install_run_pkgs``); a finding needs positive
evidence, and a directory that does not show why nothing ran gives none (C2.5).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from skgate.evidence.idle import cached_installs, find_idle, root_idle
from skgate.model.idle import IdleKind
from skgate.model.running import ProcessRecord
from skgate.model.stage_roots import AnnouncedRoot


def _json(d: Path, *names: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_text('{"op_type": "Add"}')


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "static_kernel_compile_outputs" / "ts20261203000000000001_pid41_outputs"
    root.mkdir(parents=True)
    return root


def _fresh(root: Path) -> AnnouncedRoot:
    return AnnouncedRoot(str(root), None, True, 0, 0, 0)


def _proc(argv: tuple[str, ...], status: int | None = 0, pid: int = 50) -> ProcessRecord:
    return ProcessRecord(pid, 1, 41, 41, 41, argv, "sh", 1.0, 2.0, exit_status=status)


def test_no_operators_dumped(tmp_path: Path) -> None:
    root = _root(tmp_path)
    idle = root_idle(str(root))
    assert idle is not None and idle.kind is IdleKind.NO_OPERATORS
    (root / "41_opcompile").mkdir()  # a dump directory with no JSON: the same
    assert root_idle(str(root)) == idle


def test_every_input_blacklisted_in_both_paths(tmp_path: Path) -> None:
    root = _root(tmp_path)
    # The normal path copies to the blacklist and leaves the selection empty.
    _json(root / "41_opcompile", "MatMul_1.json", "MatMul_2.json")
    (root / "41_opcompile_selected").mkdir()
    _json(root / "41_opcompile_blacklist", "MatMul_1.json", "MatMul_2.json")
    idle = root_idle(str(root))
    assert idle is not None and idle.kind is IdleKind.ALL_BLACKLISTED and idle.count == 2
    assert idle.directory == str(root / "41_opcompile_blacklist")
    # The cache-compile path moves them: the dump is left empty and nothing is selected.
    for f in (root / "41_opcompile").iterdir():
        f.unlink()
    (root / "41_opcompile_selected").rmdir()
    moved = root_idle(str(root))
    assert moved is not None and moved.kind is IdleKind.ALL_BLACKLISTED


def test_an_empty_selection_without_blacklist_is_the_per_process_dedup(tmp_path: Path) -> None:
    root = _root(tmp_path)
    _json(root / "41_opcompile", "Add_1.json", "Add_2.json", "Mul_3.json")
    (root / "41_opcompile_selected").mkdir()
    idle = root_idle(str(root))
    assert idle is not None and idle.kind is IdleKind.EMPTY_SELECTION and idle.count == 3


def test_nothing_is_claimed_where_the_disk_does_not_show_it(tmp_path: Path) -> None:
    root = _root(tmp_path)
    # Inputs chosen and nothing compiled: not an idle launcher (unknown, or a cache hit).
    _json(root / "41_opcompile", "Add_1.json")
    _json(root / "41_opcompile_selected", "Add_1.json")
    assert root_idle(str(root)) is None
    # 2.7.1 makes no selection: inputs dumped, nothing ran, nothing explains it.
    (root / "41_opcompile_selected" / "Add_1.json").unlink()
    (root / "41_opcompile_selected").rmdir()
    assert root_idle(str(root)) is None
    assert find_idle((_fresh(root),), (), None, None) == ()
    # A second fresh root with an explained idle does not make the first one explained.
    other = tmp_path / "static_kernel_compile_outputs" / "ts20261203000000000002_pid41_outputs"
    other.mkdir()
    assert find_idle((_fresh(other), _fresh(root)), (), None, None) == ()


def _cached_run(outputs: Path, name: str) -> tuple[Path, Path, float]:
    """A .run of an earlier compile in ``outputs``' ts root: (root, run, its mtime)."""
    cached = outputs / "ts20261101000000000001_pid7_outputs"
    cached.mkdir(parents=True)
    run = cached / name
    run.write_text("#!/bin/sh\n")
    old = time.time() - 3600
    os.utime(run, (old, old))
    return cached, run, old


def test_cached_install_is_read_from_the_owned_exec_of_a_cached_run(tmp_path: Path) -> None:
    cached, run, old = _cached_run(
        tmp_path / "cache" / "static_kernel_compile_outputs", "static_kernel_20261101_7.run"
    )
    since = time.time() - 60
    # A shell .run is exec'ed through its interpreter: argv[1] names it.
    found = cached_installs([_proc(("/bin/sh", str(run)))], None, since)
    assert len(found) == 1 and found[0].kind is IdleKind.CACHED_INSTALL
    assert found[0].directory == str(cached) and found[0].packages == (run.name,)
    assert not found[0].failed and not found[0].unobserved
    # Relative argv resolves against the command's working directory.
    rel = os.path.relpath(run, tmp_path)
    assert cached_installs([_proc((rel,))], str(tmp_path), since)[0].directory == str(cached)
    failed = cached_installs([_proc((str(run),), status=1)], None, since)[0]
    assert failed.failed == (run.name,)
    unseen = cached_installs([_proc((str(run),), status=None)], None, since)[0]
    assert unseen.unobserved == (run.name,)
    # A package written by this attempt is not a cached one; nor one outside a ts root.
    assert cached_installs([_proc((str(run),))], None, old - 1) == ()
    loose = tmp_path / "x.run"
    loose.write_text("")
    os.utime(loose, (old, old))
    assert cached_installs([_proc((str(loose),))], None, since) == ()


def test_an_install_too_short_to_read_is_said_from_the_printed_uninstall_line(
    tmp_path: Path,
) -> None:
    """The cache-compile path prints only the uninstall warning (2.9.0.post2
    static_kernel.py l.563-566): its package names the cached .run when it is in the
    outputs' ts*_outputs from before launch; else the install is said as printed."""
    outputs = tmp_path / "static_kernel_compile_outputs"
    cached, _, _ = _cached_run(outputs, "static_kernel_1_7.run")
    line = "/usr/local/Ascend/cann/opp/static_kernel/ai_core/static_kernel_1_7/uninstall.sh"
    found = find_idle((), (), None, time.time() - 60, uninstall_paths=[line], outputs=str(outputs))
    assert len(found) == 1 and found[0].kind is IdleKind.CACHED_INSTALL
    assert found[0].directory == str(cached)
    other = line.replace("static_kernel_1_7", "static_kernel_2_8")
    said = find_idle((), (), None, time.time() - 60, uninstall_paths=[other], outputs=str(outputs))
    assert said[0].kind is IdleKind.PRINTED_INSTALL and said[0].packages == ("static_kernel_2_8",)
    assert find_idle((), (), None, None) == ()  # nothing printed, nothing seen: no claim
