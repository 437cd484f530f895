"""Verdicts on the fidelity corpus: what real CANN compiles leave on disk (issue 19).

Each case of ``tests/fixtures/cann/`` was built from public sources (cited in its
``case.json`` and in ``docs/cann-static-compile.md``), not from skgate's simulator. The
case is replayed under the real gate (``replay.py``: its files, its printed lines, an
``op_compiler`` process with the recorded argv and exit status), and the verdict must be
the one the case states. Cache files and earlier roots the case marks ``preexisting`` are
put in place before the run, as they would be on a host.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import read_json, run_skgate

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "cann"
REPLAY = Path(__file__).resolve().parent / "replay.py"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())
#: The replayed op_compiler's name: one of this suite's own, so that other users' real
#: ``opc`` / ``op_compiler`` on a shared host are not this run's foreign compilers (C4:
#: they would be waited for) and are never taken for its stages (issue 28 s10).
NAMES = {"REPLAY_COMPILER_NAME": "skt_op_compiler", "SKGATE_COMPILER_NAMES": "skt_op_compiler"}
EXIT = {"succeeded": 0, "failed": 1, "unknown": 5}


def prepare(case: str, work: Path) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads((CORPUS / case / "case.json").read_text("utf-8"))
    templated = set(spec.get("templated_files", []))
    for rel in spec.get("preexisting", []):
        src = CORPUS / case / "tree" / rel
        dest = work / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rel in templated:
            dest.write_text(src.read_text("utf-8").replace("{cwd}", str(work)))
        else:
            shutil.copyfile(src, dest)
    return spec


@pytest.mark.parametrize("case", CASES)
def test_corpus_case_verdict(case: str, tmp_path: Path) -> None:
    work = (tmp_path / "work").resolve()
    work.mkdir()
    spec = prepare(case, work)
    expect = spec["expect"]
    res = run_skgate(
        "run", "--root", str(tmp_path / "runs"), "--quiet", "--json", "--jobs", "2",
        "--cwd", str(work), "--", sys.executable, str(REPLAY), str(CORPUS / case),
        cwd=tmp_path, env=NAMES, timeout=120,
    )  # fmt: skip
    att = sorted((tmp_path / "runs" / "attempts").iterdir())[-1]
    v = read_json(att / "verdict.json")
    reasons = "\n".join(v["reasons"])
    assert v["state"] == expect["state"], (case, reasons)
    assert res.returncode == EXIT[expect["state"]], res.stderr
    if "compiled" in expect and expect["state"] == "succeeded":
        assert v["compiled"] is expect["compiled"], (case, reasons)
    stages = read_json(att / "stages.json")
    if spec["op_compiler"]:
        censuses = [s["census"] for s in stages["stages"]]
        assert len(censuses) == len(spec["op_compiler"])
        assert sum(c["inputs"] for c in censuses) == expect["inputs"], censuses
        if expect["state"] == "succeeded":
            assert sum(c["succeeded"] for c in censuses) == expect["succeeded_inputs"]
    for op in expect.get("failed_op_types", []):
        # The failing op type and its error log are named (C2.3): the file to read next.
        assert any(op in r and "_compile_error.log" in r for r in v["reasons"]), reasons
    for name in expect.get("unpaired", []):
        # Whatever cannot be paired is named: the log file, or the input's stem (C2).
        shown = name.removesuffix(".json")
        assert shown in reasons, (name, reasons)
    if expect.get("compiled") is False and expect["state"] == "succeeded":
        assert "no compile ran: a cached package was installed" in reasons
        assert any(e["key_matches"] for c in stages["caches"] for e in c["entries"])
