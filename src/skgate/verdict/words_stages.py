"""Chinese forms of the stage reasons (C2, C3, C5, C7), consulted by :mod:`skgate.verdict.words`.

Kept apart from the main table so the stage rules (:mod:`skgate.verdict.stages`) and
their words change together. Each entry is (English regex, Chinese template); the
English side must match the reason exactly as the classifier writes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from skgate.model.idle import IDLE_ADVICE, IdleKind

_STAGE = r"(op_compiler pid \d+)"

STAGE_REASONS_ZH: tuple[tuple[str, str], ...] = (
    (
        r"C2\.2: the op_compiler census after natural return reports every input of all "
        r"(\d+) stage\(s\) succeeded",
        r"C2.2：自然返回后的 op_compiler 统计显示全部 \1 个阶段的所有输入均成功",
    ),
    (
        r"C2\.2: the command returned naturally with exit status 0",
        "C2.2：命令自然返回，退出码为 0",
    ),
    (
        r"C2\.([23]): no compile ran: a cached package was installed \(Static kernel cache "
        r"hit: (.*)\); this attempt is no compile-health evidence; turn the launcher's static "
        r"kernel compile cache off \(or delete static_kernel_compile_outputs/"
        r"static_kernel_cache after `skgate cleanup`\) for a real compile",
        r"C2.\1：没有运行编译：安装的是缓存中的包（Static kernel cache hit: \2）；"
        "本次尝试不能作为编译健康证据；如需真正编译，请关闭启动器的静态 kernel 编译缓存"
        "（或在 `skgate cleanup` 之后删除 static_kernel_compile_outputs/static_kernel_cache）",
    ),
    (
        r"C2\.([23]): no compile ran: a cached package was installed \(the launcher "
        r"(.*), dumped its inputs there and started no op_compiler; the cache (.*), "
        r"there before launch, names (.*)\); this attempt is no compile-health evidence; turn "
        r"the launcher's static kernel compile cache off \(or delete "
        r"static_kernel_compile_outputs/static_kernel_cache after `skgate cleanup`\) for a "
        r"real compile",
        r"C2.\1：没有运行编译：安装的是缓存中的包（启动器\2，在其中导出了输入，但没有启动 "
        r"op_compiler；启动前已存在的缓存 \3 指向 \4）；本次尝试不能作为编译健康证据；"
        "如需真正编译，请关闭启动器的静态 kernel 编译缓存"
        "（或在 `skgate cleanup` 之后删除 static_kernel_compile_outputs/static_kernel_cache）",
    ),
    (
        r"C2\.5: the launcher (.*) and dumped its inputs there, but "
        r"no op_compiler process was observed and no cache file that existed before launch "
        r"names a package that exists: whether anything was compiled or installed cannot be "
        r"told",
        r"C2.5：启动器\1，并在其中导出了输入，但没有观察到 op_compiler 进程，"
        "启动前也没有任何缓存文件指向一个存在的包：无法判断是否编译或安装了任何内容",
    ),
    (
        rf"C2\.5: {_STAGE}: the census after its natural return cannot pair every input with "
        r"its log: (\d+) input\(s\) that no reading of the log names pairs \((.*)\), (\d+) "
        r"log\(s\) that pair with no input \((.*)\)",
        r"C2.5：\1：自然返回后的统计无法为每个输入配对其日志：\2 个输入在任何一种日志命名解读下"
        r"都无法配对（\3），\4 个日志不属于任何输入（\5）",
    ),
    (
        rf"C2\.5: {_STAGE}: every input has a succ log, but no \.run package was written "
        r"under its result root \((.*)\)",
        r"C2.5：\1：每个输入都有 succ 日志，但其结果根目录（\2）下没有生成 .run 包",
    ),
    (
        r"C2\.5: no compile ran: a cached package was installed \(the launcher "
        r"(.*), dumped its inputs there and started no op_compiler; the cache (.*), there "
        r"before launch, names (.*)\); this attempt is no compile-health evidence; .+; exit "
        r"status (-?\d+) is therefore not a compiler result",
        r"C2.5：没有运行编译：安装的是缓存中的包（启动器\1，在其中导出了输入，但没有启动 "
        r"op_compiler；启动前已存在的缓存 \2 指向 \3）；本次尝试不能作为编译健康证据；"
        r"因此退出码 \4 不是编译结果",
    ),
    (
        r"C2\.3: the launcher returned naturally with exit status (-?\d+) after every input "
        r"of its (\d+) op_compiler stage\(s\) succeeded: the launcher's own failure, not a "
        r"compiler failure",
        r"C2.3：启动器在其 \2 个 op_compiler 阶段的所有输入均成功之后以退出码 \1 自然返回："
        "这是启动器自身的失败，不是编译失败",
    ),
    (
        r"C2\.3: the command returned naturally with exit status (-?\d+); no compiler "
        r"process \(op_compiler\) was observed and no summary was printed, so this is the "
        r"command's own failure, not a compiler result \(127 usually means a command was "
        r"not found\)",
        r"C2.3：命令自然返回，退出码为 \1；没有观察到编译器进程（op_compiler），也没有打印汇总，"
        "所以这是命令本身的失败，不是编译结果（127 通常表示找不到命令）",
    ),
    (
        r"C2\.3: the command returned naturally with exit status (-?\d+); no compiler "
        r"process \(op_compiler\) was observed and no summary was printed, so this is the "
        r"command's own failure, not a compiler result \(126 usually means a command was "
        r"found but could not be executed\)",
        r"C2.3：命令自然返回，退出码为 \1；没有观察到编译器进程（op_compiler），也没有打印汇总，"
        "所以这是命令本身的失败，不是编译结果（126 通常表示命令存在但无法执行）",
    ),
    (
        r"C2\.3: the command returned naturally with exit status (-?\d+); no compiler "
        r"process \(op_compiler\) was observed and no summary was printed, so this is the "
        r"command's own failure, not a compiler result",
        r"C2.3：命令自然返回，退出码为 \1；没有观察到编译器进程（op_compiler），也没有打印汇总，"
        "所以这是命令本身的失败，不是编译结果",
    ),
    (
        rf"C2\.3: {_STAGE} naturally returned with (\d+) of (\d+) input\(s\) failed: (.+)",
        r"C2.3：\1 已自然返回，\3 个输入中有 \2 个失败：\4",
    ),
    (
        rf"C2\.3: {_STAGE} returned naturally with exit status (-?\d+)",
        r"C2.3：\1 自然返回，退出码为 \2",
    ),
    (
        r"C2\.3: the launcher reported a failing op_compiler \(execute op_compiler error, "
        r"msg: (.+)\); the launcher's exit status 0 does not turn it into a success \(C2\)",
        r"C2.3：启动器报告 op_compiler 执行出错（原文：「execute op_compiler error, msg: \1」）；"
        "启动器的退出码 0 不能把它变成成功（C2）",
    ),
    (
        r"C2\.3: the launcher reported a failing op_compiler \(execute op_compiler error, "
        r"msg: (.+)\)",
        r"C2.3：启动器报告 op_compiler 执行出错（原文：「execute op_compiler error, msg: \1」）",
    ),
    (
        rf"C2\.5: {_STAGE}: its argv names no -p inputs directory and -o result root \((.*)\)",
        r"C2.5：\1：其命令行没有给出 -p 输入目录和 -o 结果根目录（\2）",
    ),
    (
        rf"C2\.5: {_STAGE} was ended by (\S+): it did not return naturally",
        r"C2.5：\1 被 \2 结束：它没有自然返回",
    ),
    (
        rf"C2\.5: {_STAGE} has not returned naturally",
        r"C2.5：\1 尚未自然返回",
    ),
    (
        rf"C2\.5: {_STAGE}: no census of its outputs was taken after its natural return",
        r"C2.5：\1：自然返回后没有统计它的输出",
    ),
    (
        rf"C2\.5: {_STAGE}: its inputs directory \(-p (.+)\) could not be read",
        r"C2.5：\1：无法读取其输入目录（-p \2）",
    ),
    (
        rf"C2\.5: {_STAGE}: (\d+) director\(ies\) under its result root could not be read",
        r"C2.5：\1：其结果根目录下有 \2 个目录无法读取",
    ),
    (
        rf"C2\.5: {_STAGE}: the census after its natural return does not account for every "
        r"input: (\d+) input\(s\) without a compile log \((.*)\), (\d+) with both a succ log "
        r"and an error-named log, not final evidence \((.*)\)",
        r"C2.5：\1：自然返回后的统计没有覆盖每个输入：\2 个输入没有编译日志（\3），"
        r"\4 个同时有 succ 日志和 error 命名日志，非最终证据（\5）",
    ),
    (
        rf"C2\.5: the printed summary and the op_compiler census disagree: {_STAGE} has "
        r"inputs=(\d+) succeeded=(\d+) failed=(\d+) on disk after its natural return, and no "
        r"printed stage says so \(printed inputs/succeeded/failed: (.+)\)",
        r"C2.5：打印的汇总与 op_compiler 统计不一致：\1 自然返回后磁盘上为 inputs=\2 "
        r"succeeded=\3 failed=\4，没有任何打印的阶段与之相符（打印的 inputs/succeeded/failed：\5）",
    ),
    (
        r"C2\.5: no \[summary\] line was printed and no op_compiler process was observed, so "
        r"no stage record exists",
        "C2.5：没有打印 [summary] 行，也没有观察到 op_compiler 进程，因此没有阶段记录",
    ),
    (
        r"C2\.5: the launcher reported a failing op_compiler, but the compiler stack did not "
        r"return naturally; failure is not inferred",
        "C2.5：启动器报告 op_compiler 执行出错，但编译栈没有自然返回；不推断为失败",
    ),
    (
        r"C2\.5: no compile ran: a cached package was installed \(Static kernel cache hit: "
        r"(.*)\); this attempt is no compile-health evidence; .+; exit status (-?\d+) is "
        r"therefore not a compiler result",
        r"C2.5：没有运行编译：安装的是缓存中的包（Static kernel cache hit: \1）；"
        r"本次尝试不能作为编译健康证据；因此退出码 \2 不是编译结果",
    ),
    (
        r"C5: frozen jobs (\d+), but op_compiler ran with (.+): the launcher does not honour "
        r"the frozen value \(NPU_STATIC_KERNEL_COMPILE_JOBS\); the control was not in effect",
        r"C5：冻结的并发数为 \1，但 op_compiler 实际以 \2 运行：启动器没有遵守冻结值"
        "（NPU_STATIC_KERNEL_COMPILE_JOBS）；该控制项没有生效",
    ),
    (
        r"C5: frozen jobs (\d+); ()torch-npu (\S+) passes -j "
        r"os\.cpu_count\(\) // LOCAL_WORLD_SIZE to each rank's op_compiler \(-j (\d+) here\) "
        r"and reads no NPU_STATIC_KERNEL_COMPILE_JOBS; the control was not in effect",
        r"C5：冻结的并发数为 \1\2；torch-npu \3 给每个 rank 的 "
        r"op_compiler 传入 -j os.cpu_count() // LOCAL_WORLD_SIZE（此处为 -j \4），"
        "不读取 NPU_STATIC_KERNEL_COMPILE_JOBS；该控制项没有生效",
    ),
    (
        r"C5: frozen jobs (\d+); ()torch-npu (\S+) passes -j "
        r"os\.cpu_count\(\) \(-j (\d+) here\) and reads no NPU_STATIC_KERNEL_COMPILE_JOBS; "
        r"the control was not in effect",
        r"C5：冻结的并发数为 \1\2；torch-npu \3 传入 -j "
        r"os.cpu_count()（此处为 -j \4），不读取 NPU_STATIC_KERNEL_COMPILE_JOBS；该控制项没有生效",
    ),
    (
        r"C7: torch-npu (\S+) logs op_compiler failures below the default level; the failure "
        r"was read from op_compiler's exit status and its logs",
        r"C7：torch-npu \1 以低于默认级别的日志记录 op_compiler 失败；该失败是从 op_compiler "
        "的退出码及其日志读出的",
    ),
    (
        r"C7: the runtime printed (\".*\"): its own words, quoted; they are not skgate's "
        r"verdict \(the state above is\)",
        r"C7：运行时打印了 \1：这是运行时自己的话，仅作引用；"
        "不是 skgate 的结论（结论以上面的状态为准）",
    ),
)

#: Issue 27: how to get a real compile after each way the launcher ran none.
_IDLE_ADVICE_ZH: Mapping[IdleKind, str] = {
    IdleKind.CACHED_INSTALL: (
        "如需真正编译，请关闭启动器的缓存编译（static_kernel_compile.use_cache_compile），"
        "或（在 `skgate cleanup` 之后）移走该缓存构建目录"
    ),
    IdleKind.PRINTED_INSTALL: (
        "如需真正编译，请关闭启动器的缓存编译（static_kernel_compile.use_cache_compile）"
    ),
    IdleKind.NO_OPERATORS: "如需真正编译，请运行启动器会导出其算子的图（aclnn 算子）",
    IdleKind.ALL_BLACKLISTED: "如需真正编译，请将这些算子移出静态 kernel 黑名单",
    IdleKind.EMPTY_SELECTION: (
        "如需真正编译，请启动新进程（启动器在每个进程中对每个输入只编译一次）"
    ),
}
_IDLE_SAID_ZH: tuple[tuple[IdleKind, str, str], ...] = (
    (
        IdleKind.CACHED_INSTALL,
        r"cached packages from (.*) were installed \((.*)\); no start line, no build directory "
        r"and no op_compiler",
        r"已安装来自 \2 的缓存包（\3）；没有启动行、没有构建目录，也没有 op_compiler",
    ),
    (
        IdleKind.CACHED_INSTALL,
        r"cached packages from (.*) were run to install \((.*); their exit status was not "
        r"observed\); no start line, no build directory and no op_compiler",
        r"运行了来自 \2 的缓存包以进行安装（\3；未观察到其退出码）；没有启动行、没有构建目录，"
        "也没有 op_compiler",
    ),
    (
        IdleKind.CACHED_INSTALL,
        r"cached packages from (.*) were run to install, and (\d+) install\(s\) exited "
        r"non-zero \((.*)\); no start line, no build directory and no op_compiler",
        r"运行了来自 \2 的缓存包以进行安装，其中 \3 次安装以非零退出码结束（\4）；"
        "没有启动行、没有构建目录，也没有 op_compiler",
    ),
    (
        IdleKind.PRINTED_INSTALL,
        r"package\(s\) (.*) were installed \(the launcher printed their uninstall path under "
        r"(.*)\) with no start line, no build directory and no op_compiler",
        r"已安装包 \2（启动器打印了其位于 \3 下的卸载路径），没有启动行、没有构建目录，"
        "也没有 op_compiler",
    ),
    (
        IdleKind.NO_OPERATORS,
        r"the launcher dumped no operator into (.*), so it started no op_compiler",
        r"启动器没有向 \2 导出任何算子，因此没有启动 op_compiler",
    ),
    (
        IdleKind.ALL_BLACKLISTED,
        r"(\d+) input\(s\) blacklisted to (.*), none left to compile",
        r"\2 个输入被列入黑名单并移到 \3，没有剩余需要编译的输入",
    ),
    (
        IdleKind.EMPTY_SELECTION,
        r"empty selection in (.*): each of the (\d+) dumped input\(s\) was compiled earlier "
        r"in the same process",
        r"\2 中的选择为空：导出的 \3 个输入都已在同一进程中较早编译过",
    ),
)


def _idle_reasons_zh() -> tuple[tuple[str, str], ...]:
    """The idle reasons (``skgate.model.idle.idle_reason``), with and without the C2.5
    tail of an unknown verdict (group 1 is the rule)."""
    out: list[tuple[str, str]] = []
    for kind, said, zh in _IDLE_SAID_ZH:
        en = r"C2\.([235]): no compile ran: " + said + "; " + re.escape(IDLE_ADVICE[kind])
        cn = r"C2.\1：没有运行编译：" + zh + "；" + _IDLE_ADVICE_ZH[kind]
        out.append((en, cn))
        out.append(
            (
                en + r"; exit status (?P<status>-?\d+) is therefore not a compiler result",
                cn + r"；因此退出码 \g<status> 不是编译结果",
            )
        )
    return tuple(out)


STAGE_REASONS_ZH = STAGE_REASONS_ZH + _idle_reasons_zh()


STAGE_MISSING_ZH: Mapping[str, str] = {
    "final aggregate summary ([summary] lines, a --summary-pattern match, or an "
    "op_compiler census after natural return)": (
        "最终聚合汇总（[summary] 行、--summary-pattern 匹配，或自然返回后的 op_compiler 统计）"
    ),
}
