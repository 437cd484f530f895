"""Stage rules: when an op_compiler invocation is a final summary, and what it says (C2).

Pure functions of archived evidence (no I/O, no clock), used by the classifier:

- a stage is a **final summary** only when its op_compiler returned naturally (it ended,
  no signal ended it, and the whole owned tree returned naturally) and the census taken
  after that return accounts for every input (exactly one log each, nothing unreadable);
  otherwise the summary is missing (unknown), never failed (C2.5, C1);
- when ``[summary]`` lines (or ``--summary-pattern`` matches) exist too, every stage that
  returned naturally must agree with one of their stages (inputs, succeeded, failed), or
  the verdict is unknown naming the disagreement (C2);
- a naturally returned stage with failed inputs is a failure whatever the launcher's exit
  status (C2: a launcher's exit 0 never turns a failed stage into a success);
- the ``-j`` values are the concurrency actually used (C5), compared with the frozen one.
"""

from __future__ import annotations

from collections.abc import Sequence

from skgate.model.frozen import record
from skgate.model.idle import Idle, IdleKind, idle_reason
from skgate.model.records import Evidence, Stage, Summary, Verdict
from skgate.model.releases import (
    Release,
    jobs_explained,
    release_for,
    release_of_root,
    unseen_failure_note,
)
from skgate.model.signals import signal_name
from skgate.model.stages import (
    AnnouncedRoot,
    InputOutcome,
    InputResult,
    StageCensus,
    StageRecord,
    Stages,
)

SOURCE_SUMMARY_LINES = "summary_lines"
SOURCE_PATTERN = "pattern"
SOURCE_STAGES = "op_compiler census"

#: How many input names a reason lists before "and N more".
MAX_LISTED = 5


def returned_naturally(stage: StageRecord, tree_natural: bool) -> bool:
    """The op_compiler ended on its own: no signal ended it, and the tree returned."""
    return tree_natural and stage.ended and stage.exit_signal is None


def not_final_reason(stage: StageRecord, tree_natural: bool) -> str | None:
    """Why this stage is not a final summary, or None when it is one."""
    who = stage.name
    if not stage.args.is_invocation:
        return (
            f"{who}: its argv names no -p inputs directory and -o result root "
            f"({' '.join(stage.args.argv) or 'argv unreadable: seen only after it ended'})"
        )
    if stage.exit_signal is not None:
        return f"{who} was ended by {signal_name(stage.exit_signal)}: it did not return naturally"
    if not tree_natural or not stage.ended:
        return f"{who} has not returned naturally"
    c = stage.census
    if c is None or not c.after_return:
        return f"{who}: no census of its outputs was taken after its natural return"
    if not c.params_readable:
        return f"{who}: its inputs directory (-p {c.params_dir}) could not be read"
    if c.unreadable:
        return f"{who}: {c.unreadable} director(ies) under its result root could not be read"
    problems = census_problems(who, c)
    if problems:
        return problems[0]
    if c.inputs and not c.failed and stage.exit_status in (0, None) and not c.run_packages:
        # The package is stage evidence too: a compile whose every input succeeded ends
        # with its .run under the result root (C8: the terminal success artifact).
        return (
            f"{who}: every input has a succ log, but no .run package was written under its "
            f"result root ({c.output_root})"
        )
    return None


def _shown(r: InputResult) -> str:
    """An input's name, or an op type with the inputs it stands for (paired by count)."""
    if r.candidates:
        return f"{r.name} (one of {' '.join(r.candidates[:MAX_LISTED])})"
    return r.name


def census_problems(who: str, c: StageCensus) -> list[str]:
    """Every reason a census taken after return does not account for its inputs."""
    out: list[str] = []
    if c.no_log or c.both_logs:
        lost = ", ".join(_shown(r) for r in c.of(InputOutcome.NO_LOG)[:MAX_LISTED])
        both = ", ".join(_shown(r) for r in c.of(InputOutcome.BOTH_LOGS)[:MAX_LISTED])
        out.append(
            f"{who}: the census after its natural return does not account for every input: "
            f"{c.no_log} input(s) without a compile log ({lost}), {c.both_logs} with both a "
            f"succ log and an error-named log, not final evidence ({both})"
        )
    if c.unpaired or c.extra_logs:
        out.append(unpaired_reason(who, c))
    return out


