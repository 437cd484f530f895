"""The hook probes' answer, cached per interpreter and start-up files (C6, issue 29).

The scan's two probes (:mod:`skgate.preflight.hooks.scan`) cost two interpreter start-ups
on every run, and they report facts, not judgements: what the workload's start-up would
load (the static record) and what it did load (the start-up record). Approvals,
baselines and the catalogue are applied to those facts on every scan, never cached.

An answer is stored under a key of everything known before a probe runs: the
interpreter as named and its file's identity (device, inode, size, times), the
interpreter flags, the workload's *start-up variables* (see :func:`startup_env`),
skgate's own probe sources, and the working directory where a path start-up resolves
depends on it (:func:`cwd_matters`: a relative interpreter path, ``PYTHONPATH`` entry or
other start-up path; otherwise start-up finds the same files from any directory, and a
run in a fresh directory, as an auto-tune agent makes for each compile, uses the
answer). The rest of the environment and the working directory are digested into the
entry: they must match only when the answer holds a start-up record and the start-up
runs code (a ``.pth`` import line, a customize module), since such code may read any
variable, or the directory, and import according to it. With the answer the entry lists the
*fingerprints* of everything it depends on, found from the answer itself: the
interpreter's executable and its ``pyvenv.cfg``, the listing (name, kind, size, times)
of every ``sys.path`` directory of the start-up (every site directory and
``PYTHONPATH`` entry among them), the content of every ``.pth`` file, customize module
and ``PYTHONPATH`` entry, and of every module file the start-up probe saw imported
beyond the baseline. A directory that had not changed for a while when the entry was
stored is checked by a few ``stat`` calls instead of its whole listing (see
:func:`quick_stamps` for why that never misses a change the answer depends on); its
listing is taken again only when one of them changed. An entry is used only when every
fingerprint, taken again now, is the same; any change (a touched or added ``.pth``, a
site directory's listing, a ``PYTHONPATH`` entry, another interpreter) is a miss and the
probes run. A corrupt, over-long, linked or foreign entry is a miss too, and so is one
in a directory or file not this user's or writable by others. So an entry, even a
forged one, is never trusted across a changed fingerprint.

The fingerprints are taken after the probes (only their answer names the paths), so an
answer is stored only when nothing it depends on changed since the moment before the
first probe started (:func:`unchanged_since`): a ``.pth`` edited or a site directory's
listing changed while a probe ran would otherwise be stored under the new fingerprint
with the old answer, and trusted later (C6). Such a scan's answer is used, not stored:
the next scan probes again.

Where: ``$XDG_CACHE_HOME/skgate/hook-probe`` (``~/.cache/...``), one file per key,
written whole and atomically (a temporary name, then ``rename``), read as a regular file
without following links and within a bound; at most :data:`MAX_ENTRIES` files (the
oldest go). ``SKGATE_HOOK_CACHE=0`` turns it off. Whether a scan's answer was probed or
cached is recorded in ``control.json`` (``hooks.probe_answer``).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from skgate.evidence.digest import sha256_bytes, small_sha256
from skgate.evidence.regular import read_bytes
from skgate.preflight.hooks.startup_code import KNOWN_STARTUP_CODE

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "skgate.hook-probe-cache/3"
#: ``control.json`` ``hooks.probe_answer``: the probes ran, or their answer was reused.
PROBED, CACHED = "probed", "cached"
#: Entries kept (one per interpreter, environment and directory in use).
MAX_ENTRIES = 64
#: An entry's size bound (a static record lists the names of every sys.path directory).
MAX_BYTES = 16 << 20
_PROBES = ("probe_static.py", "probe_snapshot.py")


def cache_dir(env: Mapping[str, str] = os.environ) -> Path | None:
    """The cache directory of this user, or None when off (``SKGATE_HOOK_CACHE=0``) or
    when there is nowhere to keep it: a relative ``XDG_CACHE_HOME`` is ignored (the XDG
    base directory spec), and a home directory that does not exist is never created for
    a cache (``HOME=/nonexist`` made ``/nonexist/.cache/...``); the probes then run."""
    if env.get("SKGATE_HOOK_CACHE", "1") == "0":
        return None
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "skgate" / "hook-probe"
    home = env.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(home) or not os.path.isdir(home):
        return None
    return Path(home) / ".cache" / "skgate" / "hook-probe"


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
        return sha256_bytes(read_bytes(path, MAX_BYTES))
    except Exception as exc:
        return f"unreadable:{type(exc).__name__}"


def _listing(path: str) -> str:
    """A directory's names with each entry's kind, size and times (not following links)."""
    h = small_sha256()
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


#: Variables that change what an interpreter runs or finds at start-up before any code
#: of the workload's own runs, so part of the key (C6):
#: - ``PYTHON*``: every one the interpreter reads (PYTHONPATH, PYTHONHOME, PYTHONUSERBASE,
#:   PYTHONNOUSERSITE, PYTHONSAFEPATH, PYTHONPLATLIBDIR; PYTHONWARNINGS imports the
#:   modules its categories name; PYTHONIOENCODING, PYTHONUTF8 and PYTHONTRACEMALLOC
#:   change which modules start-up imports; future ones too, by the prefix);
#: - ``HOME``: the user site directory (``site.getuserbase`` expands ``~``);
#: - ``PATH``: which interpreter a bare name such as ``python3`` is;
#: - ``LD_*``: the dynamic loader (``LD_LIBRARY_PATH`` picks the ``libpython`` of a
#:   shared build, so its prefix and ``sys.path``; ``LD_PRELOAD``/``LD_AUDIT`` load code);
#: - ``LANG``, ``LC_*``: the locale sets the file system and stdio encodings, so which
#:   ``encodings`` modules start-up imports and how it decodes path names;
#: - ``__PYVENV_LAUNCHER__``: a macOS framework build's venv.
#: Anything else (a job id, a timestamp, a token) cannot change them.
STARTUP_ENV_PREFIXES = ("PYTHON", "LD_", "LC_", "__PYVENV_LAUNCHER__")
STARTUP_ENV_NAMES = frozenset({"HOME", "PATH", "LANG"})


def startup_env(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The start-up variables of ``env`` (:data:`STARTUP_ENV_PREFIXES`), sorted."""
    return sorted(
        (k, v)
        for k, v in env.items()
        if k in STARTUP_ENV_NAMES or k.startswith(STARTUP_ENV_PREFIXES)
    )


