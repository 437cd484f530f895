"""Reading what a report shows: one attempt's evidence, or every attempt of an evidence root
(oldest first, each retry linked to what it retries, C7), or of a diagnosis matrix's
session root (one evidence root per arm, and the attribution record ``regress.json``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from os.path import lexists
from pathlib import Path
from typing import Any

from skgate.evidence import sealed
from skgate.evidence.files import (
    CENSUS,
    CONTROL,
    EVENTS,
    OWNERSHIP,
    REGRESS_FILE,
    STAGES,
    SUMMARY,
    VERDICT,
    present,
)
from skgate.evidence.files import read_json as _read_json
from skgate.evidence.installed import INSTALLED_FILE
from skgate.evidence.journal import read_journal
from skgate.evidence.ledger import LEDGER, is_prelaunch_dir, resolve, root_of
from skgate.evidence.load import archived_verdict
from skgate.evidence.lookup import is_removed
from skgate.evidence.plog import PLOG_INDEX
from skgate.evidence.sealed import SealBreachError, removed_attempt
from skgate.evidence.stages import load_stages
from skgate.model.errors import EvidenceError
from skgate.model.events import Event
from skgate.model.installed import InstalledBinaries
from skgate.model.plog import PlogFile, plog_files
from skgate.model.records import Census, Ownership, Verdict
from skgate.model.request import RunRequest
from skgate.model.schema import SCHEMA_CONTROL, check_schema
from skgate.model.stages import Stages
from skgate.report import rows
from skgate.verdict.changed import changed_verdict

VerdictOf = Callable[[Path], Verdict]


def default_verdict_of(attempt_dir: Path) -> Verdict:
    """The attempt's verdict from its archive alone (recorded, else recomputed).

    A report reads archives and loads no live machinery (issue 22 s3); a caller that may
    look at live processes (``skgate report``, the MCP tools) passes
    ``skgate.read.liveness.current_verdict`` instead."""
    return archived_verdict(attempt_dir)


@dataclass(frozen=True)
class AttemptEvidence:
    """Everything a report shows about one attempt, read from its directory."""

    path: Path
    attempt: str
    control: Mapping[str, Any]
    request: RunRequest | None
    verdict: Verdict
    events: tuple[Event, ...]
    ownership: Ownership | None
    census: Census | None
    summary_lines: tuple[str, ...]
    summary_source: str
    #: ``stages.json``: every observed op_compiler invocation (None before it existed).
    stages: Stages | None = None
    seal: rows.SealStatus | None = None
    #: ``plog.json``: CANN's process logs of owned pids archived into the attempt (C3).
    plogs: tuple[PlogFile, ...] = ()
    #: ``installed.json``: the installed static binaries of its packages (C8).
    installed: InstalledBinaries | None = None
    #: Its evidence changed after sealing: nothing but the verdict and the seal is read,
    #: so the other sections are withheld, not missing (C2.5, issue 28 s3).
    withheld: bool = False


def load_attempt(path: Path, verdict_of: VerdictOf = default_verdict_of) -> AttemptEvidence:
    """Read one attempt directory; a damaged evidence file is a one-line EvidenceError.

    A sealed attempt whose files differ from the seal is shown by that alone: its
    verdict is unknown, "evidence changed after sealing: FILE ..." first, and nothing
    the changed files say is shown (issue 28 s3)."""
    gone = removed_attempt(path)
    if gone is not None:  # nothing of it is left: shown by its removal alone (issue 28)
        return replace(_bare(path, changed_verdict(gone, str(path))), withheld=True)
    try:
        return _load_attempt(path, verdict_of)
    except SealBreachError as exc:
        return replace(_bare(path, changed_verdict(exc.breach, str(path))), withheld=True)


def _bare(path: Path, verdict: Verdict) -> AttemptEvidence:
    """An attempt shown by its verdict alone (its other files are not read)."""
    return AttemptEvidence(
        path=path,
        attempt=path.name,
        control={},
        request=None,
        verdict=verdict,
        events=(),
        ownership=None,
        census=None,
        summary_lines=(),
        summary_source="",
        seal=rows.seal_status(path),
    )


def _load_attempt(path: Path, verdict_of: VerdictOf) -> AttemptEvidence:
    if is_prelaunch_dir(path):
        # Still in preflight (a runner waiting for a foreign compiler): its journal and
        # its verdict (in progress, waiting) are all there is to show (issue 30).
        return replace(_bare(path, verdict_of(path)), events=tuple(read_journal(path / EVENTS)))
    control_path = path / CONTROL
    control = check_schema(_read_json(control_path), SCHEMA_CONTROL, str(control_path))
    request_raw = control.get("request")
    request = (
        RunRequest.from_dict(request_raw, f"{control_path}: request")
        if isinstance(request_raw, dict)
        else None
    )
    verdict = verdict_of(path)
    events = tuple(read_journal(path / EVENTS))
    ownership = None
    if present(path / OWNERSHIP):
        ownership = Ownership.from_dict(_read_json(path / OWNERSHIP), str(path / OWNERSHIP))
    census = verdict.census
    if census is None and present(path / CENSUS):
        census = Census.from_dict(_read_json(path / CENSUS), str(path / CENSUS))
    summary_lines: tuple[str, ...] = ()
    source = ""
    if present(path / SUMMARY):
        # A regular file only, bounded (issue 21): a linked summary.txt is refused.
        try:
            text = sealed.read_text(path / SUMMARY, errors="backslashreplace")
        except FileNotFoundError:
            raise EvidenceError(f"{path / SUMMARY}: missing") from None
        summary_lines = tuple(text.splitlines())
        source = SUMMARY
    elif verdict.summary is not None:
        summary_lines = verdict.summary.lines
        source = VERDICT
    attempt_id = control.get("attempt")
    return AttemptEvidence(
        path=path,
        attempt=attempt_id if isinstance(attempt_id, str) else path.name,
        control=control,
        request=request,
        verdict=verdict,
        events=events,
        ownership=ownership,
        census=census,
        summary_lines=summary_lines,
        summary_source=source,
        stages=load_stages(path / STAGES),
        seal=rows.seal_status(path),
        plogs=plog_files(_read_json(path / PLOG_INDEX)) if (path / PLOG_INDEX).exists() else (),
        installed=InstalledBinaries.from_dict(_read_json(path / INSTALLED_FILE))
        if (path / INSTALLED_FILE).exists()
        else None,
    )


def _resolve_retry(retry_of: str | None, by_path: Mapping[Path, str]) -> str | None:
    if not retry_of:
        return None
    p = Path(retry_of)
    try:
        key = p.resolve()
    except OSError:
        key = p
    if key in by_path:
        return by_path[key]
    for path, aid in by_path.items():
        if p.name == path.name and (p.name == retry_of or str(path).endswith(retry_of)):
            return aid
    return None


@dataclass(frozen=True)
class Report:
    """A report of one attempt or of every attempt in a root, ready to render."""

    target: str
    kind: str  # "attempt" or "root"
    attempts: tuple[AttemptEvidence, ...]
    retry_of: Mapping[str, str | None]
    retried_by: Mapping[str, tuple[str, ...]]
    matrix: Mapping[str, Any] | None = None
    #: The ledger of each evidence root its attempts are in (a matrix: one per arm), or of
    #: the root itself when it has none yet; a damaged one is said in every format (C4).
    ledgers: tuple[rows.LedgerStatus, ...] = ()


def _ledgers(target: Path, attempts: tuple[AttemptEvidence, ...]) -> tuple[rows.LedgerStatus, ...]:
    roots = [root_of(a.path) for a in attempts] if attempts else [target]
    found = (rows.ledger_status(r) for r in dict.fromkeys(roots) if r is not None)
    # A root without a ledger is left out, unless its ledger was removed (C4: said).
    return tuple(led for led in found if led.problems or lexists(led.root / LEDGER))


def _matrix_record(target: Path) -> Mapping[str, Any] | None:
    """A diagnosis matrix's ``regress.json`` (kind ``matrix``) at ``target``, if any."""
    path = target / REGRESS_FILE
    if not path.is_file():
        return None
    data = _read_json(path)
    if isinstance(data, dict) and data.get("kind") == "matrix":
        return data
    return None


