"""Shared helpers: run the installed skgate, wait for markers (never a fixed sleep)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skgate.proc.observe import is_alive, read_stat

SKGATE = [sys.executable, "-m", "skgate"]
# The interpreter running the tests comes first on PATH, so a workload's "python3" is
# the test environment's, whatever else the machine has installed.
#
# Compilers running elsewhere on a shared machine (another checkout's tests) would make
# every run wait as C4 demands; tests that are not about foreign compilers look for a name
# nothing uses. The tests of foreign-compiler handling set the real names explicitly.
# The hook probes' answer cache (issue 29) is off for the suite, in this process and
# its children: each test's probes run as they always did (their kills, timeouts and
# cancellations are tested). tests/preflight/test_hook_cache.py turns it on, in a
# directory of its own.
os.environ["SKGATE_HOOK_CACHE"] = "0"
ENV = {
    **os.environ,
    "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    "SKGATE_COMPILER_NAMES": "skgate-tests-no-foreign-compiler",
}
REAL_COMPILER_NAMES = {"SKGATE_COMPILER_NAMES": "opc,op_compiler"}
#: A ``verdict.json`` saying "succeeded" that no runner wrote (an agent's), for the tests
#: of what such a file is read as (C2.5).
FORGED = {
    "schema": "skgate.verdict/1",
    "state": "succeeded",
    "cause": None,
    "attempt": "r/attempts/0001",
    "exit_status": 0,
    "exit_signal": None,
    "timeout_fired": False,
    "natural_return": True,
    "escaped": 0,
    "reasons": ["forged"],
    "missing": [],
}


def env_in(tmp: Path) -> dict[str, str]:
    """``ENV`` with ``TMPDIR`` in the test's directory, for a runner the test may kill: one
    killed in preflight leaves its hook probes' (empty) directory in $TMPDIR, never to
    be left in the shared host's /tmp."""
    return {**ENV, "TMPDIR": str(tmp)}


#: Signals a test's children must get at their defaults, whoever runs pytest: skgate
#: rightly keeps an inherited ignore of SIGHUP and SIGINT (``nohup``, a background job
#: of a non-interactive shell), and tests of signal handling send exactly those.
DEFAULT_FOR_CHILDREN = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)


def _noop(_signum: int, _frame: object) -> None:
    """Stands in for an inherited ignore in the test process (see the fixture below)."""


@pytest.fixture(autouse=True, scope="session")
def default_signal_dispositions() -> Iterator[None]:
    """The processes the tests start get default signal dispositions (issue 21).

    An ignored signal is inherited across fork and exec; a caught one is reset to its
    default at exec. So each signal the test process ignores is caught by a no-op
    instead, for the session: its children start with the default disposition, and the
    test process stays as immune as it was (a hangup of the terminal still ends nothing).
    Restored at the end. A test that needs an ignore sets it for its own child
    (``nohup`` in the argv, or ``preexec_fn``).
    """
    saved = {s: signal.getsignal(s) for s in DEFAULT_FOR_CHILDREN}
    for s, handler in saved.items():
        if handler == signal.SIG_IGN:
            signal.signal(s, _noop)
    yield
    for s, handler in saved.items():
        if handler == signal.SIG_IGN:
            signal.signal(s, signal.SIG_IGN)


#: How often a wait re-checks its condition: a polling interval, not a wait for a state
#: (every wait has its condition and a deadline).
POLL_INTERVAL = 0.01


def wait_for(check: Callable[[], object], what: str = "condition", timeout: float = 20.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail the test at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(POLL_INTERVAL)


def wait_file(path: Path, timeout: float = 20.0) -> str:
    def ready() -> str | None:
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        return text if text.endswith("\n") else None

    result: str = wait_for(ready, f"marker {path}", timeout)
    return result


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in (b"Z", b"X")


def run_skgate(
    *args: str, cwd: Path, timeout: float = 60.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SKGATE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**ENV, **(env or {})},
        check=False,
    )


