"""The report's stage section: one line per op_compiler invocation, in English or Chinese.

Each stage says its concurrency (``-j``, C5), its inputs and per-input outcome, whether it
returned naturally, and, for a failed verdict, each failed input with the path of its
error log: the file a person should read next. Error-named logs of any other verdict are
labelled provisional (C1). The section renders; it decides nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skgate.model.phrases import C7, Lang
from skgate.model.plog import PlogFile, of_pids
from skgate.model.records import State, Verdict
from skgate.model.running import Ownership
from skgate.model.stages import InputOutcome, Stages, parse_compiler_argv
from skgate.verdict.stages import CACHE_ADVICE, MAX_LISTED
from skgate.verdict.words import idle_said

_WORDS = {
    "title": {
        "en": "Stages (op_compiler invocations, C2/C3)",
        "zh": "阶段（op_compiler 调用，C2/C3）",
    },
    "none": {
        "en": "no op_compiler process was observed",
        "zh": "没有观察到 op_compiler 进程",
    },
    "no_record": {
        "en": "no stage record (stages.json is absent: an attempt of an older skgate)",
        "zh": "没有阶段记录（缺少 stages.json：较早版本 skgate 的尝试）",
    },
    "source": {"en": "summary source", "zh": "汇总来源"},
    "no_source": {"en": "none (no final summary)", "zh": "无（没有最终汇总）"},
    "inputs": {"en": "inputs", "zh": "输入"},
    "first_seen": {"en": "when first seen", "zh": "首次观察时"},
    "succeeded": {"en": "succeeded", "zh": "成功"},
    "failed": {"en": "failed", "zh": "失败"},
    "plog": {"en": "CANN process log (plog)", "zh": "CANN 进程日志（plog）"},
    "no_log": {"en": "no log", "zh": "无日志"},
    "both": {"en": "both logs", "zh": "两种日志并存"},
    "packages": {"en": ".run packages", "zh": ".run 包"},
    "returned": {"en": "returned naturally", "zh": "自然返回"},
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    "argv_unknown": {"en": "argv unknown", "zh": "命令行未知"},
    "read_next": {"en": "read next", "zh": "请先查看"},
    "jobs": {"en": "effective concurrency", "zh": "实际并发"},
    "peak": {"en": "most opc seen alive at once", "zh": "同时存活的 opc 最多"},
    "frozen": {"en": "frozen", "zh": "冻结值"},
    "not_in_effect": {
        "en": "the control was not in effect: the launcher does not honour the frozen value",
        "zh": "该控制项没有生效：启动器没有遵守冻结值",
    },
    "in_effect": {"en": "matches the frozen value", "zh": "与冻结值一致"},
    "shim": {
        "en": "the launcher passed {given}; skgate's op_compiler shim ran it with {ran} "
        "(--enforce-jobs, C5)",
        "zh": "启动器传入 {given}；skgate 的 op_compiler 垫片以 {ran} 运行它（--enforce-jobs，C5）",
    },
    "cache": {
        "en": f"no compile ran: a cached package was installed; {CACHE_ADVICE}",
        "zh": "没有运行编译：安装的是缓存中的包；如需真正编译，请关闭启动器的静态 kernel 编译缓存"
        "（或在 `skgate cleanup` 之后删除 static_kernel_compile_outputs/static_kernel_cache）",
    },
}

_SOURCES = {
    "summary_lines": {"en": "[summary] lines", "zh": "[summary] 行"},
    "pattern": {"en": "--summary-pattern matches", "zh": "--summary-pattern 匹配"},
    "op_compiler census": {
        "en": "op_compiler census after natural return",
        "zh": "自然返回后的 op_compiler 统计",
    },
}


def _w(key: str, lang: Lang) -> str:
    return _WORDS[key][lang]


def stage_title(lang: Lang) -> str:
    return _w("title", lang)


def stage_plogs(
    stages: Stages | None,
    ownership: Ownership | None,
    plogs: tuple[PlogFile, ...],
    attempt: Path,
) -> dict[int, tuple[str, ...]]:
    """Stage pid -> the archived process logs of its op_compiler and its children, for
    each stage with a failed input or a non-zero exit status (C3: the real error of a
    swallowed failure is often only there)."""
    if stages is None or not plogs:
        return {}
    owned = ownership.owned if ownership is not None else ()
    out: dict[int, tuple[str, ...]] = {}
    for st in stages.stages:
        failed = (st.census is not None and st.census.failed > 0) or st.exit_status not in (
            None,
            0,
        )
        if not failed:
            continue
        pids = {st.pid} | {r.pid for r in owned if r.ppid == st.pid}
        got = of_pids(plogs, pids)
        if got:
            out[st.pid] = tuple(
                str(attempt / f.archived) + (" (truncated)" if f.truncated else "") for f in got
            )
    return out


def stage_lines(
    stages: Stages | None,
    verdict: Verdict,
    frozen_jobs: int | None,
    lang: Lang,
    plogs: Mapping[int, tuple[str, ...]] | None = None,
) -> list[str]:
    """The section's lines (a heading is added by the caller's level); ``plogs``: the
    archived process logs of each failed stage (:func:`stage_plogs`)."""
    out: list[str] = []
    source = verdict.summary_source
    shown = _SOURCES[source][lang] if source in _SOURCES else _w("no_source", lang)
    sep = "，" if lang is Lang.ZH else ", "
    colon = "：" if lang is Lang.ZH else ": "
    out.append(f"- {_w('source', lang)}{colon}{shown}")
    idle = stages.idle if stages is not None else ()
    if verdict.compiled is False and idle:
        # Issue 27: nothing to compile is said as found, never as a cache hit.
        out.extend(f"- {idle_said(i, lang)}" for i in idle[:MAX_LISTED])
    elif verdict.compiled is False:
        out.append(f"- {_w('cache', lang)}")
    if stages is None:
        out.append(f"- {_w('no_record', lang)}")
    elif not stages.stages:
        out.append(f"- {_w('none', lang)}")
    else:
        natural = verdict.natural_return
        for st in stages.stages:
            c = st.census
            jobs = f"-j {st.args.jobs}" if st.args.jobs is not None else "-j ?"
            parts = [jobs]
            if c is None:
                parts.append(_w("argv_unknown", lang))
            else:
                first = (
                    f" ({_w('first_seen', lang)} {st.inputs_first_seen})"
                    if st.inputs_first_seen is not None and st.inputs_first_seen != c.inputs
                    else ""
                )
                parts += [
                    f"{_w('inputs', lang)} {c.inputs}{first}",
                    f"{_w('succeeded', lang)} {c.succeeded}",
                    f"{_w('failed', lang)} {c.failed}",
                    f"{_w('no_log', lang)} {c.no_log}",
                    f"{_w('both', lang)} {c.both_logs}",
                    f"{_w('packages', lang)} {len(c.run_packages)}",
                ]
            returned = natural and st.ended and st.exit_signal is None
            parts.append(f"{_w('returned', lang)} {_w('yes' if returned else 'no', lang)}")
            out.append(f"- {st.name}{colon}{sep.join(parts)}")
            for path in (plogs or {}).get(st.pid, ()):
                out.append(f"  - {_w('plog', lang)}{colon}`{path}`")
            if c is None:
                continue
            failed = c.of(InputOutcome.FAILED)
            final = verdict.state is State.FAILED and returned
            for r in failed[:MAX_LISTED]:
                if final:
                    label = C7["final_failure"][lang]
                else:
                    label = C7["provisional"][lang] + ("（C1）" if lang is Lang.ZH else " (C1)")
                semi = "；" if lang is Lang.ZH else "; "
                out.append(f"  - {r.name}{colon}{label}{semi}{_w('read_next', lang)} `{r.logs[0]}`")
            if len(failed) > MAX_LISTED:
                out.append(f"  - ... {len(failed) - MAX_LISTED}")
    jobs_used = sorted(set(verdict.effective_jobs))
    if jobs_used:
        used = ", ".join(f"-j {j}" for j in jobs_used)
        line = f"- {_w('jobs', lang)}{colon}{used}"
        if frozen_jobs is not None:
            agree = all(j == frozen_jobs for j in jobs_used)
            state = _w("in_effect" if agree else "not_in_effect", lang)
            frozen = f"{_w('frozen', lang)} NPU_STATIC_KERNEL_COMPILE_JOBS={frozen_jobs}"
            line += (
                f"（{frozen}）{colon}{state}" if lang is Lang.ZH else f" ({frozen}){colon}{state}"
            )
        out.append(line)
    for st in stages.stages if stages is not None else ():
        if st.original_argv is not None:
            # C5: the value was put in effect on purpose, never silently: both argvs show.
            given = parse_compiler_argv(st.original_argv).jobs_text
            shown = _w("shim", lang).format(
                given=f"-j {given}" if given is not None else "no -j", ran=f"-j {st.args.jobs_text}"
            )
            out.append(f"  - {st.name}{colon}{shown}")
    if verdict.peak_opc is not None and stages is not None and stages.stages:
        out.append(f"- {_w('peak', lang)}{colon}{verdict.peak_opc}")
    return out
