"""The stage census: what one op_compiler invocation left on disk, paired input by input (C2, C3).

A stage's inputs are the ``*.json`` entries of its ``-p`` directory; its per-input logs
are the ``*_compile_succ.log`` / ``*_compile_error.log`` files in ``*_compile_log/``
directories under its ``-o`` result root; its packages are the ``*.run`` files under
that root. After natural return each input must have its log(s) (C1: before it an
error-named log is provisional, so the census records ``after_return``).

Real logs are not named after their inputs (``docs/cann-static-compile.md``): the input
``HcPre_bfloat16_ND_32_4_5120_106.json`` compiles into
``static_kernel_HcPre_<sha256>_<pid>_d0_compile_succ.log``. Pairing, strongest first:

1. a log named after the input's stem pairs exactly (runtimes that name them so);
2. the hash in a real name pairs exactly where it is the sha256 of one input's bytes
   (tried only where the cheap rule below is not already certain: it reads the inputs);
3. otherwise by op type (from the input's name, else its JSON's ``"op_type"``) and count
   within the stage, under every reading of ``_d<n>`` (:func:`_pair_by_count`).

Whatever cannot be paired is named (inputs and logs) and never makes a success (C2).

Walking rules are the artifact census's (:mod:`skgate.evidence.census`): ``os.scandir``
with an explicit stack and the kernel's ``d_type`` (no ``stat`` per file), symbolic links
never followed, a vanished directory skipped, an unreadable one counted. Files are read
only as regular files, without following links, with a bound (:func:`read_bounded`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path

from skgate.evidence import regular
from skgate.evidence.census import ERROR_SUFFIX, RUN_SUFFIX, SUCC_SUFFIX
from skgate.evidence.digest import sha256_bytes, sha256_file
from skgate.model.errors import EvidenceError
from skgate.model.frozen import record
from skgate.model.lazy_re import Lazy
from skgate.model.stages import (
    MAX_NAMED,
    InputOutcome,
    InputResult,
    OpTypeTally,
    Pairing,
    StageCensus,
)

LOG_DIR_SUFFIX = "_compile_log"
INPUT_SUFFIX = ".json"
LOG_PREFIX = "static_kernel_"
#: An operator JSON is small; a larger one is not read (bounded reads).
MAX_INPUT_BYTES = 1 << 20
#: Inputs of one op type whose bytes are hashed to pair exactly, at the most.
MAX_HASHED = 4096
#: Candidate inputs (and logs) listed for one op type paired by count.
MAX_LISTED_CANDIDATES = 20


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


@record
class Walk:
    """What :func:`walk_root` found under a result root."""

    #: log base -> the ``*_compile_log`` directory holding ``<base>_compile_succ.log``
    #: (the first met); the base is the log's name without its suffix. Directories, not
    #: paths: one shared string per directory instead of one new path per log.
    succ: dict[str, str]
    #: The same for ``<base>_compile_error.log``.
    error: dict[str, str]
    runs: list[str]
    unreadable: int
    #: :func:`input_stems` of ``params_dir`` when the walk read it on its way (the real
    #: layout puts the ``-p`` directory under the result root); None when it did not.
    stems: list[str] | None

    @property
    def logs(self) -> int:
        """Per-input log bases (a base with both logs counts once)."""
        return len(self.succ.keys() | self.error.keys())


def log_path(directory: str, base: str, succeeded: bool) -> str:
    return os.path.join(directory, base + (SUCC_SUFFIX if succeeded else ERROR_SUFFIX))


def walk_root(root: str, params_dir: str | None = None) -> Walk:
    """The logs and packages under ``root`` in one pass (see the module docstring).

    ``params_dir``: when the walk meets this very path, its ``*.json`` stems are taken on
    the way, so a stage's inputs are not listed twice (issue 19's bench: they are half
    the entries). A path spelt differently is simply listed again by the caller.
    """
    succ: dict[str, str] = {}
    error: dict[str, str] = {}
    runs: list[str] = []
    stems: list[str] | None = None
    unreadable = 0
    params = params_dir.rstrip("/") if params_dir else None
    n_succ, n_error = len(SUCC_SUFFIX), len(ERROR_SUFFIX)
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
        mine: list[str] | None = None
        if path == params:
            mine = stems = []
        with it:
            for entry in it:
                name = entry.name
                try:
                    # Log names first: they are almost every entry, and is_file (the
                    # kernel's d_type, no stat) answers for them; a directory that
                    # happens to end so still falls through to the recursion below.
                    if in_logs:
                        if name.endswith(SUCC_SUFFIX) and entry.is_file(follow_symlinks=False):
                            succ.setdefault(name[:-n_succ], path)
                            continue
                        if name.endswith(ERROR_SUFFIX) and entry.is_file(follow_symlinks=False):
                            error.setdefault(name[:-n_error], path)
                            continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, in_logs or name.endswith(LOG_DIR_SUFFIX)))
                    elif mine is not None and name.endswith(INPUT_SUFFIX):
                        mine.append(name[: -len(INPUT_SUFFIX)])
                    elif name.endswith(RUN_SUFFIX) and entry.is_file(follow_symlinks=False):
                        runs.append(entry.path)
                except OSError:
                    continue
    return Walk(succ, error, runs, unreadable, stems)


@record
class LogName:
    """A real per-input log name: ``static_kernel_<OpType>_<sha256>_<pid>_d<n>``.

    A frozen record, not a ``typing.NamedTuple`` (a run never imports ``typing``, issue
    29); the census's own loop parses its ten thousand names inline, without one.
    """

    op_type: str
    digest: str
    pid: str
    variant: str


# Lazy: tried at each "_" from the left, so the 64-hex field anchors it at once (op
# types are short); fullmatch keeps an op type with an underscore whole.
_LOG_NAME = Lazy(r"static_kernel_(.+?)_([0-9a-f]{64})_([0-9]+)_d([0-9]+)")


def parse_log_name(base: str) -> LogName | None:
    """The parts of a log base (its name without the ``_compile_*.log`` suffix), or None.

    Anchored on the hash from the right, so an op type with an underscore stays whole.
    """
    m = _LOG_NAME.get().fullmatch(base)
    return None if m is None else LogName(*m.groups())


def read_bounded(path: str, limit: int) -> bytes | None:
    """A regular file's bytes up to ``limit`` (:mod:`skgate.evidence.regular`: never
    through a link, never blocking on a FIFO); None when it is anything else, larger, or
    unreadable: an input or cache file that cannot be read is simply not paired by it."""
    try:
        return regular.read_bytes(path, limit)
    except (EvidenceError, OSError):
        return None


def json_op_type(path: str) -> str | None:
    """The ``"op_type"`` of a dumped operator JSON (bounded read), or None."""
    data = read_bounded(path, MAX_INPUT_BYTES)
    if data is None or len(data) >= MAX_INPUT_BYTES:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    op = doc.get("op_type") if isinstance(doc, dict) else None
    return op if isinstance(op, str) and op else None


def file_digest(path: str) -> str | None:
    data = read_bounded(path, MAX_INPUT_BYTES)
    if data is None or len(data) >= MAX_INPUT_BYTES:
        return None
    return sha256_bytes(data)


class _Log:
    """One per-input log base: its parts (:class:`LogName`'s fields, kept flat: ten
    thousand are made per large stage) and the directories of its succ / error logs."""

    __slots__ = ("base", "digest", "error", "op_type", "succ", "variant")

    def __init__(
        self, base: str, parts: tuple[str, ...], succ: str | None, error: str | None
    ) -> None:
        self.base = base
        self.op_type, self.digest, _, self.variant = parts
        self.succ = succ
        self.error = error

    @property
    def state(self) -> InputOutcome:
        return _state(self.succ, self.error)

    @property
    def paths(self) -> tuple[str, ...]:
        return _paths(self.base, self.succ, self.error)


def _state(succ: str | None, error: str | None) -> InputOutcome:
    if succ is not None and error is not None:
        return InputOutcome.BOTH_LOGS
    return InputOutcome.SUCCEEDED if succ is not None else InputOutcome.FAILED


def _paths(base: str, succ: str | None, error: str | None) -> tuple[str, ...]:
    """The error log's path, then the succ log's (those that exist)."""
    found = (
        log_path(error, base, False) if error is not None else None,
        log_path(succ, base, True) if succ is not None else None,
    )
    return tuple(p for p in found if p is not None)


class _Tally:
    """Running counts and names of one stage's census."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(InputOutcome, 0)
        self.named: list[InputResult] = []
        self.omitted = 0
        self.tallies: list[OpTypeTally] = []
        self.extra = 0
        self.extra_named: list[str] = []

    def add(self, result: InputResult, n: int = 1) -> None:
        self.counts[result.outcome] += n
        if result.outcome is InputOutcome.SUCCEEDED:
            return
        if len(self.named) < MAX_NAMED:
            self.named.append(result)
        else:
            self.omitted += 1

    def extra_logs(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.extra += 1
            if len(self.extra_named) < MAX_NAMED:
                self.extra_named.append(path)


def _op_of_stem(stem: str, known: Mapping[str, object], compound: bool) -> str | None:
    """The longest ``<OpType>`` among ``known`` that the input's name starts with.

    ``compound``: some known op type has an underscore in it (else the first word is
    the only candidate, the common and cheap case)."""
    if not compound:
        first = stem.partition("_")[0]
        return first if first in known else None
    best = None
    i = stem.find("_")
    while i != -1:
        if stem[:i] in known:
            best = stem[:i]
        i = stem.find("_", i + 1)
    if stem in known:
        best = stem
    return best


def _pair_by_hash(
    params_dir: str, op: str, stems: list[str], logs: list[_Log], tally: _Tally
) -> bool:
    """Pair exactly where each log's hash is the sha256 of one input (True when done)."""
    by_digest: dict[str, str] = {}
    for stem in stems[:MAX_HASHED]:
        digest = file_digest(os.path.join(params_dir, stem + INPUT_SUFFIX))
        if digest is None or digest in by_digest:
            return False
        by_digest[digest] = stem
    if len(by_digest) != len(stems):
        return False
    owned: dict[str, list[_Log]] = {}
    for log in logs:
        owner = by_digest.get(log.digest)
        if owner is None:
            return False
        owned.setdefault(owner, []).append(log)
    counts = dict.fromkeys(InputOutcome, 0)
    for stem in sorted(stems):
        mine = owned.get(stem, [])
        states = {log.state for log in mine}
        if not mine:
            outcome = InputOutcome.NO_LOG
        elif InputOutcome.BOTH_LOGS in states:
            outcome = InputOutcome.BOTH_LOGS
        elif InputOutcome.FAILED in states:
            outcome = InputOutcome.FAILED
        else:
            outcome = InputOutcome.SUCCEEDED
        counts[outcome] += 1
        paths = tuple(p for log in sorted(mine, key=lambda x: x.base) for p in log.paths)
        tally.add(InputResult(stem, outcome, paths, op, Pairing.HASH))
    tally.tallies.append(
        OpTypeTally(
            op_type=op,
            inputs=len(stems),
            logs=len(logs),
            succeeded=counts[InputOutcome.SUCCEEDED],
            failed=counts[InputOutcome.FAILED],
            no_log=counts[InputOutcome.NO_LOG],
            unpaired=counts[InputOutcome.BOTH_LOGS],
            pairing=Pairing.HASH,
        )
    )
    return True


def _lower_bounds(logs: list[_Log]) -> tuple[int, int, int]:
    """(inputs, failed inputs, inputs with both logs) the logs stand for at the least.

    Per hash, the most logs (failed logs, both-named logs) of any one ``_d<n>`` variant:
    see :func:`_pair_by_count`.
    """
    if len({log.digest for log in logs}) == len(logs):
        # One log per hash (the common case): each stands for one input at the least.
        failed = both = 0
        for log in logs:
            if log.error is not None:
                if log.succ is None:
                    failed += 1
                else:
                    both += 1
        return len(logs), failed, both
    per: dict[tuple[str, str], list[int]] = {}
    for log in logs:
        key = (log.digest, log.variant)
        counts = per.get(key)
        if counts is None:
            counts = per[key] = [0, 0, 0]
        counts[0] += 1
        if log.error is not None:
            counts[2 if log.succ is not None else 1] += 1
    most: dict[str, list[int]] = {}
    for (digest, _), counts in per.items():
        top = most.get(digest)
        if top is None:
            most[digest] = list(counts)
        else:
            for i in range(3):
                top[i] = max(top[i], counts[i])
    least = failed = both = 0
    for top in most.values():
        least += top[0]
        failed += top[1]
        both += top[2]
    return least, failed, both


def _pair_by_count(
    op: str, stems: list[str], logs: list[_Log], tally: _Tally, bounds: tuple[int, int, int]
) -> None:
    """Pair one op type's inputs and logs by count, right under every reading of the names.

    Sources leave open whether two logs that share a hash and differ in ``_d<n>`` belong
    to one input (``_d0`` / ``_d1`` variants) or to two (a hash fixed by the op type).
    What is certain either way: an input compiles once per variant, so the logs of one
    hash stand for at least as many inputs as the most logs of any single variant. When
    those lower bounds add up to the inputs, every input has its log(s) under every
    reading; fewer, and some input may have none; more, and some log belongs to no input.
    An error-named log (after natural return) is a failure under every reading.
    """
    n = len(stems)
    least, failed, both = bounds  # from _lower_bounds(logs)
    candidates = tuple(sorted(stems)[:MAX_LISTED_CANDIDATES])
    bad = [log for log in logs if log.state is not InputOutcome.SUCCEEDED]
    for log in sorted(bad, key=lambda x: x.base):
        tally.add(InputResult(op, log.state, log.paths, op, Pairing.OP_TYPE, candidates), n=0)
    failed, both = min(failed, n), min(both, n - min(failed, n))
    if least > n:
        # More logs than any reading allows: none of them is shown to be an input's.
        tally.extra_logs(sorted(p for log in logs for p in log.paths))
        unpaired = n - failed - both
        tally.counts[InputOutcome.UNPAIRED] += unpaired
        tally.counts[InputOutcome.FAILED] += failed
        tally.counts[InputOutcome.BOTH_LOGS] += both
        if unpaired:
            tally.add(
                InputResult(op, InputOutcome.UNPAIRED, (), op, Pairing.OP_TYPE, candidates), 0
            )
        tally.tallies.append(
            OpTypeTally(op, n, len(logs), 0, failed, 0, unpaired, Pairing.OP_TYPE, len(logs))
        )
        return
    # Inputs with no log under the reading that gives each log its own input (the most
    # any reading can pair), and inputs that only some reading pairs.
    no_log = n - min(n, len(logs))
    unsure = n - least - no_log if least < n else 0
    succeeded = n - failed - both - no_log - unsure
    if succeeded < 0:
        # Failures take precedence over the uncertain rest: they are certain.
        unsure = max(0, unsure + succeeded)
        succeeded = 0
    tally.counts[InputOutcome.SUCCEEDED] += succeeded
    tally.counts[InputOutcome.FAILED] += failed
    tally.counts[InputOutcome.BOTH_LOGS] += both
    if no_log:
        tally.add(InputResult(op, InputOutcome.NO_LOG, (), op, Pairing.OP_TYPE, candidates), no_log)
    if unsure:
        paths = tuple(sorted(p for log in logs for p in log.paths))[:MAX_LISTED_CANDIDATES]
        tally.add(
            InputResult(op, InputOutcome.UNPAIRED, paths, op, Pairing.OP_TYPE, candidates), unsure
        )
    tally.tallies.append(
        OpTypeTally(op, n, len(logs), succeeded, failed, no_log, unsure + both, Pairing.OP_TYPE)
    )


def stage_census(params_dir: str, output_root: str, *, after_return: bool) -> StageCensus:
    """Per-input outcomes of one stage (see the module docstring)."""
    walk = walk_root(output_root, params_dir)
    stems = walk.stems if walk.stems is not None else input_stems(params_dir)
    succ_dirs, error_dirs = walk.succ, walk.error
    total_logs = walk.logs
    readable = stems is not None
    tally = _Tally()
    # 1. A log named after the input's stem pairs exactly (runtimes that name them so).
    # The set intersections run in C: real names share no stem with their inputs.
    stem_set = set(stems or ())
    named_after = (succ_dirs.keys() & stem_set) | (error_dirs.keys() & stem_set)
    remaining = [s for s in stems or () if s not in named_after] if named_after else stems or []
    for stem in sorted(named_after):
        succ, err = succ_dirs.pop(stem, None), error_dirs.pop(stem, None)
        paths = _paths(stem, succ, err)
        tally.add(InputResult(stem, _state(succ, err), paths, None, Pairing.STEM))
    stem_paired = len(stems or ()) - len(remaining)
    # 2. Real names: static_kernel_<OpType>_<sha256>_<pid>_d<n>.
    by_op: dict[str, list[_Log]] = {}
    match = _LOG_NAME.get().fullmatch  # parse_log_name, inlined: 10^4 logs
    error_only = [(b, d) for b, d in error_dirs.items() if b not in succ_dirs]
    strangers: list[str] = []
    for base, succ, err in chain(
        ((b, d, error_dirs.get(b)) for b, d in succ_dirs.items()),
        ((b, None, d) for b, d in error_only),
    ):
        m = match(base)
        if m is None:
            strangers.extend(_paths(base, succ, err))
            continue
        parts = m.groups()
        mine_ = by_op.get(parts[0])
        if mine_ is None:
            mine_ = by_op[parts[0]] = []
        mine_.append(_Log(base, parts, succ, err))
    # Named in a fixed order: the listing's order is the file system's.
    tally.extra_logs(sorted(strangers))
    inputs_of: dict[str, list[str]] = {}
    no_type: list[str] = []
    compound = any("_" in op for op in by_op)
    for stem in remaining:
        op = _op_of_stem(stem, by_op, True) if compound else stem.partition("_")[0]
        if op not in by_op:
            op = json_op_type(os.path.join(params_dir, stem + INPUT_SUFFIX))
        if op is None:
            no_type.append(stem)
        else:
            inputs_of.setdefault(op, []).append(stem)
    for stem in sorted(no_type):
        tally.add(InputResult(stem, InputOutcome.NO_LOG))
    for op in sorted(set(by_op) | set(inputs_of)):
        mine, logs = inputs_of.get(op, []), by_op.get(op, [])
        if not logs:
            for stem in mine:
                tally.add(InputResult(stem, InputOutcome.NO_LOG, (), op))
            tally.tallies.append(OpTypeTally(op, len(mine), 0, 0, 0, len(mine), 0, None))
            continue
        if not mine:
            tally.extra_logs(sorted(p for log in logs for p in log.paths))
            tally.tallies.append(OpTypeTally(op, 0, len(logs), 0, 0, 0, 0, None, len(logs)))
            continue
        clean = len(logs) == len(mine) and all(log.succ and not log.error for log in logs)
        if clean and len({log.digest for log in logs}) == len(logs):
            # One succ log per input, each with its own hash: every reading agrees, and
            # nothing needs reading (the common case, kept cheap: issue 19's bench).
            tally.counts[InputOutcome.SUCCEEDED] += len(mine)
            tally.tallies.append(
                OpTypeTally(op, len(mine), len(logs), len(mine), 0, 0, 0, Pairing.OP_TYPE)
            )
            continue
        # Reading inputs to reproduce hashes is only worth it where the count is not
        # already certain: a failure among exactly paired counts names its op type, its
        # error log and the candidate inputs without a read (issue 19's bench).
        bounds = _lower_bounds(logs)
        if bounds[0] == len(mine) or not _pair_by_hash(params_dir, op, mine, logs, tally):
            _pair_by_count(op, mine, logs, tally, bounds)
    counts = tally.counts
    return StageCensus(
        params_dir=params_dir,
        output_root=output_root,
        params_readable=readable,
        inputs=len(stems or ()),
        succeeded=counts[InputOutcome.SUCCEEDED],
        failed=counts[InputOutcome.FAILED],
        no_log=counts[InputOutcome.NO_LOG],
        both_logs=counts[InputOutcome.BOTH_LOGS],
        named=tuple(tally.named),
        run_packages=tuple(sorted(walk.runs)),
        unreadable=walk.unreadable,
        after_return=after_return,
        omitted=tally.omitted,
        unpaired=counts[InputOutcome.UNPAIRED],
        logs=total_logs,
        extra_logs=tally.extra,
        stem_paired=stem_paired,
        unpaired_logs=tuple(tally.extra_named),
        op_types=tuple(tally.tallies),
        # Hashed only once the stage has returned (a package being written is no evidence).
        run_sha256=_run_digests(walk.runs) if after_return else (),
    )


def _run_digests(runs: list[str]) -> tuple[tuple[str, str], ...]:
    found = ((p, sha256_file(Path(p))) for p in sorted(runs))
    return tuple((p, d) for p, d in found if d is not None)
