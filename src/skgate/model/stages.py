"""Stages: every owned ``op_compiler`` invocation as evidence of its own (C2, C3).

A real launcher (torchair's npugraph_ex path) prints no ``[summary]`` line and swallows a
failing op_compiler with exit 0, so the per-invocation record is the evidence: the argv
(``-j`` is the concurrency actually used, C3/C5), the inputs (``*.json`` of the ``-p``
directory) and, after natural return, each input's ``*_compile_succ.log`` /
``*_compile_error.log`` under the ``-o`` root (final only then, C1).

Real logs are not named after their inputs: an input ``HcPre_bfloat16_ND_32_4_5120_106.json``
compiles into ``static_kernel_HcPre_<64 hex>_<pid>_d0_compile_succ.log`` (see
``docs/cann-static-compile.md``). The census therefore records *how* each input was
paired with its log (:class:`Pairing`), a tally per op type, and every log or input that
could not be paired under every reading of the names (never a success, C2).

Besides the stages, the record keeps what the launcher announced (the build directories
of its start lines) and the static-kernel cache files beside them, so that a cache hit
that printed nothing can still be told from a compile (C2: "without compiling").

Nothing here does I/O: the census that fills :class:`StageCensus` is
:mod:`skgate.evidence.stage_census`; the rules that turn a stage into a summary are
:mod:`skgate.verdict.stages`.

Schema: ``skgate.stages/2`` (history in :mod:`skgate.model.schema`); ``/1`` files of
older attempts are still read (their censuses paired by stem only).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.idle import Idle, idles_from
from skgate.model.schema import SCHEMA_STAGES, SCHEMA_STAGES_V1, check_schema, opt_int, require
from skgate.model.stage_roots import AnnouncedRoot, CacheEntry, CacheFile

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AnnouncedRoot", "CacheEntry", "CacheFile"]

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
    #: Logs of its op type exist, but no reading of the names shows which is its own.
    UNPAIRED = "unpaired"


class Pairing(str, enum.Enum):
    """How an input was tied to its log(s) (strongest first)."""

    #: The log is named after the input's stem (``<stem>_compile_succ.log``).
    STEM = "stem"
    #: The 64-hex hash in the log's name is the sha256 of the input file's bytes.
    HASH = "hash"
    #: By op type and count within the stage's ``*_compile_log/`` directories: which of
    #: the op type's inputs owns which log is not shown by the names.
    OP_TYPE = "op_type"


@record
class OpTypeTally:
    """One op type of a stage: its inputs, its logs and what pairing them showed."""

    op_type: str
    inputs: int
    logs: int
    succeeded: int
    failed: int
    no_log: int
    unpaired: int
    pairing: Pairing | None
    #: Logs that pair with no input (more logs than any reading allows).
    extra_logs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "op_type": self.op_type,
            "inputs": self.inputs,
            "logs": self.logs,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "no_log": self.no_log,
            "unpaired": self.unpaired,
            "pairing": self.pairing.value if self.pairing is not None else None,
            "extra_logs": self.extra_logs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> OpTypeTally:
        pairing = data.get("pairing")
        try:
            parsed = Pairing(pairing) if pairing is not None else None
        except ValueError as exc:
            raise EvidenceError(f"{where}: {exc}") from None
        return cls(
            op_type=require(data, "op_type", str, where),
            inputs=require(data, "inputs", int, where),
            logs=require(data, "logs", int, where),
            succeeded=require(data, "succeeded", int, where),
            failed=require(data, "failed", int, where),
            no_log=require(data, "no_log", int, where),
            unpaired=require(data, "unpaired", int, where),
            pairing=parsed,
            extra_logs=int(data.get("extra_logs", 0)),
        )


@record
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


@record
class InputResult:
    """One named input of a stage: its stem, outcome and the log(s) a person reads next.

    ``name`` is the input's stem where the pairing shows which input it is (stem, hash);
    by op type and count it is the op type, and ``candidates`` lists the inputs of that
    op type the log may belong to, so a person can still follow one name to the other.
    """

    name: str
    outcome: InputOutcome
    logs: tuple[str, ...] = ()
    op_type: str | None = None
    pairing: Pairing | None = None
    candidates: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "outcome": self.outcome.value,
            "logs": list(self.logs),
            "op_type": self.op_type,
            "pairing": self.pairing.value if self.pairing is not None else None,
            "candidates": list(self.candidates),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> InputResult:
        pairing = data.get("pairing")
        try:
            outcome = InputOutcome(require(data, "outcome", str, where))
            parsed = Pairing(pairing) if pairing is not None else None
        except ValueError as exc:
            raise EvidenceError(f"{where}: {exc}") from None
        op_type = data.get("op_type")
        return cls(
            name=require(data, "name", str, where),
            outcome=outcome,
            logs=tuple(str(x) for x in require(data, "logs", list, where)),
            op_type=str(op_type) if op_type is not None else None,
            pairing=parsed,
            candidates=tuple(str(x) for x in data.get("candidates", ()) or ()),
        )


@record
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
    #: Inputs that logs of their op type exist for, but no reading pairs (see Pairing).
    unpaired: int = 0
    #: Per-input logs found under the result root (succ and error names, each once).
    logs: int = 0
    #: Logs that pair with no input: names of no known form, op types with no input,
    #: more logs than any reading allows. Named in ``unpaired_logs`` (up to MAX_NAMED).
    extra_logs: int = 0
    unpaired_logs: tuple[str, ...] = ()
    op_types: tuple[OpTypeTally, ...] = ()
    #: Inputs whose log is named after them (``<stem>_compile_*.log``).
    stem_paired: int = 0
    #: ``(path, sha256)`` of each ``.run`` package, taken after return: what the stage
    #: produced, byte for byte, even once the file was moved (C6: did a change reach it).
    run_sha256: tuple[tuple[str, str], ...] = ()

    @property
    def accounted(self) -> bool:
        """Every input paired with its log(s) under every reading, nothing left over, and
        nothing hid a directory (C2: what cannot be paired never makes a success)."""
        return (
            self.params_readable
            and self.no_log == 0
            and self.both_logs == 0
            and self.unpaired == 0
            and self.extra_logs == 0
            and self.unreadable == 0
            and self.succeeded + self.failed == self.inputs
        )

    @property
    def pairings(self) -> tuple[Pairing, ...]:
        """The pairings used, strongest first (for the report)."""
        used = {t.pairing for t in self.op_types if t.pairing is not None}
        if self.stem_paired:
            used.add(Pairing.STEM)
        return tuple(p for p in Pairing if p in used)

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
            "unpaired": self.unpaired,
            "logs": self.logs,
            "extra_logs": self.extra_logs,
            "unpaired_logs": list(self.unpaired_logs),
            "op_types": [t.to_dict() for t in self.op_types],
            "stem_paired": self.stem_paired,
            "run_sha256": dict(self.run_sha256),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> StageCensus:
        named = require(data, "named", list, where)
        tallies = data.get("op_types", [])
        if not isinstance(tallies, list) or not all(isinstance(t, dict) for t in tallies):
            raise EvidenceError(f"{where}: field 'op_types' has the wrong type")
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
            unpaired=int(data.get("unpaired", 0)),
            logs=int(data.get("logs", 0)),
            extra_logs=int(data.get("extra_logs", 0)),
            unpaired_logs=tuple(str(x) for x in data.get("unpaired_logs", ()) or ()),
            op_types=tuple(OpTypeTally.from_dict(t, where) for t in tallies),
            stem_paired=int(data.get("stem_paired", 0)),
            run_sha256=_digests(data.get("run_sha256", {}), where),
        )


def _digests(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise EvidenceError(f"{where}: field 'run_sha256' has the wrong type")
    return tuple(sorted((str(k), v) for k, v in raw.items()))


class ArgsFrom(str, enum.Enum):
    """Where a stage's inputs directory and result root came from (C3)."""

    #: Its own argv, read from ``/proc/<pid>/cmdline`` while it lived.
    ARGV = "argv"
    #: It exec'ed and was gone before its argv could be read: the one build directory a
    #: launcher start line announced that no other stage claims, and the one chosen-inputs
    #: directory in it (a stage recognised from its evidence, never from a race won).
    ANNOUNCED_ROOT = "announced_root"


