"""Shipped JSON Schemas (src/skgate/schemas) accept what skgate really writes, and only that."""

from __future__ import annotations

import contextlib
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evidence_fixtures import census, live_verdict_of, make_attempt, ownership, verdict_for
from skgate.evidence import ledger
from skgate.evidence.census import take_census
from skgate.evidence.logscan import LogScanner
from skgate.model.errors import BlockedError
from skgate.model.phrases import Lang
from skgate.model.records import Census, Ownership, State, Verdict
from skgate.model.request import RunRequest
from skgate.report import load
from skgate.report import markdown as report

NAMES = (
    "control",
    "ownership",
    "verdict",
    "census",
    "event",
    "logscan",
    "seal",
    "scene",
    "report",
    "start",
    "wait",
    "stop",
)


def schema(name: str) -> dict[str, Any]:
    text = resources.files("skgate").joinpath(f"schemas/{name}.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def validate(name: str, instance: Any) -> None:
    jsonschema.Draft202012Validator(schema(name)).validate(instance)


def invalid(name: str, instance: Any) -> bool:
    return not jsonschema.Draft202012Validator(schema(name)).is_valid(instance)


@pytest.mark.parametrize("name", NAMES)
def test_schemas_are_valid_draft_2020_12(name: str) -> None:
    s = schema(name)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["properties"]["schema"]["const"] == f"skgate.{name}/1"


@pytest.mark.parametrize("state", list(State))
def test_verdicts_validate(state: State) -> None:
    v = verdict_for(state, "0001", census(2, 1, 0, live=False), ("[summary] x",))
    data = json.loads(json.dumps(v.to_dict()))
    validate("verdict", data)
    assert Verdict.from_dict(data) == v
    assert invalid("verdict", {**data, "state": "hung"})
    assert invalid("verdict", {**data, "schema": "skgate.verdict/2"})


def test_ownership_census_logscan_validate(tmp_path: Path) -> None:
    own = ownership().to_dict()
    validate("ownership", own)
    assert Ownership.from_dict(own) == ownership()
    assert invalid("ownership", {k: v for k, v in own.items() if k != "owned"})

    (tmp_path / "ts1_pid1_outputs" / "log").mkdir(parents=True)
    (tmp_path / "ts1_pid1_outputs" / "log" / "a_compile_error.log").write_bytes(b"")
    c = take_census(tmp_path, live=True).to_dict()
    validate("census", c)
    assert Census.from_dict(c).error_logs == 1
    assert invalid("census", {**c, "roots": [{"root": ".", "error_logs": -1}]})

    sc = LogScanner([r"S (?P<stage>\w+) (?P<inputs>\d+) (?P<succeeded>\d+) (?P<failed>\d+)"])
    sc.feed(b"[summary] stage=a inputs=1 succeeded=1 failed=0\nS b 1 0 1\n")
    validate("logscan", sc.finish().to_dict())


@pytest.mark.parametrize("state", list(State))
def test_hand_built_attempt_files_and_report_validate(tmp_path: Path, state: State) -> None:
    a = make_attempt(tmp_path, 1, state)
    validate("control", json.loads((a / "control.json").read_text()))
    for line in (a / "events.jsonl").read_text().splitlines():
        validate("event", json.loads(line))
    vo = live_verdict_of if state is State.IN_PROGRESS else load.default_verdict_of
    for lang in Lang:
        validate("report", json.loads(report.render(load.build_report(a, vo), lang, "json")))


def test_control_schema_rejects_wrong_shapes(tmp_path: Path) -> None:
    data = json.loads((make_attempt(tmp_path, 1, State.FAILED) / "control.json").read_text())
    assert invalid("control", {**data, "schema": "skgate.control/2"})
    assert invalid("control", {**data, "request": {**data["request"], "argv": []}})
    assert invalid("control", {k: v for k, v in data.items() if k != "runner"})


def test_seal_schema() -> None:
    good = {
        "schema": "skgate.seal/1",
        "attempt": "0001",
        "files": [{"name": "control.json", "sha256": "a" * 64, "size": 10}],
        "sealed_at": 1.5,
    }
    validate("seal", good)
    assert invalid("seal", {**good, "files": [{"name": "x", "sha256": "zz", "size": 1}]})


def test_real_scene_manifests_validate(tmp_path: Path) -> None:
    """``scene/<k>/manifest.json`` as ``skgate cleanup`` writes it (a link kept as a link)
    and as ``skgate recover`` writes it over the files a killed cleanup left."""
    from skgate.evidence import ledger, seal
    from skgate.workdir import cleanup
    from skgate.workdir.scenes import finish_scenes

    root, work = tmp_path / "r", tmp_path / "work"
    attempt = make_attempt(root, 1, State.FAILED)
    control = json.loads((attempt / "control.json").read_text())
    control["request"]["cwd"] = str(work)
    (attempt / "control.json").write_text(json.dumps(control))
    ledger.record_start(root, attempt, None)
    seal.seal_attempt(attempt)
    (work / "kernel_meta").mkdir(parents=True)
    (work / "kernel_meta" / "k.o").write_bytes(b"\x7fELF")
    (work / "kernel_meta" / "latest.o").symlink_to("k.o")
    (work / ".static_kernel_records.json").write_text("{}")
    assert cleanup.cleanup(work, root, attempt=attempt).ok
    made = json.loads((attempt / "scene/01/manifest.json").read_text())
    assert made["links"] == [{"name": "kernel_meta/latest.o", "target": "k.o"}]
    validate("scene", made)
    assert invalid("scene", {**made, "moved": [{**made["moved"][0], "method": "teleport"}]})
    assert invalid("scene", {k: v for k, v in made.items() if k != "files"})
    left = attempt / "scene" / "02" / "kernel_meta"  # a cleanup killed before its manifest
    left.mkdir(parents=True)
    (left / "k.o").write_bytes(b"\x7fELF2")
    assert finish_scenes(attempt, root)
    found = json.loads((attempt / "scene/02/manifest.json").read_text())
    assert found["recovered"]["by"] == "skgate recover" and found["moved"][0]["method"] == "unknown"
    validate("scene", found)
    assert seal.verify(root) == []


@pytest.mark.slow
def test_files_of_a_real_attempt_validate(tmp_path: Path) -> None:
    # One real gated run: every JSON file the runner wrote must match its schema.
    api = pytest.importorskip("skgate.api")
    req = RunRequest(
        argv=(sys.executable, "-c", "print('[summary] stage=c inputs=1 succeeded=1 failed=0')"),
        cwd=str(tmp_path),
        root=str(tmp_path / "runs"),
        timeout=60.0,
        grace=5.0,
        foreign_policy="refuse",  # never wait on other workloads of a shared machine
        lease_timeout=1.0,
        quiet=True,
        scan_interval=0.2,
    )
    # A run blocked by preflight (e.g. a foreign opc) still leaves evidence to check.
    with contextlib.suppress(BlockedError):
        api.run_attempt(req)
    (attempt,) = sorted((tmp_path / "runs" / "attempts").iterdir())
    seen = set()
    for name in NAMES:
        path = attempt / f"{name}.json"
        if path.exists():
            validate(name, json.loads(path.read_text()))
            seen.add(name)
    for line in (attempt / "events.jsonl").read_text().splitlines():
        validate("event", json.loads(line))
    assert {"control", "verdict"} <= seen
    validate("report", json.loads(report.render(load.build_report(attempt), Lang.EN, "json")))


def test_a_report_of_a_root_whose_ledger_is_torn_validates(tmp_path: Path) -> None:
    """The report's ``ledgers`` (C4): a torn ledger's status and problems validate, and a
    status the schema does not name is refused."""
    root = tmp_path / "r"
    a = make_attempt(root, 1, State.FAILED)
    ledger.record_start(root, a, None)
    with (root / ledger.LEDGER).open("ab") as fh:
        fh.write(b'{"schema":"skgate.ledger/1","seq":2,"ev')
    for lang in Lang:
        data = json.loads(report.render(load.build_report(a), lang, "json"))
        assert data["ledgers"][0]["status"] == "unfinished"
        validate("report", data)
    data["ledgers"][0]["status"] = "torn"
    assert invalid("report", data)
