"""The run path imports only what a run uses (issue 29): what ``skgate run`` has loaded
at the instant it launches its command, recorded in a real run in a fresh interpreter.

Start-up is mostly imports: before its launch a runner must not load the finishing
machinery (seal, evidence loading, the classifier: loaded while the command runs), nor
build a dataclass outside the few listed here (each one costs about a millisecond of
``exec`` on every start: the journal's events and the run path's frozen records are
``skgate.model.frozen`` records), nor load standard modules nothing before the launch
uses. A change that brings one of them back fails here, with its name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ENV

#: Loaded only once the command runs or has returned (runner/run.py ``_FINISHING``).
FINISHING = {
    "skgate.evidence.seal",
    "skgate.evidence.load",
    "skgate.verdict.classify",
    "skgate.evidence.installed",
    "skgate.report",
    "skgate.read.liveness",
}
#: Standard modules nothing before the launch needs (a cached hook-probe answer needs no
#: temporary directory; the host facts need no ``platform``).
STDLIB_NOT_BEFORE_LAUNCH = {"tempfile", "platform", "tomllib"}
#: The dataclasses still built before the launch, by module: mutable working state
#: (plain classes would do too) and records other layers build with ``dataclasses``.
#: Add to it only with a reason: each costs every ``skgate run`` and ``start``.
DATACLASSES_ALLOWED = {
    "skgate.evidence.census.FirstNames",
    "skgate.evidence.diskfull.DiskFull",
    "skgate.evidence.diskfull.DiskFullRecord",
    "skgate.evidence.follow.Progress",
    "skgate.evidence.intent.LaunchIntent",
    "skgate.preflight.prepare.LaunchPlan",
    "skgate.proc.events.ProcEvent",
    "skgate.proc.leases.LeaseSet",
    "skgate.proc.owned.Folded",
    "skgate.proc.sources.Sources",
    "skgate.proc.supervisor_types.Outcome",
    "skgate.runner.watch.Watcher",
}

AT_LAUNCH = """\
import json, sys
from skgate.proc import supervise

seen = {}
real = supervise.Supervisor.launch


def launch(self, *args, **kwargs):
    seen["modules"] = sorted(sys.modules)
    seen["dataclasses"] = sorted(
        f"{name}.{k}"
        for name, mod in list(sys.modules.items())
        if name.startswith("skgate")
        for k, v in list(vars(mod).items())
        if isinstance(v, type) and "__dataclass_fields__" in vars(v) and v.__module__ == name
    )
    return real(self, *args, **kwargs)


supervise.Supervisor.launch = launch
from skgate.cli.main import main

code = main(["run", "--root", sys.argv[1], "--quiet", "--verdict-from", "exit-status",
             "--", "true"])
print(json.dumps({"code": code, **seen}))
"""


def at_launch(tmp: Path) -> dict[str, object]:
    """What the second of two runs had loaded at its launch: the first one probes the
    start-up hooks and caches the answer, the second uses it (the usual case)."""
    env = {**ENV, "SKGATE_HOOK_CACHE": "1", "XDG_CACHE_HOME": str(tmp / "cache")}
    for _ in range(2):
        res = subprocess.run(
            [sys.executable, "-c", AT_LAUNCH, str(tmp / "r")],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stdout + res.stderr
    got: dict[str, object] = json.loads(res.stdout.splitlines()[-1])
    assert got["code"] == 0 and got["modules"], got
    control = json.loads((tmp / "r" / "attempts" / "0002" / "control.json").read_text())
    assert control["controls"]["hooks"]["probe_answer"] == "cached"
    return got


def test_run_loads_nothing_before_launch_that_only_finishing_needs(tmp_path: Path) -> None:
    got = at_launch(tmp_path)
    loaded = set(got["modules"])  # type: ignore[call-overload]
    assert "skgate.runner.run" in loaded and "skgate.proc.supervise" in loaded
    early = {m for m in loaded if any(m == f or m.startswith(f + ".") for f in FINISHING)}
    assert not early, sorted(early)
    assert not loaded & STDLIB_NOT_BEFORE_LAUNCH, sorted(loaded & STDLIB_NOT_BEFORE_LAUNCH)


def test_run_builds_no_dataclass_before_launch_beyond_the_listed_ones(tmp_path: Path) -> None:
    built = set(at_launch(tmp_path)["dataclasses"])  # type: ignore[call-overload]
    assert "skgate.model.events.Created" not in built  # the journal's events are records
    assert built <= DATACLASSES_ALLOWED, sorted(built - DATACLASSES_ALLOWED)


def test_start_records_its_attempt_without_the_dataclasses_module() -> None:
    """``skgate start`` answers once the attempt is recorded (issue 29): the caller's
    imports and the forked runner's up to its record build no dataclass, so neither
    ``dataclasses`` nor what it loads (``inspect``, ``ast``, ``dis``, ``tokenize``) is
    imported on that path."""
    code = (
        "import sys; import skgate.cli.main, skgate.cli.specs, skgate.cli.agents, "
        "skgate.api.detach, skgate.preflight.early, skgate.runner.run, skgate.model.protocol; "
        "print(' '.join(sorted(sys.modules)))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True
    )
    loaded = set(res.stdout.split())
    assert "skgate.runner.run" in loaded
    assert not loaded & {"dataclasses", "inspect"}, sorted(loaded & {"dataclasses", "inspect"})
