"""Compile-health gate and one-factor diagnosis (C6), end to end on the simulator.

Each simulated run is kept small (2 inputs, 0.02 s per opc) so the whole file stays fast.
Pure parts (declaration grammar, control comparison, attribution) are tested without
processes; every attribution case is also run for real through the gate.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ENV, read_json, run_skgate
from skgate.api import run_attempt
from skgate.evidence.load import health_statement
from skgate.model.errors import UsageError
from skgate.model.frozen import replace
from skgate.model.outcomes import RunStatus
from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest
from skgate.regress import change, controls
from skgate.regress import health as regress
from skgate.regress.matrix import core as matrix
from skgate.regress.matrix import demo, load
from skgate.verdict import words

# End-to-end runs of seconds each: left out of the fast selection (README, Development).
pytestmark = pytest.mark.slow

MARKER = "skgate-sim: inference completed"
SIM = [sys.executable, "-m", "skgate.sim.launcher", "--inputs", "2"]
FAST = {"SKGATE_SIM_OPC_SECONDS": "0.02"}


@pytest.fixture(autouse=True)
def _no_foreign_compilers(monkeypatch: pytest.MonkeyPatch) -> None:
    # In-process runs inherit os.environ; on a shared machine other checkouts' simulated
    # compilers would make every run wait as C4 demands (see conftest.ENV).
    monkeypatch.setenv("SKGATE_COMPILER_NAMES", ENV["SKGATE_COMPILER_NAMES"])


def sim_request(tmp: Path, root: str, faults: str = "", **kw: Any) -> RunRequest:
    env = dict(FAST)
    if faults:
        env["SKGATE_SIM_FAULTS"] = faults
    env.update(kw.pop("env", {}))
    return RunRequest(
        argv=tuple(SIM),
        cwd=str(tmp),
        root=str(tmp / root),
        timeout=60.0,
        grace=2.0,
        jobs="2",
        completion_marker=MARKER,
        env=env,
        quiet=True,
        scan_interval=0.25,
        **kw,
    )


def write_matrix(tmp: Path, arms: list[dict[str, Any]], **baseline: Any) -> Path:
    base: dict[str, Any] = {
        "argv": SIM,
        "env": dict(FAST),
        "jobs": 2,
        "timeout": 60,
        "grace": 2,
        "completion_marker": MARKER,
    }
    base.update(baseline)
    path = tmp / "matrix.json"
    path.write_text(json.dumps({"baseline": base, "arm": arms}))
    return path


def make_hook(tmp: Path) -> Path:
    hook = tmp / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(demo.DEMO_HOOK)
    return hook


class Counting:
    """A run function that must never be called (bad input runs nothing)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: RunRequest) -> Verdict:
        self.calls += 1
        raise AssertionError("nothing may run on bad input")


# --------------------------------------------------------------------------- pure parts


def test_declaration_grammar() -> None:
    env = change.parse_declaration("env:FOO=a=b")
    assert env.env == (("FOO", "a=b"),)
    assert change.parse_declaration("unset:FOO").unset == ("FOO",)
    sched = change.parse_declaration("profiler-schedule=wait=1,warmup=0,active=2")
    assert sched.profiler_schedule == "wait=1,warmup=0,active=2,repeat=0,skip_first=0"
    assert change.parse_declaration("jobs=4").jobs == "4"
    for bad in ("env:FOO", "env:1X=2", "jobs=0", "jobs=auto", "profiler=1", "hook=x", ""):
        with pytest.raises(UsageError):
            change.parse_declaration(bad)


def _control(env: dict[str, str], findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "request": {"argv": ["x"], "env": env, "jobs": "2"},
        "controls": {
            "jobs": {"value": 2},
            "env": {"relevant": env},
            "hooks": {"findings": findings or []},
        },
    }


