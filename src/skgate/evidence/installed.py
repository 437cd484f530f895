"""Read the installed static binaries' manifests and the dumped op types (C8, facts 4a-4b).

``descriptors``: the ``"op_type"`` of every ``*_opcompile/*.json`` under an outputs
directory (``<outputs>/ts*_outputs/<pid>_opcompile/`` as torchair dumps them, or a
root's own ``<pid>_opcompile/``), the op type named by the file otherwise. ``manifests``:
for each ``.run`` package found there, its installed manifest(s)
``<opp>/static_kernel/ai_core/<stem>/config/<soc>/binary_info_config.json``. Every
file is read as a regular file only, without following links, with a bound
(:func:`skgate.evidence.stage_census.read_bounded`); directories are listed without
following links. Nothing is changed. The rule is
:class:`skgate.model.installed.InstalledBinaries`.
"""

from __future__ import annotations

import json
import os

from skgate.evidence.stage_census import INPUT_SUFFIX, input_stems, json_op_type, read_bounded
from skgate.model.installed import InstalledBinaries, PackageManifest

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DUMP_SUFFIX = "_opcompile"
RUN_SUFFIX = ".run"
MANIFEST_NAME = "binary_info_config.json"
#: A manifest larger than this is not read.
MAX_MANIFEST_BYTES = 8 << 20
#: Descriptor files read and paths kept per op type, at the most.
MAX_DESCRIPTORS = 20000
PATHS_PER_TYPE = 3
#: ``.run`` packages and ``config/<soc>`` directories considered, at the most.
MAX_PACKAGES = 64


def _subdirs(path: str) -> list[str]:
    try:
        with os.scandir(path) as it:
            return sorted(e.path for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _regular_names(path: str, suffix: str) -> list[str]:
    try:
        with os.scandir(path) as it:
            return sorted(
                e.name for e in it if e.name.endswith(suffix) and e.is_file(follow_symlinks=False)
            )
    except OSError:
        return []


def _roots(directory: str, exclude: frozenset[str]) -> list[str]:
    """``directory`` and its subdirectories, but those named in ``exclude`` (the entries
    that were there before an attempt's launch: not its own, C8)."""
    return [directory, *(d for d in _subdirs(directory) if os.path.basename(d) not in exclude)]


def descriptors(
    directory: str, exclude: frozenset[str] = frozenset()
) -> dict[str, tuple[str, ...]]:
    """Op type -> the first few dumped inputs that carry it (see the module doc)."""
    found: dict[str, list[str]] = {}
    read = 0
    roots = _roots(directory, exclude)
    for root in roots:
        for dump in _subdirs(root):
            if not os.path.basename(dump).endswith(DUMP_SUFFIX):
                continue
            for stem in sorted(input_stems(dump) or ()):
                if read >= MAX_DESCRIPTORS:
                    break
                read += 1
                path = os.path.join(dump, stem + INPUT_SUFFIX)
                op = json_op_type(path) or stem.split("_", 1)[0]
                kept = found.setdefault(op, [])
                if len(kept) < PATHS_PER_TYPE:
                    kept.append(path)
    return {op: tuple(paths) for op, paths in found.items()}


def package_stems(directory: str, exclude: frozenset[str] = frozenset()) -> list[str]:
    """Stems of the ``.run`` packages directly in ``directory`` or one level below it."""
    stems: set[str] = set()
    for root in _roots(directory, exclude):
        for name in _regular_names(root, RUN_SUFFIX):
            stems.add(name[: -len(RUN_SUFFIX)])
    return sorted(stems)[:MAX_PACKAGES]


def _parse(path: str) -> tuple[dict[str, int] | None, str | None]:
    data = read_bounded(path, MAX_MANIFEST_BYTES)
    if data is None:
        return None, f"{path}: not a regular file"
    if len(data) >= MAX_MANIFEST_BYTES:
        return None, f"{path}: larger than {MAX_MANIFEST_BYTES} bytes"
    try:
        doc = json.loads(data)
    except ValueError as exc:
        return None, f"{path}: not JSON ({exc})"
    if not isinstance(doc, dict):
        return None, f'{path}: not an object of OpType -> {{"staticList": [...]}}'
    ops: dict[str, int] = {}
    for op, value in doc.items():
        listed = value.get("staticList") if isinstance(value, dict) else None
        ops[str(op)] = len(listed) if isinstance(listed, list) else 0
    return ops, None


def manifest(opp: str, stem: str) -> PackageManifest:
    """The installed manifest(s) of one package under ``opp`` (``$ASCEND_OPP_PATH``)."""
    config = os.path.join(opp, "static_kernel", "ai_core", stem, "config")
    paths: list[str] = []
    ops: dict[str, int] = {}
    problems: list[str] = []
    for soc in _subdirs(config)[:MAX_PACKAGES]:
        path = os.path.join(soc, MANIFEST_NAME)
        if not os.path.lexists(path):
            continue
        # A link or anything but a regular file is refused by the bounded reader.
        got, problem = _parse(path)
        paths.append(path)
        if got is None:
            problems.append(str(problem))
            continue
        for op, n in got.items():
            ops[op] = max(ops.get(op, 0), n)
    return PackageManifest(stem, tuple(paths), ops, tuple(problems))


def installed_binaries(
    directory: str, opp: str | None, exclude: frozenset[str] = frozenset()
) -> InstalledBinaries:
    """The dumped op types of ``directory`` and the manifests of its packages under
    ``opp`` (None: not checked); ``exclude``: top-level entries left out."""
    descs = descriptors(directory, exclude)
    stems = package_stems(directory, exclude)
    packages = tuple(manifest(opp, stem) for stem in stems) if opp else ()
    return InstalledBinaries(opp, descs, packages)


SCHEMA_INSTALLED = "skgate.installed/1"
INSTALLED_FILE = "installed.json"


def installed_record(found: InstalledBinaries) -> dict[str, Any]:
    """``installed.json`` of an attempt: the check as it stood when the tree had ended."""
    return {"schema": SCHEMA_INSTALLED, **found.to_dict()}
