"""Working-directory outputs: preserve-then-clear cleanup (C8).

Upstream's ``sk_cleanup_local`` runs ``rm -rf`` over the outputs of a compile. skgate
never deletes what it has not preserved: ``cleanup`` *moves* each output into the scene
of the attempt that produced them, ``<attempt>/scene/<k>/``, and writes a manifest of
paths, sizes and hashes (schema ``skgate.scene/1``) whose own hash is chained into the
ledger. On one file system a move is a ``rename`` of each top-level entry, so clearing
the working directory costs the same for ten files or a million; across file systems it
is copy, verify every hash, then remove the source.

It refuses (``StillLiveError``, exit 6, nothing moved) while the attempt's runner or any process it
owns is alive (by pid *and* start time), or while any other process has its working
directory or an open file under those paths (read from ``/proc``, read-only). It never
follows a symbolic link: a link in place of an output is refused and left alone; a link
inside an output directory is moved as a link. Running it twice moves nothing the second
time.

``retry`` (:mod:`skgate.workdir.retry`) preserves the interrupted attempt's scene this way
before it runs the same frozen request again (C2.4, C4).

Schema history: ``skgate.scene/1``: first version (2026-11).
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence import digest, files, ledger, seal
from skgate.evidence.files import CONTROL, require_dir, write_json_new
from skgate.evidence.load import Control, load_control
from skgate.evidence.sealed import FileEntry
from skgate.evidence.walk import walk_files
from skgate.model.errors import BlockedError, EvidenceError, StillLiveError, UsageError
from skgate.model.outcomes import MoveMethod
from skgate.model.request import CLEANUP_OUTPUTS, OPTIONAL_CLEANUP_OUTPUTS
from skgate.model.schema import SCHEMA_CONTROL
from skgate.proc import observe
from skgate.read.liveness import live_processes, runner_is_alive

#: C8: the outputs upstream's cleanup clears, in the order it lists them.
OUTPUTS = CLEANUP_OUTPUTS
#: Also cleared by upstream; optional here (they may hold the user's own files).
OPTIONAL_OUTPUTS = OPTIONAL_CLEANUP_OUTPUTS


@dataclass(frozen=True)
class Moved:
    name: str
    kind: str  # "dir" or "file"
    method: MoveMethod
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "method": self.method.value}


@dataclass(frozen=True)
class CleanupResult:
    workdir: str
    attempt: str
    scene: str | None
    moved: tuple[Moved, ...]
    refused: tuple[tuple[str, str], ...]  # (name, reason)
    clear_seconds: float
    total_seconds: float

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_dict(self) -> dict[str, Any]:
        return {
            "workdir": self.workdir,
            "attempt": self.attempt,
            "scene": self.scene,
            "moved": [m.to_dict() for m in self.moved],
            "refused": [{"name": n, "reason": r} for n, r in self.refused],
            "clear_seconds": self.clear_seconds,
            "total_seconds": self.total_seconds,
        }


# ---------------------------------------------------------------------------
# Which attempt, and is anything still using the outputs?


def producing_attempt(workdir: Path, root: Path) -> tuple[Path, Control]:
    """The newest attempt of ``root`` whose request ran in ``workdir``, and its control."""
    real = os.path.realpath(workdir)
    for attempt in reversed(ledger.list_attempts(root)):
        try:
            control = load_control(attempt)
        except EvidenceError:
            continue
        if os.path.realpath(control.request.cwd) == real:
            return attempt, control
    raise UsageError(
        f"no attempt in {root} ran in {workdir}; pass --root of the run that produced "
        "these outputs (skgate preserves a scene only into the attempt that made it)"
    )


def attempt_for_cleanup(
    attempt: Path, root: Path, workdir: Path, control: Control | None = None
) -> tuple[Path, Control]:
    """Check a named attempt before anything moves into it (C8); return it as ``root/attempts/N``.

    It must be an attempt directory (``control.json`` of schema ``skgate.control/1``)
    directly under ``root/attempts`` (also given as ``NNNN`` or ``attempts/NNNN`` of
    ``root``), so its scene is chained into that root's ledger, and its request must have
    run in ``workdir`` (real paths compared): a scene preserved into any other directory,
    or into another workdir's attempt, would be evidence of the wrong run. ``control``
    is the attempt's control already loaded by the caller (``retry``), read once.
    """
    tried = [attempt]
    if not attempt.is_absolute():
        tried += [root / ledger.ATTEMPTS / attempt, root / attempt]
    found = next((p for p in tried if p.is_dir()), None)
    if found is None:
        raise UsageError(
            f"--attempt {attempt}: no such attempt directory (give {root}/{ledger.ATTEMPTS}/NNNN)"
        )
    real = Path(os.path.realpath(found))
    base = Path(os.path.realpath(root / ledger.ATTEMPTS))
    if real.parent != base or not real.name.isdigit():
        raise UsageError(
            f"--attempt {attempt}: not an attempt of the evidence root {root} "
            f"(expected {root}/{ledger.ATTEMPTS}/NNNN); pass the --root it belongs to"
        )
    if control is None:
        try:
            control = load_control(real)
        except EvidenceError as exc:
            raise UsageError(
                f"--attempt {attempt}: not an attempt directory ({CONTROL} is not "
                f"{SCHEMA_CONTROL} evidence: {exc})"
            ) from None
    cwd = control.request.cwd
    if os.path.realpath(cwd) != os.path.realpath(workdir):
        raise UsageError(
            f"--attempt {attempt} ran in {cwd}, not in {workdir}; its scene holds only the "
            "outputs of its own working directory (C8)"
        )
    return root / ledger.ATTEMPTS / real.name, control


def owned_alive(attempt: Path, control: Control) -> list[str]:
    """The attempt's runner and owned processes that may still live (pid + start time, C4).

    The one liveness answer of ``skgate status`` (:mod:`skgate.read.liveness`): the runner, the
    manifest, ``procs.jsonl`` and the cgroup leaf, each by same boot, pid and start time
    (issue 21 s1: the manifest alone missed an ``opc`` forked after its last snapshot).
    """
    return [text for _, text in _alive(attempt, control)]


def _alive(attempt: Path, control: Control) -> list[tuple[int, str]]:
    alive: list[tuple[int, str]] = []
    if runner_is_alive(control):
        alive.append((control.runner_pid, f"runner pid {control.runner_pid}"))
    same_boot = observe.this_boot(control.boot_id)
    owned = live_processes(attempt, same_boot=same_boot)
    alive.extend((p.pid, f"owned pid {p.pid} ({p.name})") for p in owned)
    return alive


def refuse_live(attempt: Path, control: Control, action: str) -> None:
    """Exit 6 naming the pids while anything the attempt owns may live (C4, C8)."""
    alive = _alive(attempt, control)
    if alive:
        texts = [text for _, text in alive]
        shown = ", ".join(texts[:6]) + (f" and {len(texts) - 6} more" if len(texts) > 6 else "")
        raise StillLiveError(
            f"attempt {attempt} is still running ({shown}); {action} refused: wait for its "
            f"natural return ('skgate wait {attempt}') or end it with 'skgate stop "
            f"{attempt}'; skgate never kills it for you (C4, C8)",
            tuple(pid for pid, _ in alive),
        )


def users_of(paths: Iterable[str]) -> list[str]:
    """Other processes whose cwd or an open file is under ``paths`` (read-only /proc)."""
    prefixes = [p.rstrip("/") for p in paths]
    me = os.getpid()

    def under(target: str) -> bool:
        return any(target == p or target.startswith(p + "/") for p in prefixes)

    found: list[str] = []
    for pid in observe.iter_pids():
        if pid == me:
            continue
        try:
            if under(os.readlink(f"/proc/{pid}/cwd")):
                found.append(f"pid {pid} has its working directory there")
                continue
        except OSError:
            pass
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or another user's process we may not inspect
        for fd in fds:
            try:
                if under(os.readlink(f"/proc/{pid}/fd/{fd}")):
                    found.append(f"pid {pid} has a file open there")
                    break
            except OSError:
                continue
    return found


# ---------------------------------------------------------------------------
# Moving


def _new_scene(attempt: Path) -> Path:
    base = attempt / seal.SCENE_DIR
    base.mkdir(exist_ok=True)
    n = len(seal.scene_dirs(attempt)) + 1
    while True:
        scene = base / f"{n:02d}"
        try:
            scene.mkdir()
        except FileExistsError:
            n += 1
            continue
        return scene


def _copy_verify_remove(src: Path, dst: Path, is_dir: bool) -> None:
    """Across file systems: copy (links as links), compare every hash, then remove.

    The copy is made under a dot-named temporary name and renamed into place once every
    hash matches: a cleanup killed mid-copy leaves a temporary file (removed by
    ``recover``, the original still in place), never a partial output in the scene."""
    tmp = files.temp_name(dst)
    if is_dir:
        shutil.copytree(src, tmp, symlinks=True)
        want = seal.manifest_entries(src)
        got = seal.manifest_entries(tmp)
    else:
        shutil.copy2(src, tmp, follow_symlinks=False)
        want = [FileEntry(src.name, *_hash(src))]
        got = [FileEntry(src.name, *_hash(tmp))]
    if want != got:
        raise EvidenceError(
            f"{src}: the copy into {dst} does not match the original; nothing was removed"
        )
    os.rename(tmp, dst)
    if is_dir:
        shutil.rmtree(src)
    else:
        src.unlink()


def _hash(path: Path) -> tuple[str, int]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return digest.hash_fd(fd)
    finally:
        os.close(fd)


def _links(base: Path) -> list[dict[str, str]]:
    _, others = walk_files(base)
    out = []
    for name in others:
        try:
            out.append({"name": name, "target": os.readlink(base / name)})
        except OSError:
            continue
    return out


def cleanup(
    workdir: Path,
    root: Path,
    *,
    attempt: Path | None = None,
    include_optional: bool = False,
    extra: Iterable[str] = (),
) -> CleanupResult:
    """Preserve the C8 outputs of ``workdir`` into their attempt's scene, then clear them.

    ``extra`` names further direct children of ``workdir`` to treat the same way (for
    example a custom outputs directory).
    """
    return cleanup_checked(
        workdir, root, attempt=attempt, include_optional=include_optional, extra=extra
    )


def cleanup_checked(
    workdir: Path,
    root: Path,
    *,
    attempt: Path | None,
    include_optional: bool,
    extra: Iterable[str],
    checked: Control | None = None,
) -> CleanupResult:
    """:func:`cleanup`. ``checked`` is the named attempt's control when ``retry`` has just
    read it and found its runner and processes ended: one read, one liveness pass."""
    started = time.monotonic()
    require_dir(
        workdir, "working directory", "pass the directory the compile ran in", follow_links=True
    )
    real_work = Path(os.path.realpath(workdir))
    if attempt is None:
        attempt, control = producing_attempt(real_work, root)
    else:
        attempt, control = attempt_for_cleanup(attempt, root, real_work, checked)
    names = [*OUTPUTS, *(OPTIONAL_OUTPUTS if include_optional else ()), *extra]
    present: list[tuple[str, os.stat_result]] = []
    refused: list[tuple[str, str]] = []
    for name in dict.fromkeys(names):
        if "/" in name or name in ("", ".", ".."):
            refused.append((name, "not a plain entry name of the working directory"))
            continue
        try:
            st = os.lstat(real_work / name)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            # Never follow a link out of the working directory; leave it for a person.
            target = os.readlink(real_work / name)
            refused.append((name, f"a symbolic link (to {target}); not followed, left in place"))
            continue
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            refused.append((name, "neither a directory nor a regular file; left in place"))
            continue
        present.append((name, st))
    if not present:
        t = time.monotonic() - started
        return CleanupResult(str(real_work), str(attempt), None, (), tuple(refused), t, t)
    if checked is None:
        refuse_live(attempt, control, "cleanup")
    users = users_of(str(real_work / n) for n, _ in present)
    if users:
        raise BlockedError(
            f"outputs in {real_work} are in use ({'; '.join(users[:3])}); "
            "cleanup refuses while another process uses them"
        )
    # One writer of the attempt's scenes at a time, and never while 'skgate recover'
    # finishes a scene a killed cleanup left (issue 28): the flock recover takes on the
    # attempt directory, released when its fd closes (also by a SIGKILL).
    lock = os.open(attempt, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _preserve(attempt, real_work, present, tuple(refused), started)
    finally:
        os.close(lock)


def _preserve(
    attempt: Path,
    real_work: Path,
    present: list[tuple[str, os.stat_result]],
    refused: tuple[tuple[str, str], ...],
    started: float,
) -> CleanupResult:
    """Move ``present`` into a new scene of ``attempt``, write its manifest, index it."""
    scene = _new_scene(attempt)
    moved: list[Moved] = []
    wfd = os.open(real_work, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    sfd = os.open(scene, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name, st in present:
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
            try:
                # Relative to held directory fds: a directory swapped for a link after
                # the check above cannot redirect the move elsewhere.
                os.rename(name, name, src_dir_fd=wfd, dst_dir_fd=sfd)
                method = MoveMethod.RENAME
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise EvidenceError(
                        f"{real_work / name}: cannot move into {scene} ({exc.strerror})"
                    ) from None
                _copy_verify_remove(real_work / name, scene / name, kind == "dir")
                method = MoveMethod.COPY
            moved.append(Moved(name, kind, method, str(real_work / name)))
        os.fsync(wfd)
        os.fsync(sfd)
    finally:
        os.close(wfd)
        os.close(sfd)
    clear = time.monotonic() - started
    entries = seal.manifest_entries(scene)
    manifest = scene / seal.SCENE_MANIFEST
    write_json_new(
        manifest,
        {
            "schema": seal.SCHEMA_SCENE,
            "attempt": attempt.name,
            "workdir": str(real_work),
            "created_at": time.time(),
            "moved": [m.to_dict() for m in moved],
            "files": [e.to_dict() for e in entries],
            "links": _links(scene),
        },
    )
    attempt_root = ledger.root_of(attempt)
    if attempt_root is not None:
        ledger.record_scene(attempt_root, attempt, manifest)
    total = time.monotonic() - started
    return CleanupResult(
        str(real_work), str(attempt), str(scene), tuple(moved), refused, clear, total
    )
