"""The C3 ownership-record line (:func:`skgate.verdict.coverage.coverage_reason`) in
Chinese: one template per clause, so a new clause without its Chinese form is seen (the
whole line then stays untranslated rather than half so)."""

from __future__ import annotations

import functools
import re


@functools.cache
def _coverage_clauses_zh() -> tuple[tuple[re.Pattern[str], str], ...]:
    """The clauses of the C3 ownership-record line (verdict.coverage.coverage_reason), in
    Chinese (compiled on first use)."""
    return tuple(
        (re.compile(rf"\A{p}\Z"), zh)
        for p, zh in (
            (
                r"every fork, exec and exit of the owned tree is on record",
                "自有进程树的每一次 fork、exec 和退出都有记录",
            ),
            (
                r"the runner died after its last record at ([0-9: -]+ UTC), so forks, execs and "
                r"exits after that are not on record",
                r"运行器在最后一条记录（\1）之后终止；此后的 fork、exec 和退出均未记录",
            ),
            (
                r"the runner died before the owned tree ended, so forks, execs and exits after "
                r"its death are not on record",
                "运行器在自有进程树结束之前终止；它终止之后的 fork、exec 和退出均未记录",
            ),
            (
                r"the kernel dropped process events (\d+) times? under load, so short-lived "
                r"processes may be missing",
                r"内核在高负载下丢弃了 \1 次进程事件，短命进程可能缺失",
            ),
            (
                r"the process events missed (\d+) process(?:es)? that the scan or the reaper "
                r"found, so other short-lived processes may be missing",
                r"进程事件漏掉了扫描或回收发现的 \1 个进程，其他短命进程也可能缺失",
            ),
            (
                r"(\d+) owned process(?:es)? moved out of the attempt's cgroup \(tracked all "
                r"the same\), so the cgroup does not hold every one",
                r"\1 个自有进程移出了本次尝试的 cgroup（仍被跟踪），cgroup 不再包含每一个自有进程",
            ),
            (
                r"processes shorter than the scan interval \(([0-9.e+-]+) s\) may be missing",
                r"短于扫描间隔（\1 秒）的进程可能缺失",
            ),
            (
                r"the attempt's cgroup holds every owned process, escapes included",
                "本次尝试的 cgroup 包含每一个自有进程（包括脱离进程组的进程）",
            ),
            (
                r"(\d+) processes beyond the first (\d+) are counted by name, not listed",
                r"前 \2 个之后的 \1 个进程只按名称计数，未逐个列出",
            ),
            (
                r"the kernel's exit records \(([a-z]+)\) named (\d+) process(?:es)? gone before "
                r"(?:its|their) name could be read \(name only, no argv\)",
                r"内核的退出记录（\1）为 \2 个在读取名称之前已消失的进程提供了名称"
                "（只有名称，没有 argv）",
            ),
            (
                r"the kernel dropped exit records (\d+) times? under load, so some of those may "
                r"keep their parent's name",
                r"内核在高负载下丢弃了 \1 次退出记录，其中一些进程可能沿用其父进程的名称",
            ),
            (
                r"no exit records were read, so one gone before its name could be read keeps "
                r"its parent's name",
                "未读取退出记录，因此在读取名称之前已消失的进程沿用其父进程的名称",
            ),
            (
                r"(\d+) process(?:es)? exec'ed and exited before (?:its|their) argv could be read",
                r"\1 个进程的 argv 在读取之前已消失",
            ),
        )
    )


@functools.cache
def _coverage_re() -> re.Pattern[str]:
    return re.compile(r"\AC3: ownership record from ([a-z, ]+): (.+)\Z", re.DOTALL)


def coverage_zh(reason: str) -> str | None:
    """The Chinese form of the C3 ownership-record line, or None when a clause has no
    template."""
    match = _coverage_re().match(reason)
    if match is None:
        return None
    parts: list[str] = []
    for clause in match.group(2).split("; "):
        for pattern, zh in _coverage_clauses_zh():
            got = pattern.match(clause)
            if got:
                parts.append(got.expand(zh))
                break
        else:
            return None
    return f"C3：进程归属记录来源 {match.group(1)}：" + "；".join(parts)
