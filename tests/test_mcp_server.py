"""``skgate mcp`` through the official SDK's own client over a real stdio subprocess.

The agent's loop, end to end: list the tools, start a simulator compile, wait in
bounded steps until the outcome is final, read the report. The server runs as
``python -m skgate mcp`` exactly as an agent's MCP configuration would start it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import skgate
from conftest import ENV
from skgate.agents.mcp_server import RULES

pytest.importorskip("mcp", reason="the optional extra skgate[mcp] is not installed")

pytestmark = pytest.mark.slow

TOOLS = {"start", "status", "wait", "stop", "report", "check_outputs", "preflight"}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content or json.loads(
        getattr(result.content[0], "text", "{}")
    )
    return data


async def _session(tmp: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    markers = tmp / "markers"
    markers.mkdir()
    env = {k: v for k, v in ENV.items() if k in ("PATH", "HOME", "SKGATE_COMPILER_NAMES")}
    sim = {"SKGATE_SIM_MARKERS": str(markers), "SKGATE_SIM_OPC_SECONDS": "0.3"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skgate", "mcp", "--max-wait", "1"], env=env, cwd=tmp
    )
    async with Client(params) as client:
        listed = await client.list_tools()
        by_name = {t.name: t for t in listed.tools}
        assert set(by_name) == TOOLS
        # The contract's rules reach the agent once, in the server's instructions; each
        # description says what its tool does, returns and how it fails (issue 23).
        assert "never kill" in (client.instructions or "")
        for tool in listed.tools:
            assert RULES not in (tool.description or ""), tool.name
            assert "never kill" not in (tool.description or ""), tool.name
            assert len(tool.description or "") < 600, tool.name
        assert "provisional" in (by_name["status"].description or "")
        assert "only" in (by_name["stop"].description or "")
        # One argument name for the attempt in every tool that takes one.
        for name in ("status", "wait", "stop", "report"):
            assert "attempt" in by_name[name].input_schema["properties"], name
        # The server's version is the package's.
        assert client.server_info is not None
        assert client.server_info.version == skgate.__version__

        started = _data(
            await client.call_tool(
                "start",
                {
                    "command": [sys.executable, "-m", "skgate.sim.launcher", "--inputs", "4"],
                    "root": str(tmp / "r"),
                    "cwd": str(tmp),
                    "jobs": "2",
                    "env": sim,
                },
            )
        )
        assert started["schema"] == "skgate.start/1"
        assert started["state"] == "in_progress", started["reasons"]
        attempt = started["attempt"]
        steps = 0
        while True:
            steps += 1
            # max_seconds above the server's cap is cut to it: a wait never outlasts
            # the agent's own tool limit.
            waited = _data(await client.call_tool("wait", {"attempt": attempt, "max_seconds": 600}))
            assert waited["schema"] == "skgate.wait/1" and waited["waited_s"] < 30
            if waited["outcome"] != "in_progress":
                break
            assert steps < 120
        assert (waited["outcome"], waited["state"], waited["exit_code"]) == (
            "final",
            "succeeded",
            0,
        )
        status = _data(await client.call_tool("status", {"attempt": attempt}))
        assert status["state"] == "succeeded"
        # The old name still works for a release (deprecated), and gives the same record.
        old = _data(await client.call_tool("status", {"target": attempt}))
        assert old["state"] == "succeeded" and old["attempt"] == status["attempt"]
        both = await client.call_tool("status", {"attempt": attempt, "target": str(tmp)})
        assert both.is_error and "give the attempt once" in getattr(both.content[0], "text", "")
        report = _data(await client.call_tool("report", {"attempt": attempt, "lang": "zh"}))
        assert "成功" in report["text"] and attempt.rsplit("/", 1)[-1] in report["text"]
        outputs = _data(
            await client.call_tool(
                "check_outputs",
                {"directory": str(tmp / "static_kernel_compile_outputs"), "attempt": attempt},
            )
        )
        assert outputs["exit_code"] == 0 and outputs["counts"]["run_packages"] == 1
        stopped = _data(await client.call_tool("stop", {"attempt": attempt, "reason": "late"}))
        assert stopped["action"] == "already_final"
        bad = await client.call_tool("start", {"command": [], "root": str(tmp / "r")})
        assert bad.is_error and "exit status 2" in getattr(bad.content[0], "text", "")
        pre = _data(await client.call_tool("preflight", {"command": ["true"], "cwd": str(tmp)}))
        assert pre["schema"] == "skgate.preflight/1" and pre["would_block"] is False


def test_an_agent_drives_a_compile_through_the_mcp_server(tmp_path: Path) -> None:
    import anyio

    anyio.run(_session, tmp_path)
