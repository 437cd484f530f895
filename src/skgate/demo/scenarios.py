"""``skgate demo``: the CANN simulator under the gate, one scenario at a time.

The demo is the only part of skgate besides the tests that knows the simulator: it runs
``python -m skgate.sim.launcher`` exactly as a user would run their own launcher, through
the same :func:`skgate.runner.run_here`. Each scenario states the verdict the gate must
give; the demo exits 0 when it did, 1 when it did not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from skgate.model.errors import UsageError
from skgate.model.exits import EXIT_BLOCKED
from skgate.model.frozen import replace
from skgate.model.phrases import Lang
from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest
from skgate.runner.run import run_here
from skgate.verdict.words import headline, in_language, state_words
from skgate.verdict.words_values import state_short


@dataclass(frozen=True)
class Scenario:
    faults: str
    expect: State
    what: str
    timeout: float = 60.0
    grace: float = 2.0
    inputs: int = 8
    #: The simulated launcher: ``launcher`` (prints [summary]) or ``torchair`` (does not).
    launcher: str = "launcher"
    args: tuple[str, ...] = ()
    #: Run the same command once before (under the gate too), e.g. to fill a cache.
    prime: bool = False
    #: Further facts of the verdict the scenario must show (None: not checked).
    summary_source: str | None = None
    compiled: bool | None = None
    #: Seconds each opc takes. A stage is an op_compiler the runner observed (C3); the
    #: torchair scenarios keep op_compiler alive for a few scans even on a loaded host.
    opc_seconds: float = 0.2


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
    "torchair-success": Scenario(
        "",
        State.SUCCEEDED,
        "torchair's launcher prints no [summary] line: the verdict comes from the "
        "op_compiler census after natural return (C2)",
        launcher="torchair",
        opc_seconds=0.5,
        summary_source="op_compiler census",
        compiled=True,
    ),
    "torchair-swallowed-failure": Scenario(
        "fail=2",
        State.FAILED,
        "op_compiler fails, torchair warns 'execute op_compiler error' and exits 0: the "
        "failed stage still makes the verdict failed (C2)",
        launcher="torchair",
        opc_seconds=0.5,
        summary_source="op_compiler census",
        compiled=True,
    ),
    "torchair-cache-hit": Scenario(
        "",
        State.SUCCEEDED,
        "the second run hits torchair's compile cache: no op_compiler runs, the verdict "
        "says no compile ran (compiled: false), never failed",
        launcher="torchair",
        opc_seconds=0.5,
        args=("--cache",),
        prime=True,
        compiled=False,
    ),
    "torchair-multicard": Scenario(
        "",
        State.SUCCEEDED,
        "two local ranks: rank 0 gathers every rank's JSONs and compiles once, rank 1 "
        "waits; one stage, judged by its census",
        launcher="torchair",
        opc_seconds=0.5,
        args=("--nproc", "2"),
        summary_source="op_compiler census",
        compiled=True,
    ),
}


#: Where the demo keeps its evidence by default: one directory per scenario under the
#: current directory, kept after the demo so a person can look at it afterwards.
DEMO_DIR = "skgate-demo"


@dataclass(frozen=True)
class HookApprovals:
    """``--approve-hook`` / ``--hook-baseline`` / ``--strict-hooks``, as for ``run`` (C6)."""

    approved: tuple[str, ...] = ()
    baseline: str | None = None
    strict: bool = False


#: The one-factor-at-a-time diagnosis (C6, last bullet): a small matrix, not one attempt.
DIAGNOSE = "diagnose"
#: A declared kernel change hidden by the compile cache (C6, issue 20): a reference and
#: a compile-health run, not one attempt.
STALE_CACHE = "stale-cache"
#: The changed kernel of that scenario: the op type it touches, and the sim's stand-in for
#: a replaced kernel ``.o`` (built into every kernel object; like a real ``.o``, not part
#: of the cache key).
STALE_CACHE_DECLARED = ("kernel:HcPre", "env:SKGATE_SIM_KERNEL_REVISION=2")


def _notify(line: str) -> None:
    """The runner's notes, at once on stderr: above all whom it waits for before launch
    (a foreign compiler on this host; issue 30), never a silent wait (C2.1)."""
    print(line, file=sys.stderr, flush=True)


#: What each scenario shows, in Chinese (C7: a zh demo says everything in Chinese).
WHAT_ZH: dict[str, str] = {
    "success": "一次健康的编译：自然返回，所有输入成功",
    "input-failure": "一个输入失败：编译器自然返回并报告失败（C2.3）",
    "hang-timeout": "一个 opc 永不结束：冻结的超时触发，停止自有进程组（C4）",
    "leader-exits-early": "启动器在 opc 子进程仍在运行时退出：闸门等待它们（C2.1）",
    "escape": "一个 opc 后代用 setsid 离开进程组：被观察、被等待，从不发送信号",
    "ignore-sigterm": "一个 opc 在超时时忽略 SIGTERM：宽限期后向自有进程组发送 SIGKILL",
    "torchair-success": "torchair 的启动器不打印 [summary] 行：结论来自自然返回后的 "
    "op_compiler 产物统计（C2）",
    "torchair-swallowed-failure": "op_compiler 失败，torchair 警告 'execute op_compiler "
    "error' 并以 0 退出：失败的阶段仍使结论为失败（C2）",
    "torchair-cache-hit": "第二次运行命中 torchair 的编译缓存：没有运行 op_compiler，结论说明"
    "没有进行编译（compiled: false），绝不是失败",
    "torchair-multicard": "两个本地 rank：rank 0 汇集每个 rank 的 JSON 并编译一次，rank 1 "
    "等待；一个阶段，按其产物统计判定",
}


def _said(lang: Lang, en: str, zh: str) -> str:
    """One line of the demo's own words, in the language asked for."""
    return zh if lang is Lang.ZH else en


