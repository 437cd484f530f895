"""A full evidence disk harms nothing (issue 21 s2, C4).

The evidence root lives on a small tmpfs (``mount -t tmpfs -o size=2m``, so these tests
need root; they are skipped otherwise), unmounted at teardown. Before the fix the runner
died with "internal error: OSError ENOSPC" and the compile, still writing to its stdout
pipe, died of SIGPIPE. The workload restores SIGPIPE's default (a C compile has it), so
a dead reader would kill it; it writes a marker outside the tmpfs after its last line, so
"the compile exited naturally" is a fact it records itself. Every wait is on a file or a
pid, never a fixed sleep.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import (
    ENV,
    Reaper,
    events,
    pid_alive,
    run_skgate,
    start_skgate,
    wait_for,
)
from skgate.evidence import digest, files, ledger
from skgate.evidence.diskfull import DISKFULL, MIN_FREE_ENV, cut_torn_tail, low_space_warning
from skgate.evidence.seal_problem import Flaw

#: Prints ``MB`` MiB of lines to stdout (after filling the outputs until ENOSPC, with
#: ``fill``), then the summary, then writes ``done`` with its view of its own exit.
WORKLOAD = """\
import os, signal, sys
from pathlib import Path
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
done, mb, fill = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "fill"
if fill:
    out = Path("static_kernel_compile_outputs")
    out.mkdir(exist_ok=True)
    try:
        with open(out / "big.o", "wb") as fh:
            while True:
                fh.write(b"x" * 65536)
                fh.flush()
    except OSError:
        pass
