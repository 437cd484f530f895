"""Foreign compilers (C4): compilers this attempt does not own are blockers to wait for
or refuse, never signalled."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from skgate.model.errors import UsageError
from skgate.model.records import ProcessRecord, RunRequest
from skgate.proc.observe import COMPILER_NAMES, compiler_processes

Emit = Callable[..., object]

#: Comma-separated compiler process names to treat as foreign compilers (C4).
COMPILER_NAMES_VAR = "SKGATE_COMPILER_NAMES"
FOREIGN_POLL = 0.5


def compiler_names(request: RunRequest, env: Mapping[str, str]) -> tuple[str, ...]:
    """The compiler process names of the foreign check and of stages (C3, C4)."""
    if request.compiler_names:
        return tuple(request.compiler_names)
    raw = env.get(COMPILER_NAMES_VAR, "")
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    return names or COMPILER_NAMES


def foreign_step(
    request: RunRequest,
    env: Mapping[str, str],
    *,
    wait: bool,
    deadline: float,
    emit: Emit | None,
) -> tuple[dict[str, Any], list[str], tuple[ProcessRecord, ...]]:
    """List compilers this attempt does not own; refuse or wait. Never signal (C4)."""
    policy = request.foreign_policy
    if policy not in ("wait", "refuse"):
        raise UsageError(f"--foreign {policy!r} is not valid; use 'wait' or 'refuse'")
    names = compiler_names(request, env)
    seen: dict[tuple[int, int], ProcessRecord] = {}
    started = time.monotonic()
    announced = False
    while True:
        now = time.time()
        current = compiler_processes(names, exclude=(os.getpid(),))
        for st, argv in current:
            key = (st.pid, st.start_ticks)
            old = seen.get(key)
            seen[key] = ProcessRecord(
                pid=st.pid,
                start_ticks=st.start_ticks,
                ppid=st.ppid,
                pgid=st.pgid,
                sid=st.sid,
                argv=argv,
                name=st.name,
                first_seen=old.first_seen if old else now,
                last_seen=now,
            )
        if not current:
            break
        alive = [f"{st.name}[{st.pid}]" for st, _ in current]
        if policy == "refuse" or not wait or time.monotonic() >= deadline:
            break
        if not announced and emit is not None:
            emit(
                "preflight",
                step="foreign_wait",
                processes=[seen[(s.pid, s.start_ticks)].to_dict() for s, _ in current],
                timeout=request.lease_timeout,
            )
            announced = True
        time.sleep(min(FOREIGN_POLL, max(deadline - time.monotonic(), 0.0)))
    waited = round(time.monotonic() - started, 3)
    blocked: list[str] = []
    note = None
    if current and (policy == "refuse" or wait):
        shown = ", ".join(alive[:6]) + (" ..." if len(alive) > 6 else "")
        if policy == "refuse":
            why = "--foreign refuse"
        else:
            why = f"still running after {waited:g} s (--lease-timeout {request.lease_timeout:g})"
        blocked.append(
            f"foreign compiler processes not owned by this attempt: {shown}; {why}. skgate never "
            "signals them (C4): wait for them to finish, or use an isolated host/device"
        )
    elif current:
        note = (
            f"{len(current)} foreign compiler process(es) alive, not waited for "
            f"(a run with --foreign wait waits up to --lease-timeout {request.lease_timeout:g} s)"
        )
    elif announced and emit is not None:
        emit("preflight", step="foreign_cleared", waited_s=waited)
    record = {
        "policy": policy,
        "names": list(names),
        "seen": [r.to_dict() for r in seen.values()],
        "alive_at_end": len(current),
        "waited_s": waited,
        "note": note,
    }
    return record, blocked, tuple(seen.values())
