"""C8 (issue 27): install is part of the answer. A failed install after a good compile is
never a clean success; a global uninstall is flagged first; en and zh."""

from __future__ import annotations

import json

from test_classify import natural as good_compile

from skgate.model.frozen import replace
from skgate.model.installs import Installs, PackageAction, PackageRun, RunSource
from skgate.model.outcomes import PackageMode
from skgate.model.phrases import Lang
from skgate.model.records import (
    Evidence,
    State,
    Verdict,
)
from skgate.report.html import band_tone
from skgate.verdict.classify import classify
from skgate.verdict.lint import lint_text
from skgate.verdict.words import headline, in_language, reason_zh, state_words
from skgate.verdict.words_installs import install_next_step

PKG = "/w/static_kernel_compile_outputs/ts1_pid2_outputs/static_kernel_1_2.run"
GLOBAL = "/tmp/ascend/opp/static_kernel/ai_core/uninstall.sh"
PHRASE = "compiled, but the package install failed: inference ran without these static kernels"
PHRASE_ZH = "已编译，但包安装失败：推理在没有这些静态 kernel 的情况下运行"
GLOBAL_WORDS = "removes every static-kernel package on this host, other experiments' too"


def run(
    status: int | None, path: str = PKG, action: PackageAction = PackageAction.INSTALL
) -> PackageRun:
    return PackageRun(action, path, "static_kernel_1_2", RunSource.EXEC, pid=9, exit_status=status)


def natural(installs: Installs | None, **kw: object) -> Evidence:
    """test_classify's natural success (exit 0, every input succeeded, a .run), with
    these package runs."""
    return replace(good_compile(), installs=installs, **kw)


def round_trip(v: Verdict) -> Verdict:
    return Verdict.from_dict(json.loads(json.dumps(v.to_dict())))


def test_a_failed_install_after_a_good_compile_is_never_a_clean_success() -> None:
    v = classify(natural(Installs(runs=(run(1),))))
    # The state stays the compile's verdict; the install failure is said first.
    assert v.state is State.SUCCEEDED
    assert v.installed is False
    assert v.reasons[0] == f"C8: {PHRASE} (static_kernel_1_2.run exited with status 1)"
    assert headline(v) == f"SUCCEEDED: {PHRASE}"
    assert state_words(v, Lang.ZH) == f"成功：{PHRASE_ZH}"
    assert v.to_dict()["installed"] is False
    assert round_trip(v) == v
    nxt = install_next_step(v, Lang.EN)
    assert nxt is not None and "without them" in nxt
    # The HTML band is never the clean green of a compile that installed.
    assert band_tone(v) != band_tone(classify(natural(Installs(runs=(run(0),)))))


def test_required_mode_fails_the_output_check_and_says_it_is_no_compiler_failure() -> None:
    v = classify(natural(Installs(runs=(run(1),)), package_mode=PackageMode.REQUIRED))
    assert v.state is State.FAILED
    assert v.exit_code == 1
    assert v.installed is False
    assert v.reasons[1] == "C8: package mode 'required' and the package install failed"
    assert headline(v).startswith(f"FAILED: {PHRASE} (package mode 'required')")
    assert "not a compiler failure" in headline(v)
    # C7: its words claim no compiler failure in either language (linted as if the
    # compile's own verdict, succeeded, were the state: no failure wording allowed).
    strict = replace(v, state=State.SUCCEEDED)
    for lang in Lang:
        text = "\n".join([state_words(v, lang), *(in_language(r, lang) for r in v.reasons)])
        assert not lint_text(text, "<report>", strict), text


def test_every_install_exiting_zero_is_installed_true() -> None:
    v = classify(natural(Installs(runs=(run(0), run(0)))))
    assert v.state is State.SUCCEEDED
    assert v.installed is True
    assert not any(r.startswith("C8") for r in v.reasons)
    assert headline(v).startswith("SUCCEEDED: the compiler returned naturally")


def test_no_install_evidence_claims_nothing() -> None:
    for installs in (None, Installs(), Installs(runs=(run(None),))):
        v = classify(natural(installs))
        assert v.state is State.SUCCEEDED
        assert v.installed is None
        assert "installed" not in v.to_dict()


def test_a_global_uninstall_is_the_first_reason_whatever_the_state() -> None:
    installs = Installs(runs=(run(0, GLOBAL, PackageAction.UNINSTALL_ALL),))
    for ev in (natural(installs), natural(installs, leader_exit_status=3, summary=None)):
        v = classify(ev)
        assert v.reasons[0] == (
            f"C8: an owned process ran the global {GLOBAL}, which {GLOBAL_WORDS}; exit status 0"
        )
        assert v.global_uninstall == (GLOBAL,)
        assert round_trip(v).global_uninstall == (GLOBAL,)
        assert v.installed is None  # an uninstall is no install


def test_install_reasons_have_their_chinese_forms() -> None:
    reasons = [
        *classify(
            natural(Installs(runs=(run(1), run(None, GLOBAL, PackageAction.UNINSTALL_ALL))))
        ).reasons,
        *classify(natural(Installs(runs=(run(1),)), package_mode=PackageMode.REQUIRED)).reasons,
        *classify(
            natural(
                Installs(
                    runs=(
                        PackageRun(
                            PackageAction.INSTALL, "a.run", "a", RunSource.LINE, ok=False, rank=0
                        ),
                    )
                ),
                leader_exit_status=3,
                summary=None,
            )
        ).reasons,
    ]
    c8 = [r for r in reasons if r.startswith("C8")]
    assert len(c8) == 5
    for reason in c8:
        zh = reason_zh(reason)
        assert zh is not None, reason
        # Every label in Chinese: no English words of the template are left over.
        for english in ("exited", "launcher", "install failed:", "removes", "exit status"):
            assert english not in zh, zh
    assert reason_zh(c8[0]) is not None
    assert f"C8：{PHRASE_ZH}（static_kernel_1_2.run 以退出码 1 结束）" in {reason_zh(r) for r in c8}


def test_a_release_that_hides_install_failures_is_named() -> None:
    """Issue 27: torch-npu 2.7 and 2.9 log a failed install below the default level, so no
    line of the run log names it; the verdict says why (the release table), in en and zh.
    2.14 warns visibly: no such note."""
    note = (
        "C7: torch-npu 2.7 logs package install failures below the default level; the "
        "failure was read from the package run's exit status"
    )
    hidden = classify(natural(Installs(runs=(run(1),)), torch_npu="2.7.1.post2"))
    assert note in hidden.reasons
    zh = reason_zh(note)
    assert zh is not None and "包安装失败" in zh
    shown = classify(natural(Installs(runs=(run(1),)), torch_npu="2.14.0"))
    assert not any("below the default level" in r for r in shown.reasons)
    # A launcher line that said it leaves nothing to explain.
    line = PackageRun(
        PackageAction.INSTALL, "static_kernel_1_2.run", None, RunSource.LINE, ok=False
    )
    said = classify(natural(Installs(runs=(run(1), line)), torch_npu="2.7.1.post2"))
    assert note not in said.reasons
