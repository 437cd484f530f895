"""Validation of one uninstall candidate (C8): only
``$ASCEND_HOME_PATH/opp/static_kernel/ai_core/<package>/uninstall.sh`` with ``<package>`` the
stem of a ``.run`` produced under the outputs directory, opened component by component
with ``O_NOFOLLOW`` so the file checked is the file run."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

MARKER = b"uninstall.sh"
INSTALL_SUBDIR = ("opp", "static_kernel", "ai_core")
SCRIPT = "uninstall.sh"
#: Package names CANN produces (``static_kernel_<datetime>_<pid>``); anything else is
#: refused before it reaches a path join.
PACKAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f]")


def produced_packages(outputs: Path) -> set[str]:
    """Stems of ``.run`` regular files under ``outputs`` (never following a link)."""
    found: set[str] = set()
    stack = [str(outputs)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False) and e.name.endswith(".run"):
                    found.add(e.name[: -len(".run")])
    return found


@dataclass
class Checked:
    """A validated script, held open: the descriptor is what runs."""

    path: str
    package: str
    fd: int
    dev: int
    ino: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Refused(Exception):
    """A candidate failed validation; ``str`` is the reason."""


def _home(ascend_home: str | None) -> tuple[str, str]:
    if not ascend_home:
        raise Refused("ASCEND_HOME_PATH is not set; pass --ascend-home or set it")
    if not os.path.isabs(ascend_home):
        raise Refused(f"ASCEND_HOME_PATH {ascend_home!r} is not an absolute path")
    given = os.path.normpath(ascend_home)
    real = os.path.realpath(given)
    if not os.path.isdir(real):
        raise Refused(f"ASCEND_HOME_PATH {ascend_home!r} is not a directory")
    return given, real


def _open_below(real_home: str, parts: list[str]) -> tuple[int, os.stat_result]:
    """Walk from the install root with O_NOFOLLOW; refuse a link at any component."""
    fd = os.open(real_home, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_RDONLY if last else os.O_PATH)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                raise Refused(f"{'/'.join(parts[: i + 1])} does not exist") from None
            except OSError as exc:
                # ELOOP: the final component is a symlink (O_NOFOLLOW refuses to open it).
                raise Refused(
                    f"cannot open {'/'.join(parts[: i + 1])} without following links "
                    f"({exc.strerror})"
                ) from None
            os.close(fd)
            fd = nxt
            st = os.fstat(fd)
            if stat.S_ISLNK(st.st_mode):
                raise Refused(f"symbolic link at {'/'.join(parts[: i + 1])}")
            if not last and not stat.S_ISDIR(st.st_mode):
                raise Refused(f"{'/'.join(parts[: i + 1])} is not a directory")
        if not stat.S_ISREG(st.st_mode):
            raise Refused("the uninstall script is not a regular file")
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def check_path(candidate: str, ascend_home: str | None, packages: set[str]) -> Checked:
    """Validate one uninstall path (C8); return it open, or raise Refused with why."""
    given, real = _home(ascend_home)
    if _BAD_CHARS.search(candidate):
        raise Refused("the path contains whitespace or control characters (ANSI escapes?)")
    if "\\" in candidate:
        raise Refused("the path contains undecodable bytes or backslashes")
    if not candidate.startswith("/"):
        raise Refused("not an absolute path")
    parts_all = candidate.split("/")[1:]
    if ".." in parts_all or "." in parts_all or "" in parts_all:
        raise Refused("the path contains '..', '.' or an empty component")
    prefix = next((p for p in (given, real) if candidate.startswith(p.rstrip("/") + "/")), None)
    if prefix is None:
        raise Refused(f"outside the install root {given}/{'/'.join(INSTALL_SUBDIR)}")
    rel = candidate[len(prefix.rstrip("/")) + 1 :].split("/")
    if rel == [*INSTALL_SUBDIR, SCRIPT]:
        raise Refused("the full-uninstall script ai_core/uninstall.sh is never run")
    if len(rel) != len(INSTALL_SUBDIR) + 2 or rel[: len(INSTALL_SUBDIR)] != list(INSTALL_SUBDIR):
        raise Refused(f"not <ASCEND_HOME_PATH>/{'/'.join(INSTALL_SUBDIR)}/<package>/{SCRIPT}")
    if rel[-1] != SCRIPT:
        raise Refused(f"not a package {SCRIPT}")
    package = rel[len(INSTALL_SUBDIR)]
    if not PACKAGE_RE.fullmatch(package):
        raise Refused(f"package name {package!r} has unexpected characters")
    if package not in packages:
        raise Refused(f"no {package}.run produced under the outputs directory")
    fd, st = _open_below(real, rel)
    try:
        expected = os.path.join(real, *rel)
        if os.path.realpath(candidate) != expected:
            raise Refused("the resolved path differs from the path given (a redirect)")
        by_path = os.stat(candidate, follow_symlinks=False)
        if (by_path.st_dev, by_path.st_ino) != (st.st_dev, st.st_ino):
            raise Refused("the path and the opened file differ (changed during the check)")
    except BaseException:
        os.close(fd)
        raise
    return Checked(candidate, package, fd, st.st_dev, st.st_ino)
