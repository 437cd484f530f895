"""The stage tracker: every owned op_compiler invocation as a stage of its own (C2, C3).

Runner-side live tracking: it lives outside ``evidence/``, which only reads archives (the
report never loads it). Reading ``stages.json`` back is :mod:`skgate.evidence.stages`.
What one stage left on disk (inputs, per-input logs, packages) and how inputs and logs
are paired is :mod:`skgate.evidence.stage_census`, loaded after the launch.

A stage is an op_compiler *invocation*: its workers, seen between fork and exec with
the driver's argv, are never stages of their own (one stage per invocation, however
many ``opc`` children it starts).

:class:`StageTracker` is the runner's side: the supervisor hands it every new (or
exec'd) owned process and, per scan, the owned processes alive; at the end it builds
``stages.json`` from the final ownership records.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from skgate.model.running import ProcessRecord
from skgate.proc.observe import COMPILER_NAMES, is_compiler, program_name

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from skgate.model.stages import AnnouncedRoot, CompilerArgs, Stages

# The stage records (skgate.model.stages) are loaded where they are first used: a runner
# builds its tracker before the launch, and meets its first op_compiler only after it.

#: The compile driver's name: a compiler-named process with this name or argv[0] is a
#: stage even when its argv could not be read (a zombie has none left).
DRIVER_NAME = "op_compiler"


def _resolve(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or cwd is None:
        return path
    return os.path.join(cwd, path)


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
    return DRIVER_NAME in (record.name, first, program_name(record.argv))


def _is_worker_fork(
    record: ProcessRecord,
    stage_argv: Mapping[int, tuple[str, ...]],
    parsed: Mapping[int, CompilerArgs] | None = None,
) -> bool:
    """A child of a stage is one of its workers, never a stage of its own: seen between
    fork and exec it carries the stage's argv, gone before its own argv could be read it
    has that argv or none at all. Only a child that names other inputs and another
    result root (a nested invocation) would be a stage. ``parsed``: the stages' argv
    already parsed, by pid (the tracker's, so 64 workers' execs parse it once)."""
    parent = stage_argv.get(record.ppid)
    if parent is None:
        return False
    if record.argv == parent or record.argv_late or not record.argv:
        return True
    from skgate.model.stages import parse_compiler_argv  # noqa: PLC0415

    mine = parse_compiler_argv(record.argv)
    theirs = parsed.get(record.ppid) if parsed is not None else None
    if theirs is None:
        theirs = parse_compiler_argv(parent)
    return not mine.is_invocation or (mine.params_dir, mine.output) == (
        theirs.params_dir,
        theirs.output,
    )


class StageTracker:
    """Collects stages while the supervisor observes the owned tree (see module doc)."""

    def __init__(self, compiler_names: Iterable[str] = (), cwd: str | None = None) -> None:
        self.names = compiler_names_or_default(compiler_names)
        self.cwd = cwd
        self.inputs_first_seen: dict[tuple[int, int], int | None] = {}
        #: pid -> argv of each stage seen, to tell its forked workers from new stages.
        self._stage_argv: dict[int, tuple[str, ...]] = {}
        #: pid -> that argv parsed once (issue 29: a launch burst asks it of every worker).
        self._stage_parsed: dict[int, CompilerArgs] = {}
        self._stage_args: dict[tuple[int, int], CompilerArgs] = {}
        self._opc: set[tuple[int, int]] = set()
        self.peak_opc = 0
        self.created = time.time()

    def args_of(
        self, record: ProcessRecord, parent_argv: tuple[str, ...] | None = None
    ) -> CompilerArgs:
        """Its own argv, parsed; an argv it only inherited from ``parent_argv`` (it
        exec'ed and was gone before its image could be read) is no argv of its own."""
        from skgate.model.stages import parse_compiler_argv  # noqa: PLC0415

        if record.argv_late and parent_argv is not None and record.argv == parent_argv:
            return parse_compiler_argv(())
        return parse_compiler_argv(record.argv)

    def on_process(self, record: ProcessRecord) -> None:
        """A new owned process, or one that exec'd: note stages and opc workers."""
        key = (record.pid, record.start_ticks)
        if _is_worker_fork(record, self._stage_argv, self._stage_parsed):
            self._opc.add(key)  # an opc between fork and exec is already a worker
        elif is_stage(record, self.names):
            self._opc.discard(key)
            if key not in self.inputs_first_seen:
                from skgate.evidence.stage_census import count_inputs  # noqa: PLC0415

                args = self.args_of(record)
                self._stage_argv[record.pid] = record.argv
                self._stage_parsed[record.pid] = args  # its own argv (no parent_argv)
                self._stage_args[key] = args
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

    def progress(self) -> list[dict[str, object]]:
        """Per stage: inputs and inputs done so far (succ logs, paired as the census does).

        Provisional (C1): taken while the compile lives, it proves nothing either way.
        """
        from skgate.evidence.stage_census import stage_census  # noqa: PLC0415

        out: list[dict[str, object]] = []
        for (pid, _), args in self._stage_args.items():
            if args.params_dir is None or args.output is None:
                continue
            c = stage_census(
                _resolve(args.params_dir, self.cwd),
                _resolve(args.output, self.cwd),
                after_return=False,
            )
            out.append({"pid": pid, "inputs": c.inputs, "done": c.succeeded})
        return out

    def stage_records(self, records: Iterable[ProcessRecord]) -> list[ProcessRecord]:
        """The final manifest's op_compiler invocations, without their worker forks."""
        recs = list(records)
        stage_argv = {r.pid: r.argv for r in recs if is_stage(r, self.names)}
        # Walk in birth order so a worker's parent is known as a stage before it.
        found: list[ProcessRecord] = []
        argv_of: dict[int, tuple[str, ...]] = {}
        for rec in sorted(recs, key=lambda r: (r.start_ticks, r.pid)):
            if rec.pid not in stage_argv or _is_worker_fork(rec, argv_of):
                continue
            argv_of[rec.pid] = rec.argv
            found.append(rec)
        return found

    def finish(
        self,
        records: Iterable[ProcessRecord],
        *,
        after_return: bool,
        announced: Iterable[tuple[str, int | None]] = (),
        outputs: Path | None = None,
        before: Collection[tuple[str, int]] = (),
        uninstall_paths: Iterable[str] = (),
    ) -> Stages:
        """``stages.json`` from the final manifest, with each stage's census taken now.

        ``announced`` are the (build directory, rank) pairs of the launcher's start lines
        and ``outputs`` the attempt's outputs directory: with ``before`` (its top entries
        before launch) they give the announced roots and the cache files (C2).
        """
        from skgate.evidence.idle import find_idle  # noqa: PLC0415
        from skgate.evidence.stage_census import stage_census  # noqa: PLC0415
        from skgate.evidence.stage_roots import (  # noqa: PLC0415
            announced_roots,
            cache_files,
            cache_keys,
            owned_unannounced_roots,
        )
        from skgate.model.stages import ArgsFrom, StageRecord, Stages  # noqa: PLC0415

        recs = list(records)
        argv_by_pid = {r.pid: r.argv for r in recs}
        found = self.stage_records(recs)
        args_of = {r.pid: self.args_of(r, argv_by_pid.get(r.ppid)) for r in found}
        named = [(_resolve(r, self.cwd), rank) for r, rank in announced]
        # A root no start line named (warnings hidden) is still this attempt's when an
        # owned process made it after launch.
        hidden = owned_unannounced_roots(
            outputs, before, {r.pid for r in recs}, [r for r, _ in named]
        )
        roots = announced_roots(named, outputs, before, hidden)
        recognised = _recognise_from_roots(found, args_of, roots, self.cwd)
        stages: list[StageRecord] = []
        for rec in found:
            args = recognised.get(rec.pid, args_of[rec.pid])
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
                    args_from=ArgsFrom.ANNOUNCED_ROOT if rec.pid in recognised else ArgsFrom.ARGV,
                )
            )
        # Issue 27: no op_compiler ran; what on disk shows the launcher had nothing to
        # compile (each finding positive evidence, else nothing is claimed: C2.5).
        idle = (
            ()
            if found
            else find_idle(
                roots,
                recs,
                self.cwd,
                self.created,
                uninstall_paths=uninstall_paths,
                outputs=os.fspath(outputs) if outputs is not None else None,
            )
        )
        # The attempt began when the tracker was made (before launch): a cache file not
        # modified since was there before, so a hit could have come from it.
        return Stages(
            idle=idle,
            stages=tuple(stages),
            peak_opc=self.peak_opc,
            compiler_names=self.names,
            complete=after_return,
            announced=roots,
            caches=cache_files(
                [a.root for a in roots],
                outputs,
                self.created,
                # Keys only where nothing compiled: a hit's root holds its inputs alone.
                frozenset().union(*(cache_keys(a.root) for a in roots if a.exists and not a.logs)),
            ),
        )


