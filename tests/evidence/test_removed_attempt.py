"""An attempt directory removed after its root's ledger indexed it (issue 28, C2.5, C4).

Reproducer (measured on 1d06c40): ``skgate run --verdict-from exit-status -- true``, then
``-- false``, then ``rm -rf r/attempts/0002``. ``skgate status r`` printed the older
attempt's SUCCEEDED with exit 0; ``status --all`` listed 0001 alone; the next ``skgate
run`` was given the id 0002 again, read its own fresh evidence against the removed
attempt's seal hash in the ledger, and ended with exit 2, its attempt left unfinished.

Now the removed attempt is still the root's newest, read ``unknown`` (exit 5) with its
removal first, in every command and both languages; its id is never given out again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_seal import ended_attempt

from skgate.evidence import ledger, ledger_seals, lookup, sealed
from skgate.model.errors import BlockedError, EvidenceError
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.model.running import ATTEMPT_DIRECTORY
from skgate.read.liveness import current_verdict
from skgate.verdict import words
from skgate.verdict.words_next import REMOVED_NEXT, next_step_of

GONE_SEALED = "evidence changed after sealing: the attempt directory is gone"
GONE_UNSEALED = "evidence removed: the attempt directory is gone (the root's ledger indexed it)"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sealed._CACHE.clear()  # each test builds its own roots at the same tmp paths


def three(root: Path) -> list[Path]:
    return [ended_attempt(root) for _ in range(3)]


def test_the_newest_removed_attempt_is_still_the_newest(tmp_path: Path) -> None:
    a1, a2, a3 = three(tmp_path)
    assert lookup.latest(tmp_path) == a3
    shutil.rmtree(a3)
    assert lookup.latest(tmp_path) == a3  # never a2 in its place
    shutil.rmtree(a2)
    assert lookup.latest(tmp_path) == a3
    assert lookup.latest(str(tmp_path)) == str(a3)  # the caller's kind of path back
    shutil.rmtree(a1)
    assert lookup.latest(tmp_path) == a3  # every attempt gone: still not "no attempts"


def test_a_removed_attempt_named_by_its_path_is_itself(tmp_path: Path) -> None:
    _, a2, _ = three(tmp_path)
    shutil.rmtree(a2)
    assert lookup.is_removed(a2)
    assert lookup.latest(a2) == a2


def test_what_is_not_a_removed_attempt(tmp_path: Path) -> None:
    a1, _, _ = three(tmp_path)
    assert not lookup.is_removed(a1)  # there
    assert not lookup.is_removed(tmp_path / "attempts" / "0009")  # never indexed
    assert not lookup.is_removed(tmp_path / "elsewhere" / "0001")  # not in a root
    with pytest.raises(EvidenceError, match="no such attempt directory"):
        lookup.latest(tmp_path / "attempts" / "0009")


def test_no_ledger_no_removal_to_tell(tmp_path: Path) -> None:
    """A root without a ledger (hand-built, an older skgate), or a linked ledger: its
    attempts are what its directories say, as before."""
    a1, _, a3 = three(tmp_path)
    shutil.rmtree(a3)
    ledger_file = tmp_path / ledger_seals.LEDGER
    moved = tmp_path.parent / f"{tmp_path.name}-ledger"
    ledger_file.rename(moved)
    assert not lookup.is_removed(a3)
    assert lookup.latest(tmp_path).name == "0002"
    ledger_file.symlink_to(moved)  # read as a regular file only: a link is none
    assert not lookup.is_removed(a3)
    assert lookup.latest(tmp_path).name == "0002"
    assert a1.is_dir()


def test_status_all_lists_removed_attempts_in_order(tmp_path: Path) -> None:
    a1, a2, a3 = three(tmp_path)
    shutil.rmtree(a2)
    assert lookup.resolve(tmp_path) == [a1, a3]
    assert lookup.resolve(tmp_path, prelaunch=True, removed=True) == [a1, a2, a3]
    assert ledger_seals.indexed_names(str(tmp_path)) == {"0001", "0002", "0003"}


def test_an_indexed_id_is_never_given_out_again(tmp_path: Path) -> None:
    _, a2, a3 = three(tmp_path)
    shutil.rmtree(a3)
    shutil.rmtree(a2)
    assert ledger.allocate(tmp_path).name == "0004"
    with pytest.raises(BlockedError, match="never reused"):
        ledger.allocate(tmp_path, "0002")  # a reserved id too
    assert ledger.allocate(tmp_path, "0007").name == "0007"


def test_a_removed_sealed_attempt_reads_unknown_its_seal_named(tmp_path: Path) -> None:
    _, a2, _ = three(tmp_path)
    want = ledger_seals.recorded_seals(str(tmp_path), "0002")[-1]
    shutil.rmtree(a2)
    breach = sealed.removed_attempt(a2)
    assert breach is not None and breach.file == ATTEMPT_DIRECTORY and breach.sealed == want
    v = current_verdict(a2)
    assert v.state is State.UNKNOWN and v.breach == breach
    assert (
        v.reasons[0] == f"{GONE_SEALED} (the root's ledger recorded its seal, sha256 {want[:16]})"
    )
    assert v.reasons[1].startswith("C2.5: a removed attempt decides nothing")
    assert f"'skgate verify {tmp_path}'" in v.reasons[1]
    assert words.headline(v) == f"UNKNOWN: {v.reasons[0]}"
    assert v.exit_code == 5


def test_a_removed_unsealed_attempt_is_not_said_to_be_sealed(tmp_path: Path) -> None:
    """Indexed, never sealed (its runner was still running, or died): removed, and no
    word of a seal."""
    three(tmp_path)
    a4 = ledger.allocate(tmp_path)
    ledger.record_start(tmp_path, a4, None)
    shutil.rmtree(a4)
    assert lookup.latest(tmp_path) == a4
    v = current_verdict(a4)
    assert v.state is State.UNKNOWN
    assert v.reasons[0] == GONE_UNSEALED
    assert "seal" not in v.reasons[0].removeprefix(GONE_UNSEALED)


@pytest.mark.parametrize("sealed_first", [True, False])
def test_every_word_of_it_has_its_chinese_form(tmp_path: Path, sealed_first: bool) -> None:
    a1, _, a3 = three(tmp_path)
    gone = a3
    if not sealed_first:
        gone = ledger.allocate(tmp_path)
        ledger.record_start(tmp_path, gone, None)
    shutil.rmtree(gone)
    v = current_verdict(gone)
    for reason in v.reasons:
        zh = words.reason_zh(reason)
        assert zh is not None, reason
        head = zh.removeprefix("C2.5：")
        assert "\u4e00" <= head[0] <= "\u9fff", zh  # a Chinese sentence, not the English
    assert words.state_words(v, Lang.ZH).startswith(
        "未知：" + ("封存后证据被改动" if sealed_first else "证据被删除")
    )
    assert [words.missing_zh(m) for m in v.missing] == ["尝试目录"]
    assert next_step_of(v, Lang.ZH) == REMOVED_NEXT[Lang.ZH]
    assert next_step_of(v, Lang.EN) == REMOVED_NEXT[Lang.EN]
    assert a1.is_dir()


def test_the_api_and_the_mcp_lookup_answer_for_the_removed_newest(tmp_path: Path) -> None:
    from skgate import api
    from skgate.agents.mcp_server import _attempt

    _, _, a3 = three(tmp_path)
    shutil.rmtree(a3)
    assert _attempt(str(tmp_path)) == a3
    v = api.status(tmp_path)
    assert v.state is State.UNKNOWN and v.breach is not None and v.attempt == str(a3)


def test_an_attempt_hidden_by_deleting_its_records_is_still_listed(tmp_path: Path) -> None:
    """Its control.json and journal deleted, the directory is no attempt to a listing:
    the ledger still names it, and its seal says what is missing."""
    a1, a2, a3 = three(tmp_path)
    for victim in (a2, a3):
        (victim / "control.json").unlink()
        (victim / "events.jsonl").unlink()
    assert lookup.resolve(tmp_path) == [a1]
    assert lookup.resolve(tmp_path, prelaunch=True, removed=True) == [a1, a2, a3]
    assert lookup.latest(tmp_path) == a3
    v = current_verdict(a3)
    assert v.state is State.UNKNOWN and v.breach is not None and v.breach.file == "control.json"


def test_an_attempt_copied_in_under_another_id_is_never_read_as_its_own(
    tmp_path: Path,
) -> None:
    """``cp -r attempts/0001 attempts/0004``: a success copied over a newer failure. Its
    files match its seal; the seal names 0001 (verify: "copied from elsewhere?")."""
    a1, _, _ = three(tmp_path / "r")
    copied = tmp_path / "r" / "attempts" / "0004"
    shutil.copytree(a1, copied)
    assert lookup.latest(tmp_path / "r") == copied
    v = current_verdict(copied)
    assert v.state is State.UNKNOWN and v.breach is not None
    assert v.breach.sealed_as == "0001" and v.breach.to_dict()["sealed_as"] == "0001"
    assert v.reasons[0] == (
        "evidence changed after sealing: seal.json (it seals attempt 0001, not this one: "
        "copied from elsewhere?)"
    )
    assert words.reason_zh(v.reasons[0]) == (
        "封存后证据被改动：seal.json（它封存的是尝试 0001，不是本尝试：从别处复制而来？）"
    )
    assert current_verdict(a1).state is State.SUCCEEDED  # the original is intact
    # Outside a root a name proves nothing (an attempt copied aside to look at it).
    aside = tmp_path / "aside"
    shutil.copytree(a1, aside)
    assert current_verdict(aside).state is State.SUCCEEDED


def test_an_id_never_indexed_below_a_removed_one_is_not_the_newest(tmp_path: Path) -> None:
    """Measured on dac2e65: 0004's runner killed between creating its directory and
    indexing it, 0005 run and indexed, both directories removed since. ``latest`` stopped
    at 0004 (never indexed) and answered for 0003, the next run was given 0004, and then
    ``status ROOT`` answered for the removed 0005 instead of that new run."""
    _, _, a3 = three(tmp_path)
    stray = ledger.allocate(tmp_path)  # never indexed: its runner was killed
    a5 = ended_attempt(tmp_path)
    assert (stray.name, a5.name) == ("0004", "0005")
    shutil.rmtree(stray)
    shutil.rmtree(a5)
    assert ledger_seals.newest_indexed(str(tmp_path)) == 5
    assert lookup.latest(tmp_path) == a5  # was 0003
    assert current_verdict(lookup.latest(tmp_path)).state is State.UNKNOWN  # its removal
    new = ended_attempt(tmp_path)  # the next run
    assert new.name == "0006"  # was 0004: older than the removed 0005
    assert lookup.latest(tmp_path) == new
    assert a3.is_dir()


def test_the_last_start_is_found_past_a_long_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read back from the ledger's end: past other entries (a window without a start entry
    is read larger), never a torn last line nor a damaged one; nothing past the cap.
    Entries appended out of order (two runs started together) are stepped over by the
    callers, which ask for the ids after it in turn."""
    for name in ("0002", "0007", "0003"):  # 0003 indexed last (its run was slower)
        ledger.append_entry(
            tmp_path,
            ledger.LedgerEvent.START.value,
            {"attempt": name, "path": f"attempts/{name}", "parent": None},
        )
    assert ledger_seals.newest_indexed(str(tmp_path)) == 3
    assert ledger.allocate(tmp_path).name == "0004"  # 0007 is asked for when its turn comes
    for _ in range(400):  # ~60 KiB of other entries after the last start
        ledger.append_entry(
            tmp_path,
            ledger.LedgerEvent.SEAL.value,
            {"attempt": "0002", "path": "attempts/0002", "seal_sha256": "0" * 64},
        )
    book = tmp_path / ledger.LEDGER
    assert book.stat().st_size > 3 * ledger_seals.TAIL_FIRST
    assert ledger_seals.newest_indexed(str(tmp_path)) == 3
    with book.open("ab") as f:  # a line that is not JSON, then a torn start entry
        f.write(b'not json "start"\n{"event":"start","attempt":"0009","path":"attempts/0009"')
    assert ledger_seals.newest_indexed(str(tmp_path)) == 3
    monkeypatch.setattr(ledger_seals, "TAIL_CAP", ledger_seals.TAIL_FIRST)
    assert ledger_seals.newest_indexed(str(tmp_path)) is None  # not found within the cap
    assert ledger_seals.newest_indexed(str(tmp_path / "none")) is None  # no ledger


def test_runs_indexed_out_of_order_are_stepped_over(tmp_path: Path) -> None:
    """Two runs started together: 0005 indexed before 0004, both directories gone since.
    The newest is 0005 all the same, and the next run takes 0006."""
    three(tmp_path)
    for name in ("0005", "0004"):
        ledger.append_entry(
            tmp_path,
            ledger.LedgerEvent.START.value,
            {"attempt": name, "path": f"attempts/{name}", "parent": None},
        )
    assert ledger_seals.newest_indexed(str(tmp_path)) == 4
    assert lookup.latest(tmp_path) == tmp_path / "attempts" / "0005"
    assert ledger.allocate(tmp_path).name == "0006"
