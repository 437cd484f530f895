"""CANN's process logs of owned pids archived into the attempt (issue 20 s5, C3)."""

from __future__ import annotations

import json
import os
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from conftest import read_json, run_skgate, torchair_sim_env
from skgate.evidence import plog
from skgate.evidence.stages import load_stages
from skgate.model.plog import PlogFile
from skgate.model.running import Ownership
from skgate.report.stages import stage_plogs

TORCHAIR = [sys.executable, "-m", "skgate.sim.torchair", "--inputs", "3", "--cpu-count", "2"]


pytestmark = pytest.mark.usefixtures("end_leftover_sim")


def write(path: Path, data: bytes = b"line\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_base_follows_cann_priority(tmp_path: Path) -> None:
    assert plog.log_base({"ASCEND_PROCESS_LOG_PATH": "/p", "ASCEND_WORK_PATH": "/w"}) == (
        "/p",
        "ASCEND_PROCESS_LOG_PATH",
    )
    assert plog.log_base({"ASCEND_WORK_PATH": "/w", "HOME": "/h"}) == ("/w/log", "ASCEND_WORK_PATH")
    assert plog.log_base({"HOME": "/h"}) == ("/h/ascend/log", "HOME")
    assert plog.log_base({}) == (None, "none")


def test_only_regular_recent_logs_of_owned_pids_are_copied(tmp_path: Path) -> None:
    base = tmp_path / "log"
    debug = base / "debug"
    mine = write(debug / "plog" / "plog-100_20260101000000000.log", b"mine\n")
    dash = write(debug / "plog" / "plog-100-20260101000000001.log")  # the '-' form
    dev = write(debug / "device-3" / "device-101_20260101000000000.log")
    write(debug / "plog" / "plog-999_20260101000000000.log")  # not owned
    old = write(debug / "plog" / "plog-100_20250101000000000.log")  # before the launch
    os.utime(old, (1000.0, 1000.0))
    (debug / "plog" / "plog-100_link.log").symlink_to(mine)  # a link: never followed
    att = tmp_path / "att"
    att.mkdir()
    since = mine.stat().st_mtime - 1
    index = plog.archive(att, {"ASCEND_PROCESS_LOG_PATH": str(base)}, {100, 101}, since)
    got = {f["source"]: f for f in index["files"]}
    assert set(got) == {str(mine), str(dash), str(dev)}
    assert got[str(dev)]["kind"] == "device" and got[str(dev)]["pid"] == 101
    m = got[str(mine)]
    assert (att / m["archived"]).read_bytes() == b"mine\n" and m["truncated"] is False
    assert index["truncated"] is False and index["base_from"] == "ASCEND_PROCESS_LOG_PATH"


def test_archive_is_bounded_and_truncation_recorded(tmp_path: Path) -> None:
    base = tmp_path / "log"
    a = write(base / "debug" / "plog" / "plog-7_1.log", b"a" * 100)
    write(base / "debug" / "plog" / "plog-7_2.log", b"b" * 100)
    att = tmp_path / "att"
    att.mkdir()
    index = plog.archive(att, {"ASCEND_PROCESS_LOG_PATH": str(base)}, {7}, 0.0, limit=150)
    first, second = index["files"]
    assert first["source"] == str(a) and first["copied"] == 100 and not first["truncated"]
    assert second["copied"] == 50 and second["truncated"] and second["size"] == 100
    assert index["truncated"] is True
    assert sum(p.stat().st_size for p in (att / "plog").iterdir()) == 150


@pytest.mark.slow
def test_failed_stage_links_its_op_compiler_plog_and_it_is_sealed(tmp_path: Path) -> None:
    logs = tmp_path / "ascend-logs"
    env = torchair_sim_env(tmp_path, SKGATE_SIM_FAULTS="fail=1", ASCEND_PROCESS_LOG_PATH=str(logs))
    res = run_skgate(
        "run", "--root", "r", "--quiet", "--json", "--jobs", "2", "--scan-interval", "0.05",
        "--", *TORCHAIR, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    att = sorted((tmp_path / "r" / "attempts").iterdir())[-1]
    (stage,) = read_json(att / "stages.json")["stages"]
    index = read_json(att / "plog.json")
    text = resources.files("skgate").joinpath("schemas/plog.json").read_text("utf-8")
    jsonschema.Draft202012Validator(json.loads(text)).validate(index)
    pids = {f["pid"] for f in index["files"]}
    assert stage["pid"] in pids
    archived = [f["archived"] for f in index["files"] if f["pid"] == stage["pid"]]
    assert any("-plog-" in a for a in archived) and any("-device-" in a for a in archived)
    plog_text = next((att / a).read_text() for a in archived if "-plog-" in a)
    assert "[ERROR] OP_COMPILER(" in plog_text  # the real error is there
    sealed = {f["name"] for f in read_json(att / "seal.json")["files"]}
    assert "plog.json" in sealed and set(archived) <= sealed
    for lang, word in (("en", "CANN process log (plog)"), ("zh", "CANN 进程日志（plog）")):
        text = run_skgate("report", "--lang", lang, str(att), cwd=tmp_path).stdout
        assert f"{word}: `{att / archived[0]}`" in text or f"{word}：`{att / archived[0]}`" in text
    ok = run_skgate("verify", str(att), cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # The children of the failed stage's op_compiler count too; other pids do not.
    own = read_json(att / "ownership.json")
    child = {**own["owned"][0], "pid": 999_999, "ppid": stage["pid"], "argv": ["sk_opc"]}
    stranger = {**child, "pid": 999_998, "ppid": 1}
    own["owned"] += [child, stranger]
    extra = tuple(
        PlogFile(f"/x/plog-{p}_1.log", f"plog/{p}.log", p, "plog", 1, 1, False)
        for p in (999_999, 999_998)
    )
    links = stage_plogs(load_stages(att / "stages.json"), Ownership.from_dict(own), extra, att)
    assert links == {stage["pid"]: (str(att / "plog/999999.log"),)}


@pytest.mark.slow
def test_a_stage_that_did_not_fail_gets_no_plog_link(tmp_path: Path) -> None:
    env = torchair_sim_env(tmp_path, ASCEND_PROCESS_LOG_PATH=str(tmp_path / "logs"))
    res = run_skgate(
        "run", "--root", "r", "--quiet", "--json", "--jobs", "2", "--scan-interval", "0.05",
        "--", *TORCHAIR, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    (att,) = (tmp_path / "r" / "attempts").iterdir()
    assert read_json(att / "plog.json")["files"]  # archived all the same (C3)
    text = run_skgate("report", str(att), cwd=tmp_path).stdout
    assert "CANN process log (plog)" not in text