def rest_digest(env: Mapping[str, str], cwd: str | None = None) -> str:
    """A digest of every other variable and the working directory: start-up *code* (a
    ``.pth`` import line, a customize module) may read any of them, e.g. setuptools'
    ``distutils-precedence.pth`` reads ``SETUPTOOLS_USE_DISTUTILS``, and import according
    to its value."""
    keyed = dict(startup_env(env))
    rest = sorted((k, v) for k, v in env.items() if k not in keyed)
    return sha256_bytes(json.dumps([rest, cwd]).encode())


#: Start-up variables that hold a list of paths (``os.pathsep``), where an empty entry
#: or a relative one is resolved against the working directory (PYTHONPATH: by the
#: import system; LD_LIBRARY_PATH: by the loader; PYTHONHOME: ``prefix:exec_prefix``).
_PATH_LISTS = ("PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONHOME")
#: Start-up variables that hold one path; a relative one is resolved against it too.
_PATH_VALUES = ("PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PYTHONEXECUTABLE", "HOME")


def cwd_matters(python: str, env: Mapping[str, str]) -> bool:
    """Whether what start-up finds, before any of its code runs, can depend on the
    working directory: a relative interpreter path (or a bare name found through a
    relative or empty ``PATH`` entry), or a relative path in a start-up variable. Start-up
    *code* may read the directory too: that is :func:`rest_digest`'s part (C6)."""
    if os.sep in python:
        if not os.path.isabs(python):
            return True
    elif any(not os.path.isabs(p) for p in env.get("PATH", "").split(os.pathsep)):
        return True
    for name, value in startup_env(env):
        if name == "PATH":  # only finds the interpreter (above)
            continue
        pieces = value.split(os.pathsep)
        if name in _PATH_LISTS and value and any(not os.path.isabs(p) for p in pieces):
            return True
        if name in _PATH_VALUES and value and not os.path.isabs(value):
            return True
        # Any other variable: a piece spelt as a relative path (LD_PRELOAD=./x.so).
        if any(os.sep in p and not os.path.isabs(p) for q in pieces for p in q.split()):
            return True
    return False


def runs_code(static: Mapping[str, Any]) -> bool:
    """Whether the start-up the static record describes runs code found on the system:
    a ``.pth`` import line or a customize module (found, or failing to be found)."""
    pths = static.get("pth", [])
    return bool(static.get("customize")) or any(r.get("import_lines") for r in pths)


def reads_digest(env: Mapping[str, str]) -> str:
    """A digest of the variables known start-up code reads
    (:data:`~skgate.preflight.hooks.startup_code.KNOWN_STARTUP_CODE`), set or not."""
    names = KNOWN_STARTUP_CODE.reads
    return sha256_bytes(json.dumps([[n, env.get(n)] for n in names]).encode())


