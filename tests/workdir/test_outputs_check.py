"""check-outputs (outputs.py): C8 only after natural return, "in progress" before it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from evidence_fixtures import make_attempt
from skgate.cli import specs
from skgate.model.errors import UsageError
from skgate.model.outcomes import PackageMode
from skgate.model.records import Cause, State, Verdict
from skgate.workdir.outputs_check import check_outputs

FAILED = Verdict(State.FAILED, None, ("x",), natural_return=True, exit_status=1, attempt="0001")
LIVE = Verdict(State.IN_PROGRESS, None, ("x",), attempt="0002")


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


@pytest.fixture
def outdir(tmp_path: Path) -> Path:
    d = tmp_path / "static_kernel_compile_outputs"
    (d / "ts1_pid1_outputs" / "x_compile_log").mkdir(parents=True)
    return d


def test_error_log_without_run_is_failure(outdir: Path) -> None:
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "HcPre_compile_error.log")
    for verdict in (None, FAILED):
        r = check_outputs(outdir, PackageMode.OPTIONAL, verdict)
        assert r.status == "failure"
        assert r.exit_code == 1
        msg = next(m for m in r.messages if m.startswith("failure"))
        # Says which file and which rule.
        assert "ts1_pid1_outputs/x_compile_log/HcPre_compile_error.log" in msg
        assert "C8" in msg
    assert any("no --attempt" in m for m in check_outputs(outdir).messages)


def test_without_attempt_failure_never_claims_natural_return(outdir: Path) -> None:
    # Why (audit finding 13): with no --attempt, nothing shows the compiler returned, yet
    # the failure line said "after natural return". Upstream's verdict (failure, exit 1)
    # stays; the words say it rests on file names alone and how to check an attempt.
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "HcPre_compile_error.log")
    for mode in PackageMode:
        r = check_outputs(outdir, mode)
        assert (r.status, r.exit_code) == ("failure", 1)
        text = "\n".join(r.messages)
        assert "after natural return" not in text
        failures = [m for m in r.messages if m.startswith("failure")]
        assert failures
        for m in failures:
            assert m.startswith(
                "failure by file names alone (no --attempt given: natural return not "
                "verified, C1/C8)"
            )
        hint = r.messages[-1]
        assert hint.startswith(f"to check against an attempt: skgate check-outputs {outdir}")
        assert "--attempt <root>/attempts/NNNN" in hint
        assert ("--package required" in hint) is (mode is PackageMode.REQUIRED)
    # With an attempt whose verdict shows natural return, the words may say so.
    r = check_outputs(outdir, PackageMode.OPTIONAL, FAILED)
    msg = next(m for m in r.messages if m.startswith("failure"))
    assert msg.startswith("failure after natural return (attempt 0001's verdict shows it)")
    assert not any(m.startswith("to check against an attempt") for m in r.messages)


def test_run_present_is_fine_even_with_error_files(outdir: Path) -> None:
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "a_compile_error.log")
    touch(outdir / "ts1_pid1_outputs" / "static_kernel_1_1.run")
    r = check_outputs(outdir, PackageMode.REQUIRED)
    assert r.status == "ok"
    assert r.exit_code == 0
    assert any("provisional leftovers" in m for m in r.messages)


def test_required_and_optional_without_run(outdir: Path) -> None:
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "a_compile_succ.log")
    assert check_outputs(outdir, PackageMode.OPTIONAL).exit_code == 0
    r = check_outputs(outdir, PackageMode.REQUIRED)
    assert r.exit_code == 1
    assert any("--package required (C8)" in m for m in r.messages)


def test_live_attempt_is_in_progress_never_failure(outdir: Path) -> None:
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "a_compile_error.log")
    r = check_outputs(outdir, PackageMode.REQUIRED, LIVE)
    assert r.status == "in_progress"
    assert r.exit_code == 6
    assert "in progress" in r.messages[0]
    assert "1 provisional error-named file(s)" in r.messages[0]
    interrupted = Verdict(State.INTERRUPTED, Cause.EXTERNAL, ("x",), attempt="0003")
    r = check_outputs(outdir, PackageMode.REQUIRED, interrupted)
    assert r.exit_code == 4
    assert "clean retry" in r.messages[0]


def test_symlinked_run_does_not_count(outdir: Path, tmp_path: Path) -> None:
    touch(tmp_path / "elsewhere" / "p.run")
    (outdir / "p.run").symlink_to(tmp_path / "elsewhere" / "p.run")
    assert check_outputs(outdir, PackageMode.REQUIRED).exit_code == 1


def test_missing_dir_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        check_outputs(tmp_path / "nope")


def test_cli_check_outputs(
    outdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "a_compile_error.log")
    parser = argparse.ArgumentParser()
    specs.SPECS["check-outputs"](parser.add_subparsers())
    args = parser.parse_args(["check-outputs", str(outdir), "--package", "required"])
    assert args.handler(args) == 1
    out = capsys.readouterr().out
    assert f"{outdir}: failure by file names alone (no --attempt given" in out
    assert "error log(s) ts1_pid1_outputs/x_compile_log/a_compile_error.log" in out
    assert "after natural return" not in out
    assert f"{outdir}: to check against an attempt: skgate check-outputs {outdir}" in out
    # An interrupted attempt blocks judging (exit 4), whatever the files say.
    a = make_attempt(tmp_path / "runs", 1, State.INTERRUPTED)
    args = parser.parse_args(["check-outputs", str(outdir), "--attempt", str(a)])
    assert args.handler(args) == 4
    assert "interrupted" in capsys.readouterr().out


def test_unreadable_directory_blocks_a_missing_package_conclusion(
    outdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Why (quality item 2): check-outputs had its own walker that silently skipped
    # directories it could not read, so it said "failure: no .run package" where the run
    # path (classify.census_inconclusive) says unknown: the unread directory may hold it.
    import os

    locked = outdir / "ts1_pid1_outputs" / "locked"
    locked.mkdir()
    touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / "a_compile_error.log")
    assert check_outputs(outdir, PackageMode.OPTIONAL, FAILED).exit_code == 1  # readable
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        # Root reads any directory, so permissions cannot make one unreadable here.
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    for mode in PackageMode:
        for verdict in (None, FAILED):
            r = check_outputs(outdir, mode, verdict)
            assert (r.status, r.exit_code) == ("unknown", 5), (mode, verdict)
            assert not any(m.startswith("failure") for m in r.messages)
            msg = next(m for m in r.messages if m.startswith("unknown"))
            assert "cannot conclude: 1 unreadable director(ies) (ts1_pid1_outputs/locked)" in msg
            assert "ts1_pid1_outputs/x_compile_log/a_compile_error.log" in msg
    # A required package with no error log is not concluded missing either.
    (outdir / "ts1_pid1_outputs" / "x_compile_log" / "a_compile_error.log").unlink()
    r = check_outputs(outdir, PackageMode.REQUIRED)
    assert (r.status, r.exit_code) == ("unknown", 5)
    # Optional and nothing to fail on: still ok, with the incomplete walk noted.
    r = check_outputs(outdir, PackageMode.OPTIONAL)
    assert (r.status, r.exit_code) == ("ok", 0)
    assert any("1 director(ies) could not be read" in m for m in r.messages)
    # A visible .run decides it whatever the unread directory holds.
    touch(outdir / "ts1_pid1_outputs" / "static_kernel_1_1.run")
    assert check_outputs(outdir, PackageMode.REQUIRED).exit_code == 0
    (outdir / "ts1_pid1_outputs" / "static_kernel_1_1.run").unlink()
    # The CLI exits 5 (unknown) and says why in one line per message.
    parser = argparse.ArgumentParser()
    specs.SPECS["check-outputs"](parser.add_subparsers())
    args = parser.parse_args(["check-outputs", str(outdir), "--package", "required"])
    assert args.handler(args) == 5
    assert f"{outdir}: unknown: cannot conclude: 1 unreadable" in capsys.readouterr().out


def test_messages_list_names_in_a_stable_order(outdir: Path) -> None:
    for i in (3, 1, 2):
        touch(outdir / "ts1_pid1_outputs" / "x_compile_log" / f"k{i}_compile_error.log")
    r = check_outputs(outdir, PackageMode.OPTIONAL)
    msg = next(m for m in r.messages if m.startswith("failure"))
    logs = "ts1_pid1_outputs/x_compile_log/"
    assert f"{logs}k1_compile_error.log, {logs}k2_compile_error.log, {logs}k3" in msg


def test_a_failed_install_of_the_attempt_fails_the_required_check(outdir: Path) -> None:
    """C8 (issue 27): a .run was built, but the attempt's install of it failed."""
    touch(outdir / "ts1_pid1_outputs" / "static_kernel_1_1.run")
    not_installed = Verdict(
        State.SUCCEEDED,
        None,
        ("x",),
        natural_return=True,
        exit_status=0,
        attempt="0004",
        installed=False,
        global_uninstall=("/a/opp/static_kernel/ai_core/uninstall.sh",),
    )
    words = "package install failed: inference ran without these static kernels"
    r = check_outputs(outdir, PackageMode.REQUIRED, not_installed)
    assert (r.status, r.exit_code) == ("failure", 1)
    assert any(m.startswith("failure: attempt 0004's " + words) for m in r.messages), r.messages
    assert any("other experiments' too" in m for m in r.messages), r.messages
    r = check_outputs(outdir, PackageMode.OPTIONAL, not_installed)
    assert (r.status, r.exit_code) == ("ok", 0)
    assert any(m.startswith("warning: attempt 0004's " + words) for m in r.messages)
    good = Verdict(
        State.SUCCEEDED, None, ("x",), natural_return=True, attempt="0005", installed=True
    )
    r = check_outputs(outdir, PackageMode.REQUIRED, good)
    assert (r.status, r.exit_code) == ("ok", 0)
    assert not any("install" in m for m in r.messages)
