"""Stages: every owned ``op_compiler`` invocation as evidence of its own (C2, C3).

A real launcher (torchair's npugraph_ex path) prints no ``[summary]`` line and swallows a
failing op_compiler with exit 0, so the per-invocation record is the evidence: the argv
(``-j`` is the concurrency actually used, C3/C5), the inputs (``*.json`` of the ``-p``
directory) and, after natural return, each input's ``*_compile_succ.log`` /
``*_compile_error.log`` under the ``-o`` root (final only then, C1).

Nothing here does I/O: the census that fills :class:`StageCensus` is
:mod:`skgate.evidence.stages`; the rules that turn a stage into a summary are
:mod:`skgate.verdict.stages`.

Schema: ``skgate.stages/1`` (history in :mod:`skgate.model.schema`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skgate.model.errors import EvidenceError
from skgate.model.schema import SCHEMA_STAGES, check_schema, opt_int, require

#: How many inputs of each kind (failed, no log, both logs) a stage names; the rest are
#: counted in ``StageCensus.omitted``.
MAX_NAMED = 200

#: op_compiler's short options that take a value, and the record field each fills.
_VALUE_OPTS = {"-p": "params_dir", "-v": "soc", "-j": "jobs", "-o": "output", "-l": "log_level"}
_VALUE_OPTS["-f"] = "force"
_SK_FLAG = "--enable_super_kernel"
_SK_OPTIONS = "--super_kernel_options"


class InputOutcome(str, enum.Enum):
    """One input's outcome after op_compiler's natural return (C1: final only then)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NO_LOG = "no_log"
    BOTH_LOGS = "both_logs"


@dataclass(frozen=True)
class CompilerArgs:
    """An op_compiler argv, parsed; whatever it does not know is kept verbatim."""

    argv: tuple[str, ...]
    params_dir: str | None = None
    soc: str | None = None
    jobs: int | None = None
    jobs_text: str | None = None
    output: str | None = None
    enable_super_kernel: bool = False
    super_kernel_options: str | None = None
    log_level: str | None = None
    force: str | None = None
    unknown: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def is_invocation(self) -> bool:
        """A compile invocation names its inputs (-p) and its result root (-o)."""
        return self.params_dir is not None and self.output is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "params_dir": self.params_dir,
            "soc": self.soc,
            "jobs": self.jobs,
            "jobs_text": self.jobs_text,
            "output": self.output,
            "enable_super_kernel": self.enable_super_kernel,
            "super_kernel_options": self.super_kernel_options,
            "log_level": self.log_level,
            "force": self.force,
            "unknown": list(self.unknown),
            "problems": list(self.problems),
        }


def parse_compiler_argv(argv: Sequence[str]) -> CompilerArgs:
    """Parse ``op_compiler -p DIR -v SOC -j N -o ROOT [--enable_super_kernel] ...``.

    ``argv[0]`` is the program. Accepted spellings: ``-p DIR``, ``-p=DIR``, ``-pDIR``;
    ``--super_kernel_options X`` or ``=X``; ``--enable_super_kernel`` (or ``=true`` /
    ``=false``). Anything else (positional words, unknown flags) is kept in ``unknown``
    in order; a repeated option keeps its last value, as argparse would, and says so.
    """
    words = [str(a) for a in argv]
    values: dict[str, str] = {}
    unknown: list[str] = []
    problems: list[str] = []
    sk = False
    sk_options: str | None = None
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        opt = word[:2]
        if opt in _VALUE_OPTS and not word.startswith("--"):
            if len(word) > 2:
                value = word[3:] if word[2] == "=" else word[2:]
            elif i < len(words):
                value = words[i]
                i += 1
            else:
                problems.append(f"{opt} has no value")
                unknown.append(word)
                continue
            field_name = _VALUE_OPTS[opt]
            if field_name in values:
                problems.append(f"{opt} given more than once (the last value counts)")
            values[field_name] = value
        elif word == _SK_FLAG:
            sk = True
        elif word.startswith(_SK_FLAG + "="):
            sk = word.split("=", 1)[1].strip().lower() not in ("false", "0", "no")
        elif word == _SK_OPTIONS:
            if i < len(words):
                sk_options = words[i]
                i += 1
            else:
                problems.append(f"{_SK_OPTIONS} has no value")
                unknown.append(word)
        elif word.startswith(_SK_OPTIONS + "="):
            sk_options = word.split("=", 1)[1]
        else:
            unknown.append(word)
    jobs_text = values.get("jobs")
    jobs: int | None = None
    if jobs_text is not None:
        text = jobs_text.strip()
        if text.isdigit() and int(text) >= 1:
            jobs = int(text)
        else:
            problems.append(f"-j {jobs_text!r} is not a whole number >= 1")
    return CompilerArgs(
        argv=tuple(words),
        params_dir=values.get("params_dir"),
        soc=values.get("soc"),
        jobs=jobs,
        jobs_text=jobs_text,
        output=values.get("output"),
        enable_super_kernel=sk,
        super_kernel_options=sk_options,
        log_level=values.get("log_level"),
        force=values.get("force"),
        unknown=tuple(unknown),
        problems=tuple(problems),
    )


