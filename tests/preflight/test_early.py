"""The runner's early work (issue 13, start latency): the hook scan's first round and the
cgroup leaf started before the attempt exists.

What is promised: the early scan is used only for exactly the inputs preflight would
scan, and gives the same result as a scan made then; anything else is cancelled, its
probes ended by their own session and reaped (none left running); no probe is ever
born while the runner sits in a cgroup other than its own; a leaf nobody took is
removed; the static probe's start-up baseline is the interpreter's own module set.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_hooks import clean_env, make_venv, request_for

from conftest import wait_for
from skgate.model.frozen import replace
from skgate.model.sources import ALL_SOURCES
from skgate.preflight import jobs
from skgate.preflight.early import EarlyWork
from skgate.preflight.hooks.probe import Probe
from skgate.preflight.hooks.rounds import STATIC_PROBE
from skgate.preflight.hooks.scan import run_scan
from skgate.preflight.inputs import early_scan_inputs
from skgate.preflight.prepare import prepare
from skgate.proc import cgroup
from skgate.proc.observe import self_stat


def _children() -> set[int]:
    """Live children of this test process (read from /proc: by parent pid)."""
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


@pytest.fixture
def venv_request(tmp_path: Path) -> tuple[Path, object]:
    python, _ = make_venv(tmp_path / "venv")
    return python, request_for(python, tmp_path, env=clean_env())


def test_early_scan_is_the_scan_preflight_would_make(
    venv_request: tuple[Path, object], tmp_path: Path
) -> None:
    python, request = venv_request
    inputs = early_scan_inputs(request, clean_env())  # type: ignore[arg-type]
    assert inputs is not None and inputs.python == str(python)
    work = EarlyWork.begin(request, clean_env())  # type: ignore[arg-type]
    assert work is not None
    try:
        early = work.scan_result(inputs)
    finally:
        work.close()
    assert early is not None
    fresh = run_scan(inputs)
    assert early.to_dict() == fresh.to_dict()
    assert early.extra["startup_probe"] == "ran"
    # And preflight, given the early scan, records what it records without one.
    with_early = prepare(
        request,  # type: ignore[arg-type]
        tmp_path / "runs",
        runner_env=clean_env(),
        take_leases=False,
        early_scan=lambda _inputs: fresh,
    )
    without = prepare(request, tmp_path / "runs", runner_env=clean_env(), take_leases=False)  # type: ignore[arg-type]
    assert with_early.controls["hooks"] == without.controls["hooks"]


def test_the_host_facts_are_read_once_and_preflight_records_those(
    venv_request: tuple[Path, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early work reads the host facts (CPUs, memory) for the scan's jobs value and
    hands them to preflight, which decides and records with the same facts instead of
    reading them again (issue 29: a run read them twice)."""
    _, request = venv_request
    real = jobs.probe_host
    reads: list[int] = []
    marker = 3 << 40  # no host has this much memory available: these facts, recorded

    def probe() -> dict[str, object]:
        reads.append(1)
        return {**real(), "mem_available": marker}

    monkeypatch.setattr(jobs, "probe_host", probe)
    work = EarlyWork.begin(request, clean_env())  # type: ignore[arg-type]
    assert work is not None
    try:
        assert work.host is not None and work.host["mem_available"] == marker
        assert len(reads) == 1
        plan = prepare(
            request,  # type: ignore[arg-type]
            tmp_path / "runs",
            runner_env=clean_env(),
            take_leases=False,
            early_scan=work.scan_result,
            host=work.host,
        )
    finally:
        work.close()
    assert len(reads) == 1
    assert plan.controls["jobs"]["inputs"]["memory_available"] == marker
    assert plan.controls["host"]["mem_available"] == marker
    # Without early facts preflight reads them itself.
    prepare(request, tmp_path / "runs", runner_env=clean_env(), take_leases=False)  # type: ignore[arg-type]
    assert len(reads) == 2


def test_early_scan_for_other_inputs_is_cancelled_and_leaves_no_probe(
    venv_request: tuple[Path, object],
) -> None:
    _, request = venv_request
    before = _children()
    work = EarlyWork.begin(request, clean_env())  # type: ignore[arg-type]
    assert work is not None
    inputs = early_scan_inputs(request, clean_env())  # type: ignore[arg-type]
    assert inputs is not None
    other = replace(inputs, strict=not inputs.strict)
    try:
        assert work.scan_result(other) is None  # preflight then scans itself
    finally:
        work.close()
    assert _children() - before == set()


def test_close_ends_a_hanging_probe_by_its_own_session(tmp_path: Path) -> None:
    """An interpreter whose probe never finishes: close() ends it at once, not at the
    probe timeout, and reaps it."""
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexec sleep 300\n")
    fake.chmod(0o755)
    request = request_for(fake, tmp_path, env=clean_env())
    before = _children()
    work = EarlyWork.begin(request, clean_env())
    assert work is not None
    started = _children() - before
    assert started, "the first round was not started at begin()"
    t0 = time.monotonic()
    work.close()
    assert time.monotonic() - t0 < 5.0
    for pid in started:
        assert not Path(f"/proc/{pid}").exists() or pid not in _children()


def _waits_for_the_migration_lock(action: Callable[[], object]) -> None:
    """``action`` in a thread does not complete while MIGRATION_LOCK is held, and does
    once it is released."""
    done = threading.Event()

    def run() -> None:
        action()
        done.set()

    with cgroup.MIGRATION_LOCK:
        thread = threading.Thread(target=run)
        thread.start()
        assert not done.wait(0.3), "it went ahead while the lock was held"
    assert done.wait(10)
    thread.join()


