"""The start-up probe's record (C6): written as JSON by hand, since the probe may import
nothing (a module on PYTHONPATH could shadow it), and read back with ``json`` by the
runner (issue 29: no ``ast`` on the run path). Every string must come back exactly as the
probe saw it, file names the file system's encoding cannot decode included."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hooks import clean_env, make_venv

from skgate.preflight.hooks import probe_snapshot
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.hooks.rounds import SNAPSHOT_PROBE, FirstRound

#: Every code point, lone surrogates included (what ``os.fsdecode`` makes of bytes that
#: are not UTF-8).
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None))


@settings(max_examples=300)
@given(ANY_TEXT)
def test_every_string_reads_back_as_itself(text: str) -> None:
    spelt = probe_snapshot._text(text)
    spelt.encode("utf-8")  # plain UTF-8: no surrogate is left unescaped
    assert json.loads(spelt) == text


def test_the_escapes_that_matter_are_reached() -> None:
    """The property above reaches each kind of escape (measured, not assumed)."""
    for text in ('a"b', "a\\b", "a\nb", "\x00", "\udcff", "é中"):
        spelt = probe_snapshot._text(text)
        assert json.loads(spelt) == text
        assert ("\\u" in spelt) is (text != "é中")


def test_a_hook_module_with_an_awkward_path_is_recorded_exactly(tmp_path: Path) -> None:
    """A start-up hook (a ``sitecustomize`` on PYTHONPATH) imports a module from a
    directory whose name holds a quote, a backslash, a newline and a byte that is not
    UTF-8: the record names both files exactly as the interpreter did."""
    python, _ = make_venv(tmp_path / "venv")
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b'/d"q\\b\nn\xff')
    os.mkdir(odd)
    Path(odd, "hookmod.py").write_text("X = 1\n")
    Path(odd, "sitecustomize.py").write_text("import hookmod\n")
    out = tmp_path / "start"
    subprocess.run(
        [str(python), str(SNAPSHOT_PROBE), str(out)],
        env=clean_env(PYTHONPATH=odd),
        check=True,
        timeout=60,
    )
    record = json.loads(out.read_text(encoding="utf-8"))
    assert set(record) == {"executable", "modules"}
    files = dict(record["modules"])
    assert files["hookmod"] == os.path.join(odd, "hookmod.py")
    assert files["sitecustomize"] == os.path.join(odd, "sitecustomize.py")
    assert files["sys"] is None  # built in: no file
    assert Path(record["executable"]).samefile(python)


def test_the_probes_directory_is_private_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probes write their records in a directory only this user may enter, made in
    $TMPDIR; it is gone after the scan, and at exit when nobody removed it (a runner
    interrupted in preflight)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("SKGATE_HOOK_CACHE", "0")  # the probes run
    python, _ = make_venv(tmp_path / "venv")
    first = FirstRound(str(python), clean_env(), str(tmp_path), ())
    made = first.dir
    assert made.parent == temp and made.name.startswith("skgate-probe-")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    hooks.scan(str(python), clean_env(), cwd=str(tmp_path), first=first)
    assert list(temp.iterdir()) == []
    left = subprocess.run(
        [sys.executable, "-c", LEAVE_IT, str(python)],
        env={**os.environ, "TMPDIR": str(temp), "SKGATE_HOOK_CACHE": "0"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert left.stdout.startswith(str(temp / "skgate-probe-"))
    assert list(temp.iterdir()) == []


#: A round 1 started, its records read, and never cleaned up: the interpreter exits.
LEAVE_IT = """
import sys
from skgate.preflight.hooks.rounds import FirstRound
first = FirstRound(sys.argv[1], {}, None, ())
first.results()
print(first.dir)
"""