def unpaired_reason(who: str, c: StageCensus) -> str:
    """What could not be paired, by name: never a success (C2)."""
    unsure = c.of(InputOutcome.UNPAIRED)
    ops = ", ".join(_shown(r) for r in unsure[:MAX_LISTED])
    logs = ", ".join(c.unpaired_logs[:MAX_LISTED])
    more = c.extra_logs - min(len(c.unpaired_logs), MAX_LISTED)
    return (
        f"{who}: the census after its natural return cannot pair every input with its "
        f"log: {c.unpaired} input(s) that no reading of the log names pairs ({ops or '-'}), "
        f"{c.extra_logs} log(s) that pair with no input ({logs or '-'}"
        + (f"; +{more}" if more > 0 else "")
        + ")"
    )


def as_stage(stage: StageRecord) -> Stage | None:
    """The summary stage of a census taken after return (None without one)."""
    c = stage.census
    if c is None or not c.after_return:
        return None
    return Stage(name=stage.name, inputs=c.inputs, succeeded=c.succeeded, failed=c.failed)


@record
class StageFindings:
    """What the stage record says, for the classifier and the report."""

    #: The stage summary, present only when every stage is final (and there is one).
    summary: Summary | None
    not_final: tuple[str, ...]
    #: Naturally returned stages with failed inputs: one reason each, naming the inputs
    #: and the error log a person should read next.
    failures: tuple[str, ...]
    effective_jobs: tuple[int, ...]
    peak_opc: int
    observed: int

    @property
    def final(self) -> bool:
        return self.summary is not None


def findings(record: Stages | None, tree_natural: bool) -> StageFindings:
    if record is None or not record.stages:
        return StageFindings(None, (), (), (), record.peak_opc if record else 0, 0)
    not_final: list[str] = []
    failures: list[str] = []
    stages: list[Stage] = []
    for st in record.stages:
        why = not_final_reason(st, tree_natural)
        if why is not None:
            not_final.append(why)
            c_after = st.census
            if (
                c_after is not None
                and c_after.after_return
                and why in (extra := census_problems(st.name, c_after))
            ):
                not_final.extend(x for x in extra if x != why)
        c = st.census
        if returned_naturally(st, tree_natural) and c is not None and c.after_return and c.failed:
            failed = c.of(InputOutcome.FAILED)
            # Names and paths only (no words): the Chinese report shows the same detail.
            shown = "; ".join(f"{r.name} ({r.logs[0]})" for r in failed[:MAX_LISTED])
            more = c.failed - min(len(failed), MAX_LISTED)
            failures.append(
                f"C2.3: {st.name} naturally returned with {c.failed} of {c.inputs} input(s) "
                f"failed: {shown}" + (f"; +{more}" if more > 0 else "")
            )
        elif returned_naturally(st, tree_natural) and st.exit_status:
            failures.append(f"C2.3: {st.name} returned naturally with exit status {st.exit_status}")
        if why is None:
            summary_stage = as_stage(st)
            if summary_stage is not None:
                stages.append(summary_stage)
    summary = None
    if not not_final and stages:
        lines = tuple(
            f"{s.name}: inputs={s.inputs} succeeded={s.succeeded} failed={s.failed} "
            "(op_compiler census after natural return)"
            for s in stages
        )
        summary = Summary(lines=lines, stages=tuple(stages))
    jobs = tuple(st.args.jobs for st in record.stages if st.args.jobs is not None)
    return StageFindings(
        summary=summary,
        not_final=tuple(not_final),
        failures=tuple(failures),
        effective_jobs=jobs,
        peak_opc=record.peak_opc,
        observed=len(record.stages),
    )


def summary_source(summary: Summary) -> str:
    """``summary_lines`` when a ``[summary]`` line is among the kept lines, else ``pattern``."""
    if any(line.lstrip().startswith("[summary]") for line in summary.lines):
        return SOURCE_SUMMARY_LINES
    return SOURCE_PATTERN


