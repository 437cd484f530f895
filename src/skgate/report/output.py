"""Writing a report to a file the user names: atomically (temp file, fsync, rename) and never
inside sealed evidence (C4: evidence is append-only; an attempt directory, a root's
``attempts/`` and its ledger are refused)."""

from __future__ import annotations

from pathlib import Path

from skgate.evidence.files import replace_text
from skgate.evidence.ledger import evidence_owner
from skgate.model.errors import UsageError


def write_report_file(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path``: temp file, fsync, then rename in the target's directory.

    Never a half-written file. Refuses (``UsageError``, nothing written) a target inside
    an attempt directory or an evidence root's ``attempts/`` (evidence is append-only and
    sealed), a directory, and an existing file unless ``force``.
    """
    owner = evidence_owner(path)
    if owner is not None:
        raise UsageError(
            f"-o {path}: inside the evidence tree {owner}; evidence is append-only and "
            "never overwritten, write the report elsewhere"
        )
    if path.is_dir():
        raise UsageError(f"-o {path}: is a directory; give a file path for the report")
    if path.exists() and not force:
        raise UsageError(f"-o {path}: already exists; pass --force to replace it")
    try:
        replace_text(path, text, only_new=not force)
    except FileExistsError:
        raise UsageError(f"-o {path}: already exists; pass --force to replace it") from None
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write there ({exc.strerror})") from None