line = b"compiling op " + b"y" * 100 + b"\\n"
for _ in range(mb * 1024 * 1024 // len(line)):
    os.write(1, line)
os.write(1, b"[summary] stage=compile inputs=1 succeeded=1 failed=0\\n")
done.write_text("exited naturally\\n")
"""


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "fs"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def _start(reaper: Reaper, cwd: Path, done: Path, mb: int, fill: bool) -> None:
    (cwd / "wl.py").write_text(WORKLOAD)
    reaper.popen(
        start_skgate(
            "run", "--root", "r", "--quiet", "--grace", "600", "--",
            sys.executable, "wl.py", str(done), str(mb), "fill" if fill else "no",
            cwd=cwd,
            env={MIN_FREE_ENV: "0"},
        )
    )  # fmt: skip


def _leader_pid(attempt: Path) -> int:
    for ev in events(attempt):
        if ev.get("event") == "launched":
            return int(ev["pid"])
    data = json.loads((attempt / files.OWNERSHIP).read_text())
    return int(data["leader"]["pid"])


def _finish(reaper: Reaper, attempt: Path, done: Path, free: Path) -> dict[str, object]:
    assert wait_for(done.is_file, "the workload's own exit marker", 60)
    leader = _leader_pid(attempt)
    wait_for(lambda: not pid_alive(leader), "the workload to end")
    free.unlink()  # the operator frees space: the runner records the full disk now
    proc = reaper.procs[-1]
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 5, out + err  # unknown, not "internal error" (exit 2)
    assert "internal error" not in out + err
    verdict: dict[str, object] = json.loads((attempt / files.VERDICT).read_text())
    assert (attempt / files.SEAL).is_file()
    return verdict


def test_full_root_keeps_draining_and_records_the_truncation(
    tmpfs: Path, tmp_path: Path, reaper: Reaper
) -> None:
    filler = tmpfs / "filler"
    filler.write_bytes(b"\0" * (1024 * 1024))  # half the tmpfs: run.log fills the rest
    done = tmp_path / "done"
    _start(reaper, tmpfs, done, mb=4, fill=False)
    attempt = tmpfs / "r" / "attempts" / "0001"
    verdict = _finish(reaper, attempt, done, filler)
    assert done.read_text() == "exited naturally\n"  # not killed by SIGPIPE
    assert verdict["state"] == "unknown", verdict
    reasons = " ".join(str(r) for r in verdict["reasons"])  # type: ignore[attr-defined]
    assert "evidence incomplete: disk full at" in reasons and "writing run.log" in reasons
    record = json.loads((attempt / DISKFULL).read_text())
    cut = record["run_log_truncated_at"]
    assert isinstance(cut, int) and cut == (attempt / files.RUN_LOG).stat().st_size
    assert record["run_log_bytes"] > cut  # every byte was drained, fewer were kept
    assert run_skgate("verify", str(tmpfs / "r"), cwd=tmp_path).returncode == 0


def test_outputs_filling_the_disk_harm_nothing(tmpfs: Path, tmp_path: Path, reaper: Reaper) -> None:
    done = tmp_path / "done"
    _start(reaper, tmpfs, done, mb=1, fill=True)
    attempt = tmpfs / "r" / "attempts" / "0001"
    big = tmpfs / "static_kernel_compile_outputs" / "big.o"
    verdict = _finish(reaper, attempt, done, big)
    assert done.read_text() == "exited naturally\n"
    assert verdict["state"] == "unknown", verdict
    assert (attempt / DISKFULL).is_file()
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    assert status.returncode == 5 and "disk full" in status.stdout, status


def test_preflight_warns_below_the_free_space_bound(tmp_path: Path) -> None:
    assert low_space_warning(tmp_path, {MIN_FREE_ENV: str(1 << 40)})[0].startswith(
        "skgate: warning: only"
    )
    assert low_space_warning(tmp_path, {MIN_FREE_ENV: "0"}) == []
    odd = low_space_warning(tmp_path, {MIN_FREE_ENV: "lots"})
    assert "not a whole number" in odd[0]
    run = run_skgate(
        "run", "--root", "r", "--", sys.executable, "-c", "pass",
        cwd=tmp_path,
        env={MIN_FREE_ENV: str(1 << 40)},
    )  # fmt: skip
    assert "MiB free under the evidence root" in run.stderr + run.stdout, run


def test_a_torn_last_line_is_cut_back_to_the_last_whole_one(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(b'{"a":1}\n{"b":')
    cut_torn_tail(journal)
    assert journal.read_bytes() == b'{"a":1}\n'
    cut_torn_tail(journal)
    assert journal.read_bytes() == b'{"a":1}\n'


def test_the_records_match_their_shipped_schemas(tmp_path: Path) -> None:
    import jsonschema

    from skgate.evidence.diskfull import DiskFull
    from skgate.evidence.intent import INTENT, write_intent

    def schema(name: str) -> dict[str, object]:
        path = Path(files.__file__).parent.parent / "schemas" / f"{name}.json"
        data: dict[str, object] = json.loads(path.read_text())
        return data

    write_intent(tmp_path, ["opc", "-p", "x"], None)
    jsonschema.validate(json.loads((tmp_path / INTENT).read_text()), schema("launch"))
    full = DiskFull()
    assert full.note("run.log", OSError(28, "No space left on device"))
    assert not full.note("run.log", OSError(5, "I/O error"))  # only a full disk is absorbed
    full.log_truncated_at, full.log_bytes = 10, 99
    jsonschema.validate(full.to_dict(), schema("diskfull"))


def test_after_a_failed_append_later_lines_wait_for_the_repair() -> None:
    # A line appended after a torn one would be glued to it (a damaged record mid-file):
    # once an append failed for want of space, the later ones are dropped and counted.
    from skgate.evidence.diskfull import DiskFull

    full = DiskFull()
    calls: list[str] = []

    def append(line: str) -> None:
        calls.append(line)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")

    guarded = full.guard(append, files.EVENTS, appends=True)
    guarded("a")
    guarded("b")
    assert calls == ["a"] and full.dropped == 2 and full.files_hit == [files.EVENTS]
    manifest = full.guard(append, files.OWNERSHIP)
    manifest("c")  # a whole-file replace is tried again each time
    assert calls == ["a", "c"]


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_write_into_a_removed_attempt_directory_ends_no_supervision(
    tmp_path: Path, how: str
) -> None:
    """Issue 28: the directory removed (or another put in its place) under a live runner:
    its failed writes are absorbed and counted, as a full disk's; an ENOENT while the
    directory is still the runner's own is a bug and still raised."""
    from skgate.evidence.diskfull import DiskFull

    home = tmp_path / "0001"
    home.mkdir()
    full = DiskFull()
    full.watch_home(home)

    def replace(name: str) -> None:
        (home / name).write_text("x")  # as every manifest write: a file in the directory

    guarded = full.guard(replace, files.OWNERSHIP)
    with pytest.raises(FileNotFoundError):
        guarded("missing-dir/ownership.json")  # the directory is still the runner's own
    assert (full.removed, full.home_gone()) == (False, False)
    os.rename(home, tmp_path / "aside")
    if how == "replaced":
        home.mkdir()  # another directory of that name: not the runner's own
    assert full.home_gone()
    guarded("missing-dir/ownership.json")
    # Absorbed and counted, and not taken for a full disk (tuple: read after the call).
    assert (full.removed, full.dropped, full.full) == (True, 1, False)
    assert not (home / "missing-dir").exists()


def test_a_directory_put_in_its_place_never_takes_a_manifest(tmp_path: Path) -> None:
    """Issue 28: ``rm -rf`` then ``mkdir`` of the attempt directory under a live runner.
    A write by path (a manifest) checks the directory first: the new one stays empty.
    The journals (appended through descriptors of the runner's own files) are unaffected."""
    from skgate.evidence.diskfull import DiskFull

    home = tmp_path / "0001"
    home.mkdir()
    full = DiskFull()
    full.watch_home(home)
    calls: list[str] = []

    def replace(name: str) -> None:
        calls.append(name)
        (home / name).write_text("x")

    manifest = full.guard(replace, files.OWNERSHIP, by_path=True)
    journal = full.guard(calls.append, files.EVENTS, appends=True)
    manifest(files.OWNERSHIP)  # the runner's own directory: written
    os.rename(home, tmp_path / "aside")
    home.mkdir()
    manifest(files.OWNERSHIP)
    manifest(files.OWNERSHIP)
    journal("line")
    assert calls == [files.OWNERSHIP, "line"]  # the manifest was never tried again
    assert list(home.iterdir()) == []
    assert (full.removed, full.dropped, full.full) == (True, 2, False)


#: ``skgate run`` whose finishing writes meet a full disk (ENOSPC), after the command
#: returned: the one finishing function is replaced before the CLI runs.
FULL_WHILE_FINISHING = """\
import errno, os, sys
from skgate.runner import watch
from skgate.cli.main import main

def full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), sys.argv[1])

watch.finish_after_return = full  # the runner imports it when it finishes
sys.exit(main(["run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--",
               sys.executable, "-c", "open('returned', 'w').close()"]))
"""


def test_a_disk_full_while_finishing_leaves_the_attempt_for_recover(tmp_path: Path) -> None:
    """After the tree returned, ENOSPC on a finishing write was an "internal error" (exit
    2, "a bug in skgate"). It is an unfinished attempt (exit 5) that says what to do in
    one line, and ``recover`` finishes it once space is back."""
    # The tests' own compiler names (issue 28): a foreign 'opc' on the host must not
    # make this run wait for it (C4); see the test below that starts one.
    env = {k: v for k, v in ENV.items() if k != "SKGATE_DEBUG"}
    target = str(tmp_path / "x.json")
    done = subprocess.run(
        [sys.executable, "-c", FULL_WHILE_FINISHING, target],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 5, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in done.stderr, done.stderr
    assert "the evidence disk filled up while" in lines[0] and f"writing {target}" in lines[0]
    attempt = tmp_path / "r" / "attempts" / "0001"
    assert f"skgate recover {attempt}" in lines[0]
    assert (tmp_path / "returned").exists()  # the command ran to its natural return
    assert not (attempt / files.VERDICT).exists()
    rec = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert rec.returncode == 0, rec
    assert (attempt / files.VERDICT).is_file() and (attempt / files.SEAL).is_file()


def test_a_foreign_opc_on_the_host_does_not_hold_the_finishing_test(
    tmp_path: Path, reaper: Reaper
) -> None:
    """Issue 28: the test above failed 6 of 6 beside another user's ``opc`` (it ran the
    gate under the real compiler names, so C4 made it wait). Started first, ended by pid."""
    foreign = reaper.popen(
        subprocess.Popen(["bash", "-c", "exec -a opc sleep 3600"], start_new_session=True)
    )
    reaper.add(foreign.pid)
    wait_for(lambda: _comm(foreign.pid) == "opc", "the foreign opc to exist")
    test_a_disk_full_while_finishing_leaves_the_attempt_for_recover(tmp_path)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


#: The issue's reproducer: 40,000 lines of 100 characters (4 MB) into a 2 MiB tmpfs.
FLOOD = ["bash", "-c", 'for i in $(seq 40000); do echo "' + "y" * 99 + '"; done']


def _flood(reaper: Reaper, fs: Path, tmp_path: Path, grace: str) -> tuple[Path, Path]:
    """``skgate run`` of the flood on the full tmpfs; its stderr goes to a file outside."""
    (fs / "filler").write_bytes(b"\0" * (512 << 10))  # what the operator frees later
    err = tmp_path / "run.err"
    with err.open("wb") as sink:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "skgate", "run", "--root", str(fs / "r"), "--timeout", "60",
             "--grace", grace, "--verdict-from", "exit-status", "--", *FLOOD],
            cwd=tmp_path, env={**ENV, MIN_FREE_ENV: "0"},
            stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    reaper.popen(proc)
    return fs / "r" / "attempts" / "0001", err


def _ended(reaper: Reaper, err: Path) -> tuple[int, str]:
    proc = reaper.procs[-1]
    code = proc.wait(timeout=120)  # before the fix: no bound at all (over 10 minutes seen)
    return code, err.read_text().strip().splitlines()[-1]


def test_a_disk_that_stays_full_ends_the_run_after_the_grace(
    tmpfs: Path, tmp_path: Path, reaper: Reaper
) -> None:
    attempt, err = _flood(reaper, tmpfs, tmp_path, grace="1")
    code, last = _ended(reaper, err)
    assert code == 5, err.read_text()
    assert last.startswith(f"skgate: the evidence disk under {attempt} is full ("), last
    assert "bytes free) and no space came back within 1 s (the grace)" in last, last
    assert last.endswith(f"free space there, then run 'skgate recover {attempt}'"), last
    assert "Traceback" not in err.read_text()
    _free_and_recover(tmpfs, attempt, tmp_path)


def _free_and_recover(fs: Path, attempt: Path, tmp_path: Path) -> None:
    """The operator frees space; ``recover`` then finishes the attempt, verified."""
    (fs / "filler").unlink()
    rec = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert rec.returncode == 0, rec
    checked = run_skgate("verify", str(fs / "r"), cwd=tmp_path)
    assert checked.returncode == 0, checked


def test_the_first_stop_signal_ends_the_wait_for_space_and_status_says_why(
    tmpfs: Path, tmp_path: Path, reaper: Reaper
) -> None:
    attempt, err = _flood(reaper, tmpfs, tmp_path, grace="600")
    wait_for(lambda: "Waiting up to 600 s for space" in err.read_text(), "the wait", 120)
    status = run_skgate("status", str(attempt), cwd=tmp_path)
    assert status.returncode == 6, status  # in progress: the runner is alive
    assert "finishing: evidence disk full (" in status.stdout, status.stdout
    assert "timeout has not fired" not in status.stdout, status.stdout
    reaper.procs[-1].send_signal(signal.SIGTERM)  # one, as timeout(1) and CI runners send
    code, last = _ended(reaper, err)
    assert code == 5, err.read_text()
    assert "is full (" in last and "SIGTERM ended the wait for space" in last, last
    assert last.endswith(f"then run 'skgate recover {attempt}'"), last
    assert "received after the attempt was recorded" not in err.read_text()
    _free_and_recover(tmpfs, attempt, tmp_path)


def _fill(path: Path) -> None:
    """Fill the file system ``path`` is on, to its last page."""
    with path.open("wb", buffering=0) as fh:
        while True:
            try:
                fh.write(b"\0" * 4096)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return


def test_a_ledger_append_the_disk_fills_under_leaves_no_torn_line(
    tmpfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29's leftover, on a real full file system: the ledger's append wrote part of
    its line (the room left in the file's last page) and then met ENOSPC. It left that
    torn line behind, and ``verify`` called the root changed for ever. Now the writer
    takes its own partial line back: the ledger is byte for byte as it was."""
    root = tmpfs / "r"
    path = root / ledger.LEDGER
    page = os.statvfs(tmpfs).f_bsize
    a = ledger.allocate(root)
    ledger.record_start(root, a, None)
    while page - path.stat().st_size % page >= 150:  # tmpfs gives a file whole pages
        ledger.record_start(root, a, None)
    b = ledger.allocate(root)
    _fill(tmpfs / "filler")
    before = path.read_bytes()
    written: list[int] = []
    real = os.write

    def spy(fd: int, data: bytes | memoryview) -> int:
        n = real(fd, data)  # the real write: only what it returns is noted
        written.append(n)
        return n

    monkeypatch.setattr(os, "write", spy)
    with pytest.raises(OSError, match="No space left") as failed:
        ledger.record_start(root, b, "p" * 300)  # longer than the room left
    monkeypatch.undo()
    assert failed.value.errno == errno.ENOSPC
    assert written and 0 < written[0] < 300, written  # a partial write, then ENOSPC
    assert path.read_bytes() == before
    assert ledger.check_chain(root) == []
    (tmpfs / "filler").unlink()  # space is back: the next append chains on as ever
    ledger.record_start(root, a, None)
    assert ledger.check_chain(root) == [] and "torn_cut" not in ledger.read_ledger(root)[-1]


def test_an_append_over_a_torn_line_on_a_full_disk_keeps_it_for_the_record(
    tmpfs: Path,
) -> None:
    """C7 on a real full file system: the next append found a torn last line, cut it, and
    its own write then met ENOSPC; the torn bytes were gone with no ``torn_cut`` anywhere.
    Now nothing is cut without room for the entry that records the cut."""
    root = tmpfs / "r"
    path = root / ledger.LEDGER
    page = os.statvfs(tmpfs).f_bsize
    a = ledger.allocate(root)
    ledger.record_start(root, a, None)
    # A torn line that ends 20 bytes before the end of the file's last page (tmpfs gives
    # a file whole pages): an entry longer than it by more than that needs a new page.
    n = page - path.stat().st_size % page - 20
    n += page if n <= len(ledger.ENTRY_HEAD) else 0
    torn = ledger.ENTRY_HEAD + b"9" * (n - len(ledger.ENTRY_HEAD))
    with path.open("ab") as fh:
        fh.write(torn)
    assert path.stat().st_size % page == page - 20
    _fill(tmpfs / "filler")
    before = path.read_bytes()
    with pytest.raises(OSError, match="No space left"):
        ledger.record_start(root, a, "p" * (n + 100))  # longer than the room left
    assert path.read_bytes() == before
    assert [p.flaw for p in ledger.check_chain(root)] == [Flaw.LEDGER_TORN]
    (tmpfs / "filler").unlink()
    ledger.record_start(root, a, None)
    assert ledger.check_chain(root) == []
    cut = {"bytes": len(torn), "sha256": digest.sha256_bytes(torn)}
    assert ledger.read_ledger(root)[-1]["torn_cut"] == cut


def test_a_root_full_before_the_first_record_refuses_and_leaves_nothing(
    tmpfs: Path, tmp_path: Path
) -> None:
    """The disk full before ``created`` could be journalled: ``run`` said "internal
    error: OSError ENOSPC" and left an attempt holding an empty journal, which status
    then read as a runner that died. Now: one line saying what to do, exit 2 for ``run``
    and 3 for ``start`` (their lists in model.exits), and the root as it was."""
    root = tmpfs / "r"
    first = run_skgate("run", "--root", str(root), "--verdict-from", "exit-status", "--",
                       "true", cwd=tmp_path, env={MIN_FREE_ENV: "0"})  # fmt: skip
    assert first.returncode == 0, first
    _fill(tmpfs / "filler")
    before = sorted(p.name for p in (root / ledger.ATTEMPTS).iterdir())
    ledger_bytes = (root / ledger.LEDGER).read_bytes()
    for command, code in (("run", 2), ("start", 3)):
        res = run_skgate(command, "--root", str(root), "--verdict-from", "exit-status", "--",
                         "true", cwd=tmp_path, env={MIN_FREE_ENV: "0"})  # fmt: skip
        assert res.returncode == code, res
        assert res.stderr.count("\n") == 1, res
        assert "No space left on device" in res.stderr and "free space" in res.stderr, res
        assert "internal error" not in res.stderr, res
        assert sorted(p.name for p in (root / ledger.ATTEMPTS).iterdir()) == before, res
        assert (root / ledger.LEDGER).read_bytes() == ledger_bytes
    status = run_skgate("status", str(root), cwd=tmp_path)
    assert status.returncode == 0 and status.stdout.startswith("SUCCEEDED"), status