def test_no_probe_is_born_while_the_migration_lock_is_held(tmp_path: Path) -> None:
    """The leaf's moves hold MIGRATION_LOCK; a probe's fork waits for it, so it is never
    born inside an attempt's cgroup leaf."""
    probes: list[Probe] = []
    _waits_for_the_migration_lock(
        lambda: probes.append(
            Probe([sys.executable, "-c", "pass"], dict(os.environ), None, tmp_path / "o")
        )
    )
    probes[0].end()


def test_static_probe_baseline_is_the_interpreters_own_start_up_set(
    venv_request: tuple[Path, object], tmp_path: Path
) -> None:
    python, _ = venv_request
    out = tmp_path / "static"
    subprocess.run(
        [str(python), "-I", "-S", str(STATIC_PROBE), str(out), "-", str(tmp_path)],
        check=True,
        timeout=60,
    )
    record = json.loads(out.read_text())
    names = {name for name, _ in record["baseline"]["modules"]} - {"__main__"}
    plain = subprocess.run(
        [str(python), "-I", "-S", "-c", "import site, sys; print(sorted(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert names == set(ast.literal_eval(plain.stdout)) - {"__main__"}
    assert "site" in names and "skgate" not in names


def test_an_untaken_leaf_is_removed_and_a_taken_one_is_handed_over(
    venv_request: tuple[Path, object],
) -> None:
    _, request = venv_request
    try:
        hier = cgroup.detect()
    except cgroup.CgroupUnavailable as exc:
        pytest.skip(f"no cgroup v2 here: {exc}")
    me = self_stat()
    name = cgroup.leaf_name(me.pid, me.start_ticks)
    allowed = frozenset(ALL_SOURCES)
    work = EarlyWork.begin(request, clean_env())  # type: ignore[arg-type]
    assert work is not None
    made = work.leaf(allowed, name)
    if made is None or made[0] is None:
        work.close()
        pytest.skip(f"the runner cannot make a leaf here: {made}")
    assert work.leaf(allowed, name + "-other") is None  # another runner's: never shared
    work.close()  # taken: close leaves it to its taker
    assert (hier.own / name).is_dir()
    made[0].remove()
    work = EarlyWork.begin(request, clean_env())  # type: ignore[arg-type]
    assert work is not None
    work.scan_result(early_scan_inputs(request, clean_env()))  # type: ignore[arg-type]
    work.close()  # never taken: removed
    assert not (hier.own / name).exists()


def test_warming_the_migration_lock_never_moves_the_runner_out_of_a_launch() -> None:
    """warm() writes the runner's pid to its own cgroup; during a launch the runner is in
    the leaf (under MIGRATION_LOCK), so warm() must wait for the lock, or the leader
    would be forked outside the leaf."""
    me = self_stat()
    made, why = cgroup.make_leaf(frozenset(ALL_SOURCES), cgroup.leaf_name(me.pid, me.start_ticks))
    if made is None:
        pytest.skip(f"no cgroup leaf here: {why}")
    try:
        _waits_for_the_migration_lock(made.warm)
    finally:
        made.remove()


def test_prewarm_starts_again_only_once_the_last_warming_has_ended() -> None:
    """The runner asks for warming at the start of preflight and again once it is done:
    a second thread starts only when the first has given up (a wait for a foreign
    compiler outlasted it, C4), never beside one that still warms."""
    work = EarlyWork(None, None, "skgate-test-leaf")
    for name in ("scan", "leaf"):  # nothing to scan, no sources: both end at once
        work._threads[name].start()
    release = threading.Event()
    calls: list[float] = []

    class Slow:
        def warm(self, limit: float, stop: Callable[[], bool]) -> None:
            calls.append(limit)
            release.wait(10)

    work._leaf = (Slow(), None)  # type: ignore[assignment]
    try:
        work.prewarm()
        assert wait_for(lambda: calls, "the first warming")
        work.prewarm()  # the first still warms: no second thread
        first = work._threads["warm"]
        release.set()
        first.join(10)
        assert calls == [cgroup.WARM_LIMIT]
        work.prewarm()  # it has ended: warming starts again
        assert wait_for(lambda: len(calls) == 2, "the second warming")
        assert work._threads["warm"] is not first
    finally:
        release.set()
        work._leaf = None
        work.close()


def test_closing_twice_never_writes_into_a_reused_descriptor(
    venv_request: tuple[Path, object], tmp_path: Path
) -> None:
    """The runner and the detached runner's caller both close the early work; the second
    close must not touch the cancel pipe's old descriptor numbers, which an evidence
    file may hold by then."""
    _, request = venv_request
    work = EarlyWork.begin(request, clean_env())  # type: ignore[arg-type]
    assert work is not None
    work.close()
    files = [os.open(tmp_path / f"f{i}", os.O_RDWR | os.O_CREAT, 0o644) for i in range(8)]
    try:
        work.close()
    finally:
        for fd in files:
            os.close(fd)
    assert all((tmp_path / f"f{i}").read_bytes() == b"" for i in range(8))


def test_bad_input_starts_nothing_early(tmp_path: Path) -> None:
    """Bad input is refused before anything runs (exit 2): the early work starts no probe
    for a request preflight's input checks refuse."""
    text = tmp_path / "not-python"
    text.write_text("just text\n")
    text.chmod(0o755)
    before = _children()
    for request in (
        replace(request_for(text, tmp_path, env=clean_env()), python=str(text)),
        replace(request_for(Path(sys.executable), tmp_path, env=clean_env()), jobs="0"),
    ):
        assert EarlyWork.begin(request, clean_env()) is None
    assert _children() - before == set()
