"""The run path imports only what a run uses (issue 29): what ``skgate run`` has loaded
at the instant it launches its command, recorded in a real run in a fresh interpreter.

Start-up is mostly imports: before its launch a runner must not load the finishing
machinery (seal, evidence loading, the classifier: loaded while the command runs), nor
build a dataclass (each one costs about a millisecond of ``exec`` on every start: the
journal's events, the run path's records and its mutable working state are
``skgate.model.frozen`` types), nor load standard modules nothing before the launch uses.
A change that brings one of them back fails here, with its name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ENV, wait_for

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
#: temporary directory; the host facts need no ``platform``). ``dataclasses`` (with the
#: ``inspect``, ``ast``, ``dis`` and ``tokenize`` it imports): the run path's working
#: state is ``skgate.model.frozen.mutable``, its records ``record`` (issue 29).
STDLIB_NOT_BEFORE_LAUNCH = {
    "tempfile",
    "platform",
    "tomllib",
    "dataclasses",
    "inspect",
    "ast",
    "dis",
    "tokenize",
    # A run line of the common shape is parsed without it (cli/quick_run.py).
    "argparse",
    "gettext",
    # The command is found on PATH without it (preflight/interpreter.py), and with it
    # bz2, lzma and fnmatch.
    "shutil",
}

#: Loaded by no step of a ``run -- true``, from the parse to the verdict: ``dataclasses``
#: (with ``inspect``), and OpenSSL's ``hashlib`` (``_hashlib``, about 2 ms to load): the
#: hook cache's keys, the ledger chain and the seal of small files use the interpreter's
#: own sha256 (``skgate.evidence.digest.small_sha256``, issue 29). Nor, in a ``--quiet``
#: run (as ``start`` and the API run), the terminal echo and its queue. ``socket`` (the
#: Python layer, whose import converts its constants to enums): the netlink sources and
#: the host name use ``_socket``. ``skgate.model.outcomes``: the run's two modes come from
#: ``skgate.model.modes``, without the seven outcome enums of other commands. The jobs
#: shim: installed only with ``--enforce-jobs``. ``typing`` (about 3 ms): the run path's
#: annotation-only names are imported under ``TYPE_CHECKING``, and the journal's readers
#: evaluate their annotations without ``typing.get_type_hints`` (model/events.py).
NEVER_IN_A_RUN = (
    "dataclasses",
    "inspect",
    "hashlib",
    "_hashlib",
    "skgate.proc.echo",
    "queue",
    "socket",
    "skgate.model.outcomes",
    "skgate.preflight.shim",
    "typing",
)

AT_LAUNCH = (
    f"NEVER_IN_A_RUN = {NEVER_IN_A_RUN!r}\n"
    + """\
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
seen["at_end"] = sorted(m for m in NEVER_IN_A_RUN if m in sys.modules)
from skgate.model.lazy_re import Lazy
seen["compiled"] = sorted(
    f"{name}.{k}"
    for name, mod in list(sys.modules.items())
    if name.startswith("skgate")
    for k, v in list(vars(mod).items())
    if isinstance(v, Lazy) and v._compiled is not None
)
seen["launcher_patterns"] = sys.modules["skgate.evidence.launcher_lines"]._PATTERNS is not None
print(json.dumps({"code": code, **seen}))
"""
)


def read_json_if(path: Path) -> dict[str, object] | None:
    """The JSON file at ``path`` once it exists (written whole, by rename), else None."""
    try:
        got: dict[str, object] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return got


def python_c(code: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter in ``tmp``, the hook-probe cache on (in
    ``tmp``), as a user's runs have it; it must exit 0."""
    env = {**ENV, "SKGATE_HOOK_CACHE": "1", "XDG_CACHE_HOME": str(tmp / "cache")}
    res = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def at_launch(tmp: Path) -> dict[str, object]:
    """What the second of two runs had loaded at its launch: the first one probes the
    start-up hooks and caches the answer, the second uses it (the usual case)."""
    for _ in range(2):
        res = python_c(AT_LAUNCH, tmp, str(tmp / "r"))
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


