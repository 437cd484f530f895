"""The hook probes' answer, cached per interpreter and start-up files (C6, issue 29).

The scan's two probes (:mod:`skgate.preflight.hooks.scan`) cost two interpreter start-ups
on every run, and they report facts, not judgements: what the workload's start-up would
load (the static record) and what it did load (the start-up record). Approvals,
baselines and the catalogue are applied to those facts on every scan, never cached.

An answer is stored under a key of everything known before a probe runs: the
interpreter as named and its file's identity (device, inode, size, times), the
interpreter flags, the working directory, the whole workload environment and skgate's
own probe sources. With it the entry lists the *fingerprints* of everything the answer
depends on, found from the answer itself: the interpreter's executable and its
``pyvenv.cfg``, the listing (name, kind, size, times) of every ``sys.path`` directory of
the start-up (every site directory and ``PYTHONPATH`` entry among them), the content of
every ``.pth`` file, customize module and ``PYTHONPATH`` entry, and of every module file
the start-up probe saw imported beyond the baseline. An entry is used only when every
fingerprint, taken again now, is the same; any change (a touched or added ``.pth``, a
site directory's listing, a ``PYTHONPATH`` entry, another interpreter) is a miss and the
probes run. A corrupt, over-long, linked or foreign entry is a miss too, and so is one
in a directory or file not this user's or writable by others. So an entry, even a
forged one, is never trusted across a changed fingerprint.

Where: ``$XDG_CACHE_HOME/skgate/hook-probe`` (``~/.cache/...``), one file per key,
written whole and atomically (a temporary name, then ``rename``), read as a regular file
without following links and within a bound; at most :data:`MAX_ENTRIES` files (the
oldest go). ``SKGATE_HOOK_CACHE=0`` turns it off. Whether a scan's answer was probed or
cached is recorded in ``control.json`` (``hooks.probe_answer``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skgate.evidence.regular import read_bytes

SCHEMA = "skgate.hook-probe-cache/1"
#: ``control.json`` ``hooks.probe_answer``: the probes ran, or their answer was reused.
PROBED, CACHED = "probed", "cached"
#: Entries kept (one per interpreter, environment and directory in use).
MAX_ENTRIES = 64
#: An entry's size bound (a static record lists the names of every sys.path directory).
MAX_BYTES = 16 << 20
_PROBES = ("probe_static.py", "probe_snapshot.py")


def cache_dir(env: Mapping[str, str] = os.environ) -> Path | None:
    """The cache directory of this user, or None when off (``SKGATE_HOOK_CACHE=0``)."""
    if env.get("SKGATE_HOOK_CACHE", "1") == "0":
        return None
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "skgate" / "hook-probe"


def _stat_id(path: str) -> list[Any]:
    try:
        st = os.stat(path)
    except OSError as exc:
        return ["missing", exc.errno]
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode]


def _content(path: str) -> str:
    """sha256 of a file's bytes (up to the bound), or a marker of what is there instead."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"missing:{exc.errno}"
    if stat.S_ISDIR(st.st_mode):
        return "dir:" + _listing(path)
    if not stat.S_ISREG(st.st_mode):
        return f"kind:{stat.S_IFMT(st.st_mode)}:{os.path.realpath(path)}"
    try:
        return hashlib.sha256(read_bytes(path, MAX_BYTES)).hexdigest()
    except Exception as exc:
        return f"unreadable:{type(exc).__name__}"


def _listing(path: str) -> str:
    """A directory's names with each entry's kind, size and times (not following links)."""
    h = hashlib.sha256()
    try:
        st = os.stat(path)
        h.update(f"{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}\n".encode())
        with os.scandir(path) as it:
            rows = sorted(
                (e.name, e.stat(follow_symlinks=False)) for e in it if e.name != "__pycache__"
            )
    except OSError as exc:
        return f"missing:{exc.errno}"
    for name, est in rows:
        h.update(
            f"{name}\0{est.st_mode}:{est.st_size}:{est.st_mtime_ns}:{est.st_ctime_ns}\n".encode()
        )
    return h.hexdigest()


