"""Rows the md, json and html reports share, computed once from an attempt's evidence.

Each function here turns raw evidence (``control.json`` controls, ``stages.json``, the
seal, the outputs tree) into plain rows, so the three formats cannot state different
facts: ``facts.attempt_json`` carries them, the Markdown and HTML renderers print them.
Nothing here decides a state; the verdict does (C2).

- :func:`control_rows`: the frozen controls as (section, key, value) rows, complete (no
  truncated JSON), the sections C6 asks for first: jobs, env delta, ordered PYTHONPATH,
  profiler schedule, hook scan;
- :func:`stage_rows`: one row per ``op_compiler`` stage from ``stages.json`` when the
  attempt has one, with the failed inputs and the path of each one's error log (C2, C3);
- :func:`error_logs_to_read`: after a natural failure, the error logs a person reads next
  (from the stages, else the kept ``*_compile_error.log`` files under the census roots);
- :func:`seal_status`: sealed and intact, sealed with problems, or not sealed yet;
- :func:`ledger_status`: the evidence root's ledger intact, unfinished (a torn last line)
  or changed, read as ``verify`` reads it.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence.seal import attempt_findings, ledger_problems
from skgate.evidence.seal_problem import SealProblem
from skgate.model.phrases import Lang
from skgate.model.records import Census, State, Verdict
from skgate.model.stages import Stages

#: Sections shown first, in this order (C5, C6); any other section follows, sorted.
CONTROL_ORDER = ("jobs", "env", "pythonpath", "profiler", "hooks", "python", "foreign", "leases")

#: How many error logs a report names before it says how many more there are.
MAX_LOGS = 20


@dataclass(frozen=True)
class ControlRow:
    section: str
    key: str
    value: str

    def to_dict(self) -> dict[str, str]:
        return {"section": self.section, "key": self.key, "value": self.value}


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _flatten(section: str, prefix: str, value: Any, out: list[ControlRow]) -> None:
    if isinstance(value, Mapping):
        if not value and prefix:
            out.append(ControlRow(section, prefix, "-"))
        for key in value:
            name = f"{prefix}.{key}" if prefix else str(key)
            _flatten(section, name, value[key], out)
        return
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (Mapping, list, tuple)) for v in value):
            if section == "pythonpath" and value:
                # Order matters (C6: a prepended directory is a start-up hook path).
                out.extend(
                    ControlRow(section, f"{prefix}[{i}]" if prefix else f"[{i}]", _scalar(v))
                    for i, v in enumerate(value, 1)
                )
            else:
                out.append(
                    ControlRow(section, prefix or "-", ", ".join(map(_scalar, value)) or "-")
                )
            return
        for i, item in enumerate(value, 1):
            key = f"{prefix}[{i}]" if prefix else f"[{i}]"
            if isinstance(item, Mapping):
                out.append(ControlRow(section, key, _record_text(item)))
            else:
                _flatten(section, key, item, out)
        return
    out.append(ControlRow(section, prefix or "-", _scalar(value)))


def _record_text(item: Mapping[str, Any]) -> str:
    """One list item on one row: a process as pid and argv, anything else as k=v pairs."""
    if "pid" in item and "argv" in item:
        argv = item.get("argv")
        cmd = " ".join(map(str, argv)) if isinstance(argv, list) else _scalar(argv)
        return f"pid {_scalar(item.get('pid'))} (start {_scalar(item.get('start_ticks'))}): {cmd}"
    parts = []
    for k, v in item.items():
        if isinstance(v, (list, tuple)):
            text = ", ".join(map(_scalar, v)) or "-"
        elif isinstance(v, Mapping):
            text = ", ".join(f"{a}={_scalar(b)}" for a, b in v.items()) or "-"
        else:
            text = _scalar(v)
        parts.append(f"{k}={text}")
    return "; ".join(parts)


def control_rows(controls: Mapping[str, Any] | None) -> list[ControlRow]:
    """Every frozen control as a row; nested records flattened to dotted keys."""
    if not controls:
        return []
    order = [k for k in CONTROL_ORDER if k in controls]
    order += sorted(k for k in controls if k not in CONTROL_ORDER)
    rows: list[ControlRow] = []
    for section in order:
        value = controls[section]
        if section == "pythonpath" and not value:
            rows.append(ControlRow(section, "-", "(empty)"))
            continue
        _flatten(section, "", value, rows)
    return rows


# ---------------------------------------------------------------------------
# Stages (stages.json, one per owned op_compiler invocation)


@dataclass(frozen=True)
class FailedInput:
    name: str
    log: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.name, "error_log": self.log}


@dataclass(frozen=True)
class StageRow:
    name: str
    pid: int | None
    jobs: str | None
    inputs: int
    succeeded: int
    failed: int
    final: bool
    exit_status: int | None
    failed_inputs: tuple[FailedInput, ...]
    unaccounted: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pid": self.pid,
            "jobs": self.jobs,
            "inputs": self.inputs,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "final": self.final,
            "exit_status": self.exit_status,
            "failed_inputs": [f.to_dict() for f in self.failed_inputs],
            "unaccounted": list(self.unaccounted),
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _jobs_of(stage: Mapping[str, Any]) -> str | None:
    parsed = stage.get("parsed")
    if isinstance(parsed, Mapping):
        if parsed.get("jobs") is not None:
            return _scalar(parsed["jobs"])
        if parsed.get("jobs_text") is not None:
            return _scalar(parsed["jobs_text"])
    argv = stage.get("argv")
    if isinstance(argv, list):
        for i, a in enumerate(argv[:-1]):
            if a == "-j":
                return str(argv[i + 1])
    return None


def stage_rows(raw: Mapping[str, Any] | None) -> list[StageRow]:
    """Rows of ``stages.json`` (schema ``skgate.stages/1``), one per op_compiler."""
    if not raw:
        return []
    stages = raw.get("stages")
    if not isinstance(stages, list):
        return []
    rows: list[StageRow] = []
    for i, s in enumerate(stages, 1):
        if not isinstance(s, Mapping):
            continue
        census = s.get("census") if isinstance(s.get("census"), Mapping) else {}
        assert isinstance(census, Mapping)
        failed: list[FailedInput] = []
        unaccounted: list[str] = []
        for item in census.get("named") or []:
            if not isinstance(item, Mapping):
                continue
            name = str(item.get("name") or "?")
            outcome = str(item.get("outcome") or "?")
            logs = [str(x) for x in item.get("logs") or []]
            if outcome == "failed":
                failed.append(FailedInput(name, logs[0] if logs else None))
            elif outcome != "succeeded":
                unaccounted.append(f"{name} ({outcome})")
        pid = _int(s.get("pid"))
        label = s.get("name")
        rows.append(
            StageRow(
                name=str(label) if label else f"op_compiler {pid if pid is not None else i}",
                pid=pid,
                jobs=_jobs_of(s),
                inputs=_int(census.get("inputs")) or 0,
                succeeded=_int(census.get("succeeded")) or 0,
                failed=_int(census.get("failed")) or 0,
                # Final only after the stage's own natural return and a census taken after
                # the tree ended (C1, C2).
                final=bool(s.get("ended"))
                and s.get("exit_signal") is None
                and bool(census.get("after_return")),
                exit_status=_int(s.get("exit_status")),
                failed_inputs=tuple(failed),
                unaccounted=tuple(unaccounted),
            )
        )
    return rows


def stage_rows_of(stages: Stages | None) -> list[StageRow]:
    """The rows of a loaded ``stages.json`` (None: the attempt has none)."""
    return stage_rows(stages.to_dict() if stages is not None else None)


def error_logs_to_read(
    verdict: Verdict, census: Census | None, stages: Sequence[StageRow]
) -> tuple[list[str], int]:
    """The error logs to read next after a natural failure (C2.3), and how many in all.

    Before natural return (or for any other state) the list is empty: an error-named file
    is then provisional and not something to read as a failure (C1).
    """
    if verdict.state is not State.FAILED or not verdict.natural_return:
        return [], 0
    logs = [f.log for s in stages for f in s.failed_inputs if f.log]
    if not logs and census is not None and census.exists:
        logs = _kept_error_logs(Path(census.outputs), [r.root for r in census.roots])
    return logs[:MAX_LOGS], len(logs)


def _kept_error_logs(outputs: Path, roots: Sequence[str]) -> list[str]:
    # Only the roots the census counted, and only *_compile_log/ directories (the layout
    # of cann-static-compile.md); a bounded read, never a walk of the whole tree.
    found: list[str] = []
    for root in roots:
        base = outputs / root
        try:
            with os.scandir(base) as it:
                logdirs = sorted(e.path for e in it if e.name.endswith("_compile_log"))
        except OSError:
            continue
        for d in logdirs:
            try:
                with os.scandir(d) as it:
                    found += sorted(e.path for e in it if e.name.endswith("_compile_error.log"))
            except OSError:
                continue
    return found


# ---------------------------------------------------------------------------
# Seal


class SealState(enum.Enum):
    """Where an attempt's seal stands; the value is the report's JSON word."""

    INTACT = "intact"
    PROBLEMS = "problems"
    NOT_SEALED = "not_sealed"


@dataclass(frozen=True)
class SealStatus:
    state: SealState
    problems: tuple[SealProblem, ...]

    def to_dict(self, lang: Lang = Lang.EN) -> dict[str, Any]:
        return {"status": self.state.value, "problems": [p.text(lang) for p in self.problems]}


def seal_status(attempt: Path) -> SealStatus:
    """Whether the attempt's seal (seal.json) still matches its files and what the root's
    ledger chained for it (``verify ATTEMPT``'s findings; the ledger's own lines are
    :func:`ledger_status`'s)."""
    problems = tuple(attempt_findings(attempt))
    if problems:
        return SealStatus(SealState.PROBLEMS, problems)
    if not (attempt / "seal.json").is_file():
        return SealStatus(SealState.NOT_SEALED, ())
    return SealStatus(SealState.INTACT, ())


# ---------------------------------------------------------------------------
# The root's ledger


class LedgerState(enum.Enum):
    """Where an evidence root's ledger stands; the value is the report's JSON word. A torn
    last line is unfinished (``skgate recover`` cuts it back); anything else wrong with
    it is a change (C4): the same kinds ``skgate verify`` prints."""

    INTACT = "intact"
    UNFINISHED = "unfinished"
    CHANGED = "changed"


@dataclass(frozen=True)
class LedgerStatus:
    root: Path
    state: LedgerState
    problems: tuple[SealProblem, ...]

    def to_dict(self, lang: Lang = Lang.EN) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "status": self.state.value,
            "problems": [p.text(lang) for p in self.problems],
        }


def ledger_status(root: Path) -> LedgerStatus:
    """The root's ledger as ``verify`` reads it (:func:`skgate.evidence.seal.ledger_problems`)."""
    problems = tuple(ledger_problems(root))
    if not problems:
        state = LedgerState.INTACT
    elif all(p.unfinished for p in problems):
        state = LedgerState.UNFINISHED
    else:
        state = LedgerState.CHANGED
    return LedgerStatus(root, state, problems)