def test_compare_controls_marks_only_declared_differences(tmp_path: Path) -> None:
    ref = _control({"A": "1"})
    new = _control({"A": "1", "B": "2"})
    undeclared = controls.compare_controls(ref, new)
    assert {d.key for d in undeclared} == {"env.B", "request.env.B"}
    assert not any(d.declared for d in undeclared)
    declared = controls.compare_controls(ref, new, [change.parse_declaration("env:B=2")])
    assert all(d.declared for d in declared)
    # Which names count as foreign compilers is the gate's own setting, not the compile's.
    gate_only = _control({"A": "1", "SKGATE_COMPILER_NAMES": "x"})
    assert {d.key for d in controls.compare_controls(ref, gate_only)} == {
        "request.env.SKGATE_COMPILER_NAMES"
    }
    # A hook arm accounts for findings inside its own directory only (C6).
    hook = change.Change("startup_hook", "hook", hook_dir=str(tmp_path / "hook"))
    inside = {"fingerprint": "a" * 64, "kind": "sitecustomize", "path": f"{tmp_path}/hook/s.py"}
    outside = {"fingerprint": "b" * 64, "kind": "startup-module", "path": "/elsewhere/app.py"}
    diffs = controls.compare_controls(_control({}), _control({}, [inside, outside]), [hook])
    assert {d.key[-1]: d.declared for d in diffs} == {"a": True, "b": False}


def _run(status: str) -> matrix.RunOutcome:
    state = {"pass": "succeeded", "fail": "failed", "invalid": "interrupted"}[status]
    return matrix.RunOutcome(f"/a/{state}", State(state), RunStatus(status), state)


def _arm(name: str, factor: str) -> load.Arm:
    return load.Arm(name, factor, change.Change(factor, f"{factor} change"))


def test_attribution_hook_only_names_the_launch_path_and_what_it_does_not_prove() -> None:
    arms = [
        (_arm("hook", "startup_hook"), [_run("fail"), _run("fail")]),
        (_arm("prof", "profiler"), [_run("pass"), _run("pass")]),
        (_arm("seed", "cache_seed"), [_run("invalid"), _run("invalid")]),
    ]
    base, rows, kind, triggers, invalid, lines = matrix.attribute([_run("pass")], arms)
    assert base.outcome == "pass"
    assert kind == "startup_hook_trigger" and triggers == ("hook",)
    assert words.HOOK_TRIGGER in rows[0].proves
    assert (
        "does not prove the schedule value, the profiler feature, SK trace or the named "
        "operators defective" in rows[0].not_proven
    )
    # Interrupted runs are never evidence for or against a factor (C2.4).
    assert invalid == ("seed",) and rows[2].outcome == "invalid"
    assert "never evidence for or against cache_seed" in rows[2].not_proven
    assert any("clean retry" in line for line in lines)


def test_attribution_other_cases() -> None:
    # A failure in the jobs arm is attributed to jobs, with no operator blamed.
    _, rows, kind, triggers, _, lines = matrix.attribute(
        [_run("pass")], [(_arm("j", "jobs"), [_run("fail")]), (_arm("h", "startup_hook"), [])]
    )
    assert kind == "triggers" and triggers == ("j",)
    assert "does not prove any named operator defective" in lines[0]
    assert rows[1].outcome == "invalid"  # no run at all: invalid, not a pass
    # Inconsistent repeats are not attributable.
    _, rows, kind, triggers, _, _ = matrix.attribute(
        [_run("pass")], [(_arm("s", "cache_seed"), [_run("fail"), _run("pass")])]
    )
    assert rows[0].outcome == "mixed" and kind == "no_trigger" and not triggers
    # A failing or invalid baseline attributes nothing.
    for base in ("fail", "invalid"):
        _, rows, kind, triggers, _, _ = matrix.attribute(
            [_run(base)], [(_arm("h", "startup_hook"), [_run("fail")])]
        )
        assert kind == "baseline_not_clean" and not triggers
        assert rows[0].proves.startswith("nothing")
    # An interrupted run among valid ones is left out, never counted as a failure.
    _, rows, kind, _, invalid, _ = matrix.attribute(
        [_run("pass")], [(_arm("p", "profiler"), [_run("invalid"), _run("pass")])]
    )
    assert rows[0].outcome == "pass" and kind == "no_trigger" and not invalid


