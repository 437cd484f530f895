"""Approvals of start-up hooks (C6): full fingerprints on the command line, or a
``skgate.hook-baseline/1`` file frozen once with ``skgate preflight --freeze-baseline``."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from skgate.evidence import regular
from skgate.evidence.files import write_json_new
from skgate.model.errors import EvidenceError, UsageError

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.preflight.hooks.findings import HookScan

SCHEMA_HOOK_BASELINE = "skgate.hook-baseline/1"
#: The largest baseline read: 64-hex fingerprints and their findings, far below this.
MAX_BASELINE = 16 << 20

_FP_RE = re.compile(r"[0-9a-f]{64}")


def check_fingerprint(text: str) -> str:
    fp = text.strip().lower()
    if not _FP_RE.fullmatch(fp):
        raise UsageError(
            f"--approve-hook {text!r} is not a full sha256 fingerprint (64 hex digits); "
            "copy it from 'skgate preflight'"
        )
    return fp


def load_baseline(path: str) -> set[str]:
    """Fingerprints approved by a baseline file. Unreadable or wrong shape -> UsageError."""
    hint = "give the file 'skgate preflight --freeze-baseline FILE' wrote"
    raw = regular.read_named(path, "hook baseline", hint, MAX_BASELINE)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"hook baseline {path}: unreadable (not UTF-8: {exc.reason} at byte {exc.start}); "
            f"{hint}"
        ) from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"hook baseline {path}: unreadable (not JSON: {exc}); {hint}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_HOOK_BASELINE:
        raise UsageError(f"hook baseline {path} is not a {SCHEMA_HOOK_BASELINE!r} file")
    fps = data.get("fingerprints")
    if not isinstance(fps, list) or not all(
        isinstance(x, str) and _FP_RE.fullmatch(x) for x in fps
    ):
        raise UsageError(f"hook baseline {path} has no valid 'fingerprints' list")
    return set(fps)


def freeze_baseline(path: Path, scan: HookScan) -> dict[str, Any]:
    """Write a baseline approving every current finding, once (exclusive create)."""
    return write_baseline(path, [f.to_dict() for f in scan.findings], scan.interpreter)


def write_baseline(
    path: Path, findings: Sequence[Mapping[str, Any]], interpreter: Mapping[str, Any]
) -> dict[str, Any]:
    """Write ``skgate.hook-baseline/1`` for ``findings`` (dicts as in ``Finding.to_dict``).

    A baseline is frozen once: an existing file is never overwritten (UsageError).
    """
    data = {
        "schema": SCHEMA_HOOK_BASELINE,
        "created_at": time.time(),
        "python": interpreter.get("path"),
        "interpreter": dict(interpreter),
        "fingerprints": sorted({str(f["fingerprint"]) for f in findings}),
        "findings": [
            {k: v for k, v in f.items() if k not in ("approved", "approved_by")} for f in findings
        ],
    }
    try:
        write_json_new(path, data)
    except EvidenceError:
        raise UsageError(
            f"baseline {path} already exists; a baseline is frozen once: pick a new file name"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path} ({exc.strerror})") from None
    return data
