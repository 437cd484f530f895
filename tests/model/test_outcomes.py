"""Outcome enums read as the words they replaced: in text, in JSON, in comparisons."""

from __future__ import annotations

import json

import pytest

from skgate.model.outcomes import UninstallAction, Word

#: Every outcome vocabulary (each is a Word).
ENUMS = Word.__subclasses__()


def test_every_outcome_vocabulary_is_covered() -> None:
    assert {e.__name__ for e in ENUMS} >= {"HealthOutcome", "RunStatus", "MoveMethod"}


@pytest.mark.parametrize("enum", ENUMS)
def test_members_read_as_their_value(enum: type[Word]) -> None:
    for member in enum:
        assert str(member) == f"{member}" == f"{member:>0}" == member.value
        assert json.dumps(member) == json.dumps(member.value)
        assert member == member.value


def test_uninstall_action_upper_is_the_printed_word() -> None:
    assert UninstallAction.WOULD_RUN.upper() == "WOULD-RUN"
