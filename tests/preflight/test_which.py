"""The command a run starts is found on its PATH exactly as ``shutil.which`` finds it
(preflight/interpreter.py searches without importing shutil, issue 29)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from skgate.preflight.interpreter import resolve_command


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Directories holding a ``tool`` of each kind: executable, not executable, a
    directory, a link to an executable, a dangling link; and none."""
    made = {
        name: tmp_path / name for name in ("exe", "plain", "folder", "link", "dangling", "none")
    }
    for d in made.values():
        d.mkdir()
    (made["exe"] / "tool").write_text("#!/bin/sh\n")
    (made["exe"] / "tool").chmod(0o755)
    (made["plain"] / "tool").write_text("")
    (made["plain"] / "tool").chmod(0o644)
    (made["folder"] / "tool").mkdir()
    (made["link"] / "tool").symlink_to(made["exe"] / "tool")
    (made["dangling"] / "tool").symlink_to(tmp_path / "gone")
    monkeypatch.chdir(made["exe"])  # an empty PATH entry means the current directory
    return made


@pytest.mark.parametrize(
    "order",
    [
        ["none", "plain", "folder", "exe"],
        ["dangling", "link", "exe"],
        ["folder", "plain", "none"],
        ["", "plain"],
        ["none", "none", "link"],
        [],
    ],
)
def test_found_on_path_as_shutil_which_finds_it(dirs: dict[str, Path], order: list[str]) -> None:
    path = os.pathsep.join(str(dirs[n]) if n else "" for n in order)
    env = {"PATH": path}
    assert resolve_command("tool", env, "/") == shutil.which("tool", path=path)
