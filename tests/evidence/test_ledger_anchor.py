"""A sealed attempt of a root whose ledger no longer vouches for it (C2.5, C4).

Reproducer (measured on e240f5d): ``skgate run --root r --verdict-from exit-status --
false`` (failed, exit 3); ``verdict.json`` rewritten to ``succeeded`` and ``seal.json``
re-made to match it: ``skgate status r`` answered UNKNOWN ("seal.json ... not the seal the
ledger recorded"), as the ledger chains every seal's hash. Then ``rm r/ledger.jsonl``:
``skgate status r`` answered "SUCCEEDED: the compiler returned naturally and every input
succeeded" (exit 0), while ``skgate verify r`` said "CHANGED: ledger.jsonl: removed,
though 1 sealed attempt(s) of this root were indexed in it". The same with the ledger
emptied, replaced by garbage, truncated, a link, a directory or a FIFO: a failed compile
read as a success once one file of the root was touched. And ``skgate recover`` of such
an attempt indexed it in the ledger, which from then on vouched for the forgery.

Every attempt is indexed in its root's ledger before it runs (C4), so a sealed attempt
of a root whose ledger is gone, a link, not a regular file or names it nowhere has lost
what its seal is checked against: every reader answers ``unknown`` for it (exit 5), in
the words ``verify`` agrees with, and ``recover`` refuses it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from test_seal import ended_attempt
from test_sealed_ledger import forged, remake_seal

from conftest import as_if_runner_died, failed_attempt, run_skgate, unknown_everywhere
from skgate.evidence import ledger, ledger_seals, regular, seal, sealed
from skgate.evidence.files import EVENTS, SEAL, VERDICT
from skgate.model.errors import EvidenceError
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.model.running import ROOT_LEDGER
from skgate.read.liveness import current_verdict
from skgate.verdict.words import state_words
from skgate.workdir.recover import recover_attempt

GONE = (
    "evidence changed after sealing: the root's ledger is gone (ledger.jsonl indexes every "
    "attempt before it runs and chains its seal; nothing of skgate removes it)"
)
LINK = (
    "evidence changed after sealing: the root's ledger is a symbolic link (ledger.jsonl; "
    "evidence is never read through a link)"
)
ODD = (
    "evidence changed after sealing: the root's ledger is not a regular file (ledger.jsonl; "
    "evidence is only read from regular files)"
)
SILENT = (
    "evidence changed after sealing: the root's ledger does not index this attempt (no "
    "entry of ledger.jsonl names it: emptied, edited, or the attempt added by hand?)"
)
#: The same lines in Chinese, as docs/contract.md gives them.
ZH = {
    GONE: "封存后证据被改动：根目录的账本已不存在（ledger.jsonl 在每个尝试运行前登记它"
    "并链接其封存清单；skgate 从不删除它）",
    LINK: "封存后证据被改动：根目录的账本是符号链接（ledger.jsonl；证据从不经由链接读取）",
    ODD: "封存后证据被改动：根目录的账本不是普通文件（ledger.jsonl；证据只从普通文件读取）",
    SILENT: "封存后证据被改动：根目录的账本没有登记该尝试（ledger.jsonl 中没有任何条目提到它："
    "被清空、被编辑，还是该尝试是手工添加的？）",
}


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sealed._CACHE.clear()  # each test builds its own roots at the same tmp paths


def _gone(book: Path) -> None:
    book.unlink()


def _link(book: Path) -> None:
    book.rename(book.with_name("elsewhere.jsonl"))
    book.symlink_to("elsewhere.jsonl")


def _fifo(book: Path) -> None:
    book.unlink()
    os.mkfifo(book)  # never opened by a reader: one lstat says what it is


def _directory(book: Path) -> None:
    book.unlink()
    book.mkdir()


def _emptied(book: Path) -> None:
    book.write_bytes(b"")


def _garbage(book: Path) -> None:
    book.write_text("not a ledger {{\n")


def _renamed(book: Path) -> None:
    # Its entries edited to name another attempt: none names this one any more.
    book.write_text(book.read_text().replace('"0001"', '"0007"').replace("/0001", "/0007"))


def _torn(book: Path) -> None:
    book.write_bytes(book.read_bytes()[:100])  # inside the first (start) entry


LEDGER_STATES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "gone": (_gone, GONE, "gone"),
    "link": (_link, LINK, "a symbolic link"),
    "fifo": (_fifo, ODD, "not a regular file"),
    "directory": (_directory, ODD, "not a regular file"),
    "emptied": (_emptied, SILENT, "silent"),
    "garbage": (_garbage, SILENT, "silent"),
    "renamed": (_renamed, SILENT, "silent"),
    "torn": (_torn, SILENT, "silent"),
}


@pytest.mark.parametrize("state", LEDGER_STATES)
def test_a_sealed_attempt_whose_ledger_no_longer_vouches_reads_unknown(
    tmp_path: Path, state: str
) -> None:
    change, line, now = LEDGER_STATES[state]
    attempt = ended_attempt(tmp_path)
    remake_seal(attempt, VERDICT, forged(attempt))  # what the ledger alone would catch
    change(tmp_path / ledger.LEDGER)
    # Any file of it, not only the one that was edited: nothing of it is read.
    for name in (VERDICT, EVENTS):
        with pytest.raises(sealed.SealBreachError) as caught:
            sealed.read_bytes(attempt / name)
        assert str(caught.value) == line
        assert caught.value.breach.file == ROOT_LEDGER and caught.value.breach.now == now
    v = current_verdict(attempt)
    assert v.state is State.UNKNOWN and v.reasons[0] == line
    assert v.reasons[1] == (
        "C2.5: a sealed attempt its root's ledger no longer vouches for decides nothing (its "
        f"seal could have been re-made to match edited files): run 'skgate verify {tmp_path}' "
        "to list what changed"
    )
    assert v.missing == ("the root's ledger (ledger.jsonl) indexing this attempt",)
    zh = state_words(v, Lang.ZH)
    assert ZH[line] in zh and "ledger" not in zh.replace("ledger.jsonl", ""), zh
    assert "evidence changed" not in zh
    # verify names a problem of the ledger too (a change, or a torn line to cut).
    assert seal.find_problems(tmp_path), state


def test_the_forged_success_of_the_reproducer_is_unknown_in_every_answer(
    tmp_path: Path,
) -> None:
    attempt = failed_attempt(tmp_path)
    remake_seal(attempt, VERDICT, json.dumps({**_verdict(attempt), "state": "succeeded"}).encode())
    status = run_skgate("status", "r", cwd=tmp_path)
    assert status.returncode == 5 and "not the seal the ledger recorded" in status.stdout
    (tmp_path / "r" / ledger.LEDGER).unlink()
    unknown_everywhere(
        tmp_path,
        GONE,
        ZH[GONE],
        {"file": "../../ledger.jsonl", "sealed_sha256": None, "now": "gone"},
        ("status", "r"),
        ("status", "r", "--all"),
        ("status", "r/attempts/0001"),
    )
    checked = run_skgate("verify", "r", cwd=tmp_path)
    assert checked.returncode == 1 and "ledger.jsonl: removed" in checked.stdout
    # recover neither finishes nor indexes it: the ledger would vouch for the forgery.
    refused = run_skgate("recover", "r/attempts/0001", cwd=tmp_path)
    assert refused.returncode == 2 and GONE in refused.stderr, refused
    assert not (tmp_path / "r" / ledger.LEDGER).exists()


def _verdict(attempt: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((attempt / VERDICT).read_text())
    return data


def test_recover_refuses_a_sealed_attempt_its_ledger_does_not_name(tmp_path: Path) -> None:
    attempt = ended_attempt(tmp_path)
    book = tmp_path / ledger.LEDGER
    _emptied(book)
    with pytest.raises(EvidenceError, match="does not index this attempt"):
        recover_attempt(attempt)
    assert book.read_bytes() == b""  # nothing indexed


def test_an_intact_or_start_only_ledger_vouches(tmp_path: Path) -> None:
    attempt = ended_attempt(tmp_path)
    assert ledger_seals.anchor(str(tmp_path), attempt.name) is ledger_seals.Anchor.HELD
    assert sealed.read_bytes(attempt / VERDICT) == (attempt / VERDICT).read_bytes()
    # Its start entry alone (a runner killed between its seal and its end entry): indexed,
    # the seal alone is checked, and recover finishes it (tests/evidence/test_seal.py).
    second = ended_attempt(tmp_path, record=False)
    ledger.record_start(tmp_path, second, None)
    sealed._CACHE.clear()
    assert sealed.read_bytes(second / VERDICT) == (second / VERDICT).read_bytes()


def test_another_attempts_entries_do_not_index_this_one(tmp_path: Path) -> None:
    first = ended_attempt(tmp_path)
    second = ended_attempt(tmp_path)
    # The second one added by hand: the ledger never had its entries (its last lines:
    # the chain of the rest holds).
    book = tmp_path / ledger.LEDGER
    kept = [ln for ln in book.read_bytes().splitlines(True) if b'"0002"' not in ln]
    book.write_bytes(b"".join(kept))
    assert sealed.read_bytes(first / VERDICT)
    with pytest.raises(sealed.SealBreachError) as caught:
        sealed.read_bytes(second / VERDICT)
    assert str(caught.value) == SILENT


def test_an_unsealed_attempt_is_read_as_before(tmp_path: Path) -> None:
    attempt = ended_attempt(tmp_path)
    (attempt / SEAL).unlink()
    _gone(tmp_path / ledger.LEDGER)
    assert sealed.read_bytes(attempt / VERDICT) == (attempt / VERDICT).read_bytes()


def test_a_ledger_this_user_cannot_read_says_nothing_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another user's root, its ledger mode 0600 (root reads any file, so the refusal is
    # played): the seal alone is checked, as in a directory outside any root; no
    # "changed" is claimed that nobody saw.
    attempt = ended_attempt(tmp_path)
    remake_seal(attempt, VERDICT, forged(attempt))
    real = regular.open_fd

    def refused(path: Path | str, *, follow_link: bool = False) -> int:
        if str(path).endswith(ledger.LEDGER):
            raise EvidenceError(f"{path}: unreadable (Permission denied)")
        return real(path, follow_link=follow_link)

    monkeypatch.setattr(regular, "open_fd", refused)
    assert ledger_seals.anchor(str(tmp_path), attempt.name) is ledger_seals.Anchor.UNREAD
    assert sealed.read_bytes(attempt / VERDICT) == forged(attempt)


def test_a_reader_that_lives_on_sees_the_ledger_go(tmp_path: Path) -> None:
    # MCP and ``wait`` keep loaded seals, keyed by the ledger's state too.
    attempt = ended_attempt(tmp_path)
    assert sealed.read_bytes(attempt / VERDICT)
    _gone(tmp_path / ledger.LEDGER)
    with pytest.raises(sealed.SealBreachError, match="the root's ledger is gone"):
        sealed.read_bytes(attempt / VERDICT)


def test_recover_indexes_an_attempt_before_it_seals_it(tmp_path: Path) -> None:
    # A runner killed before it indexed its attempt (it launched nothing then, C4):
    # recover indexes it first, so a recover killed right after its seal leaves an
    # attempt its ledger names, which the next recover finishes (issue 28: no dead end),
    # never a sealed one the ledger does not name.
    attempt = failed_attempt(tmp_path)
    as_if_runner_died(attempt)
    book = tmp_path / "r" / ledger.LEDGER
    book.write_bytes(b"")  # its only entry, the start, never written
    order: list[str] = []
    real_seal, real_start = seal.seal_attempt, ledger.record_start

    def sealing(*args: object, **kwargs: object) -> object:
        order.append("seal")
        return real_seal(*args, **kwargs)  # type: ignore[arg-type]

    def starting(*args: object, **kwargs: object) -> object:
        order.append("start")
        return real_start(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seal, "seal_attempt", sealing)
        mp.setattr(ledger, "record_start", starting)
        done = recover_attempt(attempt)
    assert order == ["start", "seal"], order
    assert "indexed the attempt's start in the ledger" in done.done
    sealed._CACHE.clear()
    assert current_verdict(attempt).state is State.FAILED
    assert run_skgate("verify", "r", cwd=tmp_path).returncode == 0


def test_the_reader_reads_the_ledger_once_for_both_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The seal hashes and whether the attempt is indexed come from one read of the ledger.
    attempt = ended_attempt(tmp_path)
    reads: list[bytes] = []
    real = ledger_seals._entries

    def counted(root: str, needle: bytes) -> object:
        reads.append(needle)
        return real(root, needle)

    monkeypatch.setattr(ledger_seals, "_entries", counted)
    assert sealed.read_bytes(attempt / VERDICT)
    # One read for its seal hashes and its anchor, one for its runner (holds_another).
    assert reads == [b'"0001"', b'"0001"'], reads
