"""Finish a scene that a killed ``cleanup`` or ``retry`` left half-preserved (issue 28).

A scene is preserved in steps (:mod:`skgate.workdir.cleanup`): make ``scene/<k>/``, move
each output in (a rename, or a copy to a dot-named temporary name that is renamed once
every hash matches), write ``manifest.json`` (temporary file, link, remove), then chain
its hash into the ledger. A SIGKILL between two steps left an attempt that ``verify``
failed forever while ``recover`` said "nothing to recover". Here each leftover gets its
way to a verified attempt, and is named:

* an empty scene directory (killed before anything moved) is removed;
* a dot-named temporary file in a scene without a manifest (a copy not yet verified, or
  a manifest not yet linked) is removed: the original is still in the working
  directory, and a temporary file is never evidence;
* a scene without a manifest gets one over the files found in it, marked as written by
  ``recover`` (nothing was lost or rewritten: the outputs were moved, not changed);
* the manifest's own temporary name left beside it (the same inode) is removed;
* a manifest that matches its files but has no ledger entry is indexed.

A manifest that does not match its files is never rewritten: ``verify`` names it.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from skgate.evidence import files, ledger, seal
from skgate.evidence.ledger import LedgerEvent
from skgate.evidence.load import load_control
from skgate.evidence.walk import interrupted_scene, walk_files
from skgate.model.errors import EvidenceError
from skgate.model.outcomes import MoveMethod


def _indexed_scenes(root: Path | None, name: str) -> set[str]:
    if root is None or not files.present(root / ledger.LEDGER):
        return set()
    return {
        str(e.get("manifest"))
        for e in ledger.read_ledger(root)
        if ledger.entry_kind(e) is LedgerEvent.SCENE and e.get("attempt") == name
    }


def _temps(scene: Path) -> list[str]:
    with os.scandir(scene) as it:
        return sorted(
            e.name for e in it if files.is_temp_name(e.name) and not e.is_dir(follow_symlinks=False)
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _links(scene: Path) -> list[dict[str, str]]:
    out = []
    for name in walk_files(scene)[1]:
        with contextlib.suppress(OSError):
            out.append({"name": name, "target": os.readlink(scene / name)})
    return out


def _workdir(attempt: Path) -> str:
    try:
        return load_control(attempt).request.cwd
    except EvidenceError:
        return ""


def _write_manifest(attempt: Path, scene: Path) -> int:
    """The manifest of a scene whose cleanup died before writing it: what is there."""
    entries = seal.manifest_entries(scene)
    with os.scandir(scene) as it:
        top = sorted((e.name, "dir" if e.is_dir(follow_symlinks=False) else "file") for e in it)
    workdir = _workdir(attempt)
    unknown = MoveMethod.UNKNOWN.value
    files.write_json_new(
        scene / seal.SCENE_MANIFEST,
        {
            "schema": seal.SCHEMA_SCENE,
            "attempt": attempt.name,
            "workdir": workdir,
            "created_at": time.time(),
            "moved": [
                {"name": n, "kind": k, "method": unknown, "source": f"{workdir}/{n}"}
                for n, k in top
            ],
            "files": [e.to_dict() for e in entries],
            "links": _links(scene),
            "recovered": {
                "by": "skgate recover",
                "note": "the cleanup or retry that moved these outputs was killed before "
                "writing this manifest; it lists the files found in the scene",
            },
        },
    )
    return len(entries)


def _finish_one(attempt: Path, scene: Path, root: Path | None, indexed: set[str]) -> list[str]:
    rel = f"{seal.SCENE_DIR}/{scene.name}"
    manifest = scene / seal.SCENE_MANIFEST
    done: list[str] = []
    if not files.present(manifest):
        if not interrupted_scene(attempt, scene):
            return done  # not a cleanup's: never vouched for (verify names it as added)
        for name in _temps(scene):
            # Never evidence: a copy not yet verified (its original is still in the
            # working directory) or a manifest not yet linked.
            os.unlink(scene / name)
            done.append(f"removed {rel}/{name}, a temporary file of an interrupted cleanup")
        found, others = walk_files(scene)
        if not found and not others:
            with contextlib.suppress(OSError):
                os.rmdir(scene)
                done.append(f"removed the empty {rel} (its cleanup was killed before moving)")
            return done
        count = _write_manifest(attempt, scene)
        done.append(
            f"wrote {rel}/{seal.SCENE_MANIFEST} over the {count} file(s) found there (the "
            "cleanup or retry that moved them was killed before writing it)"
        )
    else:
        for name in _temps(scene):
            if name.startswith(f".{seal.SCENE_MANIFEST}.") and _same_file(scene / name, manifest):
                os.unlink(scene / name)
                done.append(f"removed {rel}/{name}, the manifest's temporary name")
    key = f"{rel}/{seal.SCENE_MANIFEST}"
    if root is not None and key not in indexed and seal.scene_matches(scene):
        ledger.record_scene(root, attempt, manifest)
        done.append(f"indexed {key} in the ledger")
    if done:
        files.fsync_dir(scene)
    return done


def finish_scenes(attempt: Path, root: Path | None) -> list[str]:
    """Finish every half-preserved scene of a sealed attempt; what was done, one line each.

    Called by ``recover`` with the attempt's lock held (cleanup takes the same lock while
    it preserves a scene, so a live one is never finished under it)."""
    scenes = seal.scene_dirs(attempt)
    if not scenes:
        return []
    indexed = _indexed_scenes(root, attempt.name)
    done: list[str] = []
    for scene in scenes:
        done += _finish_one(attempt, scene, root, indexed)
    return done
