"""Hand-built attempt directories in the shapes of docs/architecture.md (for evidence tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skgate.evidence.files import verdict_bytes
from skgate.model.events import VerdictHash
from skgate.model.frozen import replace
from skgate.model.outcomes import PackageMode
from skgate.model.records import (
    Cause,
    Census,
    Ownership,
    ProcessRecord,
    RootCensus,
    Stage,
    State,
    Summary,
    Verdict,
)
from skgate.model.request import RunRequest

T0 = 1_790_000_000.0

SUMMARY_OK = (
    "[summary] stage=compile inputs=4 succeeded=4 failed=0",
    "[summary] stage=package inputs=1 succeeded=1 failed=0",
)
SUMMARY_BAD = (
    "[summary] stage=compile inputs=4 succeeded=3 failed=1",
    "[summary] stage=package inputs=1 succeeded=0 failed=1",
)


def proc(pid: int, name: str, **kw: Any) -> ProcessRecord:
    base: dict[str, Any] = {
        "pid": pid,
        "start_ticks": 1000 + pid,
        "ppid": 1,
        "pgid": 500,
        "sid": 500,
        "argv": (name, "-j", "8"),
        "name": name,
        "first_seen": T0 + 1,
        "last_seen": T0 + 9,
    }
    base.update(kw)
    return ProcessRecord(**base)


def ownership() -> Ownership:
    return Ownership(
        boot_id="b-1",
        runner_pid=400,
        runner_start_ticks=77,
        leader=proc(500, "bash", exit_status=0),
        pgid=500,
        sid=500,
        owned=(proc(500, "bash", exit_status=0), proc(501, "op_compiler"), proc(502, "opc")),
        foreign=(proc(900, "opc", pgid=900, sid=900),),
        complete=True,
        updated_at=T0 + 10,
        scan_interval=1.0,
    )


def census(errors: int, succ: int, runs: int, live: bool) -> Census:
    return Census(
        outputs="/w/static_kernel_compile_outputs",
        exists=True,
        roots=(RootCensus("ts20261101120000000001_pid501_outputs", errors, succ, runs),),
        live=live,
        taken_at=T0 + 10,
    )


def request(retry_of: str | None = None, **kw: Any) -> RunRequest:
    return RunRequest(
        argv=("bash", "run.sh", "--npu-arch=dav-2201"),
        cwd="/w",
        root="/w/skgate-runs",
        timeout=7200.0,
        package_mode=PackageMode.OPTIONAL,
        jobs="8",
        retry_of=retry_of,
        **kw,
    )


def verdict_for(state: State, attempt: str, cen: Census | None, lines: tuple[str, ...]) -> Verdict:
    stages = tuple(
        Stage(n, i, s, f)
        for n, i, s, f in (
            ("compile", 4, 4 if lines == SUMMARY_OK else 3, 0 if lines == SUMMARY_OK else 1),
        )
    )
    summary = Summary(lines=lines, stages=stages) if lines else None
    if state is State.FAILED:
        return Verdict(
            state=state,
            cause=None,
            reasons=(
                "C2.3: the compiler stack returned naturally with exit status 1",
                "C2.3: kept error logs are now final compiler evidence",
            ),
            natural_return=True,
            exit_status=1,
            attempt=attempt,
            census=cen,
            summary=summary,
        )
    if state is State.SUCCEEDED:
        return Verdict(
            state=state,
            cause=None,
            reasons=("C2.2: the compiler stack returned naturally with exit status 0",),
            natural_return=True,
            exit_status=0,
            attempt=attempt,
            census=cen,
            summary=summary,
        )
    if state is State.INTERRUPTED:
        return Verdict(
            state=state,
            cause=Cause.TIMEOUT,
            reasons=(
                "C2.4: the frozen top-level timeout fired; the runner signalled only its own "
                "process group: SIGTERM (timeout)",
                "C2.4: compile evidence is interrupted/invalid, not an operator failure; "
                "a clean retry is required before judging compiler support",
            ),
            exit_signal=15,
            timeout_fired=True,
            attempt=attempt,
            census=cen,
            summary=summary,
        )
    if state is State.UNKNOWN:
        return Verdict(
            state=state,
            cause=None,
            reasons=("C2.5: the runner ended without recording the terminal status",),
            missing=(
                "ownership manifest (ownership.json)",
                "terminal status (the runner's final record)",
            ),
            attempt=attempt,
            census=cen,
            summary=summary,
        )
    if state is State.IN_PROGRESS:
        return Verdict(
            state=state,
            cause=None,
            reasons=(
                "C2.1: the runner that owns this attempt is alive and its frozen timeout has "
                "not fired; keep waiting, observe read-only, kill nothing",
            ),
            attempt=attempt,
            census=cen,
        )
    return Verdict(
        state=State.NOT_STARTED,
        cause=None,
        reasons=("nothing was launched; this is not a compile result", "foreign opc 900"),
        attempt=attempt,
    )


def ev(event: str, dt: float, **kw: Any) -> dict[str, Any]:
    """One journal event ``dt`` seconds after T0."""
    return {"schema": "skgate.event/1", "event": event, "t": T0 + dt, "mono": dt, **kw}


def launched(deadline_in: float = 7200.0) -> dict[str, Any]:
    return ev(
        "launched",
        0.2,
        pid=500,
        pgid=500,
        sid=500,
        start_ticks=1500,
        deadline_wall=T0 + deadline_in,
        timeout=7200.0,
        grace=30.0,
    )


def events_for(state: State) -> list[dict[str, Any]]:

    if state is State.NOT_STARTED:
        return [ev("created", 0), ev("blocked", 0.1, reasons=["foreign opc 900"])]
    out = [ev("created", 0), ev("preflight", 0.1), launched()]
    counts = {"error_logs": 3, "succ_logs": 1, "run_packages": 0}
    out += [ev("observation", 1.0 + i, owned_alive=3, counts=counts) for i in range(5)]
    if state is State.IN_PROGRESS:
        return out
    if state is State.INTERRUPTED:
        out += [
            ev("timeout", 7200.2),
            ev("signal_sent", 7200.3, signal=15, name="SIGTERM", target=-500, reason="timeout"),
            ev("leader_exited", 7201.0, exit_status=None, exit_signal=15),
            ev("tree_ended", 7201.5, escaped_alive=0),
            ev("finished", 7202.0, state="interrupted", cause="timeout"),
        ]
        return out
    if state is State.UNKNOWN:
        return out
    status = 0 if state is State.SUCCEEDED else 1
    out += [
        ev("reaped", 9.0, pid=502, exit_status=0, exit_signal=None),
        ev("leader_exited", 9.5, exit_status=status, exit_signal=None),
        ev("tree_ended", 9.6, escaped_alive=0),
        ev("finished", 10.0, state=state.value, cause=None),
    ]
    return out


def record_verdict(d: Path, v: Verdict) -> None:
    """``verdict.json`` as a runner writes it: its hash journalled first (``verdict_hash``:
    an unsealed attempt's verdict is its own only then, C2.5)."""
    data, sha = verdict_bytes(v.to_dict())
    record = VerdictHash(t=T0, sha256=sha).to_dict()
    with (d / "events.jsonl").open("a", encoding="utf-8") as journal:
        journal.write(json.dumps(record) + "\n")
    (d / "verdict.json").write_bytes(data)


def make_attempt(
    root: Path,
    n: int,
    state: State,
    *,
    retry_of: str | None = None,
    summary_lines: tuple[str, ...] | None = None,
    errors: int = 3,
    runs: int = 0,
    write_verdict: bool = True,
) -> Path:
    """Write attempt ``n`` under ``root/attempts`` with evidence for ``state``."""
    d = root / "attempts" / f"{n:04d}"
    d.mkdir(parents=True)
    aid = f"{n:04d}"
    control = {
        "schema": "skgate.control/1",
        "attempt": aid,
        "created_at": T0,
        "skgate_version": "0.1.0",
        "request": request(retry_of).to_dict(),
        "runner": {"pid": 400, "start_ticks": 77, "boot_id": "b-1"},
        "controls": {
            "jobs": {"value": 8, "source": "probe", "env": "NPU_STATIC_KERNEL_COMPILE_JOBS"},
            "env": {"set": {"NPU_STATIC_KERNEL_COMPILE_JOBS": "8"}, "unset": []},
            "pythonpath": ["/w/src"],
            "python": "/usr/bin/python3",
            "host": {"cpus": 192},
            "hooks": {"found": [], "approved": []},
            "profiler": {"schedule": None},
            "foreign": [],
            "leases": [],
        },
    }
    (d / "control.json").write_text(json.dumps(control), encoding="utf-8")
    events = events_for(state)
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    if state is State.NOT_STARTED:
        if write_verdict:
            v = verdict_for(state, aid, None, ())
            record_verdict(d, v)
        return d
    if state is not State.UNKNOWN:
        (d / "ownership.json").write_text(json.dumps(ownership().to_dict()), encoding="utf-8")
    live = state is State.IN_PROGRESS
    cen = census(errors, 1, runs, live)
    lines = (
        summary_lines
        if summary_lines is not None
        else (SUMMARY_BAD if state is State.FAILED else SUMMARY_OK)
    )
    if state in (State.IN_PROGRESS, State.UNKNOWN):
        lines = summary_lines or ()
    if not live:
        (d / "census.json").write_text(json.dumps(cen.to_dict()), encoding="utf-8")
        (d / "summary.txt").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    if write_verdict and not live:
        v = verdict_for(state, aid, cen, lines)
        record_verdict(d, v)
    return d


def live_verdict_of(path: Path) -> Verdict:
    """Stands in for evidence.current_verdict on a hand-built live attempt."""
    return verdict_for(State.IN_PROGRESS, path.name, census(3, 1, 0, True), ())


# ---------------------------------------------------------------------------
# Attempts for the HTML report: a swallowed failure with stages.json, a large tree, a
# root of many attempts with retries.


def stages_record(
    out_root: str, names: list[str], failed: set[str], jobs: int = 8
) -> dict[str, Any]:
    """A ``skgate.stages/1`` record of one op_compiler (pid 501) after natural return."""
    named = [
        {
            "name": n,
            "outcome": "failed" if n in failed else "succeeded",
            "logs": [
                f"{out_root}/501_compile_log/{n}_compile_"
                + ("error.log" if n in failed else "succ.log")
            ],
        }
        for n in names
    ]
    argv = ["op_compiler", "-p", f"{out_root}/500_opcompile_selected", "-v", "Ascend910B1"]
    argv += ["-j", str(jobs), "-o", out_root, "-l", "error", "-f", "true"]
    return {
        "schema": "skgate.stages/1",
        "stages": [
            {
                "name": "op_compiler pid 501",
                "pid": 501,
                "start_ticks": 1501,
                "argv": argv,
                "parsed": {"jobs": jobs, "output": out_root},
                "first_seen": T0 + 1,
                "last_seen": T0 + 9,
                "ended": True,
                "exit_status": 1 if failed else 0,
                "exit_signal": None,
                "inputs_first_seen": len(names),
                "census": {
                    "params_dir": f"{out_root}/500_opcompile_selected",
                    "output_root": out_root,
                    "params_readable": True,
                    "inputs": len(names),
                    "succeeded": len(names) - len(failed),
                    "failed": len(failed),
                    "no_log": 0,
                    "both_logs": 0,
                    "named": named,
                    "run_packages": [],
                    "unreadable": 0,
                    "after_return": True,
                    "omitted": 0,
                },
            }
        ],
        "peak_opc": min(jobs, len(names)),
        "compiler_names": ["op_compiler", "opc"],
        "complete": True,
    }


SWALLOWED_REASONS = (
    "C2.3: the compiler stack returned naturally with exit status 0",
    "C2.3: the final summary reports failures: stage op_compiler pid 501: 1 of 8 failed",
    "C2.3: kept error logs are now final compiler evidence",
)


def make_swallowed_failure(root: Path, n: int = 1) -> Path:
    """A torchair-like attempt: the launcher exits 0, op_compiler failed one input."""
    d = make_attempt(root, n, State.FAILED, summary_lines=())
    out_root = "/w/static_kernel_compile_outputs/ts20261101120000000001_pid500_outputs"
    names = [f"static_kernel_Op{i}_{i:064x}_500_d0" for i in range(8)]
    (d / "stages.json").write_text(
        json.dumps(stages_record(out_root, names, {names[2]})), encoding="utf-8"
    )
    v = Verdict(
        state=State.FAILED,
        cause=None,
        reasons=SWALLOWED_REASONS,
        natural_return=True,
        exit_status=0,
        attempt=d.name,
        census=census(1, 7, 0, False),
        # As the classifier writes a failed stage's verdict (torchair-swallowed-failure).
        summary_source="op_compiler census",
        compiled=True,
    )
    record_verdict(d, v)
    return d


#: The classifier's reasons for a declared exit status (--verdict-from exit-status, C2).
DECLARED_REASONS = {
    0: "C2.2: the command returned naturally with exit status 0, and its exit status is its "
    "declared final summary (--verdict-from exit-status); no op_compiler was observed and no "
    "compiler summary was read",
    3: "C2.3: the command returned naturally with exit status 3, and its exit status is its "
    "declared final summary (--verdict-from exit-status); no op_compiler was observed: this "
    "is the command's own failure, not a compiler result",
}


def make_plain_command(root: Path, status: int, n: int = 1) -> Path:
    """A plain command judged by its declared exit status (0 succeeded, 3 failed)."""
    state = State.SUCCEEDED if status == 0 else State.FAILED
    d = make_attempt(root, n, state, summary_lines=(), errors=0)
    v = Verdict(
        state=state,
        cause=None,
        reasons=(DECLARED_REASONS[status],),
        natural_return=True,
        exit_status=status,
        attempt=d.name,
        census=census(0, 0, 0, False),
        summary_source="exit status",
    )
    record_verdict(d, v)
    return d


def make_big_attempt(root: Path, processes: int, n: int = 1) -> Path:
    """A succeeded attempt whose tree had ``processes`` owned processes (opc, 16 at once)."""
    d = make_attempt(root, n, State.SUCCEEDED)
    opc = max(processes - 2, 0)
    span = 600.0
    each = span * 16 / max(opc, 1)
    leader = proc(500, "bash", exit_status=0, first_seen=T0 + 0.2, last_seen=T0 + span + 2)
    stage = proc(
        501, "op_compiler", ppid=500, exit_status=0, first_seen=T0 + 0.5, last_seen=T0 + span + 1
    )
    kids = []
    for i in range(opc):
        start = T0 + 1 + (i // 16) * each
        kids.append(
            proc(
                1000 + i,
                "opc",
                ppid=501,
                argv=("opc", f"/w/in/op{i}.json", "--jobs=16"),
                first_seen=start,
                last_seen=start + each * 0.9,
                exit_status=1 if i % 997 == 5 else 0,
            )
        )
    own = Ownership(
        boot_id="b-1",
        runner_pid=400,
        runner_start_ticks=77,
        leader=leader,
        pgid=500,
        sid=500,
        owned=(leader, stage, *kids),
        foreign=(),
        complete=True,
        updated_at=T0 + span + 3,
        scan_interval=0.25,
    )
    (d / "ownership.json").write_text(json.dumps(own.to_dict()), encoding="utf-8")

    events = [ev("created", 0), launched(7200.2)]
    for k in range(60):
        done = min(opc, int(opc * k / 60))
        events.append(
            ev(
                "observation",
                1 + k * 10,
                owned_alive=18,
                counts={"error_logs": 16, "succ_logs": done, "run_packages": 0},
            )
        )
    events += [ev("reaped", p.last_seen - T0, pid=p.pid, exit_status=p.exit_status) for p in kids]
    events += [
        ev("leader_exited", span + 2, pid=500, exit_status=0, exit_signal=None),
        ev("tree_ended", span + 2.1, escaped_alive=0),
        ev("finished", span + 2.5, state="succeeded", cause=None),
    ]
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return d


def make_many(root: Path, count: int = 50) -> list[Path]:
    """``count`` attempts: mostly successes, some failures, interruptions each retried."""
    out: list[Path] = []
    n = 1
    while n <= count:
        k = n % 10
        if k == 3 and n < count:
            first = make_attempt(root, n, State.INTERRUPTED)
            second = make_attempt(root, n + 1, State.SUCCEEDED, retry_of=str(first))
            out += [first, second]
            n += 2
            continue
        state = State.FAILED if k == 7 else State.UNKNOWN if k == 9 else State.SUCCEEDED
        out.append(make_attempt(root, n, state))
        n += 1
    return out


def make_sigkill_timeout(root: Path, n: int = 1) -> Path:
    """An interrupted attempt whose opc ignored SIGTERM: SIGTERM, grace, then SIGKILL."""
    d = make_attempt(root, n, State.INTERRUPTED)
    kids = [
        proc(502, "opc", ppid=501, first_seen=T0 + 1, last_seen=T0 + 7231.0, exit_signal=9),
        proc(503, "opc", ppid=501, first_seen=T0 + 1, last_seen=T0 + 3, exit_status=0),
    ]
    leader = proc(500, "bash", first_seen=T0 + 0.2, last_seen=T0 + 7201.0, exit_signal=15)
    stage = proc(
        501, "op_compiler", ppid=500, first_seen=T0 + 0.5, last_seen=T0 + 7201.0, exit_signal=15
    )
    own = replace(ownership(), leader=leader, owned=(leader, stage, *kids))
    (d / "ownership.json").write_text(json.dumps(own.to_dict()), encoding="utf-8")
    events = [
        e for e in events_for(State.INTERRUPTED) if e["event"] not in ("tree_ended", "finished")
    ]

    events += [
        ev("reaped", 7201.0, pid=501, exit_status=None, exit_signal=15),
        ev("signal_sent", 7230.3, signal=9, name="SIGKILL", target=-500, reason="grace-expired"),
        ev("reaped", 7231.0, pid=502, exit_status=None, exit_signal=9),
        ev("tree_ended", 7231.1, escaped_alive=0),
        ev("finished", 7231.5, state="interrupted", cause="timeout"),
    ]
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    v = verdict_for(State.INTERRUPTED, d.name, census(3, 1, 0, False), ())
    v = replace(
        v,
        reasons=(
            "C2.4: the frozen top-level timeout fired; the runner signalled only its own "
            "process group: SIGTERM (timeout), SIGKILL (grace-expired)",
            v.reasons[1],
        ),
    )
    record_verdict(d, v)
    return d
