"""skgate against a second, independent stand-in of a torchair / CANN static compile (issue 19).

``tests/standin2/`` was written from torchair's public ``static_kernel.py`` and the
facts cited in its README, not from skgate's simulator, census or the first stand-in.
Each case runs ``skgate run`` on it as a user would and asserts what the contract
requires (C2: the five states; C8: the package), never what skgate prints today. Where
skgate disagrees, the case is ``xfail(strict=True)`` with the disagreement as its reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    GateVerdictView,
    end_groups_by_env,
    signal_group,
    skip_beside_other_compilers,
)

# End-to-end runs of a second or more each: left out of the fast selection (README).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def not_beside_other_compilers() -> None:
    """Issue 28 s10: beside another user's real-named compiler these runs would only wait
    for it (C4); they skip with one line instead of hanging or failing."""
    skip_beside_other_compilers()


HERE = Path(__file__).resolve().parent / "standin2"
LAUNCHER = HERE / "npugraph_standin.py"
BIN = HERE / "bin"
RUN_TIMEOUT_S = 120.0
#: Three inputs, two of them of the SAME op type with different shapes.
SAME_TYPE = "HcPre:bfloat16:32x4x5120,HcPre:bfloat16:8x4x5120,MatMulV2:float:1x2048"

#: Default dispositions for SIGHUP/SIGTERM whatever pytest inherited, then exec.
_RESET_EXEC = (
    "import os, signal, sys\n"
    "for s in (signal.SIGHUP, signal.SIGTERM):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


@dataclass
class Result(GateVerdictView):
    returncode: int
    verdict: dict[str, Any]
    reclassified: dict[str, Any]
    headline: str
    output: str


@dataclass
class Scene:
    """A work directory, a fake ASCEND_HOME_PATH and the stand-in first on PATH."""

    tmp: Path
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def work(self) -> Path:
        return self.tmp / "work"

    @property
    def outputs(self) -> Path:
        return self.work / "static_kernel_compile_outputs"

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STANDIN2_")}
        env.pop("TORCH_COMPILE_DEBUG", None)
        env.pop("PYTHONPATH", None)  # the stand-in is standard library only
        # ``#!/usr/bin/env python3`` of op_compiler/opc finds this interpreter first.
        path = [str(BIN), str(Path(sys.executable).parent), env.get("PATH", "")]
        env.update(PATH=os.pathsep.join(path), ASCEND_HOME_PATH=str(self.tmp / "Ascend/cann"))
        env.update(SKGATE_COMPILER_NAMES="opc,op_compiler", STANDIN2_TOKEN=self.token)
        env.update(extra)
        return env

    def launch(self, args: list[str], extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """The stand-in alone, not gated: a seed run before the attempt under test."""
        self.work.mkdir(parents=True, exist_ok=True)
        (self.tmp / "Ascend/cann").mkdir(parents=True, exist_ok=True)
        return subprocess.run(
            [sys.executable, str(LAUNCHER), *args],
            cwd=self.work,
            env=self.env(extra),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )

    def gate(
        self, args: list[str], extra: dict[str, str], options: list[str], via_link: bool = False
    ) -> Result:
        self.work.mkdir(parents=True, exist_ok=True)
        cwd = self.work
        if via_link:  # as a shell user under a linked home: cwd and PWD name the link
            cwd = self.tmp / "link"
            cwd.symlink_to(self.work, target_is_directory=True)
            extra = {**extra, "PWD": str(cwd)}
        (self.tmp / "Ascend/cann").mkdir(parents=True, exist_ok=True)
        root = self.tmp / "runs"
        skgate = [str(Path(sys.executable).parent / "skgate")]
        argv = [sys.executable, "-c", _RESET_EXEC, *skgate, "run", "--root", str(root)]
        argv += ["--timeout", "120", "--lease-timeout", "30", "--json", *options, "--"]
        argv += [sys.executable, str(LAUNCHER), *args]
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env(extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.procs.append(proc)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
        try:
            verdict = json.loads(out)
        except json.JSONDecodeError:
            pytest.fail(f"skgate run --json gave no JSON (exit {proc.returncode}):\n{out}\n{err}")
        # C2: the classifier is a pure function of the archive; recomputing must agree.
        again = subprocess.run(
            [*skgate, "classify", str(verdict["attempt"]), "--json"],
            cwd=self.work,
            env=self.env(extra),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        # What a reader sees first: the headline of ``skgate status`` (C2, C7).
        status = subprocess.run(
            [*skgate, "status", str(verdict["attempt"])],
            cwd=self.work,
            env=self.env(extra),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        headline = (status.stdout.splitlines() or [""])[0]
        return Result(proc.returncode, verdict, json.loads(again.stdout), headline, err)

    def cleanup(self) -> None:
        """End what this test started: skgate's group, then any group of a process that
        carries this test's token (the workload runs in a session skgate made)."""
        for proc in self.procs:
            if proc.poll() is None:
                signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
        end_groups_by_env(f"STANDIN2_TOKEN={self.token}")


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    s = Scene(tmp_path)
    try:
        yield s
    finally:
        s.cleanup()


