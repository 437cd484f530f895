"""The classifier's reasons in Chinese (C7), consulted by :mod:`skgate.verdict.words`.

The classifier (classify.py) writes its reasons in English, one template each; a Chinese
report shows them in Chinese through this table. tests/verdict/test_words.py checks that
every reason the classifier can produce has a translation, so the two cannot drift. Each
entry is (English regex, Chinese template); the English side must match the reason
exactly as the classifier writes it. The stage reasons are :mod:`words_stages`.
"""

from __future__ import annotations

REASONS_ZH: tuple[tuple[str, str], ...] = (
    # Issue 28: an attempt directory copied into a root from another attempt.
    (
        r"evidence changed after sealing: seal\.json \(it seals attempt (\S+), not this one: "
        r"copied from elsewhere\?\)",
        r"封存后证据被改动：seal.json（它封存的是尝试 \1，不是本尝试：从别处复制而来？）",
    ),
    # Issue 28: an attempt whose directory is gone though the root's ledger indexed it.
    # What became of its run follows, if known (REMOVED_FRAGMENTS_ZH says it in Chinese).
    (
        r"evidence removed: the attempt directory is gone \(the root's ledger indexed "
        r"it\)((?:; .+)?)",
        r"证据被删除：尝试目录已不存在（根目录的账本登记过该尝试）\1",
    ),
    (
        r"evidence changed after sealing: the attempt directory is gone \(the root's ledger "
        r"recorded its seal, sha256 (\w+)\)((?:; .+)?)",
        r"封存后证据被改动：尝试目录已不存在（根目录的账本记录了它的封存清单，sha256 \1）\2",
    ),
    (
        r"C2\.5: a removed attempt decides nothing, and no older attempt answers for it: run "
        r"'skgate verify (.+)' to list what is gone",
        r"C2.5：被删除的尝试不能决定任何结论，更早的尝试也不能代替它：运行 "
        r"'skgate verify \1' 列出缺失的内容",
    ),
    # A sealed attempt its root's ledger no longer vouches for (model.running
    # _LEDGER_LINES, skgate.evidence.ledger_seals.Anchor).
    (
        r"evidence changed after sealing: the root's ledger is gone \(ledger\.jsonl indexes "
        r"every attempt before it runs and chains its seal; nothing of skgate removes it\)",
        "封存后证据被改动：根目录的账本已不存在（ledger.jsonl 在每个尝试运行前登记它"
        "并链接其封存清单；skgate 从不删除它）",
    ),
    (
        r"evidence changed after sealing: the root's ledger is a symbolic link "
        r"\(ledger\.jsonl; evidence is never read through a link\)",
        "封存后证据被改动：根目录的账本是符号链接（ledger.jsonl；证据从不经由链接读取）",
    ),
    (
        r"evidence changed after sealing: the root's ledger is not a regular file "
        r"\(ledger\.jsonl; evidence is only read from regular files\)",
        "封存后证据被改动：根目录的账本不是普通文件（ledger.jsonl；证据只从普通文件读取）",
    ),
    (
        r"evidence changed after sealing: the root's ledger does not index this attempt "
        r"\(no entry of ledger\.jsonl names it: emptied, edited, or the attempt added by "
        r"hand\?\)",
        "封存后证据被改动：根目录的账本没有登记该尝试（ledger.jsonl 中没有任何条目提到它："
        "被清空、被编辑，还是该尝试是手工添加的？）",
    ),
    (
        r"C2\.5: a sealed attempt its root's ledger no longer vouches for decides nothing "
        r"\(its seal could have been re-made to match edited files\): run 'skgate verify "
        r"(.+)' to list what changed",
        r"C2.5：根目录账本不再为其担保的已封存尝试不能决定任何结论（它的封存清单可能已被重新生成以匹配"
        r"被改动的文件）：运行 'skgate verify \1' 列出改动",
    ),
    # Final names another process wrote while the run ran (model.running.disowned_line).
    (
        r"evidence written by another process while the run ran: (.+) \(its runner found "
        r"them at its final names, overwrote nothing and left the attempt unsealed; its own "
        r"verdict is in its journal's finished record\)",
        r"证据在运行期间被其他进程写入：\1（其运行器在写最终文件时发现它们已存在，未覆盖任何文件，"
        r"也未封存该尝试；它自己的结论记录在日志的 finished 记录中）",
    ),
    # An unsealed attempt's verdict.json its gone runner did not record
    # (model.running.SealBreach.line: UNRECORDED, JOURNAL_GONE).
    (
        r"evidence its runner did not record: (.+) \(the attempt is not sealed, its runner is "
        r"gone, and its journal records no verdict with this content: copied from another "
        r"attempt, edited, or written by hand\?\)",
        r"证据不是其运行器记录的：\1（该尝试未封存，其运行器已不在，且其日志中没有内容与之相同的结论记录："
        r"从其他尝试复制而来、被编辑，还是手工写入的？）",
    ),
    (
        r"evidence its runner did not record: (.+) \(the attempt is not sealed, its runner is "
        r"gone, and its journal, events\.jsonl, which records its verdict, is gone or not a "
        r"regular file\)",
        r"证据不是其运行器记录的：\1（该尝试未封存，其运行器已不在，"
        r"且记录其结论的日志 events.jsonl 已不存在或不是普通文件）",
    ),
    (
        r"C2\.5: evidence its runner did not write decides nothing: run 'skgate verify (.+)' "
        r"to list it",
        r"C2.5：不是其运行器写入的证据不能决定任何结论：运行 'skgate verify \1' 列出它",
    ),
    # Issue 28: a sealed attempt whose files changed (skgate.verdict.changed).
    (
        # A seal re-made to match edited files: its hash is not the ledger's.
        r"evidence changed after sealing: seal\.json \(sealed sha256 (\w+), now sha256 (\w+), "
        r"not the seal the ledger recorded\)",
        r"封存后证据被改动：seal.json（封存时 sha256 \1，现在 sha256 \2，不是账本记录的封存清单）",
    ),
    (
        r"evidence changed after sealing: (\S+) \(sealed sha256 (\w+), now sha256 (\w+)\)",
        r"封存后证据被改动：\1（封存时 sha256 \2，现在 sha256 \3）",
    ),
    (
        r"evidence changed after sealing: (\S+) \(sealed sha256 (\w+), now missing\)",
        r"封存后证据被改动：\1（封存时 sha256 \2，现已缺失）",
    ),
    (
        r"evidence changed after sealing: (\S+) \(sealed sha256 (\w+), now (\d+) bytes, "
        r"sealed (\d+)\)",
        r"封存后证据被改动：\1（封存时 sha256 \2、\4 字节，现在 \3 字节）",
    ),
    (
        r"evidence changed after sealing: (\S+) \(not in the seal, now sha256 (\w+), added "
        r"after sealing\)",
        r"封存后证据被改动：\1（不在封存清单中，现在 sha256 \2，封存后新增）",
    ),
    (
        r"evidence changed after sealing: (\S+) \(sealed sha256 (\w+), now (.+)\)",
        r"封存后证据被改动：\1（封存时 sha256 \2，现在：\3）",
    ),
    (
        r"evidence changed after sealing: seal\.json \(damaged: (.+)\)",
        r"封存后证据被改动：seal.json 已损坏（\1）",
    ),
    (
        r"C2\.5: evidence that contradicts its own seal decides nothing; what the changed "
        r"file says is not shown: run 'skgate verify (.+)' to list every difference",
        r"C2.5：与自身封存记录矛盾的证据不能决定任何结论；不显示被改动文件的内容：运行 "
        r"'skgate verify \1' 列出每一处差异",
    ),
    (
        r"(.+): line (\d+) is longer than (\d+) bytes \(a damaged record, refused and never "
        r"read\)",
        r"\1：第 \2 行超过 \3 字节（损坏的记录，已拒绝，从未读入）",
    ),
    (
        r"C2\.5: a damaged record may name what decides the verdict; no conclusion is drawn "
        r"from the rest",
        "C2.5：损坏的记录可能正是决定结论的内容；不从其余证据得出结论",
    ),
    (
        r"C2\.1: finishing: evidence disk full \((\d+) bytes free\); the runner is alive and "
        r"waits at most its grace for space, then leaves the attempt for 'skgate recover'; "
        r"free space under the evidence root, kill nothing",
        r"C2.1：收尾中：证据磁盘已满（剩余 \1 字节）；运行器仍在运行，"
        "最多等待宽限期以待空间释放，之后将本次尝试留给 'skgate recover'；"
        "请释放证据根目录下的空间，不终止任何进程",
    ),
    (
        r"C2\.1: evidence disk full while the command runs \((\d+) bytes free\); the runner is "
        r"alive and waits at most its grace for space, then leaves the attempt for 'skgate "
        r"recover'; free space under the evidence root, kill nothing",
        r"C2.1：命令运行期间证据磁盘已满（剩余 \1 字节）；运行器仍在运行，"
        "最多等待宽限期以待空间释放，之后将本次尝试留给 'skgate recover'；"
        "请释放证据根目录下的空间，不终止任何进程",
    ),
    (
        r"C2\.5: the top-level process was ended by (\S+), which this runner did not send: "
        r"most often its own crash, possibly a kill from outside; neither a natural return "
        r"nor an outside interruption can be shown",
        r"C2.5：顶层进程被 \1 结束，该信号不是本运行器发送的：多半是它自身崩溃，也可能是外部终止；"
        "既不能证明是自然返回，也不能证明是外部中断",
    ),
    (
        r"C2\.1: the runner that owns this attempt is alive and its frozen timeout has not "
        r"fired; keep waiting, observe read-only, kill nothing",
        "C2.1：拥有本次尝试的运行器仍在运行，冻结的顶层超时尚未触发；"
        "继续等待，只读观察，不终止任何进程",
    ),
    (
        r"C2\.1: (\d+) owned process(?:es)? alive and the frozen deadline has not passed; "
        r"observe read-only, kill nothing\. The runner that owns this attempt is gone, so "
        r"nobody will record the natural return: the attempt can only end unknown, and a "
        r"clean retry will be needed",
        r"C2.1：\1 个自有进程仍存活且冻结的截止时间未到；只读观察，不终止任何进程。"
        "拥有本次尝试的运行器已不在，无人会记录自然返回：本次尝试只能以“未知”结束，之后需要一次干净重试",
    ),
    (
        r"C2\.1: owned processes still running, runner gone: (\d+) owned process(?:es)? alive "
        r"after the frozen deadline, which nobody enforces now; observe read-only, kill "
        r"nothing by name or age, inspect the ownership manifest\. The attempt can only end "
        r"unknown, and a clean retry will be needed",
        r"C2.1：自有进程仍在运行，运行器已不在：截止时间已过，仍有 \1 个自有进程存活，"
        "现在无人执行超时；只读观察，不要按名称或进程年龄终止任何进程，请查看进程归属清单。"
        "本次尝试只能以“未知”结束，之后需要一次干净重试",
    ),
    (
        r"C2\.1: the attempt is being stopped and (\d+) owned process(?:es)? still alive; no "
        r"state is final while one lives: keep waiting, kill nothing by name or age",
        r"C2.1：本次尝试正在被终止，仍有 \1 个自有进程存活；只要还有一个存活，就没有最终状态："
        "继续等待，不要按名称或进程年龄终止任何进程",
    ),
    (
        r"C2\.1: the attempt is being stopped by its runner, which is alive and has not "
        r"written the verdict yet; no state is final before it: keep waiting",
        "C2.1：本次尝试正由其运行器终止，运行器仍在运行且尚未写出判定；在此之前没有最终状态：继续等待",
    ),
    (
        r"C2\.2: the compiler stack returned naturally with exit status 0",
        "C2.2：编译栈自然返回，退出码为 0",
    ),
    (
        r"C2\.2: the final summary reports every input of all (\d+) stage\(s\) succeeded",
        r"C2.2：最终汇总显示全部 \1 个阶段的所有输入均成功",
    ),
    (
        r"C2\.3: the compiler stack returned naturally with exit status (-?\d+)",
        r"C2.3：编译栈自然返回，退出码为 \1",
    ),
    (
        r"C2\.3: the final summary reports failures: (.+)",
        r"C2.3：最终汇总报告了失败的输入：\1",
    ),
    (
        r"C2\.3: kept error logs are now final compiler evidence",
        "C2.3：保留的 error 日志现在是最终编译证据",
    ),
    (
        r"C2\.4: the frozen top-level timeout fired; the runner signalled only its own "
        r"process group: (.+)",
        r"C2.4：冻结的顶层超时已触发；运行器只向它自己创建的进程组发送了信号：\1",
    ),
    (
        r"C2\.4: compile evidence is interrupted/invalid, not an operator failure; a clean "
        r"retry is required before judging compiler support",
        "C2.4：编译证据已中断、无效，不能当作算子问题；"
        "判断编译器是否支持之前，必须先做一次干净重试",
    ),
    (
        r"C2\.1: the runner that owns this attempt is alive and has not launched the "
        r"command yet \(preflight\); keep waiting, kill nothing",
        "C2.1：拥有本次尝试的运行器仍在运行，尚未启动命令（预检中）；继续等待，不终止任何进程",
    ),
    (
        r"C4: waiting for blockers, which are never signalled: (.+)",
        r"C4：正在等待阻塞项，绝不向它们发送信号：\1",
    ),
    (
        r"C2\.4: stopped through skgate stop: (.*)",
        r"C2.4：通过 skgate stop 停止：\1",
    ),
    (
        r"C2\.4: the runner received (.+) from outside and forwarded it",
        r"C2.4：运行器从外部收到 \1，并转发给了自己的进程组",
    ),
    (
        r"C2\.4: the top-level process was ended by (\S+) \(not sent by this runner: a kill "
        r"from outside, or a crash; either way the compile did not return naturally\)",
        r"C2.4：顶层进程被 \1 结束（不是本运行器发送的：可能是外部终止，也可能是崩溃；"
        "无论哪种，编译都没有自然返回）",
    ),
    (
        r"C2\.4: the top-level process was ended by (\S+)",
        r"C2.4：顶层进程被 \1 结束",
    ),
    (
        r"C2\.4: the runner signalled its own process group: (.+)",
        r"C2.4：运行器向自己的进程组发送了信号：\1",
    ),
    (
        r"C2\.5: the event journal \(events\.jsonl\) is missing; launch, exits and signals "
        r"cannot be established, so no conclusion is drawn",
        "C2.5：事件日志 events.jsonl 缺失；无法确定启动、退出和信号，因此不下结论",
    ),
    (
        r"C2\.5: the runner is gone without a verdict, its deadline has passed and (\d+) "
        r"owned process(?:es)? still alive; nobody enforces the timeout now\. Do not kill by "
        r"name or age; inspect the ownership manifest",
        r"C2.5：运行器已不在且没有留下结论，截止时间已过，仍有 \1 个自有进程存活；"
        "现在没有人执行超时。不要按名称或进程年龄终止进程；请查看进程归属清单",
    ),
    (
        r"C2\.5: the runner has not recorded the terminal status yet",
        "C2.5：运行器尚未记录终止状态",
    ),
    (
        r"C2\.5: the runner died before the verdict was written \(after natural return\); no "
        r"final state is derived from a partial set of files\. Once no owned process lives, "
        r"'skgate recover' finishes what can honestly be finished",
        "C2.5：运行器在写出结论之前终止（在自然返回之后）；不从不完整的文件集合推出最终状态。"
        "待没有自有进程存活后，'skgate recover' 会完成能如实完成的部分",
    ),
    (
        r"C2\.5: the runner died before the verdict was written \(before natural return\); no "
        r"final state is derived from a partial set of files\. Once no owned process lives, "
        r"'skgate recover' finishes what can honestly be finished",
        "C2.5：运行器在写出结论之前终止（在自然返回之前）；不从不完整的文件集合推出最终状态。"
        "待没有自有进程存活后，'skgate recover' 会完成能如实完成的部分",
    ),
    (
        r"C2\.5: recovered by 'skgate recover' after the runner died before launch: nothing "
        r"had been launched \(no run log exists\)",
        "C2.5：运行器在启动之前终止，由 'skgate recover' 恢复：没有启动任何进程（不存在运行日志）",
    ),
    (
        r"C2\.5: recovered by 'skgate recover' after the runner died before natural return: "
        r"nobody saw the owned tree end, so its natural return cannot be established",
        "C2.5：运行器在自然返回之前终止，由 'skgate recover' 恢复：无人看到自有进程树结束，"
        "因此无法确定其自然返回",
    ),
    (
        r"C2\.5: recovered by 'skgate recover' after the runner died after natural return: "
        r"the natural return was recorded; the files the runner had not written yet "
        r"\(census, summary\) were made at recovery, the census labelled late",
        "C2.5：运行器在自然返回之后终止，由 'skgate recover' 恢复：自然返回已有记录；"
        "运行器尚未写出的文件（产物统计、汇总）在恢复时生成，产物统计标记为迟到",
    ),
    (
        r"C2\.5: (\d+) escaped owned process(?:es)? still lived when the runner finished, so "
        r"the tree did not return completely",
        r"C2.5：运行器结束时仍有 \1 个脱离进程组的自有进程存活，进程树没有完整返回",
    ),
    (
        r"C2\.5: the final summary contradicts itself: (.+)",
        r"C2.5：最终汇总自相矛盾：\1",
    ),
    (
        r"C2\.5: the artifact census could not read (\d+) director(?:y|ies) under the "
        r"outputs; a \.run package may be hidden there, so the C8 output check cannot "
        r"conclude",
        r"C2.5：产物统计有 \1 个输出目录无法读取；那里可能有 .run 包，"
        "因此 C8 输出检查无法下结论",
    ),
    (
        r"C2\.5: exit status, summary and outputs disagree",
        "C2.5：退出码、最终汇总与输出产物互相不一致",
    ),
    (
        r"C2\.5: evidence is missing; the verdict is blocked, failure is not inferred",
        "C2.5：证据缺失；结论被阻止，不推断为失败",
    ),
    (
        r"C4: (\d+) owned process(?:es)? in torchrun's worker sessions \(torchrun starts each "
        r"worker in a session of its own\): watched like the rest, never signalled, and (\d+) "
        r"still lived when the runner finished",
        r"C4：\1 个自有进程位于 torchrun 的 worker 会话中（torchrun 让每个 worker 运行在自己的"
        r"会话中）：与其他进程一样被观察，从未被发送信号；运行器结束时仍有 \2 个存活",
    ),
    (
        r"C4: (\d+) owned process(?:es)? in torchrun's worker sessions \(torchrun starts each "
        r"worker in a session of its own\): watched like the rest, never signalled",
        r"C4：\1 个自有进程位于 torchrun 的 worker 会话中（torchrun 让每个 worker 运行在自己的"
        "会话中）：与其他进程一样被观察，从未被发送信号",
    ),
    (
        r"C4: (\d+) owned process(?:es)? left the process group \(setsid\); (?:it was|they "
        r"were) watched, never signalled, and (\d+) still lived when the runner finished",
        r"C4：\1 个自有进程离开了进程组（setsid）；它们被观察，从未被发送信号；"
        r"运行器结束时仍有 \2 个存活",
    ),
    (
        r"C4: (\d+) owned process(?:es)? left the process group \(setsid\); (?:it was|they "
        r"were) watched, never signalled",
        r"C4：\1 个自有进程离开了进程组（setsid）；它们被观察，从未被发送信号",
    ),
    (
        r"C8: (\d+) error-named logs? and no \.run package after natural return",
        r"C8：自然返回后有 \1 个 error 命名日志且没有 .run 包",
    ),
    (
        r"C8: package mode 'required' and no \.run package after natural return",
        "C8：包模式为 required，自然返回后没有 .run 包",
    ),
    (
        r"C8: (\d+) entr(?:y|ies) already in the outputs directory before launch (?:was|were) "
        r"not counted: earlier runs' artifacts, not this attempt's \(skgate cleanup "
        r"preserves and clears them\)",
        r"C8：启动前输出目录里已有的 \1 项未计入：它们是之前运行的产物，不属于本次尝试"
        "（`skgate cleanup` 会先保存再清理）",
    ),
    # --verdict-from exit-status (C2, last paragraph).
    (
        r"C2\.2: the command returned naturally with exit status 0, and its exit status is "
        r"its declared final summary \(--verdict-from exit-status\); no op_compiler was "
        r"observed and no compiler summary was read",
        "C2.2：命令自然返回，退出码为 0；其退出码是声明的最终汇总（--verdict-from exit-status）；"
        "未观察到 op_compiler，也没有读取编译汇总",
    ),
    (
        r"C2\.3: the command returned naturally with exit status (-?\d+), and its exit status "
        r"is its declared final summary \(--verdict-from exit-status\); no op_compiler was "
        r"observed: this is the command's own failure, not a compiler result",
        r"C2.3：命令自然返回，退出码为 \1；其退出码是声明的最终汇总（--verdict-from exit-status）；"
        "未观察到 op_compiler：这是命令自身的失败，不是编译结果",
    ),
    (
        r"C2: --verdict-from exit-status was declared, but (an owned op_compiler was observed|"
        r"the launcher reported a compile cache hit|a final summary was printed): that evidence "
        r"decided \((\w+)\), and exit status (-?\d+) agrees",
        r"C2：声明了 --verdict-from exit-status，但\1：由这些证据决定（\2），退出码 \3 与之一致",
    ),
    (
        r"C2\.5: --verdict-from exit-status was declared, but (an owned op_compiler was "
        r"observed|the launcher reported a compile cache hit|a final summary was printed): "
        r"that evidence says (\w+) while exit status (-?\d+) says (\w+); the declaration does "
        r"not hold for a compile, so no conclusion is drawn",
        r"C2.5：声明了 --verdict-from exit-status，但\1：这些证据表明 \2，而退出码 \3 表明 \4；"
        "该声明不适用于编译，因此不下结论",
    ),
    (
        r"C3: evidence incomplete: disk full at (.+?); the command was not disturbed \(its "
        r"output was drained\), but no conclusion is drawn from an incomplete record\. Free "
        r"space under the evidence root and retry",
        r"C3：证据不完整：磁盘已满，时间与位置 \1；命令未受干扰（其输出已被读取），"
        "但不从不完整的记录得出结论。请释放证据根目录下的空间后重试",
    ),
    (
        r"C2\.5: the runner recorded its intent to launch \(launch\.json\) but not the launch "
        r"itself; it died around the fork, so the workload may have run: no conclusion is "
        r"drawn \(never 'not started'\)",
        "C2.5：运行器记录了启动意图（launch.json），但没有记录启动本身；它在 fork 前后终止，"
        "工作负载可能已经运行：不下结论（绝不判为“未启动”）",
    ),
    (
        r"nothing was launched; this is not a compile result",
        "没有启动任何进程；这不是编译结果",
    ),
    # The compile-health gate's one sentence (skgate regress --health, C6).
    (
        r"later profiling may be accepted: the fresh-root compile-health run returned "
        r"naturally, every stage reported all inputs successful, exit status 0, and "
        r"inference reached its completion marker \(C6\)",
        "可以接受之后的性能分析：全新根目录下的编译健康检查自然返回，每个阶段的所有输入均成功，"
        "退出码为 0，推理到达了正常完成点（C6）",
    ),
    (
        r"later profiling may NOT be accepted: the compile-health run is not attributable "
        r"\((.+)\)",
        r"不能接受之后的性能分析：编译健康检查无法归因（\1）",
    ),
    (
        r"later profiling may NOT be accepted: the declared change did not reach the "
        r"compile; the compile-health run is no evidence for it until what the findings "
        r"name is cleared",
        "不能接受之后的性能分析：声明的改动没有进入编译；在清除检查结果列出的内容之前，"
        "这次编译健康检查不能作为该改动的证据",
    ),
    (
        r"later profiling may NOT be accepted: failed checks: (.+)",
        r"不能接受之后的性能分析：未通过的检查：\1",
    ),
)


