"""Printing a verdict, shared by the command areas (run, status, classify, retry): the C7
headline, reasons, missing evidence, or the verdict record as JSON."""

from __future__ import annotations

import json

from skgate.model.records import Verdict
from skgate.verdict.words import headline


def print_verdict(verdict: Verdict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(verdict.to_dict(), ensure_ascii=False, indent=2))
        return
    print(headline(verdict) + (f" (cause: {verdict.cause.value})" if verdict.cause else ""))
    for reason in verdict.reasons:
        print(f"  - {reason}")
    if verdict.missing:
        print("  missing evidence: " + "; ".join(verdict.missing))
    if verdict.attempt:
        print(f"  evidence: {verdict.attempt}")