def scenario_names() -> list[str]:
    return sorted([*SCENARIOS, DIAGNOSE, STALE_CACHE])


def _stale_cache(where: Path, out: TextIO, hooks: HookApprovals | None) -> int:
    # Imported here: the health gate is only needed by this scenario.
    from skgate.model.outcomes import HealthOutcome  # noqa: PLC0415
    from skgate.regress.health import health  # noqa: PLC0415
    from skgate.regress.reach import ReachCheck  # noqa: PLC0415

    print(
        f"skgate demo: scenario {STALE_CACHE}: a reference compile fills torchair's cache; "
        "then a kernel change (HcPre) is declared, the health run hits the cache, and the "
        "gate says the declared change did not reach the compile (C6)",
        file=out,
    )
    print(f"skgate demo: working directory {where}", file=out)
    base = scenario_request("torchair-cache-hit", where, quiet=True, hooks=hooks)
    # -j as torchair derives it (the host's CPU count) equal to the frozen jobs, so the
    # comparison holds C5 (a -j that differs would refuse the reference first).
    request = replace(base, argv=(*base.argv, "--cpu-count", base.jobs or "4"))
    ref = run_here(request, None, _notify)
    print(f"skgate demo: reference run: {ref.state.value} (compiled: {ref.compiled})", file=out)
    if ref.attempt is None or ref.state is not State.SUCCEEDED or ref.compiled is not True:
        print(
            "skgate demo: the reference did not compile: NOT what this scenario must give", file=out
        )
        return 1
    print(
        "skgate demo: skgate regress --health --reference "
        f"{_relative(Path(ref.attempt))} "
        + " ".join(f"--declare {d}" for d in STALE_CACHE_DECLARED),
        file=out,
    )
    result = health(
        Path(ref.attempt), root=where / "health", declared=STALE_CACHE_DECLARED, quiet=True
    )
    print("\n".join(result.lines()), file=out)
    checks = {f.check for f in result.not_reached}
    ok = result.result is HealthOutcome.NOT_REACHED and ReachCheck.CACHE_HIT in checks
    print(
        f"skgate demo: expected {HealthOutcome.NOT_REACHED.value} (a cache hit), the gate said "
        f"{result.result.value}: " + ("as it should" if ok else "NOT what this scenario must give"),
        file=out,
    )
    print(f"skgate demo: evidence kept in {where}; look at it with:", file=out)
    print(f"  skgate report {_relative(where / 'health')}", file=out)
    return 0 if ok else 1


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