#: What became of a removed attempt's run (``SealBreach.line``, ``model.running.how_ended``),
#: after the line's first part has been said in Chinese (``words._fragments_zh``).
_RECORDED = r"; its runner recorded in the root's ledger how it ended: "
REMOVED_FRAGMENTS_ZH: tuple[tuple[str, str], ...] = (
    ("; a directory without its evidence stands in its place", "；原处是一个不含其证据的目录"),
    (
        r"; another attempt's evidence stands in its place \(its journal names another "
        r"runner: copied from another root\?\)",
        "；原处是另一个尝试的证据（其日志记录的是另一个运行器：从另一个根目录复制而来？）",
    ),
    (
        r"; its runner \(pid (\d+)\) still runs, and its command may too",
        r"；它的运行器（pid \1）仍在运行，它的命令也可能仍在运行",
    ),
    (
        r"; its runner \(pid (\d+)\) died without recording how its command ended: the "
        r"command may still run, unsupervised",
        r"；它的运行器（pid \1）在记录命令如何结束之前已终止：该命令可能仍在运行，无人监管",
    ),
    (
        _RECORDED + "the frozen timeout fired",
        "；它的运行器在根目录的账本中记录了结束方式：冻结的超时已触发",
    ),
    (
        _RECORDED + r"its command ended by (SIG[A-Z0-9]+)",
        r"；它的运行器在根目录的账本中记录了结束方式：它的命令被 \1 结束",
    ),
    (
        _RECORDED + r"its command ended by signal (\d+)",
        r"；它的运行器在根目录的账本中记录了结束方式：它的命令被信号 \1 结束",
    ),
    (
        _RECORDED + r"its command returned with exit status (\d+)",
        r"；它的运行器在根目录的账本中记录了结束方式：它的命令以退出码 \1 返回",
    ),
)