@record
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
    #: ``--enforce-jobs`` (C5): the argv the launcher gave skgate's op_compiler shim,
    #: before the shim set ``-j``; ``args`` is then what the real op_compiler ran with.
    original_argv: tuple[str, ...] | None = None
    args_from: ArgsFrom = ArgsFrom.ARGV

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
            "original_argv": list(self.original_argv) if self.original_argv is not None else None,
            # Only when the argv was not read: older readers and files keep their bytes.
            **({} if self.args_from is ArgsFrom.ARGV else {"args_from": self.args_from.value}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> StageRecord:
        census = data.get("census")
        if census is not None and not isinstance(census, dict):
            raise EvidenceError(f"{where}: field 'census' has the wrong type")

        try:
            args_from = ArgsFrom(data.get("args_from", ArgsFrom.ARGV.value))
        except ValueError as exc:
            raise EvidenceError(f"{where}: {exc}") from None
        # The parsed form is derived: reparse the archived argv, so a reader never trusts
        # a parse that disagrees with the argv it came from; an argv never read has the
        # directories its evidence gave, and nothing else.
        args = parse_compiler_argv(tuple(str(a) for a in require(data, "argv", list, where)))
        if args_from is ArgsFrom.ANNOUNCED_ROOT:
            parsed = require(data, "parsed", dict, where)
            args = args_from_root(
                require(parsed, "params_dir", str, where), require(parsed, "output", str, where)
            )
        return cls(
            pid=require(data, "pid", int, where),
            start_ticks=require(data, "start_ticks", int, where),
            args=args,
            first_seen=float(require(data, "first_seen", (int, float), where)),
            last_seen=float(require(data, "last_seen", (int, float), where)),
            ended=require(data, "ended", bool, where),
            exit_status=opt_int(data, "exit_status", where),
            exit_signal=opt_int(data, "exit_signal", where),
            inputs_first_seen=opt_int(data, "inputs_first_seen", where),
            census=StageCensus.from_dict(census, where) if census else None,
            original_argv=_opt_argv(data, "original_argv", where),
            args_from=args_from,
        )


def args_from_root(params_dir: str, output: str) -> CompilerArgs:
    """The args of a stage whose argv was never read: its directories, no argv (C3)."""
    return CompilerArgs(argv=(), params_dir=params_dir, output=output)


def _opt_argv(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    raw = data.get(key)
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise EvidenceError(f"{where}: field {key!r} has the wrong type")
    return tuple(raw)


def _objects(d: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
    raw = d.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise EvidenceError(f"{where}: field {key!r} has the wrong type")
    return raw


@record
class Stages:
    """``stages.json``: every stage of the attempt, and the most ``opc`` seen alive."""

    stages: tuple[StageRecord, ...]
    peak_opc: int
    compiler_names: tuple[str, ...]
    complete: bool
    #: Build directories the launcher's start lines named (C2: a cache hit's only trace).
    announced: tuple[AnnouncedRoot, ...] = ()
    #: Static-kernel cache files beside the outputs (C2, C6).
    caches: tuple[CacheFile, ...] = ()
    #: Ways the launcher ran no compile by design, each seen on disk (issue 27).
    idle: tuple[Idle, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_STAGES,
            "idle": [i.to_dict() for i in self.idle],
            "stages": [s.to_dict() for s in self.stages],
            "peak_opc": self.peak_opc,
            "compiler_names": list(self.compiler_names),
            "complete": self.complete,
            "announced": [a.to_dict() for a in self.announced],
            "caches": [c.to_dict() for c in self.caches],
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "stages.json") -> Stages:
        if isinstance(data, dict) and data.get("schema") == SCHEMA_STAGES_V1:
            d: Mapping[str, Any] = data
        else:
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
            announced=tuple(
                AnnouncedRoot.from_dict(a, where) for a in _objects(d, "announced", where)
            ),
            caches=tuple(CacheFile.from_dict(c, where) for c in _objects(d, "caches", where)),
            idle=idles_from(d.get("idle"), where),
        )

    @property
    def cached_packages(self) -> tuple[str, ...]:
        """Packages a cache that existed before launch names and that exist; those whose
        key matches the announced inputs only, when any does (the hit is then shown)."""
        pre = [e for c in self.caches if c.preexisting for e in c.entries if e.run_exists]
        matched = [e.run_path for e in pre if e.key_matches]
        return tuple(matched or [e.run_path for e in pre])