def scenario_request(
    name: str, workdir: Path, *, quiet: bool = False, hooks: HookApprovals | None = None
) -> RunRequest:
    sc = SCENARIOS[name]
    argv = [sys.executable, "-m", f"skgate.sim.{sc.launcher}", "--inputs", str(sc.inputs)]
    argv += sc.args
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
        env={"SKGATE_SIM_OPC_SECONDS": repr(sc.opc_seconds)},
        quiet=quiet,
        scan_interval=0.25,
        approved_hooks=hooks.approved if hooks else (),
        hook_baseline=hooks.baseline if hooks else None,
        strict_hooks=hooks.strict if hooks else False,
    )


#: How many reasons the short output shows (``--verbose``: all of them, and the report).
WHY_LINES = 3


def run_demo(
    name: str,
    *,
    workdir: str | None,
    lang: Lang,
    as_json: bool,
    show: Callable[[Verdict, bool], None],
    hooks: HookApprovals | None = None,
    verbose: bool = False,
) -> int:
    """Run one scenario and say whether the gate gave the verdict it must (exit 0), did
    not (1), or was blocked before launch (3: nothing ran, e.g. --strict-hooks refused a
    distribution hook, as asked). By default the verdict, three lines of why and where
    the evidence is; ``verbose``: the workload's output, every reason and the report."""
    where = (Path(workdir) if workdir else Path(DEMO_DIR) / name).absolute()
    try:
        where.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # mkdir's "File exists" said too little
        raise UsageError(
            f"demo working directory {where} is not a directory (a file, a FIFO or a link "
            "to one is there, or in its path); pass a directory, made when missing"
        ) from None
    out = sys.stderr if as_json else sys.stdout
    if name == DIAGNOSE:
        return _diagnose(where, out)
    if name == STALE_CACHE:
        return _stale_cache(where, out, hooks)
    sc = SCENARIOS[name]
    what = WHAT_ZH[name] if lang is Lang.ZH else sc.what
    print(
        _said(lang, f"skgate demo: scenario {name}: ", f"skgate demo：场景 {name}：") + what,
        file=out,
    )
    full = verbose or as_json
    if full:
        print(
            _said(lang, "skgate demo: working directory ", "skgate demo：工作目录 ") + str(where),
            file=out,
        )

    def echo(data: bytes) -> None:
        out.buffer.write(data)
        out.buffer.flush()

    shown = echo if full else None
    if sc.prime:
        print(
            _said(
                lang,
                "skgate demo: a first run of the same command (it fills the cache)",
                "skgate demo：先把同一命令运行一次（它会填充缓存）",
            ),
            file=out,
        )
        first = run_here(scenario_request(name, where, hooks=hooks), shown, _notify)
        said = state_short(first.state, lang)
        print(_said(lang, "skgate demo: first run: ", "skgate demo：第一次运行：") + said, file=out)
    verdict = run_here(scenario_request(name, where, hooks=hooks), shown, _notify)
    if full:
        print(file=out)
        if lang is Lang.ZH and not as_json:
            _verdict_zh(verdict, None, out)
        else:
            show(verdict, as_json)
        if not as_json:
            _print_report(verdict, lang)
    elif lang is Lang.ZH:
        _verdict_zh(verdict, WHY_LINES, out)
    else:
        print(headline(verdict), file=out)
        for reason in verdict.reasons[:WHY_LINES]:
            print(f"  - {reason}", file=out)
    if verdict.state is State.NOT_STARTED and sc.expect is not State.NOT_STARTED:
        # Blocked before launch is not a mismatch: nothing ran, so nothing was shown
        # (exit 3, as for run). With --strict-hooks that is what was asked for (C6).
        strict = hooks is not None and hooks.strict
        if lang is Lang.ZH:
            asked = (
                "这正是 --strict-hooks 的要求（它连目录中的发行版钩子也拒绝）；去掉它运行，"
                "或用 --approve-hook 批准该钩子"
                if strict
                else "见上面的依据"
            )
            line = (
                f"skgate demo：启动前被阻止，{asked}；没有运行任何进程，"
                f"因此未展示场景 {name}（退出码 3）"
            )
        else:
            asked = (
                "as --strict-hooks asks (it refuses even the catalogued distribution hooks); "
                "run without it, or approve the hook with --approve-hook"
                if strict
                else "see the reasons above"
            )
            line = (
                f"skgate demo: blocked before launch, {asked}; nothing ran, so scenario {name} "
                "was not shown (exit 3)"
            )
        print(line, file=out)
        for line in look_at(where, lang):
            print(line, file=out)
        return EXIT_BLOCKED
    problems = scenario_problems(sc, verdict)
    ok = not problems
    if lang is Lang.ZH:
        said = (
            f"skgate demo：预期 {state_short(sc.expect, lang)}，闸门给出 "
            f"{state_short(verdict.state, lang)}："
            + ("符合预期" if ok else "不是本场景应给出的结论：" + "；".join(problems))
        )
    else:
        said = f"skgate demo: expected {sc.expect.value}, the gate said {verdict.state.value}: " + (
            "as it should" if ok else "NOT what this scenario must give: " + "; ".join(problems)
        )
    print(said, file=out)
    for line in look_at(where, lang):
        print(line, file=out)
    for line in reference_hint(verdict, lang):
        print(line, file=out)
    return 0 if ok else 1