def cache_key(
    python: str, env: Mapping[str, str], cwd: str | None, flags: Sequence[str], probe_dir: Path
) -> str:
    """The key of an answer: everything it depends on that is known before a probe runs."""
    exe = os.path.realpath(python) if os.sep in python else python
    parts = {
        "schema": SCHEMA,
        "python": python,
        "exe": [exe, _stat_id(exe)],
        "flags": list(flags),
        "cwd": cwd,
        "env": sorted(env.items()),
        "probes": [_content(str(probe_dir / name)) for name in _PROBES],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def dependencies(static: Mapping[str, Any], startup: Mapping[str, Any] | None) -> list[str]:
    """Every path the answer depends on, found from the answer itself."""
    paths: list[str] = []
    exe = static.get("executable")
    if isinstance(exe, str) and exe:
        exe_dir = os.path.dirname(os.path.abspath(exe))
        paths += [exe, os.path.join(exe_dir, "pyvenv.cfg")]
        paths.append(os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg"))
    for key in ("sys_path", "sitedirs"):
        paths += [str(p) for p in static.get(key, []) if p]
    user = static.get("user_site")
    if isinstance(user, str):
        paths.append(user)
    paths += [str(e.get("path")) for e in static.get("pythonpath", []) if e.get("path")]
    paths += [str(r.get("path")) for r in static.get("pth", []) if r.get("path")]
    for spec in static.get("customize", {}).values():
        if isinstance(spec, dict):
            paths += [str(spec["origin"])] if spec.get("origin") else []
            paths += [str(p) for p in spec.get("package") or []]
    for name in ("pythonstartup", "pythonhome"):
        if static.get(name):
            paths.append(str(static[name]))
    if startup is not None:
        base = {str(m[0]) for m in static.get("baseline", {}).get("modules", [])}
        paths += [str(f) for name, f in startup.get("modules", []) if f and str(name) not in base]
    return list(dict.fromkeys(paths))


def fingerprints(paths: Iterable[str]) -> dict[str, str]:
    return {p: _content(p) for p in paths}


class Entry:
    """A cached answer: the static record, and the start-up record when one was taken."""

    def __init__(self, static: dict[str, Any], startup: dict[str, Any] | None) -> None:
        self.static = static
        self.startup = startup


def load(folder: Path | None, key: str) -> Entry | None:
    """The answer stored under ``key`` if every fingerprint it lists is unchanged now;
    None (probe again) for anything else: absent, corrupt, linked, over-long, stale."""
    if folder is None:
        return None
    try:
        if not _own(folder, stat.S_ISDIR) or not _own(folder / f"{key}.json", stat.S_ISREG):
            return None
        got = json.loads(read_bytes(folder / f"{key}.json", MAX_BYTES))
        if not isinstance(got, dict) or got.get("schema") != SCHEMA or got.get("key") != key:
            return None
        static, startup, deps = got["static"], got.get("startup"), got["fingerprints"]
        if not isinstance(static, dict) or not isinstance(deps, dict):
            return None
        if startup is not None and not isinstance(startup, dict):
            return None
        # The entry's own list must be the one its answer implies (a forged entry cannot
        # drop a path from it), and each fingerprint must hold now.
        if set(deps) != set(dependencies(static, startup)) or fingerprints(deps) != deps:
            return None
        return Entry(static, startup)
    except Exception:
        return None


def _own(path: Path, kind: Callable[[int], bool]) -> bool:
    """``path`` (not followed) is of ``kind``, this user's, and nobody else may write it:
    an entry another user could write could be forged to match every fingerprint."""
    st = os.lstat(path)
    return kind(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def store(folder: Path | None, key: str, entry: Entry) -> None:
    """Write ``entry`` under ``key`` whole (temporary name, then rename); never fails the
    scan (a cache that cannot be written is only a cache that misses)."""
    if folder is None:
        return
    deps = fingerprints(dependencies(entry.static, entry.startup))
    record = {
        "schema": SCHEMA,
        "key": key,
        "static": entry.static,
        "startup": entry.startup,
        "fingerprints": deps,
    }
    data = json.dumps(record).encode()
    if len(data) > MAX_BYTES:
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.rename(tmp, folder / f"{key}.json")
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        _trim(folder)


def _trim(folder: Path) -> None:
    """Keep the newest :data:`MAX_ENTRIES` entries."""
    entries = []
    with os.scandir(folder) as it:
        for e in it:
            if e.name.endswith(".json") and e.is_file(follow_symlinks=False):
                entries.append((e.stat(follow_symlinks=False).st_mtime_ns, e.path))
    for _, path in sorted(entries)[:-MAX_ENTRIES]:
        with contextlib.suppress(OSError):
            os.unlink(path)
