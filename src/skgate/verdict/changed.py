"""The answer about an attempt whose sealed evidence changed (issue 28 s3; C2.5).

The files of a sealed attempt that no longer match ``seal.json`` are never shown as their
content says: a rewritten ``verdict.json`` that reads ``succeeded`` proves nothing. The
answer is ``unknown`` and its first line names the file, the sealed hash and what it is
now; ``skgate verify`` lists every difference.
"""

from __future__ import annotations

from skgate.model.phrases import Lang
from skgate.model.records import SealBreach, State, Verdict, Waiting
from skgate.model.running import (
    ATTEMPT_DIRECTORY,
    DISOWNED,
    DISOWNED_MISSING,
    JOURNAL_GONE,
    LEDGER_MISSING,
    REMOVED_MISSING,
    ROOT_LEDGER,
    UNRECORDED,
)


def changed_verdict(breach: SealBreach, attempt: str) -> Verdict:
    """``unknown``, first the breach's line ("evidence changed after sealing: FILE (...)",
    or what stands in its place), then why it decides nothing (C2.5)."""
    why, missing = _why_not(breach, attempt)
    return Verdict(
        state=State.UNKNOWN,
        cause=None,
        reasons=(breach.line(), why),
        missing=(missing,),
        attempt=attempt,
        breach=breach,
    )


def _why_not(breach: SealBreach, attempt: str) -> tuple[str, str]:
    """(the C2.5 reason, the missing item) for each kind of breach."""
    if breach.file == ATTEMPT_DIRECTORY:
        # Its directory is gone though its root's ledger indexed it: verify of the root
        # names what is gone, and no older attempt answers in its place.
        return (
            "C2.5: a removed attempt decides nothing, and no older attempt answers for it: "
            f"run 'skgate verify {_root_of(attempt)}' to list what is gone",
            REMOVED_MISSING,
        )
    if breach.file == ROOT_LEDGER:
        # The root's ledger no longer vouches for it (gone, a link, not a regular file, or
        # naming it nowhere): its seal could have been re-made to match edited files.
        return (
            "C2.5: a sealed attempt its root's ledger no longer vouches for decides nothing "
            "(its seal could have been re-made to match edited files): run 'skgate verify "
            f"{_root_of(attempt)}' to list what changed",
            LEDGER_MISSING,
        )
    if breach.now in (DISOWNED, UNRECORDED, JOURNAL_GONE):
        # Another process wrote at its final names while its run ran (Finished.disowned):
        # its runner wrote none of its own and sealed nothing; its verdict is journalled.
        # Or its runner is gone and its verdict.json is none it recorded (VerdictHash).
        return (
            "C2.5: evidence its runner did not write decides nothing: run 'skgate verify "
            f"{attempt}' to list it",
            # The journal, where the runner recorded which verdict is its own (C2.5).
            "event journal (events.jsonl)" if breach.now == JOURNAL_GONE else DISOWNED_MISSING,
        )
    return (
        "C2.5: evidence that contradicts its own seal decides nothing; what the changed "
        f"file says is not shown: run 'skgate verify {attempt}' to list every difference",
        f"{breach.file} as sealed",
    )


def _root_of(attempt: str) -> str:
    """``<root>`` of ``<root>/attempts/<name>``, by its words alone: this layer touches no
    file system."""
    parts = attempt.rstrip("/").rsplit("/", 2)
    return parts[0] if len(parts) == 3 and parts[0] else "."


def damaged_verdict(line: str, attempt: str) -> Verdict:
    """``unknown`` for an unsealed attempt whose evidence a reader refused (an over-long
    record): the refusal is the first reason, never passed over (issue 28 s4)."""
    return Verdict(
        state=State.UNKNOWN,
        cause=None,
        reasons=(
            line,
            "C2.5: a damaged record may name what decides the verdict; no conclusion is "
            "drawn from the rest",
        ),
        missing=("an undamaged record",),
        attempt=attempt,
    )


def waiting_words(w: Waiting, lang: Lang, *, headline: bool = False) -> str:
    """The in-progress phase before launch, one line (issue 30): whom the runner waits
    for, and that nothing was launched. Never "the compile is still running"."""
    n = len(w.foreign)
    named = ", ".join(f"{pid} {name}" for pid, name in w.foreign)
    if lang is Lang.ZH:
        parts = [f"{n} 个外部编译进程（{named}）"] if n else []
        parts += list(w.other)
        text = f"等待 {'、'.join(parts)}；尚未启动任何进程"
        return f"等待中：{text}；继续等待，不终止任何进程" if headline else text
    parts = [f"{n} foreign compiler{'s' if n != 1 else ''} (named: {named})"] if n else []
    parts += list(w.other)
    text = f"waiting for {'; '.join(parts)}; nothing launched yet"
    return (
        f"WAITING for {text.removeprefix('waiting for ')}; keep waiting, kill nothing"
        if (headline)
        else text
    )