def start_skgate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*SKGATE, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**ENV, **(env or {})},
    )


def unknown_everywhere(
    cwd: Path, line: str, zh: str, changed: dict[str, object], *answers: tuple[str, ...]
) -> None:
    """Every answer in ``answers`` about the root ``r`` in ``cwd`` is unknown (exit 5) with
    ``line`` first, never a success; its JSON names the breach (``changed``, as
    ``extra.evidence_changed``); the zh report says ``zh`` (C2.5)."""
    for args in answers:
        said = run_skgate(*args, cwd=cwd)
        assert said.returncode == 5, (args, said)
        assert line in said.stdout.splitlines()[0], (args, said.stdout)
        assert "SUCCEEDED" not in said.stdout
    as_json = json.loads(run_skgate("status", "r", "--json", cwd=cwd).stdout)
    assert as_json["state"] == "unknown"
    assert as_json["extra"]["evidence_changed"] == changed
    report = run_skgate("report", "r", "--lang", "zh", cwd=cwd)
    assert report.returncode == 0 and zh in report.stdout, report.stdout


@dataclass(frozen=True)
class GatedRun:
    """One ``skgate run`` under test: its process result and the attempt it recorded."""

    result: subprocess.CompletedProcess[str]
    root: Path

    @property
    def returncode(self) -> int:
        return self.result.returncode

    @property
    def stdout(self) -> str:
        return self.result.stdout

    @property
    def stderr(self) -> str:
        return self.result.stderr

    @property
    def output(self) -> str:
        return self.result.stdout + self.result.stderr

    @property
    def attempt(self) -> Path:
        """The newest attempt of the root (``attempts/NNNN``)."""
        attempts = sorted((self.root / "attempts").glob("[0-9][0-9][0-9][0-9]"))
        assert attempts, f"no attempt recorded under {self.root}: {self.output[-2000:]}"
        return attempts[-1]

    def verdict(self) -> dict[str, Any]:
        data: dict[str, Any] = read_json(self.attempt / "verdict.json")
        return data


