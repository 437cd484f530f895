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


def _torchair_214_key(chosen: Path, sk: str | None, det: str, level: str) -> str:
    """The key as torch-npu 2.14.0 computes it (static_kernel.py l.1109-1132)."""
    import hashlib

    digests = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in chosen.glob("*.json"))
    h = hashlib.sha256()
    for d in digests:
        h.update(d.encode())
    if sk is not None:
        h.update(sk.encode())
    h.update(det.encode())
    h.update(level.encode())
    return h.hexdigest()


def test_a_genuine_2_14_hit_matches_and_an_unknowable_key_is_never_false(tmp_path: Path) -> None:
    """Issue 27: 2.14's key covers the super-kernel config and the deterministic level
    too; a key that none of the computable ones matches is None, never False."""
    import json

    from skgate.evidence.stage_roots import cache_files, cache_keys

    outputs = tmp_path / "static_kernel_compile_outputs"
    root = outputs / "ts20261203000000000001_pid41_outputs"
    chosen = root / "41_opcompile_selected"
    chosen.mkdir(parents=True)
    (chosen / "Add_1.json").write_text('{"op_type": "Add"}')
    (chosen / "Mul_2.json").write_text('{"op_type": "Mul"}')
    keys = cache_keys(str(root))
    for sk, det, level in (("False", "0", "0"), ("False", "1", "1"), (None, "0", "2")):
        assert _torchair_214_key(chosen, sk, det, level) in keys
    sk_on = 'True{"debug_options":null,"optimize_options":null}'
    assert _torchair_214_key(chosen, sk_on, "0", "0") in keys
    run = outputs / "ts20261101000000000001_pid7_outputs" / "static_kernel_1_7.run"
    run.parent.mkdir()
    run.write_text("")
    hit = _torchair_214_key(chosen, "False", "0", "0")
    options = _torchair_214_key(
        chosen, 'True{"debug_options":null,"optimize_options":{"a":1}}', "0", "0"
    )
    cache = outputs / "static_kernel_cache"
    cache.mkdir()
    (cache / "CANN-9.0.0_Ascend910B1.json").write_text(
        json.dumps({hit: str(run), options: str(run)})
    )
    (f,) = cache_files([str(root)], outputs, None, keys)
    by_key = {e.key: e.key_matches for e in f.entries}
    assert by_key == {hit: True, options: None}
