"""Clean retry (C2.4, C4): preserve the interrupted attempt's scene (:mod:`skgate.workdir.cleanup`),
then run the same frozen request again as a new attempt with ``retry_of`` set, appended to
the same evidence root: the interrupted attempt stays exactly as it was (C4 last bullet)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

from skgate.evidence import ledger
from skgate.evidence.files import CONTROL
from skgate.evidence.load import load_control
from skgate.model.errors import UsageError
from skgate.model.frozen import replace
from skgate.model.records import Verdict
from skgate.model.request import RunRequest
from skgate.preflight.request import outputs_dir
from skgate.workdir.cleanup import OUTPUTS, CleanupResult, cleanup_checked, refuse_live

Runner = Callable[[RunRequest], Verdict]


def _default_runner() -> Runner:
    api = importlib.import_module("skgate.api")
    run: Runner = api.run_attempt
    return run


def prepare_retry(attempt: Path, root: Path | None = None) -> tuple[RunRequest, CleanupResult]:
    """Preserve the attempt's scene and build the same frozen request with ``retry_of``."""
    if not (attempt / CONTROL).is_file():
        raise UsageError(f"{attempt}: not an attempt directory (no {CONTROL})")
    control = load_control(attempt)
    request = control.request
    # C2.1: a live attempt is in progress; a retry now would race it for the same
    # working directory. Wait for its natural return (or its frozen timeout).
    refuse_live(attempt, control, "retry")
    target_root = root if root is not None else Path(request.root)
    # The scene goes into the attempt's own root (chained in its ledger), even when the
    # retry is appended to another --root.
    own_root = ledger.root_of(attempt) or ledger.root_of(Path(os.path.realpath(attempt)))
    if own_root is None:
        raise UsageError(
            f"{attempt}: not inside an evidence root (<root>/{ledger.ATTEMPTS}/NNNN); "
            "its scene could not be chained into a ledger"
        )
    workdir = Path(request.cwd)
    extra: list[str] = []
    if request.outputs:
        out = outputs_dir(request)
        if out.parent.resolve() == workdir.resolve() and out.name not in OUTPUTS:
            extra.append(out.name)
    result = cleanup_checked(
        workdir, own_root, attempt=attempt, include_optional=False, extra=extra, checked=control
    )
    retry = replace(request, retry_of=str(attempt.resolve()), root=str(target_root.resolve()))
    return retry, result


def retry(
    attempt: Path, root: Path | None = None, runner: Runner | None = None
) -> tuple[Verdict, CleanupResult]:
    """Clean retry: preserve the scene, then run the same controls as a new attempt."""
    request, result = prepare_retry(attempt, root)
    run = runner if runner is not None else _default_runner()
    return run(request), result
