"""Hand-built attempt directories in the shapes of docs/architecture.md (for evidence tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skgate.model.records import (
    Cause,
    Census,
    Ownership,
    PackageMode,
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


def events_for(state: State) -> list[dict[str, Any]]:
    def ev(event: str, dt: float, **kw: Any) -> dict[str, Any]:
        return {"schema": "skgate.event/1", "event": event, "t": T0 + dt, "mono": dt, **kw}

    if state is State.NOT_STARTED:
        return [ev("created", 0), ev("blocked", 0.1, reasons=["foreign opc 900"])]
    out = [
        ev("created", 0),
        ev("preflight", 0.1),
        ev(
            "launched",
            0.2,
            pid=500,
            pgid=500,
            sid=500,
            start_ticks=1500,
            deadline_wall=T0 + 7200,
            timeout=7200.0,
            grace=30.0,
        ),
    ]
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
            (d / "verdict.json").write_text(json.dumps(v.to_dict()), encoding="utf-8")
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
        (d / "verdict.json").write_text(json.dumps(v.to_dict()), encoding="utf-8")
    return d


def live_verdict_of(path: Path) -> Verdict:
    """Stands in for evidence.current_verdict on a hand-built live attempt."""
    return verdict_for(State.IN_PROGRESS, path.name, census(3, 1, 0, True), ())
