"""C8 (issue 27): which owned processes are package installs and uninstalls, the records
of installs.json, and what they add up to (never more than the evidence shows)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from evidence_fixtures import proc
from skgate.evidence.launcher_lines import LauncherCollector
from skgate.model.errors import EvidenceError
from skgate.model.installs import (
    Installs,
    PackageAction,
    PackageRun,
    RunSource,
    build_installs,
    classify_path,
    package_action,
)

PKG = "/w/static_kernel_compile_outputs/ts1_pid2_outputs/static_kernel_20260101_42.run"
HOME = "/usr/local/Ascend/cann-9.0/opp/static_kernel/ai_core"


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        # torch-npu 2.7/2.9: [run]; the kernel puts the shebang's shell first.
        ((PKG,), (PackageAction.INSTALL, PKG, "static_kernel_20260101_42")),
        (("/bin/sh", PKG), (PackageAction.INSTALL, PKG, "static_kernel_20260101_42")),
        # torch-npu 2.14: --install-path=... and -q (CANN >= 9.1).
        (
            ("/bin/bash", PKG, "--install-path=/w/static_kernel_install/1_2", "-q"),
            (PackageAction.INSTALL, PKG, "static_kernel_20260101_42"),
        ),
        (
            ("sh", f"{HOME}/static_kernel_x/uninstall.sh"),
            (PackageAction.UNINSTALL, f"{HOME}/static_kernel_x/uninstall.sh", "static_kernel_x"),
        ),
        # vllm-ascend's worker: the GLOBAL script, every package on the host.
        ((f"{HOME}/uninstall.sh",), (PackageAction.UNINSTALL_ALL, f"{HOME}/uninstall.sh", None)),
        (
            ("/bin/bash", "-e", f"{HOME}/uninstall.sh"),
            (PackageAction.UNINSTALL_ALL, f"{HOME}/uninstall.sh", None),
        ),
        # Not package runs.
        (("python3", "launcher.py"), None),
        (("sh", "-c", f"{PKG}"), None),
        (("uninstall.sh",), None),
        (("/opt/other/uninstall.sh",), None),
        (("/bin/sh",), None),
        ((), None),
    ],
)
def test_package_action_of_an_argv(argv: tuple[str, ...], want: object) -> None:
    assert package_action(argv) == want


def test_classify_path_keeps_the_package_name() -> None:
    assert classify_path("./ai_core/uninstall.sh") is None  # no opp/static_kernel above
    assert classify_path("opp/static_kernel/ai_core/uninstall.sh") == (
        PackageAction.UNINSTALL_ALL,
        None,
    )
    assert classify_path(".run") is None


def test_a_fork_of_a_run_is_not_a_second_install() -> None:
    launcher = proc(10, "python3", argv=("python3", "l.py"), ppid=1)
    run = proc(11, "sh", argv=("/bin/sh", PKG), ppid=10, exit_status=1)
    sub = proc(12, "sh", argv=("/bin/sh", PKG), ppid=11, exit_status=0)  # a subshell
    got = build_installs([launcher, run, sub])
    assert [(r.pid, r.exit_status) for r in got.runs] == [(11, 1)]
    assert got.installed is False


def _exec(status: int | None, signal: int | None = None, path: str = PKG) -> PackageRun:
    found = package_action((path,))
    assert found is not None
    return PackageRun(
        found[0], path, found[2], RunSource.EXEC, pid=5, exit_status=status, exit_signal=signal
    )


def _line(ok: bool, path: str = "static_kernel_20260101_42.run") -> PackageRun:
    return PackageRun(PackageAction.INSTALL, path, path[:-4], RunSource.LINE, ok=ok, rank=0)


@pytest.mark.parametrize(
    ("runs", "installed"),
    [
        ((), None),  # no install seen: no claim
        ((_exec(0),), True),
        ((_exec(0), _exec(0)), True),
        ((_exec(1),), False),
        ((_exec(None, 15),), False),  # killed mid-install: not installed
        ((_exec(0), _exec(2)), False),
        ((_exec(None),), None),  # the exit status is not known: no claim
        ((_exec(0), _exec(None)), None),
        ((_line(False),), False),  # 2.14's warning, or 2.7/2.9 with TORCH_COMPILE_DEBUG=1
        ((_line(True),), None),  # a line alone never proves every install
        ((_exec(0), _line(False)), False),
        # An uninstall is no install.
        ((_exec(0, path=f"{HOME}/uninstall.sh"),), None),
    ],
)
def test_installed_never_claims_more_than_seen(
    runs: tuple[PackageRun, ...], installed: bool | None
) -> None:
    assert Installs(runs=runs).installed is installed


def test_omitted_runs_make_a_good_install_unknown() -> None:
    assert Installs(runs=(_exec(0),), omitted=3).installed is None
    assert Installs(runs=(_exec(1),), omitted=3).installed is False


def _schema() -> dict[str, Any]:
    text = resources.files("skgate").joinpath("schemas/installs.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def test_installs_round_trip_and_match_the_shipped_schema() -> None:
    rec = Installs(runs=(_exec(1), _exec(0, path=f"{HOME}/uninstall.sh"), _line(False)))
    data = json.loads(json.dumps(rec.to_dict()))
    jsonschema.Draft202012Validator.check_schema(_schema())
    jsonschema.Draft202012Validator(_schema()).validate(data)
    assert data["installed"] is False
    assert Installs.from_dict(data) == rec
    bad = {**data, "runs": [{**data["runs"][0], "action": "reinstall"}]}
    assert not jsonschema.Draft202012Validator(_schema()).is_valid(bad)
    with pytest.raises(EvidenceError, match="reinstall"):
        Installs.from_dict(bad)
    with pytest.raises(EvidenceError, match="schema"):
        Installs.from_dict({**data, "schema": "skgate.installs/9"})


@pytest.mark.parametrize(
    ("line", "want"),
    [
        # torch-npu 2.14: warnings.warn(f"{prefix}{filename} install failed, msg: ...")
        (
            "/x/static_kernel.py:760: UserWarning: Rank 1: k_1.run install failed, msg: None",
            {"rank": 1, "path": "k_1.run", "uninstall": False, "ok": False},
        ),
        # 2.7 / 2.9: logger.warning, printed with TORCH_COMPILE_DEBUG=1 (logger header first).
        (
            "[WARNING] TORCHAIR(7,python3):2026-01-01 10:00:00.000.000 [static_kernel.py:103]"
            "77 Rank 0: k_2.run install failed, msg: bad archive",
            {"rank": 0, "path": "k_2.run", "uninstall": False, "ok": False},
        ),
        (
            "[DEBUG] TORCHAIR(7,python3):2026-01-01 [static_kernel.py:100]77 k_3.run install "
            "success, msg: ok",
            {"rank": None, "path": "k_3.run", "uninstall": False, "ok": True},
        ),
        # uninstall_static_kernel: logger.error, printed at the default level.
        (
            f"[ERROR] TORCHAIR(7,python3):2026 [static_kernel.py:237]77 {HOME}/k/uninstall.sh "
            "uninstall failed, msg:",
            {"rank": None, "path": f"{HOME}/k/uninstall.sh", "uninstall": True, "ok": False},
        ),
    ],
)
def test_launcher_install_lines(line: str, want: dict[str, Any]) -> None:
    c = LauncherCollector()
    c.on_line(line)
    facts = c.result()
    assert [dict(x) for x in facts.package_lines] == [want]
    runs = build_installs([], facts.package_lines).runs
    assert len(runs) == 1
    assert runs[0].source is RunSource.LINE
    assert runs[0].ok is want["ok"]
