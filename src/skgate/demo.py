"""``skgate demo``: the CANN simulator under the gate, one scenario at a time.

The demo is the only part of skgate besides the tests that knows the simulator: it runs
``python -m skgate.sim.launcher`` exactly as a user would run their own launcher, through
the same :func:`skgate.runner.run_here`. Each scenario states the verdict the gate must
give; the demo exits 0 when it did, 1 when it did not.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest
from skgate.runner import run_here


@dataclass(frozen=True)
class Scenario:
    faults: str
    expect: State
    what: str
    timeout: float = 60.0
    grace: float = 2.0
    inputs: int = 8


SCENARIOS: dict[str, Scenario] = {
    "success": Scenario("", State.SUCCEEDED, "a healthy compile: natural return, all inputs ok"),
    "input-failure": Scenario(
        "fail=2",
        State.FAILED,
        "one input fails: the compiler returns naturally with a failure (C2.3)",
    ),
    "hang-timeout": Scenario(
        "hang=1",
        State.INTERRUPTED,
        "one opc never finishes: the frozen timeout fires, the own group is stopped (C4)",
        timeout=3.0,
        grace=1.0,
    ),
    "leader-exits-early": Scenario(
        "leader_exit_early",
        State.SUCCEEDED,
        "the launcher exits while opc children still run: the gate waits for them (C2.1)",
    ),
    "escape": Scenario(
        "escape=1",
        State.SUCCEEDED,
        "an opc descendant leaves the group with setsid: watched, waited for, never signalled",
    ),
    "ignore-sigterm": Scenario(
        "hang=0,ignore_sigterm",
        State.INTERRUPTED,
        "an opc ignores SIGTERM at the timeout: SIGKILL to the own group after the grace",
        timeout=3.0,
        grace=1.0,
    ),
}


#: The one-factor-at-a-time diagnosis (C6, last bullet): a small matrix, not one attempt.
DIAGNOSE = "diagnose"


def scenario_names() -> list[str]:
    return sorted([*SCENARIOS, DIAGNOSE])


def _diagnose(where: Path, out: TextIO) -> int:
    # Imported here: the regression matrix is only needed by this scenario.
    from skgate.regress.matrix.demo import demo_diagnose  # noqa: PLC0415

    print(
        "skgate demo: scenario diagnose: a baseline and one arm per factor, each changing "
        "exactly one thing (C6); only the start-up hook arm should fail",
        file=out,
    )
    print(f"skgate demo: working directory {where}", file=out)
    lines, ok = demo_diagnose(where, lambda s: print(f"skgate demo: {s}", file=out))
    print("\n".join(lines), file=out)
    print(
        "skgate demo: attribution "
        + ("as it should be" if ok else "NOT what this scenario must give"),
        file=out,
    )
    return 0 if ok else 1


def scenario_request(name: str, workdir: Path, *, quiet: bool = False) -> RunRequest:
    sc = SCENARIOS[name]
    argv = [sys.executable, "-m", "skgate.sim.launcher", "--inputs", str(sc.inputs)]
    if sc.faults:
        argv += ["--fault", sc.faults]
    return RunRequest(
        argv=tuple(argv),
        cwd=str(workdir),
        root=str(workdir / "skgate-runs"),
        timeout=sc.timeout,
        grace=sc.grace,
        jobs="4",
        completion_marker=r"skgate-sim: inference completed",
        env={"SKGATE_SIM_OPC_SECONDS": "0.2"},
        quiet=quiet,
        scan_interval=0.25,
    )


def run_demo(
    name: str,
    *,
    workdir: str | None,
    lang: str,
    as_json: bool,
    show: Callable[[Verdict, bool], None],
) -> int:
    where = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"skgate-demo-{name}-"))
    where.mkdir(parents=True, exist_ok=True)
    out = sys.stderr if as_json else sys.stdout
    if name == DIAGNOSE:
        return _diagnose(where, out)
    sc = SCENARIOS[name]
    print(f"skgate demo: scenario {name}: {sc.what}", file=out)
    print(f"skgate demo: working directory {where}", file=out)

    def echo(data: bytes) -> None:
        out.buffer.write(data)
        out.buffer.flush()

    verdict = run_here(scenario_request(name, where), echo)
    print(file=out)
    show(verdict, as_json)
    if not as_json:
        _print_report(verdict, lang)
    ok = verdict.state is sc.expect
    print(
        f"skgate demo: expected {sc.expect.value}, the gate said {verdict.state.value}: "
        + ("as it should" if ok else "NOT what this scenario must give"),
        file=out,
    )
    return 0 if ok else 1


def _print_report(verdict: Verdict, lang: str) -> None:
    if verdict.attempt is None:
        return
    # Imported here: the report is only needed once the demo has a verdict to show.
    from skgate.report import markdown as report  # noqa: PLC0415

    print()
    print(report.render_attempt_markdown(Path(verdict.attempt), lang=lang))
