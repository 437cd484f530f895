"""What a launcher announced, and the static-kernel cache beside it (C2: a silent cache hit).

A real cache hit prints no hit line at the default log level (torchair's logger is at
ERROR unless ``TORCH_COMPILE_DEBUG=1``): what it leaves is its start line, a fresh
``ts*_outputs`` root holding the dumped JSONs only, no op_compiler, and a cache file
``static_kernel_cache/CANN-<version>_<device>.json`` (a flat ``{key: run_path}``) that
was there before launch and names a package that exists. This module reads those after
the owned tree ended, for :class:`skgate.model.stages.Stages`; the rule that turns them
into "succeeded without compiling" is :mod:`skgate.verdict.stages`. Facts and sources:
``docs/cann-static-compile.md`` (5a-5e, 6a). Files are read as regular files only,
without following links, with a bound.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection, Iterable

from skgate.evidence.digest import small_sha256
from skgate.evidence.stage_census import (
    INPUT_SUFFIX,
    MAX_HASHED,
    file_digest,
    input_stems,
    read_bounded,
    walk_root,
)
from skgate.model.lazy_re import Lazy
from skgate.model.stage_roots import CACHE_DIRNAME
from skgate.model.stages import MAX_NAMED, AnnouncedRoot, CacheEntry, CacheFile

#: The static-kernel cache directory beside the ``ts*_outputs`` roots, and its files
#: ``CANN-<version>_<device>.json`` (a flat ``{key: run_path}``, plus a ``.lock``).
CACHE_PREFIX = "CANN-"
#: A cache file larger than this is not read (its entries are not listed).
MAX_CACHE_BYTES = 4 << 20
#: Build directories and cache files considered, at the most.
MAX_ROOTS = 64
DUMP_DIR_SUFFIX = "_opcompile"


def _lstat_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def subdirs(root: str, suffixes: tuple[str, ...]) -> list[str]:
    """The directories directly under ``root`` whose names end with one of ``suffixes``
    (never through a link)."""
    try:
        with os.scandir(root) as it:
            return [
                e.path for e in it if e.name.endswith(suffixes) and e.is_dir(follow_symlinks=False)
            ]
    except OSError:
        return []


def _root_counts(root: str) -> tuple[int, int, int, int | None]:
    """(dumped inputs, per-input logs, .run packages, chosen inputs) under one build
    directory; chosen is None where no chosen-inputs directory was made (torchair's
    cache-compile path looks up ``<pid>_opcompile`` itself, fact 1e)."""
    walk = walk_root(root)
    inputs = sum(len(input_stems(d) or ()) for d in subdirs(root, (DUMP_DIR_SUFFIX,)))
    chosen_dirs = list(subdirs(root, CHOSEN_SUFFIXES))
    chosen = sum(len(input_stems(d) or ()) for d in chosen_dirs) if chosen_dirs else None
    return inputs, walk.logs, len(walk.runs), chosen


#: torchair's build directory name (fact 1a): ``ts<%Y%m%d%H%M%S%f>_pid<pid>_outputs``;
#: torch-npu 2.7's ``<%Y%m%d%H%M%S%f>_<pid>_outputs`` (2.7.1.post2 static_kernel.py l.273).
_ROOT_NAME = Lazy(r"(?:ts\d{20}_pid|\d{20}_)(\d+)_outputs")


def owned_unannounced_roots(
    outputs: os.PathLike[str] | str | None,
    before: Iterable[tuple[str, int]],
    owned_pids: Collection[int],
    announced: Collection[str],
) -> list[str]:
    """Fresh build directories an owned process made that no start line named.

    The start line is a ``warnings.warn`` (fact 6a): ``PYTHONWARNINGS=ignore`` or a
    warnings filter hides it, and a silent cache hit then leaves only its fresh root
    (stand-in 2). The pid in the name is the process that made it: only roots of this
    attempt's own processes, not there before launch, count (C3: never another run's).
    """
    if outputs is None:
        return []
    names_before = {name for name, _ in before}
    seen = {os.path.normpath(a) for a in announced}
    found: list[str] = []
    try:
        with os.scandir(outputs) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        match = _ROOT_NAME.get().fullmatch(entry.name)
        if match is None or entry.name in names_before or int(match.group(1)) not in owned_pids:
            continue
        path = os.path.normpath(entry.path)
        if path not in seen and entry.is_dir(follow_symlinks=False):
            found.append(path)
    return found[:MAX_ROOTS]


def announced_roots(
    roots: Iterable[tuple[str, int | None]],
    outputs: os.PathLike[str] | str | None,
    before: Iterable[tuple[str, int]],
    hidden: Collection[str] = (),
) -> tuple[AnnouncedRoot, ...]:
    """Each build directory a start line named, as it is now (after the tree ended),
    then each of ``hidden`` (:func:`owned_unannounced_roots`), marked unannounced."""
    seen: set[str] = set()
    names_before = {name for name, _ in before}
    out_dir = os.path.normpath(os.fspath(outputs)) if outputs is not None else None
    found: list[AnnouncedRoot] = []
    unnamed = {os.path.normpath(h) for h in hidden}
    for root, rank in [*roots, *((h, None) for h in hidden)]:
        path = os.path.normpath(root)
        if path in seen or len(found) >= MAX_ROOTS:
            continue
        seen.add(path)
        exists = _lstat_dir(path)
        inputs, logs, runs, chosen = _root_counts(path) if exists else (0, 0, 0, None)
        pre = os.path.dirname(path) == out_dir and os.path.basename(path) in names_before
        found.append(
            AnnouncedRoot(path, rank, exists, inputs, logs, runs, pre, chosen, path in unnamed)
        )
    return tuple(found)


CHOSEN_SUFFIXES = ("_opcompile_selected", "_opcompile_gathered")


def chosen_dirs(root: str) -> list[str]:
    """The chosen-inputs directories of a build directory (an op_compiler's ``-p``)."""
    return sorted(subdirs(root, CHOSEN_SUFFIXES))


#: The super-kernel part of torchair's cache key (torch-npu 2.14.0 static_kernel.py
#: l.1087-1106 ``_get_super_kernel_config_str``): nothing without a config, ``False``
#: when off, ``True`` + the options as sorted compact JSON when on (the default, no
#: options, is the only one computable from disk; older code: ``str(flag)`` only).
_SK_PARTS = (
    b"",
    b"False",
    b"True",
    b'True{"debug_options":null,"optimize_options":null}',
)
#: The deterministic part: ``"1"``/``"0"``, then (2.11, 2.14: l.1128-1130) the level
#: ``str(torch_npu.npu._get_deterministic_level())``; absent in older code.
_DET_PARTS = tuple(
    det + level for det in (b"0", b"1") for level in (b"", b"0", b"1", b"2", b"None")
)


def cache_keys(root: str) -> frozenset[str]:
    """The static-kernel cache keys torchair would compute for a root's chosen inputs.

    torchair's key: sha256 over the sorted sha256 hex of every JSON of the chosen
    directory (the selection, the gathered inputs, or ``<pid>_opcompile`` on the
    cache-compile path), then the super-kernel config, then the deterministic mode and
    level (``docs/cann-static-compile.md``). The config and level are not on disk, so
    every computable combination is given; a key set with super-kernel options matches
    none (``key_matches`` is then None, never False).
    """
    keys: set[str] = set()
    dirs = subdirs(root, CHOSEN_SUFFIXES) or subdirs(root, (DUMP_DIR_SUFFIX,))
    for d in dirs:
        digests = []
        for stem in (input_stems(d) or ())[:MAX_HASHED]:
            digest = file_digest(os.path.join(d, stem + INPUT_SUFFIX))
            if digest is None:
                break
            digests.append(digest)
        else:
            base = small_sha256()  # hex digests: small
            for digest in sorted(digests):
                base.update(digest.encode())
            for sk in _SK_PARTS:
                for det in _DET_PARTS:
                    h = base.copy()
                    h.update(sk + det)
                    keys.add(h.hexdigest())
    return frozenset(keys)


def read_cache_file(
    path: str, since: float | None, keys: frozenset[str] = frozenset()
) -> CacheFile:
    """One cache file: its entries and whether each named package exists now."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return CacheFile(path, False, (), f"cannot be read: {exc.strerror or exc}")
    preexisting = since is not None and st.st_mtime < since
    data = read_bounded(path, MAX_CACHE_BYTES)
    if data is None:
        return CacheFile(path, preexisting, (), "not a regular file")
    if len(data) >= MAX_CACHE_BYTES:
        return CacheFile(path, preexisting, (), f"larger than {MAX_CACHE_BYTES} bytes")
    try:
        doc = json.loads(data)
    except ValueError as exc:
        return CacheFile(path, preexisting, (), f"not JSON: {exc}")
    if not isinstance(doc, dict):
        return CacheFile(path, preexisting, (), "not a JSON object of key -> .run path")
    base = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    entries: list[CacheEntry] = []
    omitted = 0
    for key, value in doc.items():
        if not isinstance(value, str):
            continue
        if len(entries) >= MAX_NAMED:
            omitted += 1
            continue
        run = value if os.path.isabs(value) else os.path.join(base, value)
        # A key none of ours matches proves no difference: it may cover super-kernel
        # options (issue 27); only a match is said.
        matched = True if str(key) in keys else None
        entries.append(CacheEntry(str(key), value, _is_regular(run), matched))
    return CacheFile(path, preexisting, tuple(entries), None, omitted)


def cache_files(
    roots: Iterable[str],
    outputs: os.PathLike[str] | str | None,
    since: float | None,
    keys: frozenset[str] = frozenset(),
) -> tuple[CacheFile, ...]:
    """The cache files beside the build directories and in the outputs directory.

    ``since`` is when the attempt began: a file not modified since existed before the
    launch, so a hit could have come from it.
    """
    dirs: list[str] = []
    for root in roots:
        dirs.append(os.path.join(os.path.dirname(os.path.normpath(root)), CACHE_DIRNAME))
    if outputs is not None:
        dirs.append(os.path.join(os.fspath(outputs), CACHE_DIRNAME))
    found: list[CacheFile] = []
    seen: set[str] = set()
    for raw in dirs:
        d = os.path.normpath(raw)
        if d in seen or not _lstat_dir(d):
            continue
        seen.add(d)
        try:
            with os.scandir(d) as it:
                names = sorted(
                    e.name
                    for e in it
                    if e.name.startswith(CACHE_PREFIX)
                    and e.name.endswith(".json")
                    and e.is_file(follow_symlinks=False)
                )
        except OSError:
            continue
        for name in names[:MAX_ROOTS]:
            found.append(read_cache_file(os.path.join(d, name), since, keys))
    return tuple(found)
