"""What a new user sees with plain commands (issue 23): a declared exit status, words that
do not contradict themselves, a foreground run that says what it waits for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import gated_run, run_skgate
from skgate.model.phrases import count
from skgate.model.records import State
from skgate.model.running import ProcessRecord
from skgate.preflight.foreign import blocker_text, process_label
from skgate.verdict.words import TEXT
from skgate.verdict.words_next import NEXT_STEP, NOTHING_TO_DECIDE_NEXT


@pytest.mark.slow
def test_declared_exit_status_decides_a_plain_command_and_is_frozen(tmp_path: Path) -> None:
    ok = gated_run(tmp_path, ["true"], "--verdict-from", "exit-status", root="a")
    assert ok.returncode == 0, ok.output
    assert "SUCCEEDED" in ok.stdout and "--verdict-from exit-status" in ok.stdout
    assert "not a compile result" in ok.stdout
    control = json.loads((ok.attempt / "control.json").read_text())
    assert control["request"]["verdict_from"] == "exit-status"
    verdict = ok.verdict()
    assert verdict["summary_source"] == "exit status"
    bad = gated_run(tmp_path, ["bash", "-c", "exit 3"], "--verdict-from", "exit-status", root="b")
    assert bad.returncode == 1
    assert "FAILED" in bad.stdout and "compiler failures" not in bad.stdout
    # The default is unchanged: exit 0 alone proves nothing (C2).
    assert gated_run(tmp_path, ["true"], root="c").returncode == 5
    zh = run_skgate("report", "--lang", "zh", "a", cwd=tmp_path)
    assert "按声明的退出码 0 判定" in zh.stdout
    assert "--verdict-from exit-status）（原文）" not in zh.stdout  # the reason is translated


def test_a_failing_command_with_no_compiler_never_says_compiler_failures(tmp_path: Path) -> None:
    res = gated_run(tmp_path, ["bash", "-c", "exit 2"])
    assert res.returncode == 1
    head = res.stdout.splitlines()[0]
    assert head.startswith("FAILED:") and "no compiler was observed" in head
    assert "compiler failures" not in head
    for lang, phrase in (("en", "compiler failures"), ("zh", "最终编译失败")):
        text = run_skgate("report", "--lang", lang, "r", cwd=tmp_path).stdout
        verdict_line = next(x for x in text.splitlines() if x.startswith("**"))
        assert phrase not in verdict_line, (lang, verdict_line)


def test_plurals_read_as_english() -> None:
    assert [count(1, "attempt"), count(2, "attempt")] == ["1 attempt", "2 attempts"]
    assert count(2, "entry") == "2 entries" and count(1, "owned process") == "1 owned process"
    assert count(3, "directory") == "3 directories"


def test_root_report_counts_read_as_english(tmp_path: Path) -> None:
    assert gated_run(tmp_path, ["bash", "-c", "exit 2"]).returncode == 1
    text = run_skgate("report", "r", cwd=tmp_path).stdout
    line = next(x for x in text.splitlines() if x.startswith("1 attempt"))
    assert line.startswith("1 attempt — 1 failed:"), line
    assert "(s)" not in text and "(es)" not in text and "(ies)" not in text
    assert "**verdict: " in text  # lowercase like the labels beside it


def test_the_chinese_next_step_is_said_once() -> None:
    step = NEXT_STEP[State.FAILED]["zh"]
    heading = TEXT["read_logs"]["zh"]
    assert "最终编译证据" in step and "最终编译证据" not in heading
    assert "接下来" not in heading and "最终编译证据" not in TEXT["read_logs"]["en"]


@pytest.mark.slow
def test_foreground_run_says_what_it_waits_for_after_the_leader(tmp_path: Path) -> None:
    res = gated_run(tmp_path, ["bash", "-c", "sleep 1.5 & exit 0"], quiet=False)
    first = next(x for x in res.stderr.splitlines() if "leader exited" in x)
    assert first.startswith("skgate: leader exited with status 0; waiting for 1 owned process: ")
    assert "sleep[" in first and "never signalled before the deadline at " in first


def test_a_foreign_compiler_is_named_as_it_matched() -> None:
    rec = ProcessRecord(
        pid=22867,
        start_ticks=1,
        ppid=1,
        pgid=22867,
        sid=22867,
        argv=("opc", "30"),
        name="sleep",
        first_seen=0.0,
        last_seen=0.0,
    )
    assert process_label(rec) == "opc[22867] (comm sleep)"
    assert blocker_text(rec).startswith("opc[22867] (comm sleep, age ")


@pytest.mark.parametrize("command", ["run", "start", "preflight"])
def test_a_file_as_root_is_bad_input_for_every_command(tmp_path: Path, command: str) -> None:
    (tmp_path / "afile").write_text("x\n")
    res = run_skgate(command, "--root", "afile", "--", "true", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "not a directory" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.slow
def test_a_command_with_no_summary_and_no_compiler_is_told_the_way_to_an_answer(
    tmp_path: Path,
) -> None:
    """`run -- true` is UNKNOWN (C2.5), and its next step names --verdict-from exit-status;
    it never suggests a retry, which would read the same (issue 30)."""
    res = gated_run(tmp_path, ["true"], quiet=False)
    assert res.returncode == 5
    step = next(x for x in res.stdout.splitlines() if x.startswith("  next step: "))
    assert "--verdict-from exit-status" in step and "skgate retry" not in step
    for lang in ("en", "zh"):
        text = run_skgate("report", "--lang", lang, "r", cwd=tmp_path).stdout
        assert "--verdict-from exit-status" in text and "skgate retry" not in text, lang
        assert "listed below" not in text and "下面列出" not in text, lang


def test_no_next_step_points_below_or_suggests_a_pointless_retry() -> None:
    # The missing evidence is listed before the next step, in every render.
    for state, words in NEXT_STEP.items():
        assert "below" not in words["en"] and "下面" not in words["zh"], state
    assert "skgate retry" not in NOTHING_TO_DECIDE_NEXT["en"]


@pytest.mark.slow
def test_the_hook_refusal_names_the_interpreter_scanned_and_the_ways_out(tmp_path: Path) -> None:
    """A command that is not Python (make) refused for a hook in the python3 first on PATH:
    the one line says which interpreter was scanned, why, and --approve-hook / --python."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python3"
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "zz_hook.pth").write_text("import os\n")
    env = {"PATH": os.pathsep.join([str(venv / "bin"), os.environ["PATH"]])}
    res = gated_run(tmp_path, ["true"], "--verdict-from", "exit-status", env=env, quiet=False)
    assert res.returncode == 3
    line = next(x for x in res.stdout.splitlines() if "unapproved start-up hook" in x)
    assert f"scanned {python}, the python3 first on the workload PATH" in line, line
    assert "the command is not Python" in line and "--approve-hook " in line
    assert "name it with --python PATH" in line
