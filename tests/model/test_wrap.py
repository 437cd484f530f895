"""skgate.model.wrap gives ``textwrap.wrap``'s lines, or says it cannot (issue 29)."""

from __future__ import annotations

import random
import textwrap

import pytest

from skgate.cli import table
from skgate.model import exits
from skgate.model import wrap as wrap_module
from skgate.model.wrap import word_chunks, wrap


def _help_texts() -> list[str]:
    texts = [table.DESCRIPTION, *(c.summary for c in table.COMMANDS)]
    for row in exits.EXIT_TABLE:
        texts += [row.meaning, row.help_label or "", *row.for_command.values()]
    return [t for t in texts if t]


@pytest.mark.parametrize("hyphens", [True, False])
def test_every_help_text_wraps_as_textwrap_does_at_every_width(hyphens: bool) -> None:
    answered = 0
    for text in _help_texts():
        for width in range(1, 160):
            for indents in (("", ""), ("  ", "      ")):
                mine = wrap(text, width, *indents, break_on_hyphens=hyphens)
                ref = textwrap.wrap(
                    text,
                    width,
                    initial_indent=indents[0],
                    subsequent_indent=indents[1],
                    break_on_hyphens=hyphens,
                )
                if mine is not None:
                    answered += 1
                    assert mine == ref, (text, width, indents)
                else:
                    # Only where textwrap must break a word longer than the line.
                    assert any(len(w) > width - len(indents[1]) for w in text.split()), text
    assert answered > 1000


def test_hyphen_and_em_dash_chunks_are_textwrap_s() -> None:
    # The examples of textwrap's own comment, and skgate's option spellings.
    assert word_chunks("goof-ball,") == ["goof-", "ball,"]
    assert word_chunks("--verdict-from") == ["--verdict-", "from"]
    assert word_chunks("foo--bar") == ["foo", "--", "bar"]
    assert word_chunks("(--matrix)") == ["(--matrix)"]
    for word in ("a-b-c-d", "ab-cd-e", "x--y", "9-ab", "ab-9c", "a_b-cd", "ab---cd", "?--x"):
        assert word_chunks(word) == [c for c in textwrap.TextWrapper.wordsep_re.split(word) if c]


def test_random_text_wraps_as_textwrap_does() -> None:
    rng = random.Random(29)
    alphabet = "ab-- .,9_!x"
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        width = rng.randint(1, 14)
        mine = wrap(text, width)
        if mine is not None:
            assert mine == textwrap.wrap(text, width), (text, width)


def test_what_it_leaves_to_textwrap() -> None:
    assert wrap("a " + "x" * 30, 10) is None  # a word longer than a line
    assert wrap("tab\there", 40) is None
    assert wrap("non-ASCII 编译", 40) is None
    assert wrap("", 10) == [] == textwrap.wrap("", 10)


def test_the_exit_table_epilogs_are_textwrap_s(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = [exits.verdict_help(), *(exits.command_epilog(c) for c in exits.COMMANDS)]
    monkeypatch.setattr(wrap_module, "wrap", lambda *_a, **_k: None)  # textwrap for every line
    assert fast == [exits.verdict_help(), *(exits.command_epilog(c) for c in exits.COMMANDS)]
