"""Crash consistency: the runner SIGKILLed or signalled at many instants (issue 12).

Each case starts a real ``skgate run`` and injects one fault at an *instant* named by
the evidence itself: right after a journal event (``created``, ``launched``,
``tree_ended``, ...) or right after an evidence file appears (``census.json``,
``verdict.json``, ``seal.json``). The driver polls the attempt directory and fires the
moment the instant is reached, never after a fixed sleep; the runner keeps going at
full speed, so the fault lands at that instant or a little later, and the assertions
hold for wherever it landed:

* no evidence file is ever half-written (every JSON file present parses, none is empty);
* ``status`` is never final without ``verdict.json``;
* ``verify`` fails (exit 1) naming an unfinished attempt, and ``recover`` completes it
  (idempotently), after which ``verify`` passes;
* nothing the runner owned is left running when it could still have signalled it.

The randomized campaign (``slow``) repeats the finishing-window instants with a seeded
jitter and checks that it really hit different instants.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    POLL_INTERVAL,
    SKGATE,
    Reaper,
    as_if_runner_died,
    env_in,
    failed_attempt,
    run_skgate,
    start_skgate,
    wait_for,
)
from skgate.proc.keeper import keeper_draining
from skgate.proc.observe import is_alive

SUMMARY_OK = "[summary] stage=compile inputs=1 succeeded=1 failed=0"

#: The workload: makes an error-named log (provisional, C1), starts a child, waits for
#: the driver's "go" (so supervision-time instants exist), then succeeds naturally.
WORKLOAD = """\
import os, subprocess, sys, time
from pathlib import Path
here = Path(sys.argv[1])
out = here / "static_kernel_compile_outputs" / "ts1_pid1_outputs"
(out / "x_compile_log").mkdir(parents=True, exist_ok=True)
(out / "x_compile_log" / "a_compile_error.log").write_text("provisional")
child = subprocess.Popen([sys.executable, "-c", "import sys, time\\n"
    "from pathlib import Path\\n"
    "while not Path(sys.argv[1]).exists(): time.sleep(0.01)", str(here / "go")])
while not (here / "go").exists():
    time.sleep(0.01)