def gated_run(
    cwd: Path,
    command: Sequence[str],
    *options: str,
    root: str = "r",
    quiet: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> GatedRun:
    """``skgate run --root ROOT [--quiet] OPTIONS -- COMMAND`` in ``cwd``, waited for."""
    args = ["run", "--root", root, *(["--quiet"] if quiet else []), *options, "--", *command]
    return GatedRun(run_skgate(*args, cwd=cwd, env=env, timeout=timeout), cwd / root)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


#: A failing compile: the summary says one input failed; the leader exits 0.
FAILING = [
    sys.executable,
    "-c",
    "print('[summary] stage=compile inputs=1 succeeded=0 failed=1')",
]


def failed_attempt(tmp: Path) -> Path:
    run = gated_run(tmp, FAILING)
    assert run.verdict()["state"] == "failed", run.output
    return run.attempt


def as_if_runner_died(attempt: Path) -> None:
    """Leave the attempt as a runner killed after the natural return leaves it: no
    finishing files, no ``finished`` event, only the ledger's ``start`` entry."""
    for name in ("verdict.json", "seal.json", "logscan.json", "summary.txt", "census.json"):
        (attempt / name).unlink()
    journal = attempt / "events.jsonl"
    kept = [ln for ln in journal.read_text().splitlines() if '"event":"finished"' not in ln]
    journal.write_text("".join(ln + "\n" for ln in kept))
    unrecord_end(attempt)


def unrecord_end(attempt: Path) -> None:
    """Drop the attempt's ledger entries after its ``start`` (its seal and end), as a
    runner killed before it sealed leaves the ledger. Only this attempt's last entries
    go, byte for byte: the chain of the rest holds."""
    book = attempt.parent.parent / "ledger.jsonl"
    rows = book.read_bytes().splitlines(keepends=True)
    book.write_bytes(
        b"".join(
            r
            for r in rows
            if json.loads(r)["attempt"] != attempt.name or json.loads(r)["event"] == "start"
        )
    )


def events(attempt: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (attempt / "events.jsonl").read_text().splitlines() if x]


def script(tmp: Path, name: str, body: str) -> list[str]:
    """A workload as a Python script run by this interpreter (argv list, no shell)."""
    path = tmp / name
    path.write_text(body)
    return [sys.executable, str(path)]


class Reaper:
    """Processes a test started itself, ended by pid at teardown (never by name)."""

    def __init__(self) -> None:
        self.pids: list[tuple[int, int]] = []
        self.procs: list[subprocess.Popen[Any]] = []

    def add(self, pid: int) -> int:
        """Remember ``pid`` with its start time, so teardown never hits a recycled pid."""
        st = read_stat(pid)
        if st is not None:
            self.pids.append((pid, st.start_ticks))
        return pid

    def popen(self, proc: subprocess.Popen[Any]) -> subprocess.Popen[Any]:
        self.procs.append(proc)
        return proc

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                # A runner told to stop forwards the signal to its own group and records
                # it (C2.4), so its workload does not outlive a failed test; SIGKILL only
                # if it does not finish. Other processes simply end.
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        for pid, ticks in self.pids:
            if is_alive(pid, ticks):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    r = Reaper()
    yield r
    r.cleanup()


def torchair_sim_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a gated torchair-simulator run: markers under ``tmp``, compilers
    named ``sk_*`` (so another checkout's ``opc`` is never this test's), quick opc."""
    markers = tmp / "markers"
    markers.mkdir(exist_ok=True)
    return {
        "SKGATE_SIM_MARKERS": str(markers),
        "SKGATE_SIM_OPC_SECONDS": "0.05",
        "SKGATE_SIM_PROGRAM_PREFIX": "sk_",
        "SKGATE_COMPILER_NAMES": "sk_opc,sk_op_compiler",
        **extra,
    }


@pytest.fixture
def end_leftover_sim(tmp_path: Path) -> Iterator[None]:
    """After the test: :func:`end_leftover_sim_processes` of ``tmp_path / "markers"``."""
    yield
    end_leftover_sim_processes(tmp_path / "markers")


def end_leftover_sim_processes(markers: Path) -> None:
    """End by pid any simulator process a test started that still lives, its identity
    checked by the start time in its own marker: a failed assertion must not leave a
    hanging compile behind on a shared machine."""
    for marker in markers.glob("*.started"):
        info = json.loads(marker.read_text())
        if is_alive(int(info["pid"]), int(info["start_ticks"])):
            os.kill(int(info["pid"]), signal.SIGKILL)


def verdict_words(verdict: dict[str, Any], headline: str) -> str:
    """The headline, every reason, summary line and missing item of a verdict: the text
    an end-to-end case looks for its key words in."""
    summary = verdict.get("summary") or {}
    parts = [headline, *(verdict.get("reasons") or [])]
    parts += summary.get("lines") or []
    parts += [str(m) for m in verdict.get("missing") or []]
    return "\n".join(str(p) for p in parts)


def explain_verdict(returncode: int, verdict: dict[str, Any], headline: str, tail: str) -> str:
    """One assertion message for an end-to-end verdict: exit, state, words, output tail."""
    return (
        f"skgate run exit {returncode}, state {verdict.get('state')}, headline {headline!r}, "
        f"compiled {verdict.get('compiled')}\n{verdict_words(verdict, headline)}\n--- tail ---\n"
        f"{tail}"
    )


class GateVerdictView:
    """What the stand-in suites read of one gated run (their result records mix it in):
    the state, every word of the verdict for a case's key words, and an explanation for a
    failed assertion (the last ``TAIL`` characters of the run's output)."""

    returncode: int
    verdict: dict[str, Any]
    headline: str
    output: str
    TAIL = 2500

    @property
    def state(self) -> str:
        return str(self.verdict.get("state"))

    @property
    def words(self) -> str:
        """Every reason, summary line and missing item, for the key words of a case."""
        return verdict_words(self.verdict, self.headline)

    def explain(self) -> str:
        return explain_verdict(
            self.returncode, self.verdict, self.headline, self.output[-self.TAIL :]
        )


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal a process group a test made, never the test's own (gone already: fine)."""
    if pgid > 1 and pgid != os.getpgrp():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def end_groups_by_env(needle: str) -> None:
    """SIGKILL the group of every process whose environment holds ``needle``
    (``NAME=token``, a token only this test set): what a failed end-to-end case left is
    ended by identity, never by name (C4)."""
    key = needle.encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if key in (entry / "environ").read_bytes().split(b"\0"):
                    signal_group(os.getpgid(int(entry.name)), signal.SIGKILL)


#: The sim's compilers as some tests name them (``sk_op_compiler`` / ``sk_opc``), and the
#: gate told those names: stages are found (C3) and no other checkout's compiler is met (C4).
OWN_SIM_NAMES = "sk_opc,sk_op_compiler"


def own_sim_env(tmp: Path, opc_seconds: str = "0.2") -> dict[str, str]:
    """The environment of a gated sim run whose compilers are named ``sk_*``, with its
    marker directory (``tmp/markers``) made."""
    markers = tmp / "markers"
    markers.mkdir(exist_ok=True)
    return {
        "SKGATE_SIM_MARKERS": str(markers),
        "SKGATE_SIM_OPC_SECONDS": opc_seconds,
        "SKGATE_SIM_PROGRAM_PREFIX": "sk_",
        "SKGATE_COMPILER_NAMES": OWN_SIM_NAMES,
    }


@pytest.fixture
def ends_leftover_sim(tmp_path: Path) -> Iterator[None]:
    """After the test, end by pid whatever sim process it left (see above)."""
    yield
    end_leftover_sim_processes(tmp_path / "markers")


def other_users_compilers() -> list[str]:
    """Live processes named ``opc`` / ``op_compiler`` that this test session did not start
    (other users' compiles on a shared Ascend host, issue 28 s10), as ``name[pid]``.

    The stand-in suites must run under the real names (their launchers call
    ``op_compiler`` by name, as torchair does), so the gate would rightly wait for such a
    process (C4: a foreign compiler is a blocker, never touched). Read-only."""
    from skgate.proc.observe import compiler_processes, read_stat

    mine = os.getpid()
    found = []
    for st, argv in compiler_processes(("opc", "op_compiler")):
        pid, ancestor = st.pid, st.ppid
        while ancestor > 1 and ancestor != mine:
            parent = read_stat(ancestor)
            ancestor = parent.ppid if parent is not None else 0
        if ancestor != mine:
            name = os.path.basename(argv[0]) if argv else st.name
            found.append(f"{name}[{pid}]")
    return found


def skip_beside_other_compilers() -> None:
    """Skip, in one line, a test that needs the real compiler names while another user's
    compiler runs: it would be waited for (C4), not judged."""
    others = other_users_compilers()
    if others:
        pytest.skip(
            "another user's compiler runs on this host ("
            + ", ".join(others[:4])
            + "): this stand-in suite needs the real names and would wait for it (C4); "
            "not judged"
        )


@pytest.fixture(scope="module")
def finished_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An evidence root whose one attempt finished (``run ... -- true``), for the tests
    of what ``skgate status`` loads and how it ends (tests/cli)."""
    work = tmp_path_factory.mktemp("finished")
    done = run_skgate(
        "run", "--root", "r", "--quiet", "--verdict-from", "exit-status", "--", "true", cwd=work
    )
    assert done.returncode == 0, done.stderr
    return work / "r"
