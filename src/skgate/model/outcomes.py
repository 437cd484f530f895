"""The outcome vocabularies of skgate's procedures, as enums (the states of an attempt are
:class:`skgate.model.records.State`).

Each member's value is the word written into the evidence files and printed, so the files
and the CLI say exactly what they said when these were plain strings. Members are ``str``
too, and ``str()`` / ``format()`` give the value (not ``Class.MEMBER``) on every supported
Python, so a member can stand wherever the word stood. Nothing here does I/O.
"""

from __future__ import annotations

import enum

# Re-exported: the two modes a recorded verdict carries live apart, so that reading one
# (``skgate status``) does not build every outcome enum here (issue 29).
from skgate.model.modes import SOURCE_EXIT_STATUS, PackageMode, VerdictFrom

__all__ = [
    "SOURCE_EXIT_STATUS",
    "ArmOutcome",
    "Conclusion",
    "HealthOutcome",
    "MoveMethod",
    "OutputStatus",
    "PackageMode",
    "RunStatus",
    "UninstallAction",
    "VerdictFrom",
    "Word",
]


class Word(str, enum.Enum):
    """An enum whose members read as their value in text and in JSON."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class HealthOutcome(Word):
    """The compile-health gate (C6): ``pass`` lets later profiling be accepted."""

    PASS = "pass"  # noqa: S105 - a verdict word, not a password
    FAIL = "fail"
    #: Not attributable: the run differs from its reference beyond the declared change, or
    #: it could not run (exit 3, like a blocked launch).
    BLOCKED = "blocked"
    #: The candidate succeeded, but the declared change did not reach its compile: a
    #: cache hit, none of the touched op types compiled, a stale kernel_meta object, or
    #: the reference's package again (exit 3: no compile-health evidence, C6).
    NOT_REACHED = "not_reached"


class RunStatus(Word):
    """What one gated run of a diagnosis arm weighs as evidence (C2, C6)."""

    PASS = "pass"  # noqa: S105 - a verdict word, not a password
    FAIL = "fail"
    #: Interrupted, blocked or unknown: never evidence for or against a factor (C2.4).
    INVALID = "invalid"
    #: Frozen controls differ beyond the arm's one change.
    NOT_COMPARABLE = "not-comparable"


class ArmOutcome(Word):
    """An arm's (or the baseline's) runs taken together."""

    PASS = "pass"  # noqa: S105 - a verdict word, not a password
    FAIL = "fail"
    MIXED = "mixed"
    INVALID = "invalid"


class Conclusion(Word):
    """What the diagnosis matrix concludes (C6, last bullet)."""

    STARTUP_HOOK_TRIGGER = "startup_hook_trigger"
    TRIGGERS = "triggers"
    NO_TRIGGER = "no_trigger"
    BASELINE_NOT_CLEAN = "baseline_not_clean"


class UninstallAction(Word):
    """What became of one uninstall candidate (C8)."""

    RUN = "run"
    REFUSED = "refused"
    #: Dry run: valid, would have been run.
    WOULD_RUN = "would-run"
    #: A stale-records entry whose owner is alive with the same start time (C4).
    KEPT = "kept"
    #: In a partial record: the script started, no result was recorded (the run was cut).
    RUNNING = "running"


class OutputStatus(Word):
    """``skgate check-outputs`` (C8): the directory's own verdict, or the attempt's state
    when the attempt has not returned naturally (then the files are not judged)."""

    OK = "ok"
    FAILURE = "failure"
    UNKNOWN = "unknown"
    IN_PROGRESS = "in_progress"
    INTERRUPTED = "interrupted"
    NOT_STARTED = "not_started"


class MoveMethod(Word):
    """How ``skgate cleanup`` preserved one output into the attempt's scene (C8)."""

    #: One ``rename`` on the same file system.
    RENAME = "rename"
    #: Across file systems: copy, verify every hash, then remove the source.
    COPY = "copy"
    #: Not recorded: the cleanup was killed before its manifest, which ``recover`` wrote.
    UNKNOWN = "unknown"
