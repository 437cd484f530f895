"""What the health gate and the diagnosis matrix share (C6): the regress.json schema and writer,
the evidence helpers and the C6 / C7 wording."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from skgate.evidence import files
from skgate.evidence.files import REGRESS_FILE
from skgate.evidence.load import load_control
from skgate.evidence.recorded import not_its_own
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.logscan import LogScan
from skgate.model.phrases import C7
from skgate.model.records import Verdict
from skgate.model.request import RunRequest

#: Runs one gated attempt; :func:`skgate.api.run_attempt` unless a caller injects another.
RunFn = Callable[[RunRequest], Verdict]

Progress = Callable[[str], None]

# The C7 phrases the regress results quote (their one home is model/phrases.py).
FAILED_WORDS = C7["final_failure"]["en"]
INTERRUPTED_WORDS = C7["interruption"]["en"]


def read_completion_seen(attempt_dir: Path) -> bool | None:
    path = attempt_dir / files.LOGSCAN
    if not path.exists():
        return None
    try:
        return LogScan.from_dict(files.read_json(path), str(path)).completion_seen
    except EvidenceError:
        return None


def read_reference_verdict(attempt_dir: Path) -> Verdict:
    path = attempt_dir / files.VERDICT
    if not path.exists():
        raise UsageError(
            f"reference attempt {attempt_dir} has no verdict yet (still running or cut off); "
            "pick a finished attempt; nothing was run"
        )
    breach = not_its_own(attempt_dir)
    if breach is not None:  # C2.5: a verdict its runner did not write is no reference
        raise UsageError(
            f"reference attempt {attempt_dir}: {breach.line()}; pick a finished attempt; "
            "nothing was run"
        )
    return Verdict.from_dict(files.read_json(path), str(path))


def control_raw(attempt_dir: Path) -> dict[str, Any]:
    return load_control(attempt_dir).raw


def require_fresh_root(root: Path, what: str) -> None:
    """A fresh root is one that does not exist or is an empty directory."""
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"{what} {root} is not fresh (it exists and is not empty); pick a new one")


def write_result(root: Path, data: Mapping[str, Any], *, replace: bool = False) -> Path:
    """Write ``regress.json`` (``replace``: a resumed matrix supersedes its earlier result;
    atomically, never half-written)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / REGRESS_FILE
    if replace:
        files.replace_json(path, dict(data))
    else:
        files.write_json_new(path, dict(data))
    return path


def default_run() -> RunFn:
    from skgate.api import run_attempt  # noqa: PLC0415 - api imports the ledger; keep lazy

    return run_attempt
