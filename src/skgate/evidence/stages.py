"""The stage census and tracker: what each owned op_compiler invocation left on disk (C2, C3).

A stage's inputs are the ``*.json`` entries of its ``-p`` directory; each input's outcome
is its ``<stem>_compile_succ.log`` / ``<stem>_compile_error.log`` in a ``*_compile_log/``
directory under the stage's ``-o`` result root (matched by the input's stem); its
packages are the ``*.run`` files under that root. Inputs with no log, or with both, are
named: after natural return each must have exactly one (C1: before it, an error-named
log is provisional, so the census records ``after_return``).

Walking rules are the artifact census's (:mod:`skgate.evidence.census`): ``os.scandir``
with an explicit stack and the kernel's ``d_type`` (no ``stat`` per file), symbolic links
never followed, a vanished directory skipped, an unreadable one counted.

:class:`StageTracker` is the runner's side: the supervisor hands it every new (or
exec'd) owned process and, per scan, the owned processes alive; at the end it builds
``stages.json`` from the final ownership records.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from skgate.evidence import files
from skgate.evidence.census import ERROR_SUFFIX, RUN_SUFFIX, SUCC_SUFFIX
from skgate.model.running import ProcessRecord
from skgate.proc.observe import COMPILER_NAMES, is_compiler

if TYPE_CHECKING:
    from skgate.model.stages import CompilerArgs, StageCensus, Stages

# The stage records (skgate.model.stages) are loaded where they are first used: a runner
# builds its tracker before the launch, and meets its first op_compiler only after it.

LOG_DIR_SUFFIX = "_compile_log"
INPUT_SUFFIX = ".json"
#: The compile driver's name: a compiler-named process with this name or argv[0] is a
#: stage even when its argv could not be read (a zombie has none left).
DRIVER_NAME = "op_compiler"


def _resolve(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or cwd is None:
        return path
    return os.path.join(cwd, path)


def input_stems(params_dir: str) -> list[str] | None:
    """Stems of the ``*.json`` entries of ``params_dir`` (None when it cannot be read)."""
    try:
        it = os.scandir(params_dir)
    except OSError:
        return None
    stems: list[str] = []
    with it:
        for entry in it:
            name = entry.name
            if not name.endswith(INPUT_SUFFIX):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            stems.append(name[: -len(INPUT_SUFFIX)])
    return stems


def count_inputs(params_dir: str) -> int | None:
    stems = input_stems(params_dir)
    return None if stems is None else len(stems)


def _walk_root(root: str) -> tuple[dict[str, str], dict[str, str], list[str], int]:
    """(succ stem -> path, error stem -> path, .run paths, unreadable dirs) under root."""
    succ: dict[str, str] = {}
    errors: dict[str, str] = {}
    runs: list[str] = []
    unreadable = 0
    # (path, inside a *_compile_log directory)
    stack: list[tuple[str, bool]] = [(root, root.endswith(LOG_DIR_SUFFIX))]
    while stack:
        path, in_logs = stack.pop()
        try:
            it = os.scandir(path)
        except FileNotFoundError:
            continue
        except OSError:
            unreadable += 1
            continue
        with it:
            for entry in it:
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, in_logs or name.endswith(LOG_DIR_SUFFIX)))
                        continue
                    if in_logs and name.endswith(".log"):
                        if name.endswith(SUCC_SUFFIX):
                            if entry.is_file(follow_symlinks=False):
                                succ.setdefault(name[: -len(SUCC_SUFFIX)], entry.path)
                        elif name.endswith(ERROR_SUFFIX) and entry.is_file(follow_symlinks=False):
                            errors.setdefault(name[: -len(ERROR_SUFFIX)], entry.path)
                    elif name.endswith(RUN_SUFFIX) and entry.is_file(follow_symlinks=False):
                        runs.append(entry.path)
                except OSError:
                    continue
    return succ, errors, runs, unreadable


def stage_census(params_dir: str, output_root: str, *, after_return: bool) -> StageCensus:
    """Per-input outcomes of one stage (see the module docstring)."""
    from skgate.model.stages import (  # noqa: PLC0415 - see the imports
        MAX_NAMED,
        InputOutcome,
        InputResult,
        StageCensus,
    )

    stems = input_stems(params_dir)
    succ, errors, runs, unreadable = _walk_root(output_root)
    readable = stems is not None
    counts = dict.fromkeys(InputOutcome, 0)
    named: list[InputResult] = []
    omitted = 0
    for stem in sorted(stems or ()):
        s = succ.get(stem)
        e = errors.get(stem)
        if s is not None and e is not None:
            result = InputResult(stem, InputOutcome.BOTH_LOGS, (e, s))
        elif s is not None:
            counts[InputOutcome.SUCCEEDED] += 1
            continue
        elif e is not None:
            result = InputResult(stem, InputOutcome.FAILED, (e,))
        else:
            result = InputResult(stem, InputOutcome.NO_LOG)
        counts[result.outcome] += 1
        if counts[result.outcome] <= MAX_NAMED:
            named.append(result)
        else:
            omitted += 1
    return StageCensus(
        params_dir=params_dir,
        output_root=output_root,
        params_readable=readable,
        inputs=len(stems or ()),
        succeeded=counts[InputOutcome.SUCCEEDED],
        failed=counts[InputOutcome.FAILED],
        no_log=counts[InputOutcome.NO_LOG],
        both_logs=counts[InputOutcome.BOTH_LOGS],
        named=tuple(named),
        run_packages=tuple(sorted(runs)),
        unreadable=unreadable,
        after_return=after_return,
        omitted=omitted,
    )


def compiler_names_or_default(names: Iterable[str]) -> tuple[str, ...]:
    wanted = tuple(names)
    return wanted or COMPILER_NAMES


def is_stage(record: ProcessRecord, names: Iterable[str]) -> bool:
    """Is this owned process an op_compiler invocation (by comm or argv[0], C3)?"""
    from skgate.model.stages import parse_compiler_argv  # noqa: PLC0415

    wanted = compiler_names_or_default(names)
    if not is_compiler(record.name, record.argv, wanted):
        return False
    if parse_compiler_argv(record.argv).is_invocation:
        return True
    first = os.path.basename(record.argv[0]) if record.argv else ""
    return DRIVER_NAME in (record.name, first)


class StageTracker:
    """Collects stages while the supervisor observes the owned tree (see module doc)."""

    def __init__(self, compiler_names: Iterable[str] = (), cwd: str | None = None) -> None:
        self.names = compiler_names_or_default(compiler_names)
        self.cwd = cwd
        self.inputs_first_seen: dict[tuple[int, int], int | None] = {}
        self._opc: set[tuple[int, int]] = set()
        self.peak_opc = 0

    def args_of(self, record: ProcessRecord) -> CompilerArgs:
        from skgate.model.stages import parse_compiler_argv  # noqa: PLC0415

        return parse_compiler_argv(record.argv)

    def on_process(self, record: ProcessRecord) -> None:
        """A new owned process, or one that exec'd: note stages and opc workers."""
        key = (record.pid, record.start_ticks)
        if is_stage(record, self.names):
            self._opc.discard(key)
            if key not in self.inputs_first_seen:
                args = self.args_of(record)
                self.inputs_first_seen[key] = (
                    count_inputs(_resolve(args.params_dir, self.cwd))
                    if args.params_dir is not None
                    else None
                )
        elif is_compiler(record.name, record.argv, self.names):
            self._opc.add(key)
        else:
            self._opc.discard(key)

    def on_scan(self, alive: Iterable[tuple[int, int]]) -> None:
        """The owned processes alive at one scan: keeps the most ``opc`` alive at once."""
        n = sum(1 for key in alive if key in self._opc)
        self.peak_opc = max(self.peak_opc, n)

    def finish(self, records: Iterable[ProcessRecord], *, after_return: bool) -> Stages:
        """``stages.json`` from the final manifest, with each stage's census taken now."""
        from skgate.model.stages import StageRecord, Stages  # noqa: PLC0415

        stages: list[StageRecord] = []
        for rec in records:
            if not is_stage(rec, self.names):
                continue
            args = self.args_of(rec)
            census = None
            if args.is_invocation and args.params_dir is not None and args.output is not None:
                census = stage_census(
                    _resolve(args.params_dir, self.cwd),
                    _resolve(args.output, self.cwd),
                    after_return=after_return,
                )
            ended = rec.exit_status is not None or rec.exit_signal is not None or after_return
            stages.append(
                StageRecord(
                    pid=rec.pid,
                    start_ticks=rec.start_ticks,
                    args=args,
                    first_seen=rec.first_seen,
                    last_seen=rec.last_seen,
                    ended=ended,
                    exit_status=rec.exit_status,
                    exit_signal=rec.exit_signal,
                    inputs_first_seen=self.inputs_first_seen.get((rec.pid, rec.start_ticks)),
                    census=census,
                )
            )
        return Stages(
            stages=tuple(stages),
            peak_opc=self.peak_opc,
            compiler_names=self.names,
            complete=after_return,
        )


def load_stages(path: Path) -> Stages | None:
    """``stages.json`` of an attempt, or None when the attempt has none (older skgate)."""
    from skgate.model.stages import Stages  # noqa: PLC0415

    if not path.exists():
        return None
    return Stages.from_dict(files.read_json(path), str(path))
