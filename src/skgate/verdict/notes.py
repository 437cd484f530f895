"""Notes the classifier adds to a verdict whatever its state: what was in the outputs
before the launch (C8) and how a recovered attempt was finished (C2.5). Pure functions of
the evidence, as :mod:`skgate.verdict.classify` is."""

from __future__ import annotations

from skgate.model.phrases import count
from skgate.model.records import Evidence, RecoveredWhen


def preexisting_note(ev: Evidence) -> list[str]:
    if ev.census is None or not ev.census.preexisting:
        return []
    return [
        f"C8: {count(ev.census.preexisting, 'entry')} already in the outputs directory before "
        f"launch {'was' if ev.census.preexisting == 1 else 'were'} not counted: earlier runs' "
        "artifacts, not this attempt's (skgate cleanup preserves and clears them)"
    ]


def recovered_note(ev: Evidence) -> list[str]:
    if ev.recovered is None:
        return []
    late = {
        RecoveredWhen.BEFORE_LAUNCH: "nothing had been launched (no run log exists)",
        RecoveredWhen.BEFORE_NATURAL_RETURN: "nobody saw the owned tree end, so its natural "
        "return cannot be established",
        RecoveredWhen.AFTER_NATURAL_RETURN: "the natural return was recorded; the files the "
        "runner had not written yet (census, summary) were made at recovery, the census "
        "labelled late",
    }[ev.recovered]
    when = ev.recovered.value
    return [f"C2.5: recovered by 'skgate recover' after the runner died {when}: {late}"]