def _recognise_from_roots(
    found: Sequence[ProcessRecord],
    args_of: Mapping[int, CompilerArgs],
    roots: Sequence[AnnouncedRoot],
    cwd: str | None,
) -> dict[int, CompilerArgs]:
    """A stage whose argv was never read, recognised from its evidence (C3).

    An op_compiler that exec'ed and ended before the runner could read its
    ``/proc/<pid>/cmdline`` (a short stage on a loaded host) still left its result root:
    the build directory the launcher announced. Only an unambiguous pairing counts: one
    such stage, one announced root (existing, made by this attempt) that no stage with a
    readable argv names, holding one chosen-inputs directory. Anything else stays
    unreadable, and the stage is no final summary (C1: never a guess).
    """
    from skgate.evidence.stage_roots import chosen_dirs  # noqa: PLC0415
    from skgate.model.stages import args_from_root  # noqa: PLC0415

    unread = [r for r in found if not args_of[r.pid].is_invocation and not args_of[r.pid].argv]
    if len(unread) != 1:
        return {}
    claimed = {
        os.path.normpath(_resolve(a.output, cwd)) for a in args_of.values() if a.output is not None
    }
    spare = [
        r
        for r in roots
        if r.exists and not r.preexisting and os.path.normpath(r.root) not in claimed
    ]
    if len(spare) != 1:
        return {}
    chosen = chosen_dirs(spare[0].root)
    if len(chosen) != 1:
        return {}
    return {unread[0].pid: args_from_root(chosen[0], spare[0].root)}