def test_unknown_run_keeps_its_real_reasons_in_the_table_report_and_result() -> None:
    # Issue 21 s5: the fixed words are a short form in front of the verdict's reasons,
    # never instead of them (the reasons are what tell a flake from a real gap).
    reasons = (
        "C2.5: op_compiler: its argv names no -p inputs directory and -o result root "
        "(argv unreadable: seen only after it ended)",
        "C3: the owned tree returned naturally",
    )
    verdict = Verdict(State.UNKNOWN, None, reasons, attempt="/a/unknown")
    run = matrix.outcome_of(verdict)
    assert run.status is RunStatus.INVALID
    assert run.detail.startswith("unknown: evidence missing, no conclusion: ")
    assert all(r in run.detail for r in reasons)
    base, rows, kind, triggers, invalid, lines = matrix.attribute(
        [_run("pass")], [(_arm("p", "profiler"), [run])]
    )
    assert invalid == ("p",) and all(r in rows[0].proves for r in reasons)
    result = matrix.MatrixResult(
        "m.json", "/r", 1, base, rows, kind, triggers, invalid, lines, path=None
    )
    text = "\n".join(matrix.render_matrix_markdown(result))
    table = [ln for ln in text.splitlines() if ln.startswith("| p |")]
    assert table and all(r in table[0] for r in reasons)
    attempt_line = next(ln for ln in text.splitlines() if ln.startswith("- p #1: "))
    assert all(r in attempt_line for r in reasons), attempt_line
    assert all(r in result.to_dict()["arms"][0]["runs"][0]["detail"] for r in reasons)
    # A verdict with no reason at all says so instead of inventing one.
    bare = matrix.outcome_of(Verdict(State.UNKNOWN, None, ()))
    assert bare.detail == "unknown: evidence missing, no conclusion (the verdict gives no reason)"


# --------------------------------------------------------------------------- bad input


