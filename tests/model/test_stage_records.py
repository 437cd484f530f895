"""op_compiler argv parsing and the stage records' round trip (C3)."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from skgate.model.errors import EvidenceError
from skgate.model.stages import (
    InputOutcome,
    InputResult,
    StageCensus,
    StageRecord,
    Stages,
    parse_compiler_argv,
)


def test_parses_torchair_argv() -> None:
    a = parse_compiler_argv(
        [
            "op_compiler",
            "-p",
            "/r/1_opcompile_selected",
            "-v",
            "Ascend910B1",
            "-j",
            "16",
            "-o",
            "/r",
            "-l",
            "error",
            "-f",
            "true",
            "--enable_super_kernel",
        ]
    )
    assert a.is_invocation and a.params_dir == "/r/1_opcompile_selected" and a.output == "/r"
    assert (a.soc, a.jobs, a.log_level, a.force) == ("Ascend910B1", 16, "error", "true")
    assert a.enable_super_kernel and a.unknown == () and a.problems == ()


def test_other_spellings_and_unknown_flags_kept_verbatim() -> None:
    a = parse_compiler_argv(
        [
            "/usr/local/bin/op_compiler",
            "-p=/in",
            "-o/out",
            "-j",
            "x",
            "--super_kernel_options",
            "a=1",
            "--enable_super_kernel=false",
            "--new-flag",
            "pos",
            "-j",
            "3",
        ]
    )
    assert a.params_dir == "/in" and a.output == "/out"
    assert a.super_kernel_options == "a=1" and not a.enable_super_kernel
    assert a.unknown == ("--new-flag", "pos")
    assert a.jobs == 3 and "-j given more than once (the last value counts)" in a.problems
    b = parse_compiler_argv(["op_compiler", "-j", "0", "-p"])
    assert b.jobs is None and not b.is_invocation
    assert "-p has no value" in b.problems and "-j '0' is not a whole number >= 1" in b.problems
    assert parse_compiler_argv(["opc", "x.json", "--output=/k"]).is_invocation is False


def test_stages_round_trip_and_schema() -> None:
    c = StageCensus(
        "/in",
        "/out",
        True,
        2,
        1,
        1,
        0,
        0,
        (InputResult("a", InputOutcome.FAILED, ("/out/l/a_compile_error.log",)),),
        ("/out/x.run",),
        0,
        True,
    )
    rec = StageRecord(
        5,
        9,
        parse_compiler_argv(["op_compiler", "-p", "/in", "-o", "/out"]),
        1.0,
        2.0,
        True,
        None,
        None,
        2,
        c,
    )
    data = json.loads(json.dumps(Stages((rec,), 3, ("opc", "op_compiler"), True).to_dict()))
    schema = json.loads(resources.files("skgate").joinpath("schemas/stages.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    assert Stages.from_dict(data).stages == (rec,)
    with pytest.raises(EvidenceError):
        Stages.from_dict({**data, "schema": "skgate.stages/3"})
    # An older attempt's /1 record (paired by stem, no announced roots) is still read.
    old = {k: v for k, v in data.items() if k not in ("announced", "caches")}
    assert Stages.from_dict({**old, "schema": "skgate.stages/1"}).announced == ()
    data["stages"][0]["census"]["named"][0]["outcome"] = "maybe"
    with pytest.raises(EvidenceError):
        Stages.from_dict(data)