def disagreements(summary: Summary, record: Stages | None, tree_natural: bool) -> list[str]:
    """Stages that returned naturally and match no stage of the printed summary (C2).

    Stage names differ (the runtime's ``compile`` vs ``op_compiler pid N``), so a stage
    agrees when a distinct printed stage has the same inputs, succeeded and failed.
    """
    if record is None or not summary.present:
        return []
    pool = [(s.inputs, s.succeeded, s.failed) for s in summary.stages]
    problems: list[str] = []
    for st in record.stages:
        if not returned_naturally(st, tree_natural):
            continue
        mine = as_stage(st)
        if mine is None:
            continue
        key = (mine.inputs, mine.succeeded, mine.failed)
        if key in pool:
            pool.remove(key)
            continue
        printed = ", ".join(f"{s.name} {s.inputs}/{s.succeeded}/{s.failed}" for s in summary.stages)
        problems.append(
            f"C2.5: the printed summary and the op_compiler census disagree: {st.name} has "
            f"inputs={mine.inputs} succeeded={mine.succeeded} failed={mine.failed} on disk "
            f"after its natural return, and no printed stage says so "
            f"(printed inputs/succeeded/failed: {printed})"
        )
    return problems


def jobs_mismatch(
    effective: Sequence[int], frozen: int | None, release: Release | None = None
) -> str | None:
    """C5: a reason when op_compiler ran with a -j other than the frozen jobs value; with
    the launcher's release known, what its own ``-j`` rule did (issue 27)."""
    if frozen is None:
        return None
    other = sorted({j for j in effective if j != frozen})
    if not other:
        return None
    shown = ", ".join(f"-j {j}" for j in other)
    if release is not None:
        return (
            f"C5: frozen jobs {frozen}; {jobs_explained(release, other[0])}; the control was "
            "not in effect"
        )
    return (
        f"C5: frozen jobs {frozen}, but op_compiler ran with {shown}: the launcher does not "
        "honour the frozen value (NPU_STATIC_KERNEL_COMPILE_JOBS); the control was not in "
        "effect"
    )


def _quoted(text: str, limit: int = 300) -> str:
    """Double quotes: the report linter reads a quoted phrase as a mention, not a claim."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return '"' + cut.replace('"', "'") + '"'


@record
class SummaryView:
    """The summary the classifier judges by, and the stage facts around it (C2)."""

    summary: Summary | None
    source: str | None
    disagreements: tuple[str, ...]
    findings: StageFindings
    #: The tree returned naturally and so did every observed op_compiler.
    stack_natural: bool
    compiled: bool | None
    launcher_errors: tuple[str, ...]
    cache_hits: tuple[str, ...]
    #: Reasons that do not decide the state: jobs not in effect (C5), runtime words (C7).
    notes: tuple[str, ...]
    #: The hit was printed (``Static kernel cache hit: PATH``); else it was seen on disk.
    hit_seen: bool = True
    #: Build directories announced while no op_compiler ran (the start line came first).
    announced: tuple[AnnouncedRoot, ...] = ()
    #: Ways the launcher ran no compile by design, seen on disk (issue 27).
    idle: tuple[Idle, ...] = ()
    #: Start lines that named no build directory (torch-npu 2.7).
    bare_starts: int = 0

    @property
    def usable(self) -> bool:
        s = self.summary
        return s is not None and s.present and s.consistent and not self.disagreements

    def launcher_failure(self, exit_status: int | None) -> str | None:
        """The launcher's own ``execute op_compiler error`` line, as a C2.3 reason."""
        if not self.launcher_errors:
            return None
        said = "; ".join(_quoted(m) for m in self.launcher_errors[:MAX_LISTED])
        tail = (
            "; the launcher's exit status 0 does not turn it into a success (C2)"
            if exit_status == 0
            else ""
        )
        return (
            "C2.3: the launcher reported a failing op_compiler (execute op_compiler error, "
            f"msg: {said}){tail}"
        )


def summary_view(ev: Evidence, natural: bool) -> SummaryView:
    """Pick the summary by the order of sources (C2) and collect the stage facts."""
    found = findings(ev.stages, natural)
    stages = ev.stages.stages if ev.stages is not None else ()
    stack_natural = natural and all(returned_naturally(st, natural) for st in stages)
    printed = ev.summary
    printed_ok = printed is not None and printed.present and printed.consistent
    disagree: list[str] = []
    summary: Summary | None = printed
    source: str | None = None
    if printed is not None and printed_ok:
        source = summary_source(printed)
        disagree = disagreements(printed, ev.stages, natural)
    elif found.summary is not None and (printed is None or printed.consistent):
        summary, source = found.summary, SOURCE_STAGES
    launcher = ev.launcher
    errors = tuple(launcher.error_messages()) if launcher is not None else ()
    hits = tuple(str(h.get("path", "")) for h in launcher.cache_hits) if launcher else ()
    silent = () if hits else silent_cache_hit(ev.stages)
    shown = found.observed or hits or silent
    idle = ev.stages.idle if ev.stages is not None and not shown else ()
    empty = any(i.kind is IdleKind.NO_OPERATORS for i in idle)
    if empty and launcher is not None and launcher.skips:
        # The launcher said it skipped (a Gloo probe failed) or its dump failed: an empty
        # build directory is then no sign of a graph without operators (C2.5).
        idle = ()
    compiled: bool | None = True if found.observed else (False if hits or silent or idle else None)
    notes: list[str] = []
    release = launcher_release(ev)
    mismatch = jobs_mismatch(found.effective_jobs, ev.frozen_jobs, release)
    if mismatch is not None:
        notes.append(mismatch)
    unseen = unseen_failure_note(release) if release is not None else None
    if unseen is not None and found.failures and not errors:
        # Issue 27: why no launcher line names the failure (the release table).
        notes.append(f"C7: {unseen}")
    for line in launcher.no_run_files if launcher is not None else ():
        notes.append(
            f"C7: the runtime printed {_quoted(line)}: its own words, quoted; they are not "
            "skgate's verdict (the state above is)"
        )
    return SummaryView(
        summary=summary,
        source=source,
        disagreements=tuple(disagree),
        findings=found,
        stack_natural=stack_natural,
        compiled=compiled,
        launcher_errors=errors,
        cache_hits=hits or silent,
        notes=tuple(notes),
        hit_seen=bool(hits),
        announced=announced_without_compile(ev.stages) if not found.observed else (),
        idle=idle,
        bare_starts=launcher.bare_starts if launcher is not None else 0,
    )


def launcher_release(ev: Evidence) -> Release | None:
    """The launcher's torch-npu release: the installed version preflight recorded, else
    what an op_compiler's result root shows (only 2.7's layout is its own)."""
    recorded = release_for(ev.torch_npu)
    if recorded is not None:
        return recorded
    stages = ev.stages.stages if ev.stages is not None else ()
    for st in stages:
        shown = release_of_root(st.args.output) if st.args.output else None
        if shown is not None:
            return shown
    return None


#: How to get a real compile when the launcher installed a cached package.
CACHE_ADVICE = (
    "turn the launcher's static kernel compile cache off (or delete "
    "static_kernel_compile_outputs/static_kernel_cache after `skgate cleanup`) for a real compile"
)


def announced_without_compile(record: Stages | None) -> tuple[AnnouncedRoot, ...]:
    """Fresh build directories a start line named, holding dumped inputs and nothing
    compiled: what a real cache hit leaves (torchair prints its start line before the
    dump and the cache lookup, and the hit itself only at INFO level)."""
    if record is None or record.stages:
        return ()
    return tuple(
        a
        for a in record.announced
        if a.exists and not a.preexisting and a.inputs and not a.logs and not a.run_packages
    )


def silent_cache_hit(record: Stages | None) -> tuple[str, ...]:
    """The cached packages that explain a compile announced but never run, or ().

    C2: a start line, a fresh root with the dumped inputs only, no owned op_compiler,
    and a cache file that was there before launch naming a package that exists: a hit
    that printed nothing. Without such a cache nothing says what happened (unknown).
    """
    if record is None or record.stages:
        return ()
    roots = announced_without_compile(record)
    if not roots or len(roots) != len([a for a in record.announced if not a.preexisting]):
        return ()
    if all(a.chosen == 0 for a in roots):
        # Nothing chosen (every input blacklisted, or all compiled already): torchair
        # returns before its cache lookup, so no cached package was installed either
        # (stand-in 2). A root with inputs chosen beside such roots still had its lookup
        # (torch-npu 2.11/2.14: a hit, then a graph whose operators were all compiled
        # already in this process; realcode 'already-compiled').
        return ()
    return record.cached_packages


