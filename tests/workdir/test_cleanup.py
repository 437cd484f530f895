"""cleanup and retry: preserve (move) the scene first, refuse while anything uses it."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import wait_for
from skgate.evidence import digest, ledger, seal
from skgate.evidence import load as evidence
from skgate.evidence.files import CONTROL, OWNERSHIP, VERDICT, write_json_new
from skgate.model.errors import BlockedError, StillLiveError, UsageError
from skgate.model.frozen import replace
from skgate.model.records import Cause, Ownership, ProcessRecord, State, Verdict
from skgate.model.request import RunRequest
from skgate.proc import observe
from skgate.read import liveness
from skgate.workdir import cleanup as artifacts
from skgate.workdir import retry as clean_retry

#: control.json always names its runner (written before launch); this one is of an earlier
#: boot, so it is never alive now, whatever pids exist (C4 identity: boot, pid, start time).
ENDED_RUNNER = {"pid": 1, "start_ticks": 1, "boot_id": "an-earlier-boot"}


def control_of(request: RunRequest, **extra: object) -> dict[str, object]:
    return {
        "schema": "skgate.control/1",
        "request": request.to_dict(),
        "runner": ENDED_RUNNER,
        **extra,
    }


@dataclass
class Scene:
    root: Path
    work: Path
    attempt: Path
    request: RunRequest


def make_scene(tmp_path: Path) -> Scene:
    root = tmp_path / "runs"
    work = tmp_path / "work"
    work.mkdir()
    request = RunRequest(
        argv=("bash", "run.sh", "--npu-arch=dav-2201"),
        cwd=str(work),
        root=str(root),
        timeout=7200.0,
        grace=5.0,
        jobs="8",
        env={"NPU_STATIC_KERNEL_COMPILE_JOBS": "8"},
        profiler_schedule="active=2,warmup=1",
    )
    attempt = ledger.allocate(root)
    ledger.record_start(root, attempt, None)
    write_json_new(
        attempt / CONTROL,
        control_of(request, attempt=attempt.name),
    )
    verdict = Verdict(state=State.INTERRUPTED, cause=Cause.TIMEOUT, reasons=("timeout",))
    write_json_new(attempt / VERDICT, verdict.to_dict())
    seal.seal_attempt(attempt)
    ledger.record_end(root, attempt, verdict)
    out = work / "static_kernel_compile_outputs" / "ts20260101_pid7_outputs"
    (out / "x_compile_log").mkdir(parents=True)
    (out / "x_compile_log" / "a_compile_error.log").write_text("provisional\n", encoding="utf-8")
    (work / "kernel_meta").mkdir()
    (work / "kernel_meta" / "k.o").write_bytes(b"\x7fELF" * 10)
    (work / "sk_meta" / "123").mkdir(parents=True)
    (work / "sk_meta" / "123" / "sk_fused_nodes.log").write_text("SK Function\n", encoding="utf-8")
    (work / ".static_kernel_records.json").write_text("{}", encoding="utf-8")
    (work / "log").mkdir()
    (work / "log" / "keep.txt").write_text("user file", encoding="utf-8")
    (work / "run.sh").write_text("echo\n", encoding="utf-8")
    return Scene(root, work, attempt, request)


@pytest.fixture
def sc(tmp_path: Path) -> Scene:
    return make_scene(tmp_path)


def test_cleanup_moves_outputs_into_the_scene_with_a_manifest(sc: Scene) -> None:
    res = artifacts.cleanup(sc.work, sc.root)
    assert res.ok
    assert res.attempt == str(sc.attempt)
    assert {m.name for m in res.moved} == {
        "static_kernel_compile_outputs",
        ".static_kernel_records.json",
        "sk_meta",
        "kernel_meta",
    }
    assert all(m.method == "rename" for m in res.moved)
    assert sorted(os.listdir(sc.work)) == ["log", "run.sh"]  # optional and user files stay
    scene = sc.attempt / "scene" / "01"
    assert (scene / "kernel_meta" / "k.o").read_bytes() == b"\x7fELF" * 10
    manifest = json.loads((scene / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema"] == "skgate.scene/1"
    files = {f["name"]: f for f in manifest["files"]}
    assert files["kernel_meta/k.o"]["size"] == 40
    assert files["kernel_meta/k.o"]["sha256"] == digest.sha256_file(scene / "kernel_meta/k.o")
    assert (
        "static_kernel_compile_outputs/ts20260101_pid7_outputs/x_compile_log/a_compile_error.log"
        in files
    )
    assert [e["event"] for e in ledger.read_ledger(sc.root)] == ["start", "seal", "end", "scene"]
    # The sealed attempt still verifies: the scene is covered by its chained manifest.
    assert seal.verify(sc.root) == []
    (scene / "kernel_meta" / "k.o").write_bytes(b"tampered")
    assert any("k.o: changed after preserving" in p for p in seal.verify(sc.root))


def test_cleanup_is_idempotent_and_optional_outputs_are_opt_in(sc: Scene) -> None:
    artifacts.cleanup(sc.work, sc.root)
    again = artifacts.cleanup(sc.work, sc.root)
    assert again.moved == ()
    assert again.scene is None
    with_opt = artifacts.cleanup(sc.work, sc.root, include_optional=True)
    assert [m.name for m in with_opt.moved] == ["log"]
    assert with_opt.scene == str(sc.attempt / "scene" / "02")
    assert seal.verify(sc.root) == []


def test_symlinks_are_never_followed(sc: Scene, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me", encoding="utf-8")
    os.rename(sc.work / "kernel_meta", tmp_path / "real_kernel_meta")
    os.symlink(outside, sc.work / "kernel_meta")
    inner = sc.work / "static_kernel_compile_outputs" / "escape"
    os.symlink(outside, inner)
    res = artifacts.cleanup(sc.work, sc.root)
    assert not res.ok
    assert res.refused[0][0] == "kernel_meta"
    assert "a symbolic link" in res.refused[0][1]
    assert "not followed" in res.refused[0][1]
    assert os.path.islink(sc.work / "kernel_meta")  # left in place
    assert (outside / "precious").read_text(encoding="utf-8") == "keep me"
    assert os.listdir(outside) == ["precious"]
    moved_link = sc.attempt / "scene/01/static_kernel_compile_outputs/escape"
    assert os.readlink(moved_link) == str(outside)  # moved as a link, not copied through
    assert seal.verify(sc.root) == []


def _sleeper(cwd: Path | None = None, hold: Path | None = None) -> subprocess.Popen[bytes]:
    code = "import sys\nf = open(sys.argv[1]) if len(sys.argv) > 1 else None\nsys.stdin.read()"
    args = [sys.executable, "-c", code] + ([str(hold)] if hold else [])
    return subprocess.Popen(args, stdin=subprocess.PIPE, cwd=cwd)


@pytest.fixture
def ended() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:  # end our own children by closing their stdin, then reap
        if p.stdin:
            p.stdin.close()
        p.wait(timeout=30)


def _wait_fd_open(pid: int, path: Path) -> None:
    def opened() -> bool:
        try:
            return any(
                os.readlink(f"/proc/{pid}/fd/{fd}") == str(path)
                for fd in os.listdir(f"/proc/{pid}/fd")
            )
        except OSError:
            return False

    wait_for(opened, what="child opening the file")


def _live_opc(ended: list[subprocess.Popen[bytes]]) -> ProcessRecord:
    """A live process of our own, recorded as an owned ``opc`` (ended by the fixture)."""
    proc = _sleeper()
    ended.append(proc)
    st = observe.read_stat(proc.pid)
    assert st is not None
    return ProcessRecord(
        pid=proc.pid,
        start_ticks=st.start_ticks,
        ppid=os.getpid(),
        pgid=st.pgid,
        sid=st.sid,
        argv=("opc",),
        name="opc",
        first_seen=0.0,
        last_seen=0.0,
    )


def test_refuses_while_an_owned_process_is_alive(
    sc: Scene, ended: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    rec = _live_opc(ended)
    own = Ownership(
        boot_id=observe.boot_id(),
        runner_pid=1,
        runner_start_ticks=1,
        leader=None,
        pgid=None,
        sid=None,
        owned=(rec,),
        foreign=(),
        complete=False,
        updated_at=0.0,
        scan_interval=1.0,
    )
    # An attempt being written is not sealed yet; use a fresh unsealed one.
    a2 = ledger.allocate(sc.root)
    write_json_new(a2 / CONTROL, control_of(sc.request))
    write_json_new(a2 / OWNERSHIP, own.to_dict())
    before = sorted(os.listdir(sc.work))
    with pytest.raises(StillLiveError, match=f"still running \\(owned pid {rec.pid} \\(opc\\)\\)"):
        artifacts.cleanup(sc.work, sc.root)
    assert sorted(os.listdir(sc.work)) == before
    assert not (a2 / "scene").exists()


def test_refuses_while_another_process_uses_the_outputs(
    sc: Scene, ended: list[subprocess.Popen[bytes]]
) -> None:
    held = sc.work / "kernel_meta" / "k.o"
    proc = _sleeper(hold=held)
    ended.append(proc)
    _wait_fd_open(proc.pid, held)
    with pytest.raises(BlockedError, match=f"pid {proc.pid} has a file open there"):
        artifacts.cleanup(sc.work, sc.root)
    assert held.exists()
    proc2 = _sleeper(cwd=sc.work / "sk_meta")
    ended.append(proc2)
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)
    ended.remove(proc)

    def has_cwd() -> bool:
        try:
            return os.readlink(f"/proc/{proc2.pid}/cwd") == str(sc.work / "sk_meta")
        except OSError:
            return False

    wait_for(has_cwd, what="child cwd")
    with pytest.raises(BlockedError, match=f"pid {proc2.pid} has its working directory there"):
        artifacts.cleanup(sc.work, sc.root)
    assert (sc.work / "sk_meta").is_dir()


def test_across_file_systems_copies_verifies_then_removes(
    sc: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rename = os.rename

    def exdev(*args: object, **kwargs: object) -> None:
        if kwargs.get("src_dir_fd") is not None:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        real_rename(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "rename", exdev)
    res = artifacts.cleanup(sc.work, sc.root)
    assert {m.method for m in res.moved} == {"copy"}
    assert not (sc.work / "kernel_meta").exists()
    assert (sc.attempt / "scene/01/kernel_meta/k.o").read_bytes() == b"\x7fELF" * 10
    assert seal.verify(sc.root) == []


def test_no_producing_attempt_is_a_usage_error(sc: Scene, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "kernel_meta").mkdir()
    with pytest.raises(UsageError, match="no attempt in"):
        artifacts.cleanup(other, sc.root)
    assert (other / "kernel_meta").is_dir()


def test_retry_preserves_the_scene_and_reruns_the_same_controls(sc: Scene) -> None:
    calls: list[RunRequest] = []
    seal_before = (sc.attempt / "seal.json").read_bytes()

    def fake_runner(request: RunRequest) -> Verdict:
        # The working directory is clean when the retry starts (a fresh root).
        assert not (Path(request.cwd) / "static_kernel_compile_outputs").exists()
        calls.append(request)
        return Verdict(state=State.SUCCEEDED, cause=None, reasons=("ok",))

    verdict, res = clean_retry.retry(sc.attempt, runner=fake_runner)
    assert verdict.state is State.SUCCEEDED
    assert len(calls) == 1
    got = calls[0]
    assert got.retry_of == str(sc.attempt.resolve())
    assert got.root == str(sc.root.resolve())
    for name in ("argv", "cwd", "env", "jobs", "timeout", "grace", "profiler_schedule"):
        assert getattr(got, name) == getattr(sc.request, name), name
    assert res.scene == str(sc.attempt / "scene" / "01")
    assert (sc.attempt / "seal.json").read_bytes() == seal_before
    assert seal.verify(sc.root) == []


def test_cli_cleanup(sc: Scene, tmp_path: Path) -> None:
    from conftest import run_skgate

    os.symlink(tmp_path, sc.work / "aclnn_static_shape_kernel_outputs")
    res = run_skgate("cleanup", "--workdir", str(sc.work), "--root", str(sc.root), cwd=tmp_path)
    assert res.returncode == 1  # the symlink was refused
    assert "REFUSED aclnn_static_shape_kernel_outputs: a symbolic link" in res.stdout
    assert "preserved" in res.stdout
    again = run_skgate(
        "cleanup", "--workdir", str(sc.work), "--root", str(sc.root), "--json", cwd=tmp_path
    )
    assert json.loads(again.stdout)["moved"] == []


@pytest.mark.slow
def test_retry_end_to_end_through_the_api(tmp_path: Path) -> None:
    # Why: the real runner must append the retry to the same root with retry_of set,
    # leaving the interrupted attempt verifiable and untouched.
    from conftest import run_skgate

    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text(
        "import os, select\n"
        "os.makedirs('kernel_meta', exist_ok=True)\n"
        "open('kernel_meta/k.o', 'w').write('x')\n"
        "if not os.path.exists('flag'):\n"
        "    select.select([], [], [])  # blocks until the frozen timeout fires\n"
        "print('[summary] stage=build inputs=1 succeeded=1 failed=0')\n",
        encoding="utf-8",
    )
    first = run_skgate(
        "run",
        "--root",
        "runs",
        "--cwd",
        "work",
        "--timeout",
        "1",
        "--grace",
        "1",
        "--",
        sys.executable,
        "job.py",
        cwd=tmp_path,
    )
    assert first.returncode == 4, first.stderr
    (work / "flag").write_text("", encoding="utf-8")
    second = run_skgate("retry", "runs/attempts/0001", "--json", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    runs = tmp_path / "runs"
    control = json.loads((runs / "attempts/0002/control.json").read_text(encoding="utf-8"))
    assert control["request"]["retry_of"] == str((runs / "attempts/0001").resolve())
    assert (runs / "attempts/0001/scene/01/kernel_meta/k.o").exists()
    assert json.loads((runs / "attempts/0001/verdict.json").read_text())["state"] == "interrupted"
    assert seal.verify(runs) == []


def test_retry_refuses_while_the_attempt_runs(
    sc: Scene, ended: list[subprocess.Popen[bytes]]
) -> None:
    proc = _sleeper()
    ended.append(proc)
    st = observe.read_stat(proc.pid)
    assert st is not None
    a2 = ledger.allocate(sc.root)
    runner = {"pid": proc.pid, "start_ticks": st.start_ticks, "boot_id": observe.boot_id()}
    write_json_new(
        a2 / CONTROL,
        control_of(sc.request, runner=runner),
    )
    for name in os.listdir(sc.work):  # even with nothing to preserve
        if name != "run.sh":
            artifacts.cleanup(sc.work, sc.root, attempt=sc.attempt, include_optional=True)
            break
    calls: list[RunRequest] = []

    def fake(r: RunRequest) -> Verdict:
        calls.append(r)
        return Verdict(state=State.SUCCEEDED, cause=None, reasons=())

    with pytest.raises(StillLiveError, match=f"still running \\(runner pid {proc.pid}\\)"):
        clean_retry.retry(a2, runner=fake)
    assert calls == []


def test_cleanup_attempt_must_be_an_attempt_of_the_root_that_ran_in_workdir(
    sc: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Why (audit finding 8): --attempt was not checked, so outputs were moved into any
    # directory (/tmp/scene/01) or into an attempt of another working directory, with
    # exit 0 and no ledger entry. Now: one line, exit 2, nothing moved anywhere.
    from skgate.cli.main import main

    before = sorted(os.listdir(sc.work))
    loose = tmp_path / "loose"  # a directory that is not an attempt
    loose.mkdir()
    fake = tmp_path / "fake"  # control.json, but not skgate.control/1
    fake.mkdir()
    (fake / CONTROL).write_text('{"schema": "other/1"}', encoding="utf-8")
    other_root = tmp_path / "other-runs"  # a real attempt, of another root
    foreign = ledger.allocate(other_root)
    write_json_new(foreign / CONTROL, control_of(sc.request))
    elsewhere = tmp_path / "elsewhere"  # an attempt of this root, run in another cwd
    elsewhere.mkdir()
    wrong_cwd = ledger.allocate(sc.root)
    request = RunRequest.from_dict({**sc.request.to_dict(), "cwd": str(elsewhere)}, "test")
    write_json_new(wrong_cwd / CONTROL, control_of(request))
    not_schema = ledger.allocate(sc.root)  # in the root, wrong control schema
    (not_schema / CONTROL).write_text('{"schema": "skgate.control/0"}', encoding="utf-8")
    cases = [
        (loose, "not an attempt of the evidence root"),
        (fake, "not an attempt of the evidence root"),
        (foreign, "not an attempt of the evidence root"),
        (wrong_cwd, f"ran in {elsewhere}, not in {sc.work}"),
        (Path(wrong_cwd.name), f"ran in {elsewhere}, not in {sc.work}"),
        (not_schema, "is not skgate.control/1"),
        (tmp_path / "missing", "no such attempt directory"),
    ]
    for attempt, needle in cases:
        with pytest.raises(UsageError) as info:
            artifacts.cleanup(sc.work, sc.root, attempt=attempt)
        assert needle in str(info.value), (attempt, str(info.value))
        capsys.readouterr()
        code = main(
            [
                "cleanup",
                "--workdir",
                str(sc.work),
                "--root",
                str(sc.root),
                "--attempt",
                str(attempt),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2, (attempt, err)
        assert err.count("\n") == 1 and needle in err
    assert sorted(os.listdir(sc.work)) == before
    for d in (loose, fake, foreign, wrong_cwd, not_schema, sc.attempt):
        assert not (d / "scene").exists(), d
    assert [e["event"] for e in ledger.read_ledger(sc.root)] == ["start", "seal", "end"]
    # The right attempt, also named as NNNN or attempts/NNNN of the root, is accepted.
    res = artifacts.cleanup(sc.work, sc.root, attempt=Path("attempts") / sc.attempt.name)
    assert res.ok and res.attempt == str(sc.attempt)
    assert (sc.attempt / "scene" / "01" / "kernel_meta" / "k.o").exists()
    # (The hand-made attempts 0002/0003 are not in the ledger, never finished or damaged;
    # everything else verifies.)
    assert [
        p
        for p in seal.verify(sc.root)
        if "not in the ledger" not in p and not p.startswith(("0002", "0003"))
    ] == []
    assert [e["event"] for e in ledger.read_ledger(sc.root)][-1] == "scene"


def test_retry_into_another_root_preserves_the_scene_in_the_attempts_own_root(
    sc: Scene, tmp_path: Path
) -> None:
    # Why: cleanup now checks --attempt against the root; retry appends to any --root but
    # must still preserve the scene into the attempt's own root (chained in its ledger).
    calls: list[RunRequest] = []

    def fake_runner(request: RunRequest) -> Verdict:
        calls.append(request)
        return Verdict(state=State.SUCCEEDED, cause=None, reasons=("ok",))

    other = tmp_path / "other-root"
    _, res = clean_retry.retry(sc.attempt, other, runner=fake_runner)
    assert calls[0].root == str(other.resolve())
    assert res.scene == str(sc.attempt / "scene" / "01")
    assert [e["event"] for e in ledger.read_ledger(sc.root)][-1] == "scene"
    assert seal.verify(sc.root) == []


def test_retry_reads_control_once_and_checks_liveness_once(
    sc: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Why (quality item 5): retry read control.json five times and checked liveness twice
    # (request_of, owned_alive, attempt_for_cleanup, cleanup's owned_alive).
    from skgate.evidence import files

    reads: list[str] = []
    real_read = files.read_json

    def read_json(path: Path) -> object:
        reads.append(path.name)
        return real_read(path)

    checks: list[int] = []
    real_alive = liveness.runner_is_alive

    def runner_is_alive(control: evidence.Control) -> bool:
        checks.append(control.runner_pid)
        return real_alive(control)

    monkeypatch.setattr(files, "read_json", read_json)
    monkeypatch.setattr(artifacts, "runner_is_alive", runner_is_alive)
    _, res = clean_retry.retry(sc.attempt, runner=lambda r: Verdict(State.SUCCEEDED, None, ()))
    assert res.scene == str(sc.attempt / "scene" / "01")
    assert reads.count(CONTROL) == 1
    assert checks == [1]


def test_liveness_uses_the_status_identity_rule(
    sc: Scene, ended: list[subprocess.Popen[bytes]]
) -> None:
    # Why (quality item 4): cleanup had its own liveness check. It now uses the one of
    # skgate status: a process the runner saw exit is not counted again, and a manifest
    # of another boot has nothing alive, whatever pids exist now.
    rec = _live_opc(ended)
    control = evidence.load_control(sc.attempt)
    a2 = ledger.allocate(sc.root)

    def own(boot: str, *records: ProcessRecord) -> None:
        (a2 / OWNERSHIP).unlink(missing_ok=True)
        o = Ownership(
            boot_id=boot,
            runner_pid=1,
            runner_start_ticks=1,
            leader=None,
            pgid=None,
            sid=None,
            owned=records,
            foreign=(),
            complete=False,
            updated_at=0.0,
            scan_interval=1.0,
        )
        write_json_new(a2 / OWNERSHIP, o.to_dict())

    own(observe.boot_id(), rec, rec)
    assert artifacts.owned_alive(a2, control) == [f"owned pid {rec.pid} (opc)"]  # once
    own("an-earlier-boot", rec)
    assert artifacts.owned_alive(a2, control) == []
    own(observe.boot_id(), replace(rec, exit_status=0))
    assert artifacts.owned_alive(a2, control) == []


def test_control_without_runner_identity_is_refused(sc: Scene) -> None:
    # control.json always names its runner; without it nothing shows the runner ended,
    # so cleanup and retry refuse (exit 2) and move nothing.
    from skgate.model.errors import EvidenceError

    a2 = ledger.allocate(sc.root)
    write_json_new(a2 / CONTROL, {"schema": "skgate.control/1", "request": sc.request.to_dict()})
    before = sorted(os.listdir(sc.work))
    with pytest.raises(UsageError, match="missing field 'runner'"):
        artifacts.cleanup(sc.work, sc.root, attempt=a2)
    with pytest.raises(EvidenceError, match="missing field 'runner'"):
        clean_retry.retry(a2, runner=lambda r: Verdict(State.SUCCEEDED, None, ()))
    assert sorted(os.listdir(sc.work)) == before
    assert not (a2 / "scene").exists()