def known_code(
    static: Mapping[str, Any], startup: Mapping[str, Any], deps: Mapping[str, str]
) -> bool:
    """Whether every piece of code the start-up ran is known by its exact content
    (:data:`~skgate.preflight.hooks.startup_code.KNOWN_STARTUP_CODE`): no customize module,
    every ``.pth`` with an import line a catalogued file, and every module the start-up
    imported beyond the baseline a catalogued module file. Contents are those of
    ``deps`` (the fingerprints, which :func:`load` has just taken again), never the
    record's own word. Such a start-up reads only the catalogued variables, so its record
    holds in any directory and with any other variable (:func:`load`, C6)."""
    if static.get("customize"):
        return False
    for pth in static.get("pth", []):
        if pth.get("import_lines") and deps.get(str(pth.get("path"))) not in (
            KNOWN_STARTUP_CODE.pth_sha256
        ):
            return False
    base = {str(m[0]) for m in static.get("baseline", {}).get("modules", [])}
    for name, path in startup.get("modules", []):
        if str(name) in base:
            continue
        known = KNOWN_STARTUP_CODE.modules.get(str(name))
        if known is None or not path or deps.get(str(path)) not in known:
            return False
    return True


def cache_key(
    python: str, env: Mapping[str, str], cwd: str | None, flags: Sequence[str], probe_dir: Path
) -> str:
    """The key of an answer: everything it depends on that is known before a probe runs,
    whatever start-up code does aside (:func:`rest_digest`, checked by :func:`load`)."""
    exe = os.path.realpath(python) if os.sep in python else python
    parts = {
        "schema": SCHEMA,
        "python": python,
        "exe": [exe, _stat_id(exe)],
        "flags": list(flags),
        "cwd": cwd if cwd_matters(python, env) else None,
        "env": startup_env(env),
        "probes": [_content(str(probe_dir / name)) for name in _PROBES],
    }
    return sha256_bytes(json.dumps(parts, sort_keys=True).encode())


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


#: A directory's quick stamp is kept only when everything it stamps last changed (ctime)
#: this long before the stamp was taken. A change made in the same tick of the file
#: system's clock as the one before it leaves every time as it was (the "racy" case of
#: git's index); a change made after the stamp gets a ctime no earlier than the stamp's
#: moment less one tick (or, where times are whole seconds, that second), so it can never
#: equal a ctime this much older.
SETTLED_NS = 2_000_000_000


