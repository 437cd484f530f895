"""``Lazy``: the pattern ``re.compile`` gives, compiled by the first ``get`` only."""

from __future__ import annotations

import re

from skgate.model.lazy_re import Lazy


def test_get_compiles_once_on_first_use_with_the_flags_given() -> None:
    lazy = Lazy(r"^a(\d+)$", re.MULTILINE)
    assert lazy._compiled is None  # nothing compiled at construction (import time)
    first = lazy.get()
    assert first is lazy.get()
    assert first.pattern == r"^a(\d+)$" and first.flags & re.MULTILINE
    assert first.findall("a1\nb2\na3") == ["1", "3"]
