"""The C3 line of a verdict: how complete the ownership record is, and from which sources.

Part of the classifier (:mod:`skgate.verdict.classify`), kept apart so the C2 order reads
in one place. Pure: no I/O, no clock.
"""

from __future__ import annotations

from skgate.model.phrases import count
from skgate.model.records import Evidence
from skgate.model.sources import SOURCE_CGROUP, SOURCE_EVENTS, SOURCE_SCAN


def coverage_reason(ev: Evidence) -> str | None:
    """C3: one line saying how complete the ownership record is, and from which sources.

    Status and report both show it (it is a reason of the verdict), so they say the same.
    """
    if not ev.ownership_recorded:
        return None
    cov = ev.coverage
    sources = cov.sources if cov is not None else (SOURCE_SCAN,)
    clauses: list[str] = []
    # The runner died before it saw the tree end: a recovered attempt, or a live look at
    # one whose runner is gone.
    died = not ev.tree_ended and (
        ev.recovered is not None or (not ev.runner_finished and not ev.runner_alive)
    )
    if SOURCE_EVENTS in sources and cov is not None:
        if cov.events_overruns:
            clauses.append(
                f"the kernel dropped process events {count(cov.events_overruns, 'time')} under "
                "load, "
                "so short-lived processes may be missing"
            )
        if cov.missed_by_events:
            # A source that cannot prove completeness says what may be missing (C3).
            clauses.append(
                f"the process events missed {count(cov.missed_by_events, 'process')} that the "
                "scan or the reaper found, so other short-lived processes may be missing"
            )
        if cov.exact and not died:
            clauses.append("every fork, exec and exit of the owned tree is on record")
    else:
        clauses.append(
            f"processes shorter than the scan interval ({ev.scan_interval:g} s) may be missing"
        )
    if died:
        # Issue 28 s9: the record ends where the runner did; never claim more (C3).
        clauses.insert(
            0,
            f"the runner died after its last record at {ev.runner_last_record}, so forks, execs "
            "and exits after that are not on record"
            if ev.runner_last_record
            else "the runner died before the owned tree ended, so forks, execs and exits after "
            "its death are not on record",
        )
    if SOURCE_CGROUP in sources and cov is not None and cov.left_cgroup:
        clauses.append(
            f"{count(cov.left_cgroup, 'owned process', 'owned processes')} moved out of the "
            "attempt's cgroup (tracked all the same), so the cgroup does not hold every one"
        )
    elif SOURCE_CGROUP in sources:
        clauses.append("the attempt's cgroup holds every owned process, escapes included")
    if cov is not None and cov.folded.get("processes"):
        clauses.append(
            f"{cov.folded['processes']} processes beyond the first "
            f"{cov.folded.get('full_records_limit', 0)} are counted by name, not listed"
        )
    if cov is not None and cov.argv_late:
        their = "its" if cov.argv_late == 1 else "their"
        clauses.append(
            f"{count(cov.argv_late, 'process')} exec'ed and exited before {their} argv "
            "could be read"
        )
        # Issue 28 s7: which source gave the names of those (only the name is known).
        if cov.named_at_exit:
            whose = "its" if cov.named_at_exit == 1 else "their"
            clauses.append(
                f"the kernel's exit records ({cov.exit_names}) named "
                f"{count(cov.named_at_exit, 'process')} gone before {whose} name could be "
                "read (name only, no argv)"
            )
        if cov.exit_overruns:
            clauses.append(
                f"the kernel dropped exit records {count(cov.exit_overruns, 'time')} under "
                "load, so some of those may keep their parent's name"
            )
        if not cov.named_at_exit and not cov.exit_names:
            clauses.append(
                "no exit records were read, so one gone before its name could be read "
                "keeps its parent's name"
            )
    return f"C3: ownership record from {', '.join(sources)}: " + "; ".join(clauses)


def evidence_extra(ev: Evidence) -> dict[str, object]:
    """The owned tree's CPU time and peak memory from its cgroup (C3 evidence)."""
    cov = ev.coverage
    if cov is None:
        return {}
    tree: dict[str, object] = {
        "sources": list(cov.sources),
        "exact": cov.exact,
    }
    for key in ("usage_usec", "user_usec", "system_usec", "memory_peak_bytes"):
        if key in cov.cgroup:
            tree[f"tree_{key}"] = cov.cgroup[key]
    return {"ownership": tree}