def cache_paths(record: Stages | None) -> tuple[str, ...]:
    return tuple(c.path for c in record.caches) if record is not None else ()


def no_compile_reasons(view: SummaryView, record: Stages | None = None) -> tuple[str, ...]:
    """Why nothing was compiled, one sentence per finding: a cache hit, or each way the
    launcher had nothing to compile (issue 27), each naming what it saw on disk."""
    if view.idle:
        return tuple(dict.fromkeys(idle_reason(i) for i in view.idle[:MAX_LISTED]))
    return (no_compile_reason(view, record),)


def no_compile_reason(view: SummaryView, record: Stages | None = None) -> str:
    shown = ", ".join(view.cache_hits[:MAX_LISTED]) or "(path not printed)"
    if view.hit_seen:
        return (
            "no compile ran: a cached package was installed (Static kernel cache hit: "
            f"{shown}); this attempt is no compile-health evidence; {CACHE_ADVICE}"
        )
    caches = ", ".join(cache_paths(record)[:MAX_LISTED])
    return (
        f"no compile ran: a cached package was installed (the launcher {_made(view)}, "
        f"dumped its inputs there and started no op_compiler; the cache {caches}, "
        f"there before launch, names {shown}); this attempt is no compile-health "
        f"evidence; {CACHE_ADVICE}"
    )


def _made(view: SummaryView) -> str:
    """What the launcher did with its build directories, said as exactly as it is known:
    "announced" only for roots a start line named; one no start line named was made by an
    owned process after launch (its start line hidden, C2: never a claim beyond the
    evidence)."""
    shown = view.announced[:MAX_LISTED]
    named = ", ".join(a.root for a in shown if not a.unannounced)
    hidden = ", ".join(a.root for a in shown if a.unannounced)
    said = [f"announced {named}"] if named else []
    if hidden and view.bare_starts:
        # torch-npu 2.7: its start line names no directory (static_kernel.py l.27).
        said.append(f"made {hidden} after a start line that names no directory")
    elif hidden:
        said.append(f"made {hidden} without a start line")
    return " and ".join(said)


def announced_no_compile_reason(view: SummaryView) -> str | None:
    """C2.5: a compile was announced, no op_compiler ran, and no cache explains it."""
    if not view.announced or view.compiled is False:
        return None
    return (
        f"the launcher {_made(view)} and dumped its inputs there, but no "
        "op_compiler process was observed and no cache file that existed before launch "
        "names a package that exists: whether anything was compiled or installed cannot "
        "be told"
    )


#: The one sentence of a refused cache-hit attempt (regress --health, matrix arms).
NO_COMPILE = "no compile ran: a cached package was installed"


def compile_evidence_refusals(verdict: Verdict, frozen: int | None) -> list[str]:
    """Why an attempt cannot count as compile-health evidence (C5, C6), or nothing.

    A cache hit compiled nothing; a launcher that ran op_compiler with a -j other than
    the frozen jobs value changed a control the comparison assumes equal (an undeclared
    difference between compared attempts).
    """
    why: list[str] = []
    if verdict.compiled is False:
        # Issue 27: the verdict's own sentence when the launcher had nothing to compile;
        # a cache hit keeps the one sentence the regress words know.
        said = [r.split(": ", 1)[1] for r in verdict.reasons if ": no compile ran: " in r]
        idle = [r for r in said if not r.startswith(NO_COMPILE)]
        why.append(idle[0] if idle else f"{NO_COMPILE}; {CACHE_ADVICE}")
    mismatch = jobs_mismatch(verdict.effective_jobs, frozen)
    if mismatch is not None:
        why.append("undeclared difference: " + mismatch.removeprefix("C5: ") + " (C5)")
    return why