def _verdict_zh(verdict: Verdict, why_lines: int | None, out: TextIO) -> None:
    """The verdict block in Chinese: the state's words, the reasons, where it is kept."""
    print(f"结论：{state_words(verdict, Lang.ZH)}", file=out)
    for reason in verdict.reasons[:why_lines]:
        print(f"  - {in_language(reason, Lang.ZH)}", file=out)
    if why_lines is None and verdict.attempt:
        print(f"  证据：{verdict.attempt}", file=out)


def reference_hint(verdict: Verdict, lang: Lang = Lang.EN) -> list[str]:
    """How to use this attempt as a compile-health reference, when the health gate takes
    it (the same check ``regress --health`` makes, C6): the next thing a newcomer tries."""
    if verdict.attempt is None or verdict.state is not State.SUCCEEDED:
        return []
    # Imported here: the health gate is only needed once a success is shown.
    from skgate.regress.health import check_reference  # noqa: PLC0415

    try:
        check_reference(Path(verdict.attempt))
    except UsageError:
        return []
    return [
        _said(
            lang,
            "skgate demo: this attempt can serve as the reference of a compile-health check:",
            "skgate demo：这次尝试可以作为编译健康检查的参考：",
        ),
        f"  skgate regress --health --reference {_relative(Path(verdict.attempt))}",
    ]


def scenario_problems(sc: Scenario, verdict: Verdict) -> list[str]:
    """What in the verdict differs from what the scenario must give (empty: all of it)."""
    problems: list[str] = []
    if verdict.state is not sc.expect:
        problems.append(f"state {verdict.state.value}, not {sc.expect.value}")
    if sc.summary_source is not None and verdict.summary_source != sc.summary_source:
        problems.append(f"summary_source {verdict.summary_source!r}, not {sc.summary_source!r}")
    if sc.compiled is not None and verdict.compiled is not sc.compiled:
        problems.append(f"compiled {verdict.compiled}, not {sc.compiled}")
    return problems


def look_at(where: Path, lang: Lang = Lang.EN) -> list[str]:
    """How to look at the demo's evidence afterwards (it is kept, never removed)."""
    root = where / "skgate-runs"
    shown = _relative(root)
    return [
        _said(
            lang,
            f"skgate demo: evidence kept in {root}; look at it with:",
            f"skgate demo：证据保存在 {root}；查看方式：",
        ),
        f"  skgate status {shown}",
        f"  skgate report --format html -o skgate-demo-report.html {shown}",
    ]


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _print_report(verdict: Verdict, lang: Lang) -> None:
    if verdict.attempt is None:
        return
    # Imported here: the report is only needed once the demo has a verdict to show.
    from skgate.report import markdown as report  # noqa: PLC0415

    print()
    print(report.render_attempt_markdown(Path(verdict.attempt), lang=lang))
