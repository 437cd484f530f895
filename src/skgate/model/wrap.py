"""``textwrap.wrap``, line for line, for skgate's own help text, without ``textwrap``.

``skgate --help`` is a few milliseconds over the interpreter's start-up (issue 29), and
``textwrap`` compiles its word-splitting expression at import, a sizeable part of that.
:func:`wrap` is the same greedy algorithm (``TextWrapper._wrap_chunks``) over the same
chunks: with ``break_on_hyphens`` its :func:`word_chunks` split a word where
``TextWrapper.wordsep_re`` does (after a hyphen inside a word of letters; before an
em-dash ``--`` between words), else only at whitespace. It answers ``None`` where
``textwrap`` would have to break a word longer than a line, and for text that is not
ASCII: the caller then asks ``textwrap`` itself. tests/model/test_wrap.py holds every
help text skgate prints, at every width, equal to ``textwrap``'s lines.
"""

from __future__ import annotations

#: ``TextWrapper.wordsep_re``'s ``word_punct`` besides word characters.
_PUNCT = "!\"'&.,?"


def _letter(c: str) -> bool:
    """``[^\\d\\W]`` on ASCII: a letter or ``_``."""
    return c.isalpha() or c == "_"


def _word(c: str) -> bool:
    """``\\w`` on ASCII."""
    return c.isalnum() or c == "_"


def _punct(c: str) -> bool:
    """``word_punct``: a word character or one of :data:`_PUNCT`."""
    return bool(c) and (_word(c) or c in _PUNCT)


def _dashes_then_word(word: str, k: int) -> int:
    """The end of ``-{2,}(?=\\w)`` at ``k`` (an em-dash before a word), else 0."""
    m = k
    while m < len(word) and word[m] == "-":
        m += 1
    return m if m - k >= 2 and m < len(word) and _word(word[m]) else 0


def _hyphen_splits(word: str, j: int) -> bool:
    """Does the word break after the hyphen at ``j`` (``wordsep_re``'s hyphenated word:
    two letters, or letter-hyphen-letter, before it; letter, optional hyphen, letter
    after it)?"""

    def at(k: int) -> str:
        return word[k] if 0 <= k < len(word) else ""

    before = (_letter(at(j - 2)) and _letter(at(j - 1))) or (
        _letter(at(j - 3)) and at(j - 2) == "-" and _letter(at(j - 1))
    )
    after = _letter(at(j + 1)) and (_letter(at(j + 2)) or (at(j + 2) == "-" and _letter(at(j + 3))))
    return before and after


def word_chunks(word: str) -> list[str]:
    """The chunks ``TextWrapper(break_on_hyphens=True)`` splits one word (no whitespace)
    into, in order."""
    if "-" not in word:  # every split point is at a hyphen
        return [word]
    out: list[str] = []
    i = 0
    while i < len(word):
        if i > 0 and _punct(word[i - 1]):
            end = _dashes_then_word(word, i)
            if end:  # an em-dash between words is a chunk of its own
                out.append(word[i:end])
                i = end
                continue
        j = i + 1
        while True:
            if j < len(word) and word[j] == "-" and _hyphen_splits(word, j):
                out.append(word[i : j + 1])
                i = j + 1
                break
            if j >= len(word):
                out.append(word[i:])
                i = j
                break
            if _punct(word[j - 1]) and _dashes_then_word(word, j):
                out.append(word[i:j])
                i = j
                break
            j += 1
    return out


def _chunks(text: str, break_on_hyphens: bool) -> list[str]:
    """Whitespace runs and words (split further at hyphens if asked), as ``textwrap``
    splits the text after turning each whitespace character into a space."""
    out: list[str] = []
    spaces = 0  # the run of spaces before the next word
    for k, part in enumerate(text.split(" ")):
        spaces += k > 0
        if part:
            if spaces:
                out.append(" " * spaces)
                spaces = 0
            out += word_chunks(part) if break_on_hyphens else [part]
    if spaces:
        out.append(" " * spaces)
    return out


def wrap(
    text: str,
    width: int,
    initial_indent: str = "",
    subsequent_indent: str = "",
    *,
    break_on_hyphens: bool = True,
) -> list[str] | None:
    """``textwrap.wrap(text, width, initial_indent=..., subsequent_indent=...,
    break_on_hyphens=...)``'s lines, or ``None`` where this cannot promise them: the text
    is not ASCII, holds a tab or a control character, or a chunk is longer than a line
    (``textwrap`` would break it)."""
    if not text.isascii() or not text.isprintable() or width <= 0:
        return None
    chunks = _chunks(text, break_on_hyphens)
    chunks.reverse()
    lines: list[str] = []
    while chunks:
        current: list[str] = []
        length = 0
        indent = subsequent_indent if lines else initial_indent
        room = width - len(indent)
        if chunks[-1].strip() == "" and lines:
            del chunks[-1]
        while chunks and length + len(chunks[-1]) <= room:
            length += len(chunks[-1])
            current.append(chunks.pop())
        if chunks and len(chunks[-1]) > room:
            return None  # textwrap would break this long word: leave it to textwrap
        if current and current[-1].strip() == "":
            del current[-1]
        if current:
            lines.append(indent + "".join(current))
    return lines