@dataclass(frozen=True)
class InputResult:
    """One named input of a stage: its stem, outcome and the log(s) a person reads next."""

    name: str
    outcome: InputOutcome
    logs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "outcome": self.outcome.value, "logs": list(self.logs)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> InputResult:
        try:
            outcome = InputOutcome(require(data, "outcome", str, where))
        except ValueError as exc:
            raise EvidenceError(f"{where}: {exc}") from None
        return cls(
            name=require(data, "name", str, where),
            outcome=outcome,
            logs=tuple(str(x) for x in require(data, "logs", list, where)),
        )


@dataclass(frozen=True)
class StageCensus:
    """Per-input outcomes of one stage, counted on disk (C3).

    ``after_return`` is true when it was taken after the owned tree had ended: only then
    are error-named logs final (C1).
    """

    params_dir: str
    output_root: str
    params_readable: bool
    inputs: int
    succeeded: int
    failed: int
    no_log: int
    both_logs: int
    named: tuple[InputResult, ...]
    run_packages: tuple[str, ...]
    unreadable: int
    after_return: bool
    omitted: int = 0

    @property
    def accounted(self) -> bool:
        """Every input has exactly one log (succ or error) and nothing hid a directory."""
        return (
            self.params_readable
            and self.no_log == 0
            and self.both_logs == 0
            and self.unreadable == 0
            and self.succeeded + self.failed == self.inputs
        )

    def of(self, outcome: InputOutcome) -> tuple[InputResult, ...]:
        return tuple(r for r in self.named if r.outcome is outcome)

    def to_dict(self) -> dict[str, Any]:
        return {
            "params_dir": self.params_dir,
            "output_root": self.output_root,
            "params_readable": self.params_readable,
            "inputs": self.inputs,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "no_log": self.no_log,
            "both_logs": self.both_logs,
            "named": [r.to_dict() for r in self.named],
            "run_packages": list(self.run_packages),
            "unreadable": self.unreadable,
            "after_return": self.after_return,
            "omitted": self.omitted,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> StageCensus:
        named = require(data, "named", list, where)
        return cls(
            params_dir=require(data, "params_dir", str, where),
            output_root=require(data, "output_root", str, where),
            params_readable=require(data, "params_readable", bool, where),
            inputs=require(data, "inputs", int, where),
            succeeded=require(data, "succeeded", int, where),
            failed=require(data, "failed", int, where),
            no_log=require(data, "no_log", int, where),
            both_logs=require(data, "both_logs", int, where),
            named=tuple(InputResult.from_dict(r, where) for r in named),
            run_packages=tuple(str(x) for x in require(data, "run_packages", list, where)),
            unreadable=require(data, "unreadable", int, where),
            after_return=require(data, "after_return", bool, where),
            omitted=int(data.get("omitted", 0)),
        )


@dataclass(frozen=True)
class StageRecord:
    """One observed owned op_compiler invocation (pid + start time identify it, C4)."""

    pid: int
    start_ticks: int
    args: CompilerArgs
    first_seen: float
    last_seen: float
    ended: bool
    exit_status: int | None = None
    exit_signal: int | None = None
    inputs_first_seen: int | None = None
    census: StageCensus | None = None

    @property
    def name(self) -> str:
        return f"op_compiler pid {self.pid}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "argv": list(self.args.argv),
            "parsed": self.args.to_dict(),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "ended": self.ended,
            "exit_status": self.exit_status,
            "exit_signal": self.exit_signal,
            "inputs_first_seen": self.inputs_first_seen,
            "census": self.census.to_dict() if self.census else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> StageRecord:
        census = data.get("census")
        if census is not None and not isinstance(census, dict):
            raise EvidenceError(f"{where}: field 'census' has the wrong type")

        return cls(
            pid=require(data, "pid", int, where),
            start_ticks=require(data, "start_ticks", int, where),
            # The parsed form is derived: reparse the archived argv, so a reader never
            # trusts a parse that disagrees with the argv it came from.
            args=parse_compiler_argv(tuple(str(a) for a in require(data, "argv", list, where))),
            first_seen=float(require(data, "first_seen", (int, float), where)),
            last_seen=float(require(data, "last_seen", (int, float), where)),
            ended=require(data, "ended", bool, where),
            exit_status=opt_int(data, "exit_status", where),
            exit_signal=opt_int(data, "exit_signal", where),
            inputs_first_seen=opt_int(data, "inputs_first_seen", where),
            census=StageCensus.from_dict(census, where) if census else None,
        )


@dataclass(frozen=True)
class Stages:
    """``stages.json``: every stage of the attempt, and the most ``opc`` seen alive."""

    stages: tuple[StageRecord, ...]
    peak_opc: int
    compiler_names: tuple[str, ...]
    complete: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_STAGES,
            "stages": [s.to_dict() for s in self.stages],
            "peak_opc": self.peak_opc,
            "compiler_names": list(self.compiler_names),
            "complete": self.complete,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "stages.json") -> Stages:
        d = check_schema(data, SCHEMA_STAGES, where)
        raw = require(d, "stages", list, where)
        for item in raw:
            if not isinstance(item, dict):
                raise EvidenceError(f"{where}: field 'stages' has the wrong type")
        return cls(
            stages=tuple(StageRecord.from_dict(s, where) for s in raw),
            peak_opc=require(d, "peak_opc", int, where),
            compiler_names=tuple(str(n) for n in require(d, "compiler_names", list, where)),
            complete=require(d, "complete", bool, where),
        )
