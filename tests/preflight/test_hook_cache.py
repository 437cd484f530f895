"""The hook probes' answer cache (C6, issue 29): used only while every fingerprint it
depends on holds; any change re-probes, a forged or corrupt entry is never trusted
across a changed fingerprint, and control.json says whether the answer was probed or
cached."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_hooks import DISTUTILS_PTH, clean_env, make_venv, request_for

from conftest import wait_for
from skgate.model.outcomes import VerdictFrom
from skgate.preflight.hooks import cache, startup_code
from skgate.preflight.hooks import scan as hooks


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache on, in a directory of this test's own."""
    monkeypatch.setenv("SKGATE_HOOK_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "skgate" / "hook-probe"


@pytest.fixture
def venv(tmp_path: Path) -> tuple[Path, Path]:
    return make_venv(tmp_path / "venv")


def answer(result: hooks.HookScan) -> str:
    return str(result.extra["probe_answer"])


def test_nothing_changed_the_cached_answer_is_used(cached: Path, venv: tuple[Path, Path]) -> None:
    python, site = venv
    (site / "plain.pth").write_text("/nowhere\n")  # a path line: no hook
    first = hooks.scan(str(python), clean_env())
    again = hooks.scan(str(python), clean_env())
    assert (answer(first), answer(again)) == ("probed", "cached")
    assert first.extra["startup_probe"] == again.extra["startup_probe"] == "ran"
    assert first.to_dict() | {"probe_answer": "x"} == again.to_dict() | {"probe_answer": "x"}
    assert len(list(cached.glob("*.json"))) == 1


@pytest.mark.parametrize("change", ["touch_pth", "add_pth", "site_listing", "pythonpath"])
def test_any_change_re_probes(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path, change: str
) -> None:
    python, site = venv
    (site / "plain.pth").write_text("/nowhere\n")
    shadow = tmp_path / "pp"
    shadow.mkdir()
    env = clean_env(PYTHONPATH=str(shadow))
    assert answer(hooks.scan(str(python), env)) == "probed"
    assert answer(hooks.scan(str(python), env)) == "cached"
    if change == "touch_pth":
        (site / "plain.pth").write_text("/nowhere/else\n")
    elif change == "add_pth":
        (site / "hook.pth").write_text("import json\n")
    elif change == "site_listing":
        (site / "newpkg").mkdir()
    else:
        (shadow / "json.py").write_text("X = 1\n")  # the entry now shadows the stdlib
    result = hooks.scan(str(python), env)
    assert answer(result) == "probed"
    if change == "add_pth":
        assert [f.kind for f in result.findings] == ["pth-import"]
    if change == "pythonpath":
        assert [f.kind for f in result.findings] == ["pythonpath-shadow"]


def test_another_interpreter_or_pythonpath_value_re_probes(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path
) -> None:
    python, _ = venv
    other, _ = make_venv(tmp_path / "other")
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    assert answer(hooks.scan(str(other), clean_env())) == "probed"
    assert answer(hooks.scan(str(python), clean_env(PYTHONPATH=str(tmp_path)))) == "probed"
    assert answer(hooks.scan(str(python), clean_env())) == "cached"


def _absolute_env(**extra: str) -> dict[str, str]:
    """``clean_env`` with every start-up path absolute, whatever this host's are."""
    env = {k: v for k, v in clean_env(**extra).items() if not k.startswith("LD_")}
    env.update(PATH="/usr/bin:/bin", HOME="/nonexistent-home")
    return env


def test_another_working_directory_uses_the_answer_unless_a_path_depends_on_it(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path
) -> None:
    """Start-up finds the same files from any directory when every path it resolves is
    absolute: a run in a fresh directory (an agent's per-compile directory) uses the
    answer. A relative PYTHONPATH entry resolves against the directory: there it is
    another answer, probed, and it names the entry in that directory."""
    python, site = venv
    (site / "plain.pth").write_text("/nowhere\n")
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        (d / "lib").mkdir(parents=True)
    (two / "lib" / "json.py").write_text("X = 1\n")  # shadows the stdlib, from two only
    env = _absolute_env()
    assert answer(hooks.scan(str(python), env, cwd=str(one))) == "probed"
    moved = hooks.scan(str(python), env, cwd=str(two))
    assert (answer(moved), moved.extra["startup_probe"]) == ("cached", "ran")
    relative = _absolute_env(PYTHONPATH="lib")
    assert answer(hooks.scan(str(python), relative, cwd=str(one))) == "probed"
    assert answer(hooks.scan(str(python), relative, cwd=str(one))) == "cached"
    there = hooks.scan(str(python), relative, cwd=str(two))
    assert answer(there) == "probed"
    assert [f.kind for f in there.findings] == ["pythonpath-shadow"]
    assert [e["path"] for e in there.pythonpath] == [str(two / "lib")]


def test_start_up_code_keeps_its_answer_to_the_directory_it_ran_in(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path
) -> None:
    """A .pth import line may read the working directory and import according to it: a
    start-up record taken while it ran holds only for the same directory; the static
    record alone (the start-up not run) does not depend on it."""
    python, site = venv
    hook = "import os; os.getcwd().endswith('two') and __import__('json')\n"
    (site / "hook.pth").write_text(hook)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    env = _absolute_env()
    # One key for both (approve_all judges the answer, it is not part of it): the first
    # scan probes, and the static record is cached from then on.
    for approve_all, first in ((True, "probed"), (False, "cached")):
        here = functools.partial(hooks.scan, str(python), env, approve_all=approve_all)
        assert answer(here(cwd=str(one))) == first
        assert answer(here(cwd=str(one))) == "cached"
        other = here(cwd=str(two))
        assert answer(other) == ("probed" if approve_all else "cached")
        assert other.extra["startup_probe"] == ("ran" if approve_all else "not run")


@pytest.mark.parametrize(
    ("python", "extra", "matters"),
    [
        ("/abs/python3", {}, False),
        ("/abs/python3", {"PATH": "node_modules/.bin:/usr/bin"}, False),
        ("venv/bin/python3", {}, True),
        ("python3", {"PATH": "/usr/bin:bin"}, True),
        ("python3", {"PATH": "/usr/bin::/bin"}, True),
        ("python3", {}, False),
        ("/abs/python3", {"PYTHONPATH": "/a:/b"}, False),
        ("/abs/python3", {"PYTHONPATH": "/a:lib"}, True),
        ("/abs/python3", {"PYTHONPATH": "/a:"}, True),
        ("/abs/python3", {"PYTHONUSERBASE": "ub"}, True),
        ("/abs/python3", {"PYTHONHOME": "/p:rel"}, True),
        ("/abs/python3", {"LD_LIBRARY_PATH": "lib"}, True),
        ("/abs/python3", {"LD_PRELOAD": "./hook.so"}, True),
        ("/abs/python3", {"LD_PRELOAD": "libhook.so"}, False),
        ("/abs/python3", {"PYTHONWARNINGS": "ignore::DeprecationWarning", "LANG": "C"}, False),
        ("/abs/python3", {"JOB_DIR": "rel/dir"}, False),
    ],
)
def test_cwd_matters_only_where_start_up_resolves_a_relative_path(
    python: str, extra: dict[str, str], matters: bool
) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", **extra}
    assert cache.cwd_matters(python, env) is matters


def test_a_forged_entry_is_never_trusted_across_a_changed_fingerprint(
    cached: Path, venv: tuple[Path, Path]
) -> None:
    python, site = venv
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    (entry,) = cached.glob("*.json")
    # A hook is planted; the entry is forged to list the new file with a made-up
    # fingerprint and to say there is no .pth at all.
    (site / "evil.pth").write_text("import json\n")
    record = json.loads(entry.read_text())
    record["static"]["pth"] = []
    record["fingerprints"][str(site / "evil.pth")] = "0" * 64
    entry.write_text(json.dumps(record))
    result = hooks.scan(str(python), clean_env())
    assert answer(result) == "probed"
    assert [f.kind for f in result.findings] == ["pth-import"] and result.unapproved


@pytest.mark.parametrize("damage", ["garbage", "link", "empty"])
def test_a_corrupt_or_linked_entry_is_a_miss(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path, damage: str
) -> None:
    python, _ = venv
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    (entry,) = cached.glob("*.json")
    if damage == "garbage":
        entry.write_bytes(b"{not json")
    elif damage == "empty":
        entry.write_bytes(b"")
    else:
        real = tmp_path / "elsewhere.json"
        shutil.copyfile(entry, real)
        entry.unlink()
        entry.symlink_to(real)
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    assert not entry.is_symlink()  # replaced whole, never written through the link
    assert answer(hooks.scan(str(python), clean_env())) == "cached"


def test_the_cache_is_bounded(cached: Path, venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = venv
    cached.mkdir(parents=True)
    for i in range(cache.MAX_ENTRIES + 5):
        (cached / f"{i:064x}.json").write_text("{}")
        os.utime(cached / f"{i:064x}.json", ns=(i, i))
    hooks.scan(str(python), clean_env())
    assert len(list(cached.glob("*.json"))) == cache.MAX_ENTRIES


def test_control_json_says_probed_then_cached(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path
) -> None:
    from skgate.runner.run import run_here

    python, _ = venv
    seen = []
    for _ in range(2):
        verdict = run_here(request_for(python, tmp_path, verdict_from=VerdictFrom.EXIT_STATUS))
        assert verdict.attempt is not None
        control = json.loads((Path(verdict.attempt) / "control.json").read_text())
        seen.append(control["controls"]["hooks"]["probe_answer"])
    assert seen == ["probed", "cached"]


def test_an_entry_others_may_write_is_a_miss(cached: Path, venv: tuple[Path, Path]) -> None:
    """Another user who can write the cache could forge an entry that matches every
    fingerprint: a directory or entry writable by group or others is never read."""
    python, _ = venv
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    (entry,) = cached.glob("*.json")
    for path, loose, tight in ((cached, 0o777, 0o700), (entry, 0o666, 0o600)):
        path.chmod(loose)
        assert answer(hooks.scan(str(python), clean_env())) == "probed"
        path.chmod(tight)
        entry = next(cached.glob("*.json"))
    assert answer(hooks.scan(str(python), clean_env())) == "cached"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PYTHONWARNINGS", "ignore"),
        ("PYTHONUTF8", "1"),
        ("HOME", "/nonexistent-home"),
        ("LC_ALL", "C"),
        ("LD_LIBRARY_PATH", "/nonexistent-lib"),
    ],
)
def test_a_start_up_variable_re_probes_any_other_does_not(
    cached: Path, venv: tuple[Path, Path], name: str, value: str
) -> None:
    """The key holds the variables that change what start-up runs or finds (C6); one that
    changes on every run (a job id) must not make every run probe."""
    python, site = venv
    (site / "plain.pth").write_text("/nowhere\n")  # a path line: start-up runs no code
    assert answer(hooks.scan(str(python), clean_env(JOB_ID="1"))) == "probed"
    again = hooks.scan(str(python), clean_env(JOB_ID="2", BUILD_TIME="now"))
    assert answer(again) == "cached" and again.extra["startup_probe"] == "ran"
    assert answer(hooks.scan(str(python), clean_env(JOB_ID="3", **{name: value}))) == "probed"