def _matrix_attempts(target: Path, verdict_of: VerdictOf) -> list[AttemptEvidence]:
    # A matrix session keeps one evidence root per arm (runs/<arm>/attempts/NNNN); the
    # attempt is named <arm>/<id> so ids stay unique across arms.
    out: list[AttemptEvidence] = []
    runs = target / "runs"
    arms = sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    for arm in arms:
        for path in resolve(arm, prelaunch=True, removed=True):
            ev = load_attempt(path, verdict_of)
            out.append(replace(ev, attempt=f"{arm.name}/{ev.attempt}"))
    return out


def build_report(target: Path, verdict_of: VerdictOf = default_verdict_of) -> Report:
    """Read an attempt directory, an evidence root or a matrix session (oldest first)."""
    try:
        matrix = None if present(target / CONTROL) else _matrix_record(target)
    except SealBreachError:  # an attempt whose sealed control.json is gone: shown as such
        matrix = None
    if matrix is not None and not (target / "attempts").is_dir():
        attempts = tuple(_matrix_attempts(target, verdict_of))
        kind = "root"
    else:
        # A waiting attempt is shown (issue 30), and a removed one its ledger indexed
        # (issue 28): the root's newest is never an older one in its place.
        paths = [target] if is_removed(target) else resolve(target, prelaunch=True, removed=True)
        kind = "attempt" if len(paths) == 1 and paths[0] == target else "root"
        attempts = tuple(load_attempt(p, verdict_of) for p in paths)
    by_path: dict[Path, str] = {}
    for a in attempts:
        try:
            by_path[a.path.resolve()] = a.attempt
        except OSError:
            by_path[a.path] = a.attempt
    retry_of: dict[str, str | None] = {}
    retried_by: dict[str, list[str]] = {}
    for a in attempts:
        parent = _resolve_retry(a.request.retry_of if a.request else None, by_path)
        retry_of[a.attempt] = parent
        if parent is not None:
            retried_by.setdefault(parent, []).append(a.attempt)
    return Report(
        target=str(target),
        kind=kind,
        attempts=attempts,
        retry_of=retry_of,
        retried_by={k: tuple(v) for k, v in retried_by.items()},
        matrix=matrix,
        ledgers=_ledgers(target, attempts),
    )
