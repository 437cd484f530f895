"""skgate.evidence.pathtext spells paths as pathlib does: ``skgate status`` reads evidence
without pathlib, and the paths it prints must read as they always did (issue 29)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgate.evidence import pathtext

_PATHS = st.text(alphabet="/.a-é\udcb2", max_size=12)
_NAMES = st.text(alphabet=".ab-", min_size=1, max_size=4).filter(lambda n: n not in (".", ".."))

EDGES = ["", ".", "./", "/", "//", "///", "//a", "///a", "a//b", "a/./b/", "a/../b", "..", "/.."]


@settings(max_examples=500, deadline=None, database=None)
@given(_PATHS, _NAMES)
def test_like_pathlib(text: str, leaf: str) -> None:
    pure = PurePosixPath(text)
    assert pathtext.plain(text) == str(pure)
    assert pathtext.name(text) == pure.name
    assert pathtext.parent(text) == str(pure.parent)
    assert pathtext.join(text, leaf) == str(pure / leaf)
    assert pathtext.join(text, "a/" + leaf) == str(pure / "a" / leaf)
    assert pathtext.join(text, "/" + leaf) == str(pure / ("/" + leaf))


@pytest.mark.parametrize("text", EDGES)
def test_edges_like_pathlib(text: str) -> None:
    pure = PurePosixPath(text)
    assert (pathtext.plain(text), pathtext.name(text), pathtext.parent(text)) == (
        str(pure),
        pure.name,
        str(pure.parent),
    )
    assert pathtext.plain(Path(text)) == str(pure)


def test_like_keeps_the_callers_kind() -> None:
    assert pathtext.like("a", "b/c") == "b/c"
    assert pathtext.like(Path("a"), "b/c") == Path("b/c")
    assert isinstance(pathtext.like(Path("a"), "b"), Path)


def test_file_tests_like_pathlib(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "to-d").symlink_to("d")
    (tmp_path / "dangling").symlink_to("missing")
    (tmp_path / "loop").symlink_to("loop")
    names = ["f", "d", "to-d", "dangling", "loop", "missing", "f/under-a-file", "nul\0"]
    for name in names:
        text = f"{tmp_path}/{name}"
        path = tmp_path / name
        got = (pathtext.exists(text), pathtext.is_dir(text), pathtext.is_file(text))
        assert got == (path.exists(), path.is_dir(), path.is_file()), name


def test_an_unreadable_directory_raises_as_pathlib_does(tmp_path: Path) -> None:
    # ``status`` of an unreadable root says "Permission denied; check its permissions"
    # (tests/cli/test_permissions.py): the error must reach it, never read as "absent".
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        try:
            (locked / "x").is_dir()
        except PermissionError:
            with pytest.raises(PermissionError):
                pathtext.is_dir(f"{locked}/x")
        else:
            pytest.skip("this user reads a mode-0 directory (root)")
    finally:
        locked.chmod(0o700)