def test_start_up_code_keeps_its_answer_to_the_environment_it_ran_in(
    cached: Path, venv: tuple[Path, Path]
) -> None:
    """A .pth import line runs at start-up and may import according to any variable: a
    start-up record taken while it ran holds only for the same environment; the static
    record alone (the start-up not run) never depends on the other variables."""
    python, site = venv
    (site / "hook.pth").write_text("import os; os.environ.get('JOB_ID') and __import__('json')\n")
    # One key for both (approve_all judges the answer, it is not part of it): the static
    # record the first scan probed is used by every later one.
    for approve_all, ran, fresh in ((True, "ran", "probed"), (False, "not run", "cached")):
        first = hooks.scan(str(python), clean_env(JOB_ID=""), approve_all=approve_all)
        assert (answer(first), first.extra["startup_probe"]) == (fresh, ran)
        same = hooks.scan(str(python), clean_env(JOB_ID=""), approve_all=approve_all)
        assert answer(same) == "cached"
        other = hooks.scan(str(python), clean_env(JOB_ID="7"), approve_all=approve_all)
        assert answer(other) == ("probed" if approve_all else "cached")


#: A ``_distutils_hack`` of the test's own, inert as the catalogued ones: only the tests
#: below that put its sha256 into the catalogue (monkeypatched) know it.
OWN_HACK = "import sys\n\n\ndef add_shim():\n    pass\n"


