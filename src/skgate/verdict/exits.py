"""What the top-level process's end means when it is not a compiler's result (C2.3, C2.5).

Part of the classifier (:mod:`skgate.verdict.classify`), kept apart so the C2 order reads
in one module: a command's exit status with no compiler observed, a launcher that failed
after every stage succeeded (its own failure, never "compiler failures", C7), and a crash
signal that nobody recorded sending.
"""

from __future__ import annotations

from skgate.model.records import Evidence
from skgate.model.signals import CRASH_SIGNALS, signal_name
from skgate.verdict import stages as stage_rules
from skgate.verdict.stages import SummaryView
from skgate.verdict.words import LAUNCHER_FAILURE

#: What an exit status of a command means when no compiler was ever observed (C2.3).
_EXIT_MEANING = {
    126: "126 usually means a command was found but could not be executed",
    127: "127 usually means a command was not found",
}


def exit_reason(ev: Evidence, view: SummaryView) -> str:
    status = ev.leader_exit_status
    summary = view.summary
    if (
        view.source == stage_rules.SOURCE_STAGES
        and summary is not None
        and summary.all_succeeded
        and not view.findings.failures
    ):
        return (
            f"{LAUNCHER_FAILURE} {status} after every input of its {len(summary.stages)} "
            "op_compiler stage(s) succeeded: the launcher's own failure, not a compiler failure"
        )
    if view.findings.observed or (view.summary is not None and view.summary.present):
        return f"C2.3: the compiler stack returned naturally with exit status {status}"
    meaning = _EXIT_MEANING.get(status or 0, "")
    return (
        f"C2.3: the command returned naturally with exit status {status}; no compiler "
        "process (op_compiler) was observed and no summary was printed, so this is the "
        "command's own failure, not a compiler result" + (f" ({meaning})" if meaning else "")
    )


def crashed_reason(ev: Evidence) -> str | None:
    """C2.4 needs an outside signal; a crash signal nobody recorded sending is most often
    the process's own fault, and who sent it cannot be told: unknown, never interrupted
    (stand-in 2: a launcher that segfaulted after a good compile)."""
    sig = ev.leader_exit_signal
    if sig is None or sig not in CRASH_SIGNALS or ev.external_signals or ev.signals_sent:
        return None
    return (
        f"C2.5: the top-level process was ended by {signal_name(sig)}, which this runner did "
        "not send: most often its own crash, possibly a kill from outside; neither a natural "
        "return nor an outside interruption can be shown"
    )