def _stamp(path: str) -> tuple[str, int]:
    """What ``path`` is now (followed, as start-up follows it), and its ctime."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"missing:{exc.errno}", 0
    return f"{st.st_dev}:{st.st_ino}:{st.st_mode}:{st.st_size}:{st.st_mtime_ns}", st.st_ctime_ns


def _quick(path: str, names: Sequence[str]) -> tuple[str, int]:
    """The quick stamp of directory ``path`` over ``names``, and its newest ctime."""
    rows = [_stamp(path)] + [_stamp(os.path.join(path, n)) for n in names]
    return "\n".join(f"{text}:{ctime}" for text, ctime in rows), max(c for _, c in rows)


def quick_stamps(deps: Mapping[str, str], static: Mapping[str, Any]) -> dict[str, list[Any]]:
    """For each directory among ``deps``: a stamp that costs a few ``stat`` calls where
    its listing costs one per entry, kept when settled (:data:`SETTLED_NS`); when it is
    unchanged, the directory's listing fingerprint is taken as unchanged (:func:`load`).

    Why that is sound: of a ``sys.path`` directory the answer depends on (1) the names
    and kinds of its entries (what :mod:`probe_static` lists, the ``.pth`` names): any
    entry created, removed or renamed changes the directory's own mtime and ctime; (2)
    whether each identifier-named subdirectory holds an ``__init__``: a change there
    changes that subdirectory's times, stamped here (followed, as the probe follows a
    link); (3) the code start-up runs: the ``.pth`` files, customize modules and modules
    imported beyond the baseline are fingerprinted by content on their own, and the
    baseline's own module files in the directory (``site.py``, ``os.py``...) are stamped
    here. An in-place edit of any other file (a module nobody imports at start-up, a
    ``RECORD``) changes the listing but cannot change the answer."""
    base = static.get("baseline", {}).get("modules", [])
    files = [os.path.abspath(str(m[1])) for m in base if isinstance(m[1], str)]
    out: dict[str, list[Any]] = {}
    for path, fp in deps.items():
        if not fp.startswith("dir:"):
            continue
        taken = time.time_ns()
        try:
            with os.scandir(path) as it:
                names = [e.name for e in it if e.name.isidentifier() and e.is_dir()]
        except OSError:
            continue
        names += [os.path.basename(f) for f in files if os.path.dirname(f) == path]
        names.sort()
        stamp, newest = _quick(path, names)
        if newest < taken - SETTLED_NS:
            out[path] = [stamp, names]
    return out


def _holds(deps: Mapping[str, str], quick: Any) -> bool:
    """Every fingerprint in ``deps`` holds now: a directory with an unchanged quick
    stamp (:func:`quick_stamps`) without listing it again, any other in full."""
    quick = quick if isinstance(quick, dict) else {}
    for path, fp in deps.items():
        got = quick.get(path)
        names = got[1] if isinstance(got, list) and len(got) == 2 else None
        if (
            isinstance(names, list)
            and all(isinstance(n, str) and os.sep not in n for n in names)
            and _quick(path, names)[0] == got[0]
        ):
            continue
        if _content(path) != fp:
            return False
    return True


class Entry:
    """A cached answer: the static record, and the start-up record when one was taken."""

    def __init__(
        self,
        static: dict[str, Any],
        startup: dict[str, Any] | None,
        rest: str = "",
        reads: str = "",
    ) -> None:
        self.static = static
        self.startup = startup
        #: :func:`rest_digest` of the environment the start-up record was taken in.
        self.rest = rest
        #: :func:`reads_digest` of that environment.
        self.reads = reads


def load(folder: Path | None, key: str, rest: str, reads: str = "") -> Entry | None:
    """The answer stored under ``key`` if every fingerprint it lists is unchanged now,
    without its start-up record when that comes from a start-up that runs code and was
    taken with other variables or in another directory (``rest``, :func:`rest_digest`),
    unless all that code is known (:func:`known_code`) and the variables it reads are as
    they were (``reads``, :func:`reads_digest`); None (probe again) for anything else:
    absent, corrupt, linked, over-long, stale."""
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
        if set(deps) != set(dependencies(static, startup)) or not _holds(deps, got.get("quick")):
            return None
        # Start-up code may import according to any variable or the directory: its record
        # holds only where it was taken; the static record never depends on them, and
        # is used (only the start-up probe runs again).
        # Code known by content reads only the catalogued variables: an agent's fresh
        # directory per compile, or a job id in the environment, changes nothing it does.
        if (
            startup is not None
            and runs_code(static)
            and got.get("rest") != rest
            and not (got.get("reads") == reads and known_code(static, startup, deps))
        ):
            startup = None
        return Entry(static, startup, rest, reads)
    except Exception:
        return None


def _own(path: Path, kind: Callable[[int], bool]) -> bool:
    """``path`` (not followed) is of ``kind``, this user's, and nobody else may write it:
    an entry another user could write could be forged to match every fingerprint."""
    st = os.lstat(path)
    return kind(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def moment() -> int:
    """The moment a probe starts, to give :func:`store` as ``since``."""
    return time.time_ns()


def _changed_at(path: str) -> int:
    """When ``path`` last changed (its ctime, followed or not, the newer); for a path that
    is not there, when its directory last changed (a file made and removed again)."""
    times = []
    for look in (os.lstat, os.stat):
        with contextlib.suppress(OSError):
            times.append(look(path).st_ctime_ns)
    if not times:
        with contextlib.suppress(OSError):
            times.append(os.stat(os.path.dirname(path) or ".").st_ctime_ns)
    return max(times, default=0)


def unchanged_since(paths: Iterable[str], since: int) -> bool:
    """No path in ``paths`` changed at or after ``since`` (a :func:`moment`).

    The kernel sets a file's ctime on every change to it (content, times, mode, links) and
    a directory's on every name added, removed or renamed in it; nobody can set it back.
    A change made after ``since`` has a ctime no earlier than ``since`` less one tick of
    the file system's clock: a change inside that tick comes before the probe's first
    read (an interpreter start takes longer), so the probe saw it. Where the file system
    keeps whole seconds (a ctime with no nanoseconds), any change in ``since``'s second
    counts as after it: only a miss more, never a stale answer kept."""
    whole = since - since % 1_000_000_000
    for path in paths:
        at = _changed_at(path)
        if at >= since or (at % 1_000_000_000 == 0 and at >= whole):
            return False
    return True


def store(folder: Path | None, key: str, entry: Entry, since: int | None = None) -> bool:
    """Write ``entry`` under ``key`` whole (temporary name, then rename); never fails the
    scan (a cache that cannot be written is only a cache that misses). With ``since``
    (the :func:`moment` the first probe started), only when no path the answer depends on
    changed since then (:func:`unchanged_since`). True when the entry was written."""
    if folder is None:
        return False
    paths = dependencies(entry.static, entry.startup)
    deps = fingerprints(paths)
    # After the fingerprints: a change made between the probe and them is seen here,
    # one made after them makes a later load miss (C6).
    if since is not None and not unchanged_since(paths, since):
        return False
    record = {
        "schema": SCHEMA,
        "key": key,
        "static": entry.static,
        "startup": entry.startup,
        "rest": entry.rest,
        "reads": entry.reads,
        "fingerprints": deps,
        "quick": quick_stamps(deps, entry.static),
    }
    data = json.dumps(record).encode()
    if len(data) > MAX_BYTES:
        return False
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
        return True
    return False


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
