"""The one reader checks a sealed attempt's ``seal.json`` against the root's ledger (C2.5).

Reproducer (found while reading the read side, issue 28's follow-up): ``skgate run
--verdict-from exit-status -- false``, then ``verdict.json`` rewritten to ``succeeded``
and ``seal.json`` re-made to match it. Every file matched the re-made seal, so
``status`` printed SUCCEEDED with exit 0; only ``verify`` said "seal.json: differs from
the one the ledger recorded". The ledger chains each seal's hash (its ``end`` and
``seal`` entries): the reader now asks it too (``skgate.evidence.ledger_seals``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from test_seal import ended_attempt

from skgate.evidence import digest, ledger, seal, sealed
from skgate.evidence.files import CONTROL, SEAL, VERDICT
from skgate.evidence.ledger_seals import recorded_seals
from skgate.model.phrases import Lang


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sealed._CACHE.clear()  # each test reads its own files, never an earlier answer


def remake_seal(attempt: Path, name: str, body: bytes) -> None:
    """Rewrite ``name`` and re-make ``seal.json`` so that every file matches it again."""
    (attempt / name).write_bytes(body)
    data = json.loads((attempt / SEAL).read_text())
    for entry in data["files"]:
        if entry["name"] == name:
            entry.update(sha256=digest.sha256_bytes(body), size=len(body))
    (attempt / SEAL).write_text(json.dumps(data))


def forged(attempt: Path) -> bytes:
    data = json.loads((attempt / VERDICT).read_text())
    data.update(state="failed", reasons=["forged"])
    return json.dumps(data).encode()


def test_a_seal_remade_to_match_edited_files_is_a_breach(tmp_path: Path) -> None:
    attempt = ended_attempt(tmp_path)
    chained = recorded_seals(str(tmp_path), attempt.name)
    # Both entries the runner's path writes carry it: the seal entry, then the end.
    assert chained == (digest.sha256_file(attempt / SEAL),) * 2
    remake_seal(attempt, VERDICT, forged(attempt))
    with pytest.raises(sealed.SealBreachError) as caught:
        sealed.read_bytes(attempt / VERDICT)
    now = digest.sha256_file(attempt / SEAL)
    assert now is not None
    assert str(caught.value) == (
        f"evidence changed after sealing: seal.json (sealed sha256 {chained[0][:16]}, "
        f"now sha256 {now[:16]}, not the seal the ledger recorded)"
    )
    # Any file of the attempt, not only the one that was edited.
    for name in (CONTROL, "extra/sk_fused_nodes.log"):
        with pytest.raises(sealed.SealBreachError, match="not the seal the ledger recorded"):
            sealed.read_bytes(attempt / name)


def test_an_intact_attempt_reads_as_before(tmp_path: Path) -> None:
    attempt = ended_attempt(tmp_path)
    assert sealed.read_bytes(attempt / VERDICT) == (attempt / VERDICT).read_bytes()


@pytest.mark.parametrize("spelling", [".", "./", "../0001", "../../attempts/0001/"])
def test_the_root_is_found_however_the_attempt_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    attempt = ended_attempt(tmp_path)
    remake_seal(attempt, VERDICT, forged(attempt))
    monkeypatch.chdir(attempt)
    with pytest.raises(sealed.SealBreachError, match="not the seal the ledger recorded"):
        sealed.read_bytes(os.path.join(spelling, VERDICT))


def test_a_reader_that_lives_on_sees_the_ledger_change(tmp_path: Path) -> None:
    # MCP and ``wait`` keep loaded seals: an edit of the ledger's recorded hash after a
    # first, clean read is seen by the next one (the cache is keyed by the ledger too).
    attempt = ended_attempt(tmp_path)
    assert sealed.read_bytes(attempt / VERDICT)
    path = tmp_path / ledger.LEDGER
    want = digest.sha256_file(attempt / SEAL)
    assert want is not None
    other = ("0" if want[0] != "0" else "1") + want[1:]
    path.write_text(path.read_text().replace(want, other))
    with pytest.raises(sealed.SealBreachError, match=f"sealed sha256 {other[:16]}"):
        sealed.read_bytes(attempt / VERDICT)


def test_an_attempt_outside_any_root_is_checked_against_its_seal_alone(tmp_path: Path) -> None:
    # Copied out of its root (no ``attempts/`` above it): no ledger vouches for it or
    # against it, and its files are checked against its seal alone. Inside a root, a
    # ledger that is gone or a link vouches for nothing (tests/evidence/test_ledger_anchor.py).
    attempt = ended_attempt(tmp_path / "root")
    out = tmp_path / "copied-out"
    shutil.copytree(attempt, out)
    remake_seal(out, VERDICT, forged(out))
    assert sealed.read_bytes(out / VERDICT) == forged(out)
    remake_seal(attempt, VERDICT, forged(attempt))
    with pytest.raises(sealed.SealBreachError, match="not the seal the ledger recorded"):
        sealed.read_bytes(attempt / VERDICT)


def test_only_this_attempts_entries_count(tmp_path: Path) -> None:
    first = ended_attempt(tmp_path)
    second = ended_attempt(tmp_path)
    remake_seal(first, VERDICT, forged(first))
    # The second attempt's seal is what its own entries say, whatever the first's are.
    assert sealed.read_bytes(second / VERDICT) == (second / VERDICT).read_bytes()
    # An entry naming the same attempt at another path is not this attempt's.
    path = tmp_path / ledger.LEDGER
    foreign = {"event": "end", "attempt": second.name, "path": "/elsewhere/attempts/0002"}
    with path.open("a") as fh:
        fh.write(json.dumps({**foreign, "seal_sha256": "f" * 64}) + "\n")
    assert recorded_seals(str(tmp_path), second.name) == ((digest.sha256_file(second / SEAL),) * 2)
    sealed._CACHE.clear()
    assert sealed.read_bytes(second / VERDICT) == (second / VERDICT).read_bytes()


def test_a_damaged_or_torn_ledger_line_is_not_read(tmp_path: Path) -> None:
    # verify names both; the reader takes the whole, parsable entries only.
    attempt = ended_attempt(tmp_path)
    path = tmp_path / ledger.LEDGER
    with path.open("a") as fh:
        fh.write('{"event":"end","attempt":"0001","path":"attempts/0001","seal_sha256":\n')
        fh.write('{"event":"seal","attempt":"0001","path":"attempts/0001","seal_sha256":"ab')
    want = digest.sha256_file(attempt / SEAL)
    assert recorded_seals(str(tmp_path), attempt.name) == (want, want)
    assert sealed.read_bytes(attempt / VERDICT)


def test_a_seal_removed_after_the_ledger_chained_it_is_a_breach(tmp_path: Path) -> None:
    # Removing seal.json made a finished attempt read as an unsealed one, as its
    # (edited) files said; the ledger says it was sealed ("now missing", as verify).
    attempt = ended_attempt(tmp_path)
    want = digest.sha256_file(attempt / SEAL)
    assert want is not None
    (attempt / SEAL).unlink()
    (attempt / VERDICT).write_bytes(b'{"state": "succeeded"}')
    with pytest.raises(sealed.SealBreachError) as caught:
        sealed.read_bytes(attempt / VERDICT)
    assert str(caught.value) == (
        f"evidence changed after sealing: seal.json (sealed sha256 {want[:16]}, now missing)"
    )
    with pytest.raises(sealed.SealBreachError, match="now missing"):
        sealed.read_bytes(attempt / "extra" / "sk_fused_nodes.log")


def test_an_attempt_the_ledger_holds_no_seal_for_is_read_as_it_is(tmp_path: Path) -> None:
    # In progress, or its runner died before the seal: the ledger has its start only.
    attempt = ledger.allocate(tmp_path)
    ledger.record_start(tmp_path, attempt, None)
    (attempt / VERDICT).write_bytes(b"{}")
    assert sealed.read_bytes(attempt / VERDICT) == b"{}"
    # Its seal and end come later: from then on the files are checked against them.
    seal.seal_attempt(attempt)
    (attempt / VERDICT).write_bytes(b"[]")
    with pytest.raises(sealed.SealBreachError, match=r"verdict\.json \(sealed sha256"):
        sealed.read_bytes(attempt / VERDICT)


def test_verify_names_a_ledger_removed_from_a_root_of_sealed_attempts(tmp_path: Path) -> None:
    # verify said "OK ... ledger chain intact" for a root whose ledger was deleted; every
    # attempt is indexed before it runs, so a root with sealed attempts had one.
    ended_attempt(tmp_path)
    ended_attempt(tmp_path)
    assert seal.find_problems(tmp_path) == []
    (tmp_path / ledger.LEDGER).unlink()
    removed = (
        "ledger.jsonl: removed, though 2 sealed attempt(s) of this root were indexed in it "
        "(the first run into a root creates it, and nothing of skgate removes it)"
    )
    assert seal.verify(tmp_path) == [removed]
    assert seal.verify(tmp_path / "attempts" / "0001") == [removed]
    problems = seal.ledger_problems(tmp_path)  # what a report's ledger section shows
    assert [p.text(Lang.ZH) for p in problems] == [
        "ledger.jsonl：已被删除，但本根目录有 2 个已封存的尝试曾登记在其中"
        "（首次运行到该根目录时创建，skgate 从不删除它）"
    ]
    assert not any(p.unfinished for p in problems)  # a change, never "run recover"


def test_a_root_of_unsealed_attempts_needs_no_ledger_to_verify(tmp_path: Path) -> None:
    attempt = ended_attempt(tmp_path, record=False)
    (attempt / SEAL).unlink()
    (tmp_path / ledger.LEDGER).unlink()
    assert seal.ledger_problems(tmp_path) == []
