"""The newest id the ledger indexed, read back from its end (``ledger_seals.newest_indexed``).

A property against a whole-file reference: whatever the ledger holds (start entries of
this root and of another path, other entries, damaged lines, a torn last line) and
wherever the first window cuts it, the answer is the last whole ``start`` entry of the
root's own attempts. The strategy is measured to reach the cases that matter: the answer
found only after the window grew, a line straddling the first window's edge, a torn start
entry at the end, a damaged line after the last start, and no start entry at all.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgate.evidence import ledger_seals

Item = tuple[str, int]


def line_of(item: Item) -> bytes:
    kind, k = item
    name = f"{k:04d}"
    if kind == "start":
        return json.dumps(
            {"event": "start", "attempt": name, "path": f"attempts/{name}"},
            separators=(",", ":"),
        ).encode()
    if kind == "start_spaced":  # the same entry, however its JSON is spaced
        return json.dumps({"event": "start", "attempt": name, "path": f"attempts/{name}"}).encode()
    if kind == "elsewhere":  # not an attempt of this root
        return json.dumps({"event": "start", "attempt": name, "path": f"x/{name}"}).encode()
    if kind == "end":
        return json.dumps({"event": "end", "attempt": name, "path": f"attempts/{name}"}).encode()
    if kind == "damaged":
        return b'not json "start" ' + b"x" * k
    return json.dumps({"event": "seal", "attempt": "0001", "pad": "p" * k}).encode()


ITEMS = st.tuples(
    st.sampled_from(["start", "start_spaced", "elsewhere", "end", "damaged", "filler"]),
    st.integers(min_value=1, max_value=300),
)


def reference(data: bytes) -> tuple[int | None, int]:
    """The last whole start entry of the root's own attempts, and where its line starts
    (-1: none), parsing every whole line."""
    whole = data.split(b"\n")[:-1]
    at = len(data) - len(data.split(b"\n")[-1])
    for raw in reversed(whole):
        at -= len(raw) + 1
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        name = entry.get("attempt")
        if entry.get("event") == "start" and entry.get("path") == f"attempts/{name}":
            return int(name), at
    return None, -1


@pytest.mark.slow
def test_the_last_start_entry_whatever_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached: Counter[str] = Counter()

    @settings(max_examples=500, deadline=None, database=None)
    @given(
        st.lists(ITEMS, max_size=40),
        st.one_of(st.none(), ITEMS),
        st.integers(min_value=8, max_value=600),
    )
    def prop(items: list[Item], torn: Item | None, first: int) -> None:
        data = b"".join(line_of(i) + b"\n" for i in items)
        if torn is not None:
            data += line_of(torn)[: max(1, len(line_of(torn)) - 1)]  # no line end
        (tmp_path / ledger_seals.LEDGER).write_bytes(data)
        monkeypatch.setattr(ledger_seals, "TAIL_FIRST", first)
        want, at = reference(data)
        assert ledger_seals.newest_indexed(str(tmp_path)) == want
        edge = len(data) - first
        if want is None:
            reached["none"] += 1
        elif at < edge:
            reached["grew"] += 1
            end = data.index(b"\n", at)
            reached["straddled"] += at < edge <= end
        if torn is not None and torn[0].startswith("start"):
            reached["torn start"] += 1
        if items and items[-1][0] == "damaged" and want is not None:
            reached["damaged after"] += 1

    prop()
    print("reached:", dict(reached))
    assert min(reached[k] for k in ("none", "grew", "straddled", "torn start")) >= 10, reached
    assert reached["damaged after"] >= 5, reached