def test_bad_matrices_exit_2_and_run_nothing(tmp_path: Path) -> None:
    make_hook(tmp_path)
    cases: dict[str, Any] = {
        "two factors": {"baseline": {"argv": SIM}, "arm": [{"profiler": True, "jobs": 4}]},
        "unknown factor": {"baseline": {"argv": SIM}, "arm": [{"env": {"X": "1"}}]},
        "missing baseline": {"arm": [{"profiler": True}]},
        "no arms": {"baseline": {"argv": SIM}},
        "no factor": {"baseline": {"argv": SIM}, "arm": [{"name": "x"}]},
        "unchanged": {"baseline": {"argv": SIM, "jobs": 4}, "arm": [{"jobs": 4}]},
        "no hook file": {"baseline": {"argv": SIM}, "arm": [{"startup_hook": "nowhere"}]},
        "duplicate": {"baseline": {"argv": SIM}, "arm": [{"profiler": True}, {"profiler": 2}]},
        "baseline key": {"baseline": {"argv": SIM, "cmd": "x"}, "arm": [{"jobs": 3}]},
        "argv type": {"baseline": {"argv": "python3 run.py"}, "arm": [{"jobs": 3}]},
    }
    for what, data in cases.items():
        path = tmp_path / f"{what.replace(' ', '_')}.json"
        path.write_text(json.dumps(data))
        with pytest.raises(UsageError):
            load.load_matrix(path)
    malformed = tmp_path / "bad.toml"
    malformed.write_text("[baseline\nargv = [")
    # Python 3.10 has no tomllib: a TOML matrix is then refused with that reason.
    toml_error = "not valid TOML" if sys.version_info >= (3, 11) else "TOML needs Python 3.11"
    with pytest.raises(UsageError, match=toml_error):
        load.load_matrix(malformed)
    # Through the CLI: exit 2, one line, and no evidence root was made (nothing ran).
    two = tmp_path / "two_factors.json"
    proc = run_skgate("regress", "--matrix", str(two), "--root", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "exactly one factor" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_hook_that_the_interpreter_never_loads_is_refused_before_running(tmp_path: Path) -> None:
    # An interpreter started with -I ignores PYTHONPATH: the declared hook would not be
    # the one factor changed, so the matrix is refused before any arm runs.
    make_hook(tmp_path)
    path = write_matrix(
        tmp_path,
        [{"startup_hook": "hook"}],
        argv=[sys.executable, "-I", "-m", "skgate.sim.launcher", "--inputs", "2"],
    )
    counting = Counting()
    with pytest.raises(UsageError, match="does not load it"):
        matrix.run_matrix(load.load_matrix(path), tmp_path / "out", run=counting)
    assert counting.calls == 0


# --------------------------------------------------------------------------- matrix, for real


def test_demo_diagnose_only_the_hook_arm_fails(tmp_path: Path) -> None:
    progress: list[str] = []
    lines, ok = demo.demo_diagnose(tmp_path, progress.append)
    text = "\n".join(lines)
    assert ok, text
    assert words.HOOK_TRIGGER in text and words.HOOK_NOT_PROVEN in text
    assert len(progress) == 4
    data = read_json(tmp_path / "regress-1" / "regress.json")
    assert data["schema"] == "skgate.regress/1" and data["kind"] == "matrix"
    assert data["conclusion"]["kind"] == "startup_hook_trigger"
    runs = tmp_path / "regress-1" / "runs"
    # The hook is approved in its own arm only, by fingerprint, and ran only there (C6).
    hook_ctl = read_json(runs / "startup-hook" / "attempts" / "0001" / "control.json")
    findings = hook_ctl["controls"]["hooks"]["findings"]
    assert [f["kind"] for f in findings] == ["sitecustomize"] and findings[0]["approved"]
    assert hook_ctl["request"]["approved_hooks"] == [findings[0]["fingerprint"]]
    for arm in ("baseline", "profiler", "sk-trace"):
        ctl = read_json(runs / arm / "attempts" / "0001" / "control.json")
        assert ctl["request"]["approved_hooks"] == [] and ctl["controls"]["hooks"]["findings"] == []
    log = (runs / "startup-hook" / "attempts" / "0001" / "run.log").read_text()
    assert "fail_with_hook" in log
    # Each run had a fresh working directory: no arm's outputs in another's census.
    census = read_json(runs / "profiler" / "attempts" / "0001" / "census.json")
    assert census["totals"]["error_logs"] == 0


@pytest.mark.skipif(sys.version_info < (3, 11), reason="TOML matrices need tomllib (3.11+)")
def test_matrix_cli_toml_attributes_jobs_and_seed(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text(
        f"""
[baseline]
argv = {json.dumps(SIM)}
env = {{ SKGATE_SIM_FAULTS = "fail_above_jobs=2,fail_seed=9", SKGATE_SIM_OPC_SECONDS = "0.02" }}
jobs = 2
timeout = 60
grace = 2
completion_marker = "{MARKER}"

[[arm]]
jobs = 3

[[arm]]
cache_seed = 9

[[arm]]
name = "trace"
sk_trace = {{ env = "ASCEND_PROF_SK_ON", value = "512" }}
"""
    )
    proc = run_skgate("regress", "--matrix", "m.toml", "--root", "out", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    outcome = {a["arm"]: a["outcome"] for a in data["arms"]}
    assert data["baseline"]["outcome"] == "pass"
    assert outcome == {"jobs": "fail", "cache_seed": "fail", "trace": "pass"}
    assert data["conclusion"]["kind"] == "triggers"
    assert data["conclusion"]["triggers"] == ["jobs", "cache_seed"]
    jobs_ctl = read_json(tmp_path / "out" / "runs" / "jobs" / "attempts" / "0001" / "control.json")
    assert jobs_ctl["controls"]["jobs"]["value"] == 3 and jobs_ctl["controls"]["jobs"]["varied"]
    assert read_json(tmp_path / "out" / "regress.json")["conclusion"] == data["conclusion"]


def test_interrupted_arm_is_invalid_and_needs_a_clean_retry(tmp_path: Path) -> None:
    # The arm's one change makes an opc hang: the frozen timeout fires (C2.4). That is
    # never evidence for or against the factor, and the diagnosis is incomplete (exit 1).
    path = write_matrix(
        tmp_path,
        [{"name": "hang", "cache_seed": {"env": "SKGATE_SIM_FAULTS", "value": "hang=0"}}],
        timeout=4,
        grace=0.5,
    )
    result = matrix.run_matrix(load.load_matrix(path), tmp_path / "out")
    row = result.rows[0]
    assert result.baseline.outcome == "pass"
    assert row.outcome == "invalid" and row.runs[0].state == State.INTERRUPTED.value
    assert "top-level timeout or external interruption" in row.proves
    assert result.invalid == ("hang",) and result.conclusion == "no_trigger"
    assert result.exit_code == 1
    text = "\n".join(matrix.render_matrix_markdown(result))
    assert "interrupted (invalid)" in text and "need a clean retry" in text
    # Each run's line says its state once (issue 14: not "succeeded: succeeded").
    assert "- baseline #1: succeeded (" in text
    assert not any(f"{s.value}: {s.value}" in text for s in State)
    # States and outcomes print as their words, never as Python enum names.
    assert "- hang #1: interrupted: " in text and "State." not in text and "Outcome." not in text


# --------------------------------------------------------------------------- health gate


@pytest.fixture
def reference(tmp_path: Path) -> Path:
    verdict = run_attempt(sim_request(tmp_path, "ref", "fail_seed=9"))
    assert verdict.state is State.SUCCEEDED and verdict.attempt
    return Path(verdict.attempt)


def test_health_pass_writes_result_beside_the_sealed_attempt(
    tmp_path: Path, reference: Path
) -> None:
    result = regress.health(reference, root=tmp_path / "h")
    assert result.result == "pass" and result.exit_code == 0, result.lines()
    assert all(c.ok for c in result.checks) and not result.differences
    data = read_json(tmp_path / "h" / "regress.json")
    assert data["schema"] == "skgate.regress/1" and data["profiling_accepted"] is True
    assert not (Path(result.attempt or "") / "regress.json").exists()
    assert health_statement(tmp_path / "h") == result.statement()
    assert "may be accepted" in result.statement()
    # A root that is no longer fresh is refused.
    with pytest.raises(UsageError, match="not fresh"):
        regress.health(reference, root=tmp_path / "h")


def test_health_fail_names_the_failed_checks(tmp_path: Path, reference: Path) -> None:
    result = regress.health(reference, declared=["env:SKGATE_SIM_CACHE_SEED=9"])
    assert result.result == "fail" and result.exit_code == 1
    failed = {c.name for c in result.checks if not c.ok}
    assert failed == {
        "all stages succeeded",
        "exit status 0",
        "completion marker seen",
        "verdict succeeded",
    }
    assert all(d.declared for d in result.differences)
    assert "may NOT be accepted" in result.statement()


def test_health_blocked_by_an_undeclared_difference(
    tmp_path: Path, reference: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runtime setup changed behind the user's back (an inherited variable): the run
    # itself is healthy, but it is not attributable to the declared change.
    monkeypatch.setenv("SKGATE_SIM_PROFILE", "1")
    result = regress.health(reference)
    assert result.result == "blocked" and result.exit_code == 3
    assert all(c.ok for c in result.checks)
    assert [d.key for d in result.differences if not d.declared] == ["env.SKGATE_SIM_PROFILE"]


def test_health_blocked_before_launch_by_an_unapproved_hook(
    tmp_path: Path, reference: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(make_hook(tmp_path)))
    result = regress.health(reference)
    assert result.result == "blocked" and result.state == State.NOT_STARTED.value
    assert "blocked before launch" in result.reasons[0] and "start-up hook" in result.reasons[0]


def test_health_refuses_a_reference_that_is_not_a_natural_success(tmp_path: Path) -> None:
    failed = run_attempt(sim_request(tmp_path, "bad", "fail=0"))
    assert failed.state is State.FAILED and failed.attempt
    counting = Counting()
    with pytest.raises(UsageError, match="not a natural success"):
        regress.health(Path(failed.attempt), run=counting)
    no_marker = run_attempt(replace(sim_request(tmp_path, "nomark"), completion_marker=None))
    assert no_marker.state is State.SUCCEEDED
    with pytest.raises(UsageError, match="no --completion-marker"):
        regress.health(Path(no_marker.attempt or ""), run=counting)
    with pytest.raises(UsageError, match="not a root"):
        regress.health(tmp_path / "bad", run=counting)
    assert counting.calls == 0


def test_health_cli_exit_codes(tmp_path: Path) -> None:
    env = {**FAST}
    ref = run_skgate(
        "run", "--root", "ref", "--jobs", "2", "--timeout", "60", "--quiet",
        "--completion-marker", MARKER, "--env", "SKGATE_SIM_OPC_SECONDS=0.02",
        "--env", "SKGATE_SIM_FAULTS=fail_seed=9", "--", *SIM,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert ref.returncode == 0, ref.stderr
    attempt = "ref/attempts/0001"
    ok = run_skgate("regress", "--health", "--reference", attempt, cwd=tmp_path, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("HEALTH PASS") and "may be accepted" in ok.stdout
    bad = run_skgate(
        "regress", "--health", "--reference", attempt, "--declare", "jobs=2",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert bad.returncode == 2 and "already in the reference" in bad.stderr
    usage = run_skgate("regress", "--health", cwd=tmp_path, env=env)
    assert usage.returncode == 2 and "--reference" in usage.stderr
