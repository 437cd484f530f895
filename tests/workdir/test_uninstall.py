"""uninstall --from-log: only exact package scripts run; everything else is refused.

A canary file proves that nothing but the expected script ran: every hostile script in
these tests would create it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from skgate.workdir.uninstall import core as uninstall
from skgate.workdir.uninstall import logpaths, validate
from skgate.workdir.uninstall.validate import Refused


@dataclass
class Install:
    home: Path
    outputs: Path
    marks: Path
    canary: Path
    ai_core: Path

    def script(self, package: str) -> Path:
        return self.ai_core / package / "uninstall.sh"

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def write_script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


@pytest.fixture
def inst(tmp_path: Path) -> Install:
    home = tmp_path / "Ascend"
    ai_core = home / "opp" / "static_kernel" / "ai_core"
    outputs = tmp_path / "work" / "static_kernel_compile_outputs"
    root = outputs / "ts20260101000000000000_pid42_outputs"
    root.mkdir(parents=True)
    marks = tmp_path / "marks"
    marks.mkdir()
    canary = tmp_path / "CANARY"
    i = Install(home, outputs, marks, canary, ai_core)
    for pkg in ("static_kernel_A_1", "static_kernel_B_2"):
        (root / f"{pkg}.run").write_bytes(b"run")
        write_script(i.script(pkg), f"echo removed {pkg}; touch '{marks}/{pkg}'")
    write_script(ai_core / "uninstall.sh", f"touch '{canary}'")
    return i


def line(path: str) -> str:
    return (
        "Warning: If the process exits abnormally, you must manually uninstall the static "
        f"kernel package by executing: {path}\n"
    )


def test_valid_script_runs_and_is_recorded(inst: Install, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    good = str(inst.script("static_kernel_A_1"))
    log.write_text("noise\n" + line(good) + line(good), encoding="utf-8")
    res = uninstall.uninstall_from_log(log, inst.outputs, str(inst.home), env=inst.env())
    assert [c.action for c in res.candidates] == ["run"]  # duplicates examined once
    c = res.candidates[0]
    assert c.exit_status == 0
    assert c.output == "removed static_kernel_A_1\n"
    assert c.package == "static_kernel_A_1"
    assert (inst.marks / "static_kernel_A_1").exists()
    assert res.ok
    assert res.to_dict()["schema"] == "skgate.uninstall/2"


def test_dry_run_runs_nothing(inst: Install, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(line(str(inst.script("static_kernel_A_1"))), encoding="utf-8")
    res = uninstall.uninstall_from_log(log, inst.outputs, str(inst.home), dry_run=True)
    assert [c.action for c in res.candidates] == ["would-run"]
    assert not any(inst.marks.iterdir())


def test_failing_script_is_recorded_and_not_ok(inst: Install, tmp_path: Path) -> None:
    write_script(inst.script("static_kernel_B_2"), "echo boom >&2; exit 3")
    log = tmp_path / "run.log"
    log.write_text(line(str(inst.script("static_kernel_B_2"))), encoding="utf-8")
    res = uninstall.uninstall_from_log(log, inst.outputs, str(inst.home), env=inst.env())
    c = res.candidates[0]
    assert (c.action, c.exit_status, c.output) == ("run", 3, "boom\n")
    assert not res.ok


def test_hostile_lines_are_all_refused_with_reasons(inst: Install, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_script(outside / "uninstall.sh", f"touch '{inst.canary}'")
    run_root = next(inst.outputs.iterdir())
    # symlinked uninstall.sh inside a real package directory
    (run_root / "static_kernel_L_3.run").write_bytes(b"run")
    (inst.ai_core / "static_kernel_L_3").mkdir()
    os.symlink(outside / "uninstall.sh", inst.script("static_kernel_L_3"))
    # symlinked package directory
    (run_root / "static_kernel_D_4.run").write_bytes(b"run")
    os.symlink(outside, inst.ai_core / "static_kernel_D_4")
    # installed, but no .run produced (and one whose .run is only a symlink)
    write_script(inst.script("static_kernel_N_5"), f"touch '{inst.canary}'")
    write_script(inst.script("static_kernel_S_6"), f"touch '{inst.canary}'")
    os.symlink(outside / "uninstall.sh", run_root / "static_kernel_S_6.run")
    # a space in the package directory name
    write_script(inst.ai_core / "static kernel" / "uninstall.sh", f"touch '{inst.canary}'")

    a = inst.ai_core
    lines = {
        "full": line(str(a / "uninstall.sh")),
        "link": line(str(inst.script("static_kernel_L_3"))),
        "dirlink": line(str(inst.script("static_kernel_D_4"))),
        "dotdot": line(f"{a}/static_kernel_A_1/../static_kernel_A_1/uninstall.sh"),
        "outside": line(str(outside / "uninstall.sh")),
        "norun": line(str(inst.script("static_kernel_N_5"))),
        "linkrun": line(str(inst.script("static_kernel_S_6"))),
        "space": line(f"{a}/static kernel/uninstall.sh"),
        "ansi": line(f"\x1b[33m{inst.script('static_kernel_A_1')}\x1b[0m"),
        "newline": f"bare {a}/static_kernel_A_1/\nuninstall.sh tail\n",
        "cr": line(f"{inst.script('static_kernel_A_1')}\r\rx"),
    }
    log = tmp_path / "run.log"
    log.write_text("".join(lines.values()), encoding="utf-8")
    res = uninstall.uninstall_from_log(log, inst.outputs, str(inst.home), env=inst.env())
    by_path = {c.path: c for c in res.candidates}
    assert all(c.action == "refused" for c in res.candidates), [
        (c.path, c.action) for c in res.candidates
    ]
    reasons = {c.reason for c in res.candidates}
    assert "the full-uninstall script ai_core/uninstall.sh is never run" in reasons
    assert by_path[str(inst.script("static_kernel_L_3"))].reason.startswith(
        "cannot open opp/static_kernel/ai_core/static_kernel_L_3/uninstall.sh without following"
    )
    assert by_path[str(inst.script("static_kernel_D_4"))].reason.startswith(
        "symbolic link at opp/static_kernel/ai_core/static_kernel_D_4"
    )
    assert "the path contains '..', '.' or an empty component" in reasons
    assert by_path[str(outside / "uninstall.sh")].reason.startswith("outside the install root")
    assert "no static_kernel_N_5.run produced under the outputs directory" in reasons
    assert "no static_kernel_S_6.run produced under the outputs directory" in reasons
    assert (
        "the path contains whitespace or control characters (ANSI escapes?)" in reasons
    )  # space, ANSI and CR
    assert "uninstall.sh" in by_path
    assert by_path["uninstall.sh"].reason == "not an absolute path"
    assert not inst.canary.exists()
    assert not any(inst.marks.iterdir())
    assert not res.ok


def test_missing_ascend_home_refuses_everything(inst: Install, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(line(str(inst.script("static_kernel_A_1"))), encoding="utf-8")
    res = uninstall.uninstall_from_log(log, inst.outputs, None)
    assert res.candidates[0].action == "refused"
    assert "ASCEND_HOME_PATH is not set" in res.candidates[0].reason
    assert not any(inst.marks.iterdir())


def test_symlinked_ascend_home_is_resolved_once(inst: Install, tmp_path: Path) -> None:
    # Real installs point ASCEND_HOME_PATH at a ``latest`` link: the operator's setting
    # is trusted, links *below* it are not.
    latest = tmp_path / "latest"
    os.symlink(inst.home, latest)
    log = tmp_path / "run.log"
    path = f"{latest}/opp/static_kernel/ai_core/static_kernel_A_1/uninstall.sh"
    log.write_text(line(path), encoding="utf-8")
    res = uninstall.uninstall_from_log(log, inst.outputs, str(latest), env=inst.env())
    assert res.candidates[0].action == "run"
    assert res.candidates[0].exit_status == 0


def test_script_swapped_after_check_is_refused(inst: Install, tmp_path: Path) -> None:
    evil = tmp_path / "evil.sh"
    write_script(evil, f"touch '{inst.canary}'")
    target = inst.script("static_kernel_A_1")
    checked = validate.check_path(str(target), str(inst.home), {"static_kernel_A_1"})
    try:
        os.replace(evil, target)
        ran, status, _, why = uninstall.run_checked(checked, env=inst.env())
    finally:
        checked.close()
    assert (ran, status) == (False, None)
    assert why == "the script was swapped between check and run"
    assert not inst.canary.exists()


def test_swap_in_the_last_moment_still_runs_the_checked_file(inst: Install, tmp_path: Path) -> None:
    # Why: the shell reads the script through the held descriptor, so even a swap after
    # the final re-check cannot change what runs.
    evil = tmp_path / "evil.sh"
    write_script(evil, f"touch '{inst.canary}'")
    target = inst.script("static_kernel_A_1")
    log = tmp_path / "run.log"
    log.write_text(line(str(target)), encoding="utf-8")
    res = uninstall.uninstall_from_log(
        log,
        inst.outputs,
        str(inst.home),
        env=inst.env(),
        before_exec=lambda: os.replace(evil, target),
    )
    assert res.candidates[0].exit_status == 0
    assert (inst.marks / "static_kernel_A_1").exists()
    assert not inst.canary.exists()


def test_check_path_refusal_messages(inst: Install) -> None:
    pk = {"static_kernel_A_1"}
    with pytest.raises(Refused, match="not <ASCEND_HOME_PATH>"):
        validate.check_path(f"{inst.home}/opp/uninstall.sh", str(inst.home), pk)
    with pytest.raises(Refused, match="not an absolute path"):
        validate.check_path(str(inst.home), "relative/home", pk)


def test_extract_paths() -> None:
    assert logpaths.extract_paths(b"by executing: /a b/uninstall.sh \r") == ["/a b/uninstall.sh"]
    assert logpaths.extract_paths(b"x /p/uninstall.sh y /q/uninstall.sh") == [
        "/p/uninstall.sh",
        "/q/uninstall.sh",
    ]


def test_marker_lines_across_blocks_and_overlong_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    long_line = b"x" * 300 + b" /z/uninstall.sh\n"
    log.write_bytes(b"a\n" + b"b" * 50 + b" /p/uninstall.sh\nc\n" + long_line + b"/q/uninstall.sh")
    got = [ln for _, ln in logpaths.iter_marker_lines(log, max_line=100, block=7)]
    assert got == [b"b" * 50 + b" /p/uninstall.sh", b"/q/uninstall.sh"]


@pytest.mark.slow
def test_multi_gb_log_is_streamed_in_bounded_memory(inst: Install, tmp_path: Path) -> None:
    # A sparse 2 GiB log (no newlines for most of it) with one valid line at its end.
    log = tmp_path / "huge.log"
    tail = ("\n" + line(str(inst.script("static_kernel_A_1")))).encode()
    with log.open("wb") as fh:
        fh.truncate(2 * 1024**3)
        fh.seek(0, os.SEEK_END)
        fh.write(tail)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = uninstall.uninstall_from_log(log, inst.outputs, str(inst.home), dry_run=True)
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert [c.action for c in res.candidates] == ["would-run"]
    assert grown_kb < 64 * 1024


def test_cli_uninstall_records_every_candidate(inst: Install, tmp_path: Path) -> None:
    from conftest import run_skgate

    log = tmp_path / "run.log"
    log.write_text(
        line(str(inst.script("static_kernel_A_1"))) + line(str(inst.ai_core / "uninstall.sh")),
        encoding="utf-8",
    )
    record = tmp_path / "rec.json"
    res = _uninstall_cli(inst, tmp_path, log, "--record", str(record))
    assert res.returncode == 1  # the full-uninstall line was refused
    assert "RUN (exit 0)" in res.stdout
    assert "REFUSED" in res.stdout
    data = json.loads(record.read_text(encoding="utf-8"))
    assert data["schema"] == "skgate.uninstall/2"
    assert data["complete"] is True
    assert [c["action"] for c in data["candidates"]] == ["run", "refused"]
    assert not inst.canary.exists()
    again = _uninstall_cli(inst, tmp_path, log, "--record", str(record))
    assert again.returncode == 2  # a record is never overwritten
    assert "never overwritten" in again.stderr
    nolog = run_skgate("uninstall", "--from-log", "missing.log", cwd=tmp_path)
    assert nolog.returncode == 2
    assert "no such log file" in nolog.stderr


def test_cli_dry_run_writes_no_record(inst: Install, tmp_path: Path) -> None:
    """A dry run runs nothing, so it records nothing: no file at --record, none under the
    root (issue 30)."""
    log = tmp_path / "run.log"
    log.write_text(line(str(inst.script("static_kernel_A_1"))), encoding="utf-8")
    record = tmp_path / "rec.json"
    res = _uninstall_cli(inst, tmp_path, log, "--record", str(record), "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "WOULD-RUN" in res.stdout and "record:" not in res.stderr
    assert not record.exists()
    res = _uninstall_cli(inst, tmp_path, log, "--dry-run")
    assert res.returncode == 0 and not (tmp_path / "skgate-runs").exists()


def _uninstall_cli(
    inst: Install, tmp_path: Path, log: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    from conftest import run_skgate

    res = run_skgate(
        "uninstall",
        "--from-log",
        str(log),
        "--outputs",
        str(inst.outputs),
        "--ascend-home",
        str(inst.home),
        *extra,
        cwd=tmp_path,
    )
    return res


@pytest.mark.parametrize(
    ("option", "blocker", "says"),
    [("--record", "rec.json", "already exists"), ("--root", "root-is-a-file", "")],
)
def test_record_that_cannot_be_created_runs_nothing(
    inst: Install, tmp_path: Path, option: str, blocker: str, says: str
) -> None:
    # Why (audit finding 7): the scripts ran first and the record was written last, so an
    # existing --record or an unwritable --root left scripts run and nothing recorded.
    log = tmp_path / "run.log"
    log.write_text(
        line(str(inst.script("static_kernel_A_1"))) + line(str(inst.script("static_kernel_B_2"))),
        encoding="utf-8",
    )
    existing = tmp_path / blocker
    existing.write_text("earlier record\n", encoding="utf-8")
    res = _uninstall_cli(inst, tmp_path, log, option, str(existing))
    assert res.returncode == 2
    err = res.stderr
    assert says in err and "nothing was run" in err and err.count("\n") == 1
    assert existing.read_text(encoding="utf-8") == "earlier record\n"
    assert list(inst.marks.iterdir()) == []  # no script ran
    assert not inst.canary.exists()


def test_record_is_filled_as_each_script_runs(inst: Install, tmp_path: Path) -> None:
    # Why (audit finding 7): a crash mid-way must still leave what ran. Each script here
    # copies the record as it is while the script runs: the copy must already hold the
    # earlier script's result and this script as "running".
    record = tmp_path / "rec.json"
    for pkg in ("static_kernel_A_1", "static_kernel_B_2"):
        write_script(
            inst.script(pkg),
            f"cp '{record}' '{inst.marks}/{pkg}.seen'; echo removed {pkg}",
        )
    log = tmp_path / "run.log"
    log.write_text(
        line(str(inst.script("static_kernel_A_1")))
        + line("/etc/evil/uninstall.sh")
        + line(str(inst.script("static_kernel_B_2"))),
        encoding="utf-8",
    )
    res = _uninstall_cli(inst, tmp_path, log, "--record", str(record))
    assert res.returncode == 1, res.stderr  # the /etc line was refused
    seen_a = json.loads((inst.marks / "static_kernel_A_1.seen").read_text(encoding="utf-8"))
    assert seen_a["schema"] == "skgate.uninstall/2"
    assert seen_a["complete"] is False
    assert [(c["package"], c["action"]) for c in seen_a["candidates"]] == [
        ("static_kernel_A_1", "running")
    ]
    seen_b = json.loads((inst.marks / "static_kernel_B_2.seen").read_text(encoding="utf-8"))
    assert seen_b["complete"] is False
    got = [(c["action"], c["exit_status"]) for c in seen_b["candidates"]]
    assert got == [("run", 0), ("refused", None), ("running", None)]
    assert seen_b["candidates"][0]["output"] == "removed static_kernel_A_1\n"
    final = json.loads(record.read_text(encoding="utf-8"))
    assert final["complete"] is True
    assert [c["action"] for c in final["candidates"]] == ["run", "refused", "run"]
    assert sorted(p.name for p in record.parent.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize(
    "text",
    [
        "by executing: /a b/uninstall.sh \r",
        "x /p/uninstall.sh y '/q/uninstall.sh'; echo",
        "run \x1b[33m/h/opp/static_kernel/ai_core/p/uninstall.sh\x1b[0m",
        "see ai_core/uninstall.sh.bak and uninstall.sh alone",
    ],
)
def test_log_scan_and_uninstall_read_one_path_grammar(text: str) -> None:
    # C8: the paths logscan.json records are the paths uninstall --from-log considers.
    from skgate.evidence.logscan import LogScanner

    scanner = LogScanner()
    scanner.feed(text.encode() + b"\n")
    recorded = scanner.finish().uninstall_paths
    considered = logpaths.extract_paths(text.encode())
    assert recorded == tuple(p for p in considered if "/" in p)
    assert considered, "every line here mentions uninstall.sh"