def test_run_builds_no_dataclass_before_launch_nor_after(tmp_path: Path) -> None:
    """Each generated dataclass costs about a millisecond of ``exec`` on every start-up:
    none is built before the launch (the journal's events, the records and the mutable
    working state of the run path use ``skgate.model.frozen``), nor by the finish (the
    stage records, the loaded evidence, the installed binaries): a ``run -- true``
    waits for its finish too, and ``dataclasses`` brings ``inspect`` with it. Nor does
    any step load OpenSSL's ``hashlib`` (:data:`NEVER_IN_A_RUN`)."""
    got = at_launch(tmp_path)
    assert got["dataclasses"] == [], got["dataclasses"]
    assert got["at_end"] == [], got["at_end"]


#: The only lazily compiled patterns a ``run -- true`` compiles: the command's
#: interpreter test (the owned ``true``'s exec) and the torch-npu lookup in the site
#: directories. The log's (an empty log), the plogs' (none), the outputs' and stage
#: census's (none), the releases' (no torch-npu) stay uncompiled (issue 29).
COMPILED_IN_A_RUN = {"skgate.proc.observe._INTERPRETERS", "skgate.preflight.torch_npu._DIST_INFO"}


def test_a_run_with_an_empty_log_compiles_none_of_the_log_patterns(tmp_path: Path) -> None:
    got = at_launch(tmp_path)
    assert set(got["compiled"]) <= COMPILED_IN_A_RUN, got["compiled"]  # type: ignore[call-overload]
    assert got["launcher_patterns"] is False


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


CALLER_AT_RETURN = """\
import json, sys
from skgate.api import detach

real = detach._started


def started(*args, **kwargs):
    # In the forked runner, at the instant it answers its caller: what it has loaded.
    with open(sys.argv[2], "w") as fh:
        json.dump(sorted(sys.modules), fh)
    return real(*args, **kwargs)


detach._started = started
from skgate.cli.main import main

argv = ["start", "--root", sys.argv[1], "--json", "--verdict-from", "exit-status"]
code = main([*argv, "--", "true"])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_start_answers_before_the_runner_loads_preflight(tmp_path: Path) -> None:
    """``skgate start`` answers once the attempt is recorded (issue 29), and nothing the
    record does not need is on that path: the caller reads the reply without loading
    ``wait``/``stop`` (skgate.api.lifecycle, ~70 modules) or the runner; the forked runner
    answers before it loads the early preflight work (hook scan or cache lookup:
    subprocess, hashlib; the interpreter lookup: shutil) or ctypes, which it begins only
    after the record. The attempt named is recorded, and then runs to its verdict."""
    at_answer = tmp_path / "runner-modules.json"
    res = python_c(CALLER_AT_RETURN, tmp_path, str(tmp_path / "r"), str(at_answer))
    lines = res.stdout.splitlines()
    got = json.loads(lines[-1])
    assert got["code"] == 0, res.stdout
    attempt = Path(json.loads("\n".join(lines[:-1]))["attempt"])
    assert (attempt / "events.jsonl").is_file()
    caller = set(got["modules"])
    assert "skgate.api.detach" in caller and "skgate.api.reply" in caller
    runner_only = {"skgate.api.lifecycle", "skgate.runner.run", "skgate.preflight.early"}
    assert not caller & runner_only, sorted(caller & runner_only)
    runner = set(json.loads(at_answer.read_text()))
    assert "skgate.runner.run" in runner and "skgate.evidence.ledger" in runner
    after_record = {
        "skgate.preflight.early",
        "skgate.preflight.hooks.rounds",
        "skgate.preflight.interpreter",
        "subprocess",
        "hashlib",
        "shutil",
        "ctypes",
    }
    assert not runner & after_record, sorted(runner & after_record)
    verdict = wait_for(lambda: read_json_if(attempt / "verdict.json"), "the verdict", 60)
    assert verdict["state"] == "succeeded", verdict