child.wait()
(out / "x_compile_log" / "a_compile_error.log").rename(out / "x_compile_log" / "a_compile_succ.log")
(out / "static_kernel_1_1.run").write_text("package")
print(SUMMARY)
""".replace("SUMMARY", repr(SUMMARY_OK))

#: Instants, in the order a run passes them. ``event:NAME`` fires after that journal
#: event; ``file:NAME`` after that evidence file appears.
INSTANTS = (
    "event:created",
    "event:launched",
    "event:observation",
    "event:leader_exited",
    "event:tree_ended",
    "file:census.json",
    "file:verdict.json",
    "event:finished",
    "file:seal.json",
)
QUICK = ("event:created", "event:observation", "file:census.json")
JSON_FILES = (
    "control.json",
    "ownership.json",
    "logscan.json",
    "census.json",
    "verdict.json",
    "seal.json",
    "stages.json",
)
FINAL = {"succeeded", "failed", "interrupted", "not_started"}


@dataclass
class Case:
    """One run of the workload under the gate, with a fault injected at ``instant``."""

    tmp: Path
    instant: str
    fault: int
    jitter: float = 0.0
    proc: subprocess.Popen[bytes] | None = None
    hit: list[str] = field(default_factory=list)
    #: The ledger's end entry was on disk before the signal was sent: the attempt was
    #: recorded in full, and the runner may be past its last act (see drive()).
    recorded_first: bool = False

    @property
    def root(self) -> Path:
        return self.tmp / "r"

    @property
    def attempt(self) -> Path:
        return self.root / "attempts" / "0001"

    def start(self) -> None:
        (self.tmp / "w.py").write_text(WORKLOAD)
        self.proc = subprocess.Popen(
            [
                *SKGATE,
                "run",
                "--root",
                str(self.root),
                "--quiet",
                "--scan-interval",
                "0.02",
                "--timeout",
                "120",
                "--",
                sys.executable,
                str(self.tmp / "w.py"),
                str(self.tmp),
            ],
            cwd=self.tmp,
            env=env_in(self.tmp),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def reached(self) -> bool:
        kind, name = self.instant.split(":", 1)
        if kind == "file":
            return (self.attempt / name).exists()
        try:
            raw = (self.attempt / "events.jsonl").read_bytes()
        except FileNotFoundError:
            return False
        return f'"event":"{name}"'.encode() in raw

    def drive(self, timeout: float = 60.0) -> None:
        """Release the workload when supervision has been seen, fault at the instant."""
        assert self.proc is not None
        go = self.tmp / "go"
        deadline = time.monotonic() + timeout
        release_after = "observation"
        while True:
            if self.reached():
                if self.jitter:
                    spin_until = time.perf_counter() + self.jitter
                    while time.perf_counter() < spin_until:
                        pass
                if self.proc.poll() is not None:
                    self.hit = ENDED_FIRST  # nothing was sent
                    break
                self.recorded_first = _ledger_has_end(self.root)
                self.proc.send_signal(self.fault)
                self.hit = sorted(os.listdir(self.attempt)) if self.attempt.exists() else []
                break
            if not go.exists() and _has_event(self.attempt, release_after):
                go.write_text("")
            if self.proc.poll() is not None:
                self.hit = ENDED_FIRST
                break
            if time.monotonic() > deadline:
                pytest.fail(f"instant {self.instant} never came")
            time.sleep(POLL_INTERVAL / 10)
        self.proc.wait(timeout=60)
        if self.fault == signal.SIGKILL and self.hit != ENDED_FIRST and self.proc.returncode >= 0:
            # The runner's own exit raced the kill: it ended after the instant was seen and
            # before the signal landed (seal.json is its last file, and its exit follows
            # within milliseconds); a signal to a process that has exited is discarded.
            # Nothing was faulted: the same case as an end before the instant.
            self.hit = ENDED_FIRST
        # The workload must be able to end on its own (a SIGKILLed runner leaves it to
        # finish naturally, as C4 wants; nothing here kills it).
        go.write_text("")

    def owned(self) -> list[tuple[int, int]]:
        try:
            own = json.loads((self.attempt / "ownership.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return []
        return [(p["pid"], p["start_ticks"]) for p in own["owned"]]

    def wait_owned_gone(self) -> None:
        wait_for(
            lambda: not any(is_alive(pid, ticks) for pid, ticks in self.owned()),
            what="the owned tree to end",
            timeout=60,
        )
        # The pipe keeper of a killed runner drains to EOF, then lets its lock go; until
        # then recover rightly refuses (exit 6): what may live includes it (C4).
        wait_for(
            lambda: not self.attempt.exists() or not keeper_draining(self.attempt),
            what="the pipe keeper to finish",
            timeout=60,
        )


#: What ``Case.hit`` says when the runner ended on its own, so no fault landed.
ENDED_FIRST = ["runner ended before the instant"]


def _has_event(attempt: Path, name: str) -> bool:
    try:
        return f'"event":"{name}"'.encode() in (attempt / "events.jsonl").read_bytes()
    except FileNotFoundError:
        return False


def assert_no_half_written_file(attempt: Path) -> None:
    for name in JSON_FILES:
        path = attempt / name
        if path.exists():
            text = path.read_text()
            assert text.strip(), f"{name} is empty"
            json.loads(text)  # whole, or it would not be there at all
    lines = (attempt / "events.jsonl").read_bytes().split(b"\n")
    for line in lines[:-1]:
        json.loads(line)  # only the very last line may be torn by a SIGKILL


def status_json(attempt: Path) -> dict[str, Any]:
    res = run_skgate("status", str(attempt), "--json", cwd=attempt)
    assert res.returncode in (0, 1, 3, 4, 5, 6), res.stderr
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def check_after_fault(case: Case) -> None:
    """The invariants, wherever the fault landed."""
    att = case.attempt
    if not att.exists():
        return
    assert_no_half_written_file(att)
    case.wait_owned_gone()
    verdict_written = (att / "verdict.json").exists()
    census_existed = (att / "census.json").exists()
    finished = _ledger_has_end(case.root)
    if not (att / "control.json").exists():
        # Killed before control.json: an attempt holding only the journal. verify must
        # call it unfinished by name (never "OK, 0 attempts"); recover finishes it below.
        assert not verdict_written
        res = run_skgate("verify", str(case.root), cwd=case.tmp)
        assert res.returncode == 1 and "UNFINISHED: 0001" in res.stdout, res
    elif not verdict_written:
        st = status_json(att)
        assert st["state"] not in FINAL, st
        assert st["state"] == "unknown", st
        assert any("runner died before the verdict was written" in r for r in st["reasons"]), st
    if not finished:
        res = run_skgate("verify", str(case.root), cwd=case.tmp)
        assert res.returncode == 1, res
        # Named, and told apart from tampering.
        assert "UNFINISHED: 0001" in res.stdout and "CHANGED" not in res.stdout, res
        rec = run_skgate("recover", str(att), cwd=case.tmp)
        assert rec.returncode == 0, rec
        assert (att / "verdict.json").exists() and (att / "seal.json").exists()
        assert _ledger_has_end(case.root)
        again = run_skgate("recover", str(att), cwd=case.tmp)
        assert again.returncode == 0 and "nothing to recover" in again.stdout, again
        assert_no_half_written_file(att)
        # The recovered verdict is what the evidence honestly allows. The workload
        # always succeeds once released, so: a recorded natural return stays a success
        # (census labelled late); a tree nobody saw end stays unknown; nothing launched
        # is not started; a verdict the runner wrote is kept.
        after = status_json(att)
        when = after.get("extra", {}).get("recovered", {}).get("when")
        expected = {
            None: "succeeded",
            "after natural return": "succeeded",
            "before natural return": "unknown",
            "before launch": "not_started",
        }[when]
        assert after["state"] == expected, after
        if when is not None:
            assert any(f"after the runner died {when}" in r for r in after["reasons"]), after
        if when == "after natural return" and not census_existed:
            assert "late" in json.loads((att / "census.json").read_text())
    ok = run_skgate("verify", str(case.root), cwd=case.tmp)
    assert ok.returncode == 0, ok


def _ledger_has_end(root: Path) -> bool:
    try:
        lines = (root / "ledger.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return False
    return any('"event":"end"' in line for line in lines)


@pytest.fixture
def cases(tmp_path: Path) -> Iterator[list[Case]]:
    made: list[Case] = []
    yield made
    for case in made:
        (case.tmp / "go").write_text("")
        if case.proc is not None and case.proc.poll() is None:
            case.proc.kill()
            case.proc.wait()
        if case.proc is not None and case.proc.stderr is not None:
            case.proc.stderr.close()
        # Whatever the gate owned ends on its own once "go" exists; a failed test must
        # not leave it behind: end exactly those (pid, start time) pairs.
        for pid, ticks in case.owned():
            if is_alive(pid, ticks):
                os.kill(pid, signal.SIGKILL)


def new_case(
    tmp_path: Path, cases: list[Case], instant: str, fault: int, jitter: float = 0.0
) -> Case:
    d = tmp_path / f"c{len(cases)}"
    d.mkdir()
    case = Case(d, instant, fault, jitter)
    cases.append(case)
    case.start()
    return case


@pytest.mark.slow
@pytest.mark.parametrize("instant", INSTANTS)
def test_sigkill_at_instant_leaves_an_honest_unfinished_attempt(
    tmp_path: Path, cases: list[Case], instant: str
) -> None:
    case = new_case(tmp_path, cases, instant, signal.SIGKILL)
    case.drive()
    assert (
        case.proc is not None and case.proc.returncode == -signal.SIGKILL
    ) or case.hit == ENDED_FIRST
    print(instant, "->", case.hit)
    check_after_fault(case)


#: SIGTERM at every instant; SIGINT and SIGHUP at one instant of each phase (before
#: launch, supervision, finishing); the full matrix runs in the slow tier.
STOP_CASES = [
    *(pytest.param(signal.SIGTERM, i, id=f"SIGTERM-{i}") for i in INSTANTS),
    *(
        pytest.param(sig, i, id=f"{sig.name}-{i}", marks=() if i in QUICK else (pytest.mark.slow,))
        for sig in (signal.SIGINT, signal.SIGHUP)
        for i in INSTANTS
    ),
]


@pytest.mark.parametrize(("sig", "instant"), STOP_CASES)
def test_stop_signal_at_instant_is_forwarded_or_deferred_never_lost(
    tmp_path: Path, cases: list[Case], instant: str, sig: signal.Signals
) -> None:
    case = new_case(tmp_path, cases, instant, sig)
    case.drive()
    att = case.attempt
    assert case.proc is not None
    # The runner itself always finishes: a stop signal is never a lost verdict.
    assert (att / "verdict.json").exists() and (att / "seal.json").exists(), case.hit
    assert _ledger_has_end(case.root)
    verdict = json.loads((att / "verdict.json").read_text())
    evs = [json.loads(x) for x in (att / "events.jsonl").read_text().splitlines()]
    names = [e["event"] for e in evs]
    received = [e for e in evs if e["event"] in ("signal_received", "runner_signal")]
    end = [json.loads(x) for x in (case.root / "ledger.jsonl").read_text().splitlines()][-1]
    if case.hit != ENDED_FIRST:
        # Recorded, wherever it fell: in the journal, or (once the journal was sealed) in
        # the ledger's end entry.
        late = end.get("signals_while_sealing", [])
        told = case.proc.stderr.read().decode() if case.proc.stderr else ""
        # After the last ledger entry the runner says so in one line (or, under a default
        # disposition, ends by it): at any instant, a loaded machine may deliver the
        # signal that late (CI: SIGTERM seen at verdict.json, landing after the end).
        after_all = f"{sig.name} received after the attempt was recorded" in told or (
            case.proc.returncode in (-sig, 128 + sig)
        )
        # A runner still alive at the send may be past its last act: stop signals blocked
        # for its exit (proc.signals.exit_now), the end entry already in the ledger. A
        # signal then is after everything was recorded, like one after the exit; a loaded
        # machine can put the send there (seen twice at load 8-12).
        assert (
            any(e["signal"] == sig for e in received)
            or late == [sig.name]
            or after_all
            or case.recorded_first
        ), (
            names,
            end,
            told,
            case.proc.returncode,
        )
    if "tree_ended" in names and names.index("tree_ended") < min(
        (names.index(e["event"]) for e in received), default=len(names)
    ):
        # After the natural return: recorded, the compile's verdict stands.
        assert verdict["state"] == "succeeded", verdict
        assert all(e["event"] == "runner_signal" for e in received)
    elif "launched" in names:
        assert (verdict["state"], verdict["cause"]) == ("interrupted", "external"), verdict
    else:
        assert verdict["state"] == "not_started", verdict
    assert_no_half_written_file(att)
    # Forwarded to the own group: nothing owned outlives the runner that could signal it.
    assert not any(is_alive(pid, ticks) for pid, ticks in case.owned())
    assert run_skgate("verify", str(case.root), cwd=case.tmp).returncode == 0


@pytest.mark.slow
def test_randomized_finishing_window_campaign(tmp_path: Path, cases: list[Case]) -> None:
    """Seeded: SIGKILL or SIGTERM at a random finishing instant plus a random jitter."""
    rng = random.Random(12)
    landed: set[tuple[str, ...]] = set()
    for _ in range(24):
        instant = rng.choice(INSTANTS[3:])
        fault = rng.choice([signal.SIGKILL, signal.SIGTERM])
        case = new_case(tmp_path, cases, instant, fault, jitter=rng.uniform(0, 0.004))
        case.drive()
        landed.add(tuple(n for n in case.hit if n.endswith(".json")))
        if fault == signal.SIGKILL:
            check_after_fault(case)
        else:
            assert (case.attempt / "seal.json").exists()
            assert_no_half_written_file(case.attempt)
        shutil.rmtree(case.tmp / "r")
    # The faults really fell at different points of the finishing sequence.
    assert len(landed) >= 3, landed


def _lock_waiters(attempt: Path) -> int:
    """Blocked flock requests on the attempt directory (``->`` rows of /proc/locks)."""
    st = os.stat(attempt)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    rows = Path("/proc/locks").read_text().splitlines()
    return sum(1 for r in rows if "->" in r.split() and key in r.split())


@pytest.mark.slow
def test_a_second_recover_waits_for_the_first_and_finds_it_done(
    tmp_path: Path, reaper: Reaper
) -> None:
    # Issue 21: two recovers at once raced (exit 2; a seal holding the other's temp file).
    attempt = failed_attempt(tmp_path)
    as_if_runner_died(attempt)
    fd = os.open(attempt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # stands in for a first recover, mid-way
        second = reaper.popen(start_skgate("recover", str(attempt), cwd=tmp_path))
        wait_for(lambda: _lock_waiters(attempt) == 1, "the second recover to wait", 15)
        assert second.poll() is None and not (attempt / "seal.json").exists()
    finally:
        os.close(fd)  # the "first recover" ends: the lock is released
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, out + err
    assert f"{attempt} is being recovered by pid {os.getpid()}; waiting" in err, err
    assert "recovered (failed)" in out, out
    again = run_skgate("recover", str(attempt), cwd=tmp_path)
    assert again.returncode == 0 and "nothing to recover" in again.stdout, again
    # And two real recovers started together: both succeed, one does the work.
    other = failed_attempt(tmp_path)
    as_if_runner_died(other)
    pair = [reaper.popen(start_skgate("recover", str(other), cwd=tmp_path)) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in pair]
    assert [p.returncode for p in pair] == [0, 0], outs
    said = "".join(o for o, _ in outs)
    assert said.count("recovered (failed)") == 1 and "nothing to recover" in said, outs
    checked = run_skgate("verify", str(attempt.parent.parent), cwd=tmp_path)
    assert checked.returncode == 0, checked