# --- seeds: what an earlier run leaves before the attempt under test -------------------


def seed_cache(scene: Scene) -> None:
    seeded = scene.launch(["--graph", SAME_TYPE], {})
    assert seeded.returncode == 0, seeded.stderr
    assert list(scene.outputs.glob("static_kernel_cache/CANN-*.json")), "seed wrote no cache"


def seed_cache_then_lose_run(scene: Scene) -> None:
    seed_cache(scene)
    for run in scene.outputs.glob("ts*_outputs/*.run"):
        run.unlink()


def seed_failed_run(scene: Scene) -> None:
    """An earlier failed compile: its error log stays in its own ts root, no cache entry."""
    seeded = scene.launch(["--graph", SAME_TYPE], {"STANDIN2_FAIL": "MatMulV2"})
    assert "execute op_compiler error" in seeded.stderr
    assert list(scene.outputs.glob("ts*_outputs/*_compile_log/*_compile_error.log"))


def seed_compiled(scene: Scene) -> None:
    seeded = scene.launch(["--graph", SAME_TYPE, "--disable-cache"], {})
    assert seeded.returncode == 0, seeded.stderr


def seed_multicard(scene: Scene) -> None:
    graphs = ["--graph", SAME_TYPE, "--graph", "Add:float16:16x16"]
    seeded = scene.launch(["--ranks", "2", *graphs], {})
    assert seeded.returncode == 0, seeded.stderr
    assert list(scene.outputs.glob("static_kernel_cache/CANN-*.json")), "seed wrote no cache"


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...] = ("--graph", SAME_TYPE)
    env: tuple[tuple[str, str], ...] = ()
    options: tuple[str, ...] = ()
    seed: Callable[[Scene], None] | None = None
    state: str = "succeeded"
    compiled: bool | None = True
    words: tuple[str, ...] = ()
    not_words: tuple[str, ...] = ()  # words the verdict must not use (C7)
    compiles: int = 1  # op_compiler runs the stand-in made in the attempt (its log dirs)
    also: tuple[str, ...] = ()  # another state the contract allows where evidence can't decide
    via_link: bool = False  # the work directory reached through a symbolic link
    outputs_link: bool = False  # static_kernel_compile_outputs a link to another disk
    bad: str = ""  # the xfail reason: what skgate says vs what the contract requires


# Exit codes of `skgate run` (docs/contract.md C2): 0 succeeded, 1 failed, 4 interrupted,
# 5 unknown.
EXIT = {"succeeded": 0, "failed": 1, "interrupted": 4, "unknown": 5}

