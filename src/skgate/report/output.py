"""Writing a report to a file the user names: atomically (temp file, fsync, rename) and never
inside sealed evidence (C4: evidence is append-only; an attempt directory, a root's
``attempts/`` and its ledger are refused)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from skgate.evidence.files import replace_text
from skgate.evidence.ledger import evidence_owner
from skgate.model.errors import UsageError


def write_report_file(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path``: temp file, fsync, then rename in the target's directory.

    Never a half-written file. Refuses (``UsageError``, nothing written) a target inside
    an attempt directory or an evidence root's ``attempts/`` (evidence is append-only and
    sealed), a directory, anything but a regular file (a symbolic link, a FIFO, a device:
    even with ``force``), and an existing file unless ``force``.
    """
    owner = evidence_owner(path)
    if owner is not None:
        raise UsageError(
            f"-o {path}: inside the evidence tree {owner}; evidence is append-only and "
            "never overwritten, write the report elsewhere"
        )
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot be checked ({exc.strerror})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"-o {path}: is a directory; give a file path for the report")
    if st is not None and not stat.S_ISREG(st.st_mode):
        # --force replaces a report, never what a link points to, a FIFO or a device
        # (replacing /dev/full with a regular file would break the host; issue 12).
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise UsageError(
            f"-o {path}: is {kind}; --force replaces only a regular file, give another path"
        )
    if st is not None and not force:
        raise UsageError(f"-o {path}: already exists; pass --force to replace it")
    try:
        replace_text(path, text, only_new=not force)
    except FileExistsError:
        raise UsageError(f"-o {path}: already exists; pass --force to replace it") from None
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write there ({exc.strerror})") from None