def _known(monkeypatch: pytest.MonkeyPatch, content: str) -> None:
    digest = hashlib.sha256(content.encode()).hexdigest()
    monkeypatch.setitem(startup_code.DISTUTILS_HACK_SHA256, digest, "this test's own")


def _plant_distutils(site: Path, pth: bytes, hack: bytes) -> None:
    (site / "distutils-precedence.pth").write_bytes(pth)
    (site / "_distutils_hack").mkdir()
    (site / "_distutils_hack" / "__init__.py").write_bytes(hack)


@pytest.mark.parametrize(
    "change",
    ["none", "variable", "hack_unknown", "hack_imports_more", "another_pth_line", "customize"],
)
def test_known_start_up_code_keeps_its_answer_in_any_directory(
    cached: Path,
    venv: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    """setuptools' distutils-precedence.pth runs code at start-up; where every piece of
    code a start-up runs is known by its exact content (startup_code.KNOWN_STARTUP_CODE), it
    reads only SETUPTOOLS_USE_DISTUTILS, so its start-up record holds in a fresh directory
    and with any other variable: an agent's per-compile directory is answered from the
    cache. Any other code, or another value of that variable, keeps the record to where it
    was taken (C6)."""
    python, site = venv
    hack = OWN_HACK
    if change == "hack_imports_more":
        hack = "import sys\nimport json\n\n\ndef add_shim():\n    pass\n"
    if change != "hack_unknown":
        _known(monkeypatch, hack)
    _plant_distutils(site, DISTUTILS_PTH.encode(), hack.encode())
    if change == "another_pth_line":
        (site / "zz.pth").write_text("import os\n")
    if change == "customize":
        (site / "sitecustomize.py").write_text("X = 1\n")
        # Its bytecode, written into the site directory by the first start-up, would
        # change that directory while the probes run: such an answer is not stored.
        subprocess.run([python, "-c", "pass"], env=clean_env(), check=True, timeout=60)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    scan = functools.partial(hooks.scan, str(python), approve_all=True)
    first = scan(_absolute_env(JOB_ID="1"), cwd=str(one))
    assert (answer(first), first.extra["startup_probe"]) == ("probed", "ran")
    assert answer(scan(_absolute_env(JOB_ID="1"), cwd=str(one))) == "cached"
    env = _absolute_env(JOB_ID="2")
    if change == "variable":
        env["SETUPTOOLS_USE_DISTUTILS"] = "stdlib"
    moved = scan(env, cwd=str(two))
    assert moved.extra["startup_probe"] == "ran"
    assert answer(moved) == ("cached" if change == "none" else "probed")


def test_the_real_setuptools_start_up_is_known_code(
    cached: Path, venv: tuple[Path, Path], tmp_path: Path
) -> None:
    """This test interpreter's own setuptools files, planted into a venv: a release in the
    catalogue keeps its start-up answer in a fresh directory; any other probes there."""
    spec = importlib.util.find_spec("_distutils_hack")
    if spec is None or spec.origin is None:
        pytest.skip("this interpreter has no setuptools (_distutils_hack): nothing to plant")
    hack = Path(spec.origin).read_bytes()
    pth_file = Path(spec.origin).parent.parent / "distutils-precedence.pth"
    if not pth_file.is_file():
        pytest.skip(f"setuptools here ships no {pth_file.name}: nothing to plant")
    pth = pth_file.read_bytes()
    python, site = venv
    _plant_distutils(site, pth, hack)
    known = (
        hashlib.sha256(pth).hexdigest() in startup_code.DISTUTILS_PTH_SHA256
        and hashlib.sha256(hack).hexdigest() in startup_code.DISTUTILS_HACK_SHA256
    )
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = hooks.scan(str(python), _absolute_env(JOB_ID="1"), cwd=str(one))
    assert (answer(first), first.extra["startup_probe"], first.unapproved) == (
        "probed",
        "ran",
        (),
    )
    moved = hooks.scan(str(python), _absolute_env(JOB_ID="2"), cwd=str(two))
    assert answer(moved) == ("cached" if known else "probed")
    assert moved.to_dict() | {"probe_answer": "x"} == first.to_dict() | {"probe_answer": "x"}


def _after_every_change_in(folder: Path, scratch: Path) -> None:
    """Wait until the file system's clock has moved past the last change in ``folder``,
    so that a change made now gets other times (the stamps below were taken settled)."""
    newest = max(os.stat(p).st_ctime_ns for p in [folder, *folder.iterdir()])

    def moved() -> bool:
        scratch.write_text("tick")
        return os.stat(scratch).st_ctime_ns > newest

    wait_for(moved, what="the file system clock to move on", timeout=30)


@pytest.mark.parametrize("change", ["add_pth", "package_init", "remove", "edit_notes"])
def test_a_settled_directory_is_checked_by_its_stamp(
    cached: Path,
    venv: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    """A directory that last changed before the entry was stored is checked by a few
    stats instead of its listing: any name added or removed, and a package gaining an
    ``__init__``, still re-probe; an in-place edit of a file start-up never runs (a
    module nobody imports there, a note) cannot change the answer and does not."""
    python, site = venv
    (site / "plain.pth").write_text("/nowhere\n")
    (site / "pkg").mkdir()  # no __init__: not a package (yet)
    (site / "notes.txt").write_text("a\n")
    # Fresh, the venv is not settled: its directories are listed in full every time.
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    (entry,) = cached.glob("*.json")
    assert str(site) not in json.loads(entry.read_text())["quick"]
    # Taken as settled (a venv made long ago), the entry stamps the site directory.
    monkeypatch.setattr(cache, "SETTLED_NS", -(10**18))
    entry.unlink()
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    quick = json.loads(next(cached.glob("*.json")).read_text())["quick"]
    assert "pkg" in quick[str(site)][1]
    _after_every_change_in(site, tmp_path / "scratch")
    if change == "add_pth":
        (site / "hook.pth").write_text("import json\n")
    elif change == "package_init":
        (site / "pkg" / "__init__.py").write_text("")
    elif change == "remove":
        (site / "notes.txt").unlink()
    else:
        with (site / "notes.txt").open("a") as fh:
            fh.write("b\n")
    expected = "cached" if change == "edit_notes" else "probed"
    assert answer(hooks.scan(str(python), clean_env())) == expected


def test_a_change_while_the_probes_run_is_not_stored(cached: Path, venv: tuple[Path, Path]) -> None:
    """C6: the fingerprints are taken after the probes; a site directory that changed
    while they ran (here the start-up itself writes a new ``.pth`` the static probe never
    saw) must not store the old answer under the new fingerprint: the next scan probes."""
    python, site = venv
    late = site / "late.pth"
    make = f"import os; os.path.exists({str(late)!r}) or open({str(late)!r}, 'w')"
    make += ".write('import json\\n')"
    (site / "maker.pth").write_text(make + "\n")
    first = hooks.scan(str(python), clean_env(), approve_all=True)
    assert answer(first) == "probed" and late.exists()
    assert not any("late.pth" in str(f.to_dict()) for f in first.findings)
    again = hooks.scan(str(python), clean_env(), approve_all=True)
    assert answer(again) == "probed"
    assert any("late.pth" in str(f.to_dict()) for f in again.findings)
    # Nothing changed while that one ran: its answer is stored and used.
    assert answer(hooks.scan(str(python), clean_env(), approve_all=True)) == "cached"


def test_a_pth_edited_between_probe_and_fingerprint_is_not_stored(
    cached: Path, venv: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seam between the probes' answer and the fingerprints taken for it (C6)."""
    python, site = venv
    (site / "plain.pth").write_text("/nowhere\n")
    real = cache.fingerprints

    def edit_first(paths: list[str]) -> dict[str, str]:
        (site / "plain.pth").write_text("import json\n")  # a hook now
        return real(paths)

    monkeypatch.setattr(cache, "fingerprints", edit_first)
    assert answer(hooks.scan(str(python), clean_env())) == "probed"
    monkeypatch.setattr(cache, "fingerprints", real)
    assert not list(cached.glob("*.json"))
    result = hooks.scan(str(python), clean_env())
    assert answer(result) == "probed"
    assert [f.kind for f in result.findings] == ["pth-import"]


def test_the_cache_lives_only_where_there_is_a_place_for_it(tmp_path: Path) -> None:
    """``HOME=/nonexist`` made ``/nonexist/.cache/skgate/...``: a missing home is never
    created for a cache (the probes run instead); a relative ``XDG_CACHE_HOME`` is
    ignored, as the XDG base directory spec says; ``SKGATE_HOOK_CACHE=0`` turns it off."""
    gone = tmp_path / "no-such-home"
    assert cache.cache_dir({"HOME": str(gone)}) is None
    assert cache.cache_dir({"HOME": str(gone), "XDG_CACHE_HOME": "rel/cache"}) is None
    assert cache.cache_dir({"HOME": str(tmp_path)}) == tmp_path / ".cache/skgate/hook-probe"
    xdg = tmp_path / "xdg"
    assert cache.cache_dir({"HOME": str(gone), "XDG_CACHE_HOME": str(xdg)}) == (
        xdg / "skgate/hook-probe"
    )
    assert cache.cache_dir({"HOME": str(tmp_path), "SKGATE_HOOK_CACHE": "0"}) is None
    assert not gone.exists()
