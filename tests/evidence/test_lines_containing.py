"""``regular.lines_containing``: the lines that hold a needle, found block by block.

The one reader asks the root's ledger for an attempt's seal hashes on every read of a
sealed attempt (``ledger_seals.recorded_seals``), so it searches the ledger with
``bytes.find`` instead of splitting it line by line. Its answer must be exactly that of
the line reader (``regular.iter_fd_lines``) filtered: whole lines, each once, none over
the bound, no torn last line, whatever the block size. Checked on generated files,
counting that each hard case was reached (a check that never met a case proves nothing).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from skgate.evidence import regular

NEEDLE = b'"0007"'


def reference(path: Path, needle: bytes, max_line: int) -> list[bytes]:
    with regular.opened(path) as fd:
        return [
            ln.raw
            for ln in regular.iter_fd_lines(fd, max_line)
            if ln.complete and not ln.too_long and needle in ln.raw
        ]


def found(path: Path, needle: bytes, max_line: int, chunk: int) -> list[bytes]:
    with regular.opened(path) as fd:
        return list(regular.lines_containing(fd, needle, max_line, chunk))


def line(rng: random.Random, max_line: int) -> bytes:
    """A line with the needle (or a near miss) somewhere, of any length around the bound."""
    size = rng.choice(
        [0, 1, max_line - 1, max_line, max_line + 1, 3 * max_line, rng.randint(0, 40)]
    )
    body = bytearray(rng.choice(b'ab"0789,') for _ in range(max(0, size)))
    for _ in range(rng.choice([0, 0, 1, 2])):
        at = rng.randint(0, len(body))
        body[at:at] = rng.choice([NEEDLE, b'"000', b'0007"', NEEDLE])
    return bytes(body)


def test_the_same_lines_as_the_line_reader(tmp_path: Path) -> None:
    rng = random.Random(20261204)
    reached: Counter[str] = Counter()
    path = tmp_path / "ledger.jsonl"
    for case in range(400):
        max_line = rng.randint(6, 48)
        lines = [line(rng, max_line) for _ in range(rng.randint(0, 30))]
        torn = rng.random() < 0.4
        data = b"".join(ln + b"\n" for ln in lines) + (line(rng, max_line) if torn else b"")
        path.write_bytes(data)
        want = reference(path, NEEDLE, max_line)
        for chunk in {1, 2, 7, rng.randint(3, 64), len(data) + 1}:
            assert found(path, NEEDLE, max_line, chunk) == want, (case, chunk, data)
        # What this case exercised, for the count below.
        hits = [ln for ln in lines if NEEDLE in ln]
        reached["a line with the needle over the bound"] += any(len(h) > max_line for h in hits)
        reached["a line with the needle twice"] += any(h.count(NEEDLE) > 1 for h in hits)
        reached["a torn last line with the needle"] += torn and NEEDLE in data.rsplit(b"\n", 1)[-1]
        reached["a line with the needle over three blocks of 7"] += any(len(ln) > 21 for ln in hits)
        reached["lines found"] += len(want)
    for what, count in reached.items():
        assert count >= 10, (what, count, reached)


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_a_line_over_the_bound_is_never_held(tmp_path: Path, chunk: int) -> None:
    path = tmp_path / "x"
    path.write_bytes(b'a"0007"\n' + b"x" * 1000 + NEEDLE + b"\n" + NEEDLE + b"\n" + NEEDLE)
    assert found(path, NEEDLE, 16, chunk) == [b'a"0007"', NEEDLE]


def test_a_file_without_the_needle_or_empty(tmp_path: Path) -> None:
    path = tmp_path / "x"
    for data in (b"", b"\n\n", b"nothing here\n" * 100):
        path.write_bytes(data)
        assert found(path, NEEDLE, 64, 5) == []
