"""Text a person gave (a stop reason), kept on one line wherever skgate shows it.

A reason such as ``"x\\n  - C2.2: ..."`` printed as it was given makes a line of its own
in ``status`` and the report that reads like one of skgate's reasons, and an escape
sequence in it recolours the terminal. No I/O here (the model layer's contract).
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with each character that is not printable (a line break, a tab, an
    escape, U+2028) written as its Python escape (``\\n``, ``\\x1b``): what was given,
    never a second line nor a terminal control."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )
