"""Printing a verdict, shared by the command areas (run, status, classify, retry): the C7
headline, reasons, missing evidence, or the verdict record as JSON."""

from __future__ import annotations

from skgate.model.phrases import Lang
from skgate.model.records import State, Verdict
from skgate.verdict.words import headline


def print_verdict(verdict: Verdict, as_json: bool) -> None:
    if as_json:
        import json  # noqa: PLC0415 - only for --json: status's text loads no json (issue 29)

        print(json.dumps(verdict.to_dict(), ensure_ascii=False, indent=2))
        return
    print(headline(verdict) + (f" (cause: {verdict.cause.value})" if verdict.cause else ""))
    for reason in verdict.reasons:
        print(f"  - {reason}")
    if verdict.missing:
        print("  missing evidence: " + "; ".join(verdict.missing))
    if verdict.attempt:
        print(f"  evidence: {verdict.attempt}")
    if verdict.state is State.UNKNOWN:
        # The headline says "no conclusion"; the step says what can change that (C2.5).
        # Only here: the status of a finished compile does without these words (issue 29).
        from skgate.verdict.words_next import next_step_of  # noqa: PLC0415

        print("  next step: " + next_step_of(verdict, Lang.EN).format(a=verdict.attempt or "."))
