"""Odd input, tried as a new user would (issue 12): exit code, one line, root unchanged.

Every input error is exit 2 before anything is recorded; a missing command is exit 3 and
recorded as not started; names that are not UTF-8 are carried losslessly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ENV, SKGATE, run_skgate


def tree(root: Path) -> list[str]:
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    err = res.stderr
    assert err.count("\n") == 1 and err.startswith("skgate: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--jobs", "99999999999999999999"], "above the limit"),
        (["--profiler-schedule", "garbage"], "not key=value"),
        (["--approve-hook", "xyz"], "sha256 fingerprint"),
        (["--hook-baseline", "/nonexistent"], "does not exist"),
        (["--python", "AFILE"], "--python"),
        (["--compiler-name", ""], "would match every process"),
        (["--compiler-name", " opc"], "not a process name"),
        (["--cwd", "/nonexistent"], "does not exist"),
        (["--cwd", "AFILE"], "is not a directory"),
        (["--summary-pattern", "("], "not a valid regular expression"),
        (["--completion-marker", "["], "not a valid regular expression"),
        (["--unset-env", "A=b"], "is not valid"),
    ],
)
@pytest.mark.parametrize("command", ["run", "preflight"])
def test_input_errors_exit_2_and_record_nothing(
    tmp_path: Path, args: list[str], needle: str, command: str
) -> None:
    """``preflight`` refuses what ``run`` refuses: it said "a run would start" (exit 0)
    for a --cwd that does not exist or a pattern that does not compile."""
    afile = tmp_path / "afile"
    afile.write_text("not a program\n")
    args = [str(afile) if a == "AFILE" else a for a in args]
    root = tmp_path / "r"
    res = run_skgate(command, "--root", str(root), *args, "--", "true", cwd=tmp_path)
    assert res.returncode == 2, res
    assert needle in one_line_error(res)
    assert tree(root) == []  # nothing allocated, nothing recorded


@pytest.mark.parametrize("command", ["", "   "])
def test_an_empty_command_name_is_bad_input(tmp_path: Path, command: str) -> None:
    res = run_skgate("run", "--root", "r", "--", command, cwd=tmp_path)
    assert res.returncode == 2
    assert "is empty" in one_line_error(res)
    assert tree(tmp_path / "r") == []


def test_a_missing_command_is_recorded_as_not_started(tmp_path: Path) -> None:
    res = run_skgate("run", "--root", "r", "--", "no-such-program-xyz", cwd=tmp_path)
    assert res.returncode == 3, res
    verdict = json.loads((tmp_path / "r/attempts/0001/verdict.json").read_text())
    assert verdict["state"] == "not_started"


def test_non_utf8_names_are_carried_losslessly(tmp_path: Path) -> None:
    """GBK bytes in --root, --env and argv: no internal error, the workload gets the exact
    bytes, the evidence stays valid JSON, and status/verify/report read it."""
    gbk = b"\xb2\xe2\xca\xd4"  # "测试" in GBK
    root = os.fsencode(tmp_path) + b"/root-" + gbk
    script = tmp_path / "show.py"
    script.write_text(
        "import os, sys\n"
        "sys.stdout.buffer.write(os.fsencode(sys.argv[1]) + b'|' + os.environb[b'X'] + b'\\n')\n"
        "print('[summary] stage=a inputs=1 succeeded=1 failed=0')\n"
    )
    argv = [*map(os.fsencode, SKGATE), b"run", b"--root", root, b"--quiet", b"--env", b"X=" + gbk]
    argv += [b"--", os.fsencode(sys.executable), os.fsencode(script), b"arg-" + gbk]
    res = subprocess.run(argv, cwd=tmp_path, env=ENV, capture_output=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert b"internal error" not in res.stderr
    attempt = Path(os.fsdecode(root)) / "attempts" / "0001"
    assert (attempt / "run.log").read_bytes().startswith(b"arg-" + gbk + b"|" + gbk + b"\n")
    for name in ("control.json", "verdict.json", "seal.json", "census.json"):
        json.loads((attempt / name).read_text(encoding="utf-8"))  # valid UTF-8 JSON
    control = json.loads((attempt / "control.json").read_text(encoding="utf-8"))
    assert os.fsencode(control["request"]["argv"][-1]) == b"arg-" + gbk  # lossless
    for cmd in (["status"], ["verify"], ["report"]):
        got = subprocess.run(
            [*map(os.fsencode, SKGATE), *map(os.fsencode, cmd), root],
            cwd=tmp_path,
            env=ENV,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert got.returncode == 0, (cmd, got.stderr)
        assert b"internal error" not in got.stderr


def test_api_run_refuses_a_command_string_and_unknown_options(tmp_path: Path) -> None:
    from skgate.api import run
    from skgate.model.errors import UsageError

    with pytest.raises(UsageError, match="list of arguments, not one string"):
        run("bash run.sh", root=tmp_path / "r")
    with pytest.raises(UsageError, match="unknown option"):
        run(["true"], root=tmp_path / "r", bogus=1)
    assert tree(tmp_path / "r") == []


@pytest.mark.slow
def test_file_where_a_directory_belongs_and_back(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    adir = tmp_path / "adir"
    adir.mkdir()
    cases = [
        (["check-outputs", str(afile)], 2, "is a file, not a directory"),
        (["cleanup", "--workdir", str(afile)], 2, "is a file, not a directory"),
        (["uninstall", "--from-log", str(adir), "--dry-run"], 2, "is a directory, not a log"),
        (["preflight", "--root", str(afile), "--", "true"], 2, "is not a directory"),
        (["run", "--root", str(afile), "--", "true"], 2, "is not a directory"),
        (["start", "--root", str(afile), "--", "true"], 2, "is not a directory"),
        (["retry", str(afile)], 2, "not an attempt directory"),
    ]
    for args, code, needle in cases:
        before = tree(tmp_path)
        res = run_skgate(*args, cwd=tmp_path)
        assert res.returncode == code, (args, res)
        assert needle in one_line_error(res), args
        assert tree(tmp_path) == before, args


def _named(tmp_path: Path, kind: str) -> Path:
    """A path a person names on the command line, as ``kind``: a FIFO (nobody writes to
    it), a directory, or a link to a FIFO."""
    path = tmp_path / f"named-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        fifo = tmp_path / "the-fifo"
        os.mkfifo(fifo)
        path.symlink_to(fifo)
    return path


@pytest.mark.parametrize("kind", ["fifo", "directory", "link-to-fifo"])
@pytest.mark.parametrize(
    "command",
    [
        ("run", "--root", "R", "--hook-baseline", "NAMED", "--", "true"),
        ("preflight", "--root", "R", "--hook-baseline", "NAMED", "--", "true"),
        ("lint-report", "NAMED"),
        ("regress", "--matrix", "NAMED", "--root", "R"),
    ],
    ids=["run", "preflight", "lint-report", "regress"],
)
def test_a_named_input_that_is_no_regular_file_is_refused_at_once(
    tmp_path: Path, kind: str, command: tuple[str, ...]
) -> None:
    """``--hook-baseline FIFO`` waited for a writer for ever (deaf to SIGTERM while the
    run's signals were held), and so did ``lint-report`` and ``regress --matrix``: a file
    a person names is read as a regular file only (through a link as given), refused on
    one line, exit 2, nothing recorded."""
    named, root = _named(tmp_path, kind), tmp_path / "R"
    argv = [str(named) if a == "NAMED" else str(root) if a == "R" else a for a in command]
    res = run_skgate(*argv, cwd=tmp_path, timeout=30)
    assert res.returncode == 2, res
    err = one_line_error(res)
    what = "a directory" if kind == "directory" else "a FIFO"
    assert f"{named}: is {what}, not a regular file; " in err, err
    assert "Errno" not in err, err
    assert tree(root) == []


@pytest.mark.parametrize("where", ["--python", "command"])
def test_an_executable_fifo_as_the_program_is_never_waited_on(tmp_path: Path, where: str) -> None:
    """A FIFO with execute bits named as the interpreter or the command: its first bytes
    (``#!`` or ELF) are never waited for. ``--python`` refuses it on one line; as the
    command it is recorded as not started (exec cannot run it), never a hang."""
    fifo = tmp_path / "prog"
    os.mkfifo(fifo)
    fifo.chmod(0o755)
    root = tmp_path / "R"
    if where == "--python":
        res = run_skgate("run", "--root", str(root), "--python", str(fifo), "--", "true",
                         cwd=tmp_path, timeout=30)  # fmt: skip
        assert res.returncode == 2 and "--python" in one_line_error(res), res
        assert tree(root) == []
    else:
        res = run_skgate("run", "--root", str(root), "--", str(fifo), cwd=tmp_path, timeout=30)
        assert res.returncode == 3, res
        assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res


@pytest.mark.parametrize(
    "command",
    [
        ("status",),
        ("classify",),
        ("report",),
        ("verify",),
        ("recover",),
        ("wait", "--max", "1"),
        ("stop",),
        ("status", "--json"),
    ],
    ids=" ".join,
)
def test_an_empty_path_is_refused_not_read_as_the_current_directory(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """``skgate status ""`` (an unset shell variable) read ``.`` as the target; in a
    directory holding a root's attempts it answered for them."""
    res = run_skgate(*command, "", cwd=tmp_path)
    assert res.returncode == 2, res
    assert "the path given is empty" in one_line_error(res)


def test_a_file_name_with_a_line_break_stays_on_its_line(tmp_path: Path) -> None:
    """``check-outputs`` printed a package named ``a<newline>b.run`` across two lines; each
    message is one line, the break written as ``\\n``."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "a\nb.run").write_bytes(b"")
    res = run_skgate("check-outputs", str(out), cwd=tmp_path)
    assert res.returncode == 0, res
    assert all(line.startswith(f"{out}: ") for line in res.stdout.splitlines()), res.stdout
    assert "a\\nb.run" in res.stdout, res.stdout


def test_classify_of_an_attempt_that_never_launched_answers_as_status(tmp_path: Path) -> None:
    """An attempt whose runner died in preflight (a journal, no control.json): classify
    said "control.json: missing" (exit 2) where status says unknown; nothing was
    launched, so there is nothing to recompute and both give the same answer."""
    done = run_skgate("run", "--root", "r", "--verdict-from", "exit-status", "--", "true",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done
    created = (tmp_path / "r/attempts/0001/events.jsonl").read_text().splitlines()[0]
    attempt = tmp_path / "p/attempts/0001"
    attempt.mkdir(parents=True)
    (attempt / "events.jsonl").write_text(created + "\n")  # its runner is gone
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    classify = run_skgate("classify", str(attempt), cwd=tmp_path)
    assert status.returncode == classify.returncode == 5, (status, classify)
    assert classify.stdout.splitlines()[0] == status.stdout.splitlines()[0], classify
