"""``skgate status`` reads evidence through text paths (skgate.evidence.pathtext, issue
29): however the target is spelled, the seal check of issue 28 still finds the attempt's
seal (C2.5: evidence changed after sealing is reported, never believed), and the path
printed is spelled as pathlib spells it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_skgate
from skgate.evidence import files, sealed
from skgate.model.exits import EXIT_UNKNOWN

#: (cwd below the copy, target): the root, an attempt, odd spellings, the attempt as ".".
SPELLINGS = [
    (".", "r"),
    (".", "./r/"),
    (".", "r//attempts/./0001/"),
    ("r", "attempts/0001"),
    ("r/attempts/0001", "."),
    ("r/attempts", "0001/"),
]


@pytest.fixture
def copied(finished_root: Path, tmp_path: Path) -> Path:
    shutil.copytree(finished_root, tmp_path / "r", symlinks=True)
    return tmp_path


@pytest.mark.parametrize(("cwd", "target"), SPELLINGS)
def test_a_rewritten_verdict_is_caught_whatever_the_spelling(
    copied: Path, cwd: str, target: str
) -> None:
    verdict = copied / "r" / "attempts" / "0001" / files.VERDICT
    data = json.loads(verdict.read_text())
    data.update(state="failed", exit_status=1)
    verdict.write_text(json.dumps(data))
    status = run_skgate("status", target, cwd=copied / cwd)
    assert status.returncode == EXIT_UNKNOWN, status
    first = status.stdout.splitlines()[0]
    assert first.startswith("UNKNOWN: evidence changed after sealing: verdict.json"), status


@pytest.mark.parametrize(("cwd", "target"), SPELLINGS)
def test_the_evidence_line_is_spelled_as_pathlib_spells_it(
    copied: Path, cwd: str, target: str
) -> None:
    status = run_skgate("status", target, cwd=copied / cwd)
    assert status.returncode == 0, status
    attempt = Path(target) if target.rstrip("/").endswith(("0001", ".")) else None
    want = attempt if attempt is not None else Path(target) / "attempts" / "0001"
    assert status.stdout.splitlines()[-1] == f"  evidence: {want}", status


def _sealed_attempt(base: Path) -> Path:
    """An attempt directory whose seal names ``verdict.json`` and ``sub/f``."""
    import hashlib

    attempt = base / "a"
    (attempt / "sub").mkdir(parents=True)
    entries = []
    for name, body in (("verdict.json", b"{}"), ("sub/f", b"one")):
        (attempt / name).write_bytes(body)
        sha = hashlib.sha256(body).hexdigest()
        entries.append({"name": name, "sha256": sha, "size": len(body)})
    seal = {"schema": sealed.SCHEMA_SEAL, "files": entries}
    (attempt / sealed.SEAL).write_text(json.dumps(seal))
    return attempt


@pytest.mark.parametrize("kind", [str, Path])
@pytest.mark.parametrize("name", ["verdict.json", "sub/f"])
def test_the_seal_is_found_from_a_text_path(tmp_path: Path, kind: type, name: str) -> None:
    # A file of the attempt, or one level below it, is read against the attempt's seal,
    # given as text or as a Path (the read side takes both, issue 29).
    attempt = _sealed_attempt(tmp_path)
    path = kind(f"{attempt}//./{name}")
    assert sealed.read_bytes(path) == (attempt / name).read_bytes()
    (attempt / name).write_bytes(b"tw" if name == "verdict.json" else b"two")
    sealed._CACHE.clear()  # the sizes are the same: only the hash tells
    with pytest.raises(sealed.SealBreachError, match=f"{name} \\(sealed sha256"):
        sealed.read_bytes(path)