CASES: dict[str, Case] = {
    # C2.2: every input of the one stage has its succ log, the package is there, exit 0.
    "same-type-shapes-opdef-hash": Case(),
    "same-type-shapes-file-hash": Case(env=(("STANDIN2_HASH", "file"),)),
    "optype-hash-worker-pid": Case(
        env=(("STANDIN2_HASH", "optype"), ("STANDIN2_LOG_PID", "worker")),
    ),
    "d0-d1-logs": Case(env=(("STANDIN2_VARIANTS", "2"),)),
    "d0-d1-logs-worker-pid": Case(
        env=(("STANDIN2_VARIANTS", "2"), ("STANDIN2_LOG_PID", "worker")),
    ),
    "cann9-f-true-output-in-log": Case(args=("--graph", SAME_TYPE, "--cann", "9.0.0")),
    "log-level-4-no-l": Case(env=(("ASCEND_GLOBAL_LOG_LEVEL", "4"),)),
    # Two graphs in one process: the second dumps 3, selects only the new one (dedup by
    # sha256 across graphs): two stages, the second with fewer inputs than its _opcompile/.
    "selected-fewer-than-dumped": Case(
        compiles=2,
        args=("--graph", SAME_TYPE, "--graph", SAME_TYPE + ",Add:float16:16x16"),
    ),
    # The second graph holds only ops compiled already: its selected dir stays empty, no
    # op_compiler runs for it (torchair: "Static compilation skipped"). C2.2: the only
    # stage succeeded; the skipped root is no stage and compiled nothing to judge.
    "second-graph-all-compiled": Case(args=("--graph", SAME_TYPE, "--graph", SAME_TYPE)),
    "blacklisted-op": Case(args=("--graph", SAME_TYPE, "--blacklist", "MatMulV2")),
    # Rank 1 has one op whose name collides with rank 0's (different attrs): X_1.json.
    "multicard-gathered": Case(
        args=(
            "--ranks",
            "2",
            "--graph",
            SAME_TYPE,
            "--graph",
            "HcPre:bfloat16:32x4x5120:r1,MatMulV2:float:1x2048,Add:float16:16x16",
        ),
    ),
    # C2.3: a naturally returned stage with a failed input is failed, whatever the
    # launcher's exit 0 (torchair swallows op_compiler's exit 1).
    "partial-failure-exit-1": Case(
        env=(("STANDIN2_FAIL", "HcPre_bfloat16_ND_8_4"),),
        state="failed",
        words=("HcPre",),
    ),
    # op_compiler exits 0 with a package of the others; one log stays error-named.
    "partial-failure-exit-0": Case(
        env=(("STANDIN2_FAIL", "HcPre_bfloat16_ND_8_4"), ("STANDIN2_PARTIAL_EXIT", "0")),
        state="failed",
        words=("HcPre",),
    ),
    "partial-failure-worker-pid": Case(
        env=(("STANDIN2_FAIL", "MatMulV2"), ("STANDIN2_LOG_PID", "worker")),
        state="failed",
        words=("MatMulV2",),
    ),
    "all-inputs-fail": Case(env=(("STANDIN2_FAIL", "_"),), state="failed"),
    "multicard-partial-failure": Case(
        args=("--ranks", "2", "--graph", SAME_TYPE, "--graph", "Add:float16:16x16"),
        env=(("STANDIN2_FAIL", "Add_"),),
        state="failed",
        words=("Add",),
    ),
    # The compiler died of a signal: no natural return of the stage, so no final summary
    # (C2.5, docs/contract.md "otherwise the summary is missing: unknown, never failed").
    "op_compiler-killed-by-signal": Case(
        env=(("STANDIN2_KILL_SELF", "1"),), state="unknown", compiled=None
    ),
    # C2 (cache): a stage that installed a cached package compiled nothing; the run
    # succeeded, "without compiling".
    "silent-cache-hit": Case(
        compiles=0, seed=seed_cache, compiled=False, words=("without compiling",)
    ),
    "debug-cache-hit": Case(
        compiles=0,
        env=(("TORCH_COMPILE_DEBUG", "1"),),
        seed=seed_cache,
        compiled=False,
        words=("without compiling",),
    ),
    # A cached .run gone: a silent miss, then a real compile.
    "cached-run-gone-recompiles": Case(seed=seed_cache_then_lose_run),
    # C1: an error log an EARLIER run left in its own ts root is none of this attempt's.
    "stale-error-log-other-root": Case(seed=seed_failed_run),
    # An earlier, successful compile's succ logs and package in another root (cache off).
    "earlier-root-compiled": Case(
        args=("--graph", SAME_TYPE, "--disable-cache"), seed=seed_compiled
    ),
    # C2.3: the top-level exit status is non-zero, after a compile whose every input
    # succeeded. C7: "naturally returned final compiler failures" is the phrase for a
    # compiler that returned and failed; this compiler did not fail.
    "launcher-exits-nonzero": Case(
        args=("--graph", SAME_TYPE, "--fail-after"),
        state="failed",
        not_words=("compiler failures", "kept error logs"),
    ),
    # C8: no .run after natural return fails in required mode.
    "no-package-required": Case(
        env=(("STANDIN2_NO_RUN", "1"),),
        options=("--package", "required"),
        state="failed",
        compiled=None,
    ),
    # docs/contract.md: a stage is a final summary only with its .run under its root.
    "no-package-optional": Case(
        env=(("STANDIN2_NO_RUN", "1"),),
        options=("--package", "optional"),
        state="unknown",
        compiled=None,
    ),
    # A log that pairs with no input is named and never makes a success (C2).
    "unpairable-extra-log": Case(
        env=(("STANDIN2_EXTRA_LOG", "SuperKernel"),), state="unknown", compiled=None
    ),
    # torchair does not catch FileNotFoundError: the launcher dies, exit 1, no compiler.
    "op_compiler-missing": Case(
        compiles=0,
        env=(("PATH", str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin"),),
        state="failed",
        compiled=None,
        words=("no compiler process",),
    ),
}


CASES.update(
    {
        # Real name forms of fact 1c that a name parser can trip on: an op with no inputs
        # (``<OpType>_<n>.json``), a format with an underscore, eight inputs of one type.
        "odd-input-names": Case(
            args=("--graph", "Fill:float:-,MatMulV2:float16:16x16::FRACTAL_NZ,Cast:int8:4"),
        ),
        "eight-shapes-one-type": Case(
            args=("--graph", ",".join(f"HcPre:bfloat16:{n}x4x5120" for n in range(1, 9))),
            env=(("STANDIN2_VARIANTS", "2"),),
        ),
        "file-hash-d0-d1": Case(env=(("STANDIN2_HASH", "file"), ("STANDIN2_VARIANTS", "2"))),
        "p-is-opcompile-dir": Case(args=("--graph", SAME_TYPE, "--p-opcompile")),
        "debug-real-compile": Case(env=(("TORCH_COMPILE_DEBUG", "1"),)),
        "cann9-partial-failure": Case(
            args=("--graph", SAME_TYPE, "--cann", "9.0.0"),
            env=(("STANDIN2_FAIL", "MatMulV2"),),
            state="failed",
            words=("MatMulV2",),
        ),
        # Two graphs, two stages: the first succeeds, the second fails (C2.3: every stage).
        "second-stage-fails": Case(
            compiles=2,
            args=("--graph", SAME_TYPE, "--graph", "Add:float16:16x16"),
            env=(("STANDIN2_FAIL", "Add_"),),
            state="failed",
            words=("Add",),
        ),
        # Everything blacklisted: empty selection, no op_compiler, no cache lookup.
        # Issue 27: every input blacklisted is a compile torchair skips by design, seen on
        # disk (<pid>_opcompile_blacklist/): succeeded without compiling, never unknown.
        "all-blacklisted": Case(
            compiles=0,
            args=("--graph", SAME_TYPE, "--blacklist", "_"),
            compiled=False,
            words=("without compiling", "blacklisted to"),
        ),
        # The same, with a cache from an earlier run whose key is NOT this root's: no
        # package was installed, so "a cached package was installed" would be false.
        "all-blacklisted-with-other-cache": Case(
            compiles=0,
            args=("--graph", SAME_TYPE, "--blacklist", "_"),
            seed=seed_cache,
            compiled=False,
            words=("without compiling", "blacklisted to"),
        ),
        # A cache from another graph: a miss, then a real compile.
        "cache-of-other-graph-compiles": Case(
            args=("--graph", "Add:float16:16x16,Mul:float16:16x16"), seed=seed_cache
        ),
        "multicard-cache-hit": Case(
            compiles=0,
            args=("--ranks", "2", "--graph", SAME_TYPE, "--graph", "Add:float16:16x16"),
            seed=seed_multicard,
            compiled=False,
            words=("without compiling",),
        ),
        # One command, two inference processes: the first compiles and fills the cache,
        # the second hits the cache made DURING the attempt. A real stage compiled and
        # succeeded (C2.2); the second process installed that same package.
        "second-process-hits-own-cache": Case(
            args=("--graph", SAME_TYPE, "--then-again"),
        ),
    }
)


def seed_cache_build_dir(scene: Scene) -> None:
    seeded = scene.launch(["--graph", SAME_TYPE, "--build-dir", str(scene.tmp / "build")], {})
    assert seeded.returncode == 0, seeded.stderr


def seed_blacklisted(scene: Scene) -> None:
    seeded = scene.launch(["--graph", SAME_TYPE, "--blacklist", "MatMulV2"], {})
    assert seeded.returncode == 0, seeded.stderr


def seed_add_only(scene: Scene) -> None:
    seeded = scene.launch(["--graph", "Add:float16:16x16"], {})
    assert seeded.returncode == 0, seeded.stderr


CASES.update(
    {
        # The other reading of the dump's dedup (once per process): the second graph's
        # _opcompile/ holds only the new op. Same contract answer.
        "selected-fewer-dump-dedup-per-process": Case(
            compiles=2,
            args=(
                "--graph",
                SAME_TYPE,
                "--graph",
                SAME_TYPE + ",Add:float16:16x16",
                "--dump-dedup",
                "process",
            ),
        ),
        # torchair's key is over the CHOSEN dir (_opcompile_selected, blacklist left out):
        # a real hit whose _opcompile/ holds one more JSON than the key covers.
        "cache-hit-with-blacklist": Case(
            compiles=0,
            args=("--graph", SAME_TYPE, "--blacklist", "MatMulV2"),
            seed=seed_blacklisted,
            compiled=False,
            words=("without compiling",),
        ),
        # One process: graph 1 compiles (a stage), graph 2 selects only Add, which an
        # earlier run cached: a hit installs that package. Every stage succeeded (C2.2).
        "compile-then-cache-hit-same-process": Case(
            args=("--graph", SAME_TYPE, "--graph", SAME_TYPE + ",Add:float16:16x16"),
            seed=seed_add_only,
        ),
        # Multi-card, the Gloo probe fails: start lines, empty roots, nothing dumped or
        # compiled, exit 0; a cache from an earlier run is there. Nothing was installed.
        "multicard-gloo-probe-failed-with-cache": Case(
            args=("--ranks", "2", "--graph", SAME_TYPE, "--gloo-fail"),
            seed=seed_cache,
            state="unknown",
            compiled=None,
            compiles=0,
        ),
        # opbase's own black list: GatherV2 is dumped to _debug/ only, never compiled;
        # MatMulV2 (white list) is in <pid>/ too. Only -p's inputs are the stage's (C2).
        "dump-black-and-white-listed-ops": Case(
            args=("--graph", SAME_TYPE + ",GatherV2:float16:8x8"),
        ),
        # Only op types of opbase's black list: no _opcompile/ at all, so torchair hands
        # op_compiler the _debug/ dir (-p <pid>_debug). Its JSONs are the stage's inputs.
        "only-opbase-blacklisted-ops-p-is-debug": Case(
            args=("--graph", "GatherV2:float16:8x8,ReduceSum:float:4x4"),
        ),
        # vLLM-style launchers route warnings through logging: another prefix on the
        # start line, which is the only line a silent hit prints.
        "warnings-through-logging-cache-hit": Case(
            args=("--graph", SAME_TYPE, "--capture-warnings"),
            seed=seed_cache,
            compiled=False,
            compiles=0,
            words=("without compiling",),
        ),
        # PYTHONWARNINGS=ignore: no start line at all. A compile is still seen by its
        # op_compiler stage (C2); a hit only by its fresh ts root (issue 19: "a start line
        # (or a new ts..._outputs root)").
        "warnings-ignored-compile": Case(env=(("PYTHONWARNINGS", "ignore"),)),
        "warnings-ignored-swallowed-failure": Case(
            env=(("PYTHONWARNINGS", "ignore"), ("STANDIN2_FAIL", "MatMulV2")),
            state="failed",
            words=("MatMulV2",),
        ),
        "warnings-ignored-cache-hit": Case(
            env=(("PYTHONWARNINGS", "ignore"),),
            seed=seed_cache,
            compiled=False,
            compiles=0,
            words=("without compiling",),
        ),
        # The work directory under a symbolic link (a linked home): torchair's roots are
        # resolved paths (Path.cwd().resolve()), skgate was started in the link.
        "work-dir-via-symlink": Case(via_link=True),
        "work-dir-via-symlink-cache-hit": Case(
            via_link=True,
            seed=seed_cache,
            compiled=False,
            compiles=0,
            words=("without compiling",),
        ),
        "work-dir-via-symlink-swallowed-failure": Case(
            via_link=True,
            env=(("STANDIN2_FAIL", "MatMulV2"),),
            state="failed",
            words=("MatMulV2",),
        ),
        # static_kernel_compile_outputs is a link to another disk (13 GB of outputs, F1):
        # the roots, -p and -o all name paths through it.
        "outputs-dir-is-a-link": Case(outputs_link=True),
        "outputs-dir-is-a-link-swallowed-failure": Case(
            outputs_link=True, env=(("STANDIN2_FAIL", "MatMulV2"),), state="failed"
        ),
        # torchair's build_dir option: the roots are not under the working directory.
        "build-dir-elsewhere": Case(args=("--graph", SAME_TYPE, "--build-dir", "{tmp}/build")),
        "build-dir-elsewhere-swallowed-failure": Case(
            args=("--graph", SAME_TYPE, "--build-dir", "{tmp}/build"),
            env=(("STANDIN2_FAIL", "MatMulV2"),),
            state="failed",
        ),
        "build-dir-elsewhere-cache-hit": Case(
            args=("--graph", SAME_TYPE, "--build-dir", "{tmp}/build"),
            seed=seed_cache_build_dir,
            compiled=False,
            compiles=0,
            words=("without compiling",),
        ),
        # _d0 and _d1 per input, only the _d1 of MatMulV2 fails: an error-named log after
        # natural return is a failure under every reading of _d<n> (C2.3).
        "d1-variant-fails": Case(
            env=(
                ("STANDIN2_VARIANTS", "2"),
                ("STANDIN2_FAIL", "MatMulV2"),
                ("STANDIN2_FAIL_VARIANT", "1"),
            ),
            state="failed",
            words=("MatMulV2",),
        ),
        # A silent hit, then the inference fails: failed by exit status (C2.3), and no
        # compiler failed (nothing compiled): not "compiler failures" (C7).
        "cache-hit-then-launcher-fails": Case(
            args=("--graph", SAME_TYPE, "--fail-after"),
            seed=seed_cache,
            state="failed",
            compiled=None,
            compiles=0,
            not_words=("compiler failures",),
        ),
        # Everything blacklisted, then the inference fails: no compiler was observed and
        # the command returned naturally with exit 1: failed by exit status (C2.3).
        "all-blacklisted-then-launcher-fails": Case(
            args=("--graph", SAME_TYPE, "--blacklist", "_", "--fail-after"),
            state="failed",
            compiled=None,
            compiles=0,
            words=("no compiler",),
        ),
        # Pairing by op type and count: one HcPre input has no log (3 inputs, 2 logs),
        # or one HcPre log too many. Either way not every input is accounted for (C2).
        "one-input-without-log": Case(
            env=(("STANDIN2_DROP_LOG", "HcPre_bfloat16_ND_8_4"),), state="unknown", compiled=None
        ),
        "extra-log-of-a-dumped-type": Case(
            env=(("STANDIN2_EXTRA_LOG", "HcPre"),), state="unknown", compiled=None
        ),
        # A worker faults (SIGSEGV): op_compiler keeps the error log and exits 1. The
        # compiler stack returned naturally with a failed input: failed (C2.3).
        "opc-worker-segfaults": Case(
            env=(("STANDIN2_CRASH", "MatMulV2"),), state="failed", words=("MatMulV2",)
        ),
        # op_compiler's own limit kills a hung worker (a signal from inside the tree, not
        # the runner's, not from outside): op_compiler exits 1: failed (C2.3).
        "opc-worker-killed-by-op_compiler": Case(
            env=(("STANDIN2_HANG", "MatMulV2"),), state="failed", words=("MatMulV2",)
        ),
        # The launcher faults at teardown after a good compile: it ended on its own with a
        # non-zero status (no runner, no outside signal): failed (C2.3), not interrupted.
        # skgate cannot see who sent a SIGSEGV; unknown (C2.5) is allowed too, but
        # "interrupted (external)" claims an outside signal that nobody sent.
        "launcher-segfaults-after-compile": Case(
            args=("--graph", SAME_TYPE, "--segfault-after"),
            state="failed",
            also=("unknown",),
            compiled=None,
        ),
    }
)


def _param(name: str, case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.bad)] if case.bad else []
    return pytest.param(case, id=name, marks=marks)


@pytest.mark.parametrize("case", [_param(n, c) for n, c in CASES.items()])
def test_standin2_verdict(scene: Scene, case: Case) -> None:
    if case.outputs_link:  # made before any run: torchair's mkdir(exist_ok=True) keeps it
        elsewhere = scene.tmp / "bigdisk/outputs"
        elsewhere.mkdir(parents=True)
        scene.work.mkdir(parents=True, exist_ok=True)
        scene.outputs.symlink_to(elsewhere, target_is_directory=True)
    (scene.tmp / "build").mkdir()  # torchair does not create its build_dir (TA l.806-835)
    if case.seed is not None:
        case.seed(scene)
    outputs = [scene.outputs, scene.tmp / "build/static_kernel_compile_outputs"]
    before = {d for o in outputs for d in o.glob("ts*_outputs/*_compile_log")}
    args = [a.replace("{tmp}", str(scene.tmp)) for a in case.args]
    result = scene.gate(args, dict(case.env), list(case.options), case.via_link)
    # The scene is what the case says (a hit really ran no op_compiler, ...).
    made = {d for o in outputs for d in o.glob("ts*_outputs/*_compile_log")} - before
    assert len(made) == case.compiles, result.explain()
    assert result.state in (case.state, *case.also), result.explain()
    assert result.returncode == EXIT[result.state], result.explain()
    assert result.reclassified.get("state") == result.state, result.explain()
    if case.compiled is not None:
        assert result.verdict.get("compiled") is case.compiled, result.explain()
    for word in case.words:
        assert word in result.words, result.explain()
    for word in case.not_words:
        assert word not in result.words, result.explain()
    if case.state == "succeeded" and case.compiled:
        assert "without compiling" not in result.headline, result.explain()


def _text(scene: Scene, *args: str) -> str:
    skgate = str(Path(sys.executable).parent / "skgate")
    done = subprocess.run(
        [skgate, *args],
        cwd=scene.work,
        env=scene.env({}),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    return done.stdout


def test_a_silent_hit_is_told_apart_to_every_reader(scene: Scene) -> None:
    """C2: a stage that installed a cached package is "without compiling" for every
    reader: the English and Chinese report of the attempt, and the root's counts."""
    first = scene.gate(["--graph", SAME_TYPE], {}, [])
    hit = scene.gate(["--graph", SAME_TYPE], {}, [])
    assert first.verdict.get("compiled") is True, first.explain()
    assert hit.verdict.get("compiled") is False, hit.explain()
    attempt = str(hit.verdict["attempt"])
    assert "without compiling" in _text(scene, "report", attempt)
    assert "成功（未编译）" in _text(scene, "report", "--lang", "zh", attempt)
    root = str(scene.tmp / "runs")
    assert "2 succeeded (1 of them without a compile)" in _text(scene, "report", root)


@contextlib.contextmanager
def held_run(scene: Scene) -> Iterator[tuple[subprocess.Popen[str], Path, int]]:
    """A gated run whose op_compiler waits, with an error-named log on disk, for a line on
    a FIFO: yields the runner, that log and the FIFO's fd (a rendezvous, not a sleep)."""
    hold = scene.tmp / "hold"
    hold.mkdir()
    for name in ("ready", "go"):
        os.mkfifo(hold / name)
    # O_RDWR never blocks on a FIFO; holding both ends keeps the stand-in's opens prompt.
    ready = os.open(hold / "ready", os.O_RDWR | os.O_NONBLOCK)
    go = os.open(hold / "go", os.O_RDWR)
    try:
        skgate = str(Path(sys.executable).parent / "skgate")
        (scene.tmp / "Ascend/cann").mkdir(parents=True)
        scene.work.mkdir()
        argv = [sys.executable, "-c", _RESET_EXEC, skgate, "run", "--root", str(scene.tmp / "runs")]
        argv += ["--timeout", "120", "--lease-timeout", "30", "--json", "--"]
        argv += [sys.executable, str(LAUNCHER), "--graph", SAME_TYPE]
        proc = subprocess.Popen(
            argv,
            cwd=scene.work,
            env=scene.env({"STANDIN2_HOLD": str(hold)}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        scene.procs.append(proc)
        readable, _, _ = select.select([ready], [], [], RUN_TIMEOUT_S)
        assert readable, "the stand-in's op_compiler never reached its rendezvous"
        error_log = Path(os.read(ready, 4096).decode().strip())
        assert error_log.name.endswith("_d0_compile_error.log") and error_log.exists()
        yield proc, error_log, go
    finally:
        os.close(ready)
        os.close(go)


def test_live_error_named_log_is_in_progress(scene: Scene) -> None:
    """C1/C2.1: with op_compiler alive and an error-named log of the real form on disk,
    the state is in progress (exit 6), never failed; after the natural return with every
    input compiled it is succeeded."""
    root = str(scene.tmp / "runs")
    with held_run(scene) as (proc, _, go):
        live = subprocess.run(
            [str(Path(sys.executable).parent / "skgate"), "status", root, "--json"],
            cwd=scene.work,
            env=scene.env({}),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        text = _text(scene, "status", root)
        os.write(go, b"go\n")
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert json.loads(live.stdout)["state"] == "in_progress", live.stdout
    assert live.returncode == 6, live.stdout
    assert "fail" not in text.split("\n")[0].lower(), text
    final = json.loads(out)
    assert final["state"] == "succeeded", out
    assert proc.returncode == 0


def test_op_compiler_killed_from_outside_is_never_failed(scene: Scene) -> None:
    """C2.4/C2.5: an outside SIGKILL ends the live op_compiler (its pid is in the log's
    name); torchair swallows it and exits 0. No natural return of the stage: interrupted
    or unknown, never failed (its error-named log is not final) and never succeeded."""
    with held_run(scene) as (proc, error_log, _):
        pid = int(error_log.name.split("_")[-4])
        os.kill(pid, signal.SIGKILL)  # a process this test started, by its pid
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    verdict = json.loads(out)
    assert verdict["state"] in ("interrupted", "unknown"), out
    assert proc.returncode == EXIT[verdict["state"]]
