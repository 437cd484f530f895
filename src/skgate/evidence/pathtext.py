"""Evidence paths as text, spelled exactly as :mod:`pathlib` spells them (issue 29).

``import pathlib`` costs ``skgate status`` as much as the whole interpreter's start-up
(it brings ``re``, ``fnmatch``, ``urllib.parse``, ``ipaddress``, ``ntpath``), so the
read side of the evidence (regular files, the seal check, the recorded verdict, the
attempt lookup) works on ``str`` paths. Paths it prints (``evidence: ...``, "X: no such
attempt directory") must read as they always did, so these functions give the text
``str(PurePosixPath(...))`` would give: repeated slashes and ``.`` components dropped, a
trailing slash dropped, ``..`` kept (only the file system knows where it leads), ``''``
read as ``.``, and two leading slashes kept as POSIX allows. tests/evidence/
test_pathtext.py compares them with pathlib. A ``Path`` passed in reads as its text.
"""

from __future__ import annotations

import errno
import os
import stat

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeVar

    #: A path of the caller's kind: functions that take a ``Path`` give ``Path`` back,
    #: and ``str`` for ``str`` (callers outside ``status`` keep their ``Path`` API).
    P = TypeVar("P", str, Path)


def plain(path: str | os.PathLike[str]) -> str:
    """``str(PurePosixPath(path))``."""
    text = os.fspath(path)
    if (
        text
        and "//" not in text
        and "/./" not in text
        and not text.endswith(("/", "/."))
        and not text.startswith("./")
    ):
        return text  # already as pathlib spells it: the usual case, one scan, no split
    if text.startswith("//") and not text.startswith("///"):
        lead = "//"
    elif text.startswith("/"):
        lead = "/"
    else:
        lead = ""
    return lead + "/".join(p for p in text.split("/") if p and p != ".") or "."


def join(base: str | os.PathLike[str], name: str) -> str:
    """``str(PurePosixPath(base) / name)``."""
    if name.startswith("/"):
        return plain(name)  # an absolute name replaces the base, as with ``/``
    head = plain(base)
    return plain(head + name if head.endswith("/") else f"{head}/{name}")


def name(path: str | os.PathLike[str]) -> str:
    """``PurePosixPath(path).name``: the last component, ``''`` for a root or ``.``."""
    text = plain(path)
    last = text.rsplit("/", 1)[-1]
    return "" if last == "." else last


def parent(path: str | os.PathLike[str]) -> str:
    """``str(PurePosixPath(path).parent)``."""
    text = plain(path)
    cut = text.rfind("/")
    if cut < 0:
        return "."
    head = text[:cut]
    if head in ("", "/"):  # "/x" and "//x": the root itself, never "" or a lone "/"
        return text[: cut + 1]
    return head


#: What ``Path.exists``/``is_dir``/``is_file`` take for "no" (pathlib's ``_ignore_error``);
#: any other failure (EACCES on an unreadable root) is raised, as pathlib raises it, for
#: the caller's one-line "check its permissions" (tests/cli/test_permissions.py).
_NO = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _mode(path: str | os.PathLike[str]) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError as exc:
        if exc.errno not in _NO:
            raise
        return None
    except ValueError:  # a NUL in the name: pathlib says "no" too
        return None


def exists(path: str | os.PathLike[str]) -> bool:
    """``Path(path).exists()`` (links followed), raising what it raises."""
    return _mode(path) is not None


def is_dir(path: str | os.PathLike[str]) -> bool:
    """``Path(path).is_dir()`` (links followed), raising what it raises."""
    mode = _mode(path)
    return mode is not None and stat.S_ISDIR(mode)


def is_file(path: str | os.PathLike[str]) -> bool:
    """``Path(path).is_file()`` (links followed), raising what it raises."""
    mode = _mode(path)
    return mode is not None and stat.S_ISREG(mode)


def like(example: P, text: str) -> P:
    """``text`` as a path of ``example``'s kind (``str`` for ``str``, else its class)."""
    if isinstance(example, str):
        return text
    return type(example)(text)
