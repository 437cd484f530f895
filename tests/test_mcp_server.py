"""``skgate mcp`` through the official SDK's own client over a real stdio subprocess.

The agent's loop, end to end: list the tools, start a simulator compile, wait in
bounded steps until the outcome is final, read the report. The server runs as
``python -m skgate mcp`` exactly as an agent's MCP configuration would start it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import skgate
from conftest import ENV
from skgate.agents.mcp_server import AGENT_NAMES, NOT_FOR_AGENTS, RULES
from skgate.model.frozen import fields as record_fields
from skgate.model.request import RunRequest

pytest.importorskip("mcp", reason="the optional extra skgate[mcp] is not installed")

pytestmark = pytest.mark.slow

TOOLS = {"start", "status", "wait", "stop", "report", "check_outputs", "preflight"}


def _server_env() -> dict[str, str]:
    return {k: v for k, v in ENV.items() if k in ("PATH", "HOME", "SKGATE_COMPILER_NAMES")}


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
    env = _server_env()
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


def _text(result: Any) -> str:
    assert result.is_error, result.content
    text: str = getattr(result.content[0], "text", "")
    return text


def _one_line_in_skgates_words(text: str) -> None:
    assert "\n" not in text and text.count("skgate: ") == 1, text
    for raw in ("pydantic", "http", "validation error", "Input should"):
        assert raw not in text, text


async def _agents_options(tmp: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = _server_env()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "skgate", "mcp", "--max-wait", "2"], env=env, cwd=tmp
    )
    async with Client(params) as client:
        by_name = {t.name: t for t in (await client.list_tools()).tools}
        # start (and preflight) take every RunRequest field an agent may set: derived
        # from the request model, so a new run option reaches agents (issue 30).
        fields = set(record_fields(RunRequest)) - set(NOT_FOR_AGENTS)
        wanted = {AGENT_NAMES.get(f, f) for f in fields}
        assert set(by_name["start"].input_schema["properties"]) == wanted
        assert set(by_name["preflight"].input_schema["properties"]) == wanted
        assert by_name["start"].input_schema["required"] == ["command"]

        root = tmp / "r"
        # verdict_from reaches control.json: `true` is not a compile, its exit decides (C2).
        started = _data(
            await client.call_tool(
                "start",
                {"command": ["true"], "root": str(root), "verdict_from": "exit-status"},
            )
        )
        attempt = Path(started["attempt"])
        while (waited := _data(await client.call_tool("wait", {"attempt": str(attempt)})))[
            "outcome"
        ] == "in_progress":
            pass
        assert (waited["state"], waited["exit_code"]) == ("succeeded", 0)
        # Read once final: start answers as soon as the attempt is recorded (issue 29).
        control = json.loads((attempt / "control.json").read_text())
        assert control["request"]["verdict_from"] == "exit-status"

        # Unknown arguments are refused with one line naming them; nothing is recorded.
        before = sorted(root.iterdir())
        refused = _text(
            await client.call_tool(
                "start", {"command": ["true"], "root": str(root), "verdict_frm": "exit-status"}
            )
        )
        _one_line_in_skgates_words(refused)
        assert "unknown argument(s) verdict_frm" in refused and "verdict_from" in refused
        assert sorted(root.iterdir()) == before
        stray = _text(await client.call_tool("status", {"attempt": str(attempt), "lang": "zh"}))
        assert "unknown argument(s) lang" in stray
        # A wrong type or a missing argument: one line in skgate's words, no validator text.
        wrong = _text(
            await client.call_tool(
                "start", {"command": ["true"], "timeout": "soon", "verdict_from": "exit"}
            )
        )
        _one_line_in_skgates_words(wrong)
        assert "'timeout' must be a number" in wrong, wrong
        assert "'verdict_from' must be one of 'summary', 'exit-status'" in wrong, wrong
        missing = _text(await client.call_tool("start", {"root": str(root)}))
        _one_line_in_skgates_words(missing)
        assert "'command' is required" in missing and "exit status 2" in missing

        # report serves html as html, never Markdown in its place; an unknown format fails.
        html = _data(await client.call_tool("report", {"attempt": str(attempt), "format": "html"}))
        assert html["format"] == "html" and html["text"].lstrip().lower().startswith("<!doctype")
        bad = _text(await client.call_tool("report", {"attempt": str(attempt), "format": "pdf"}))
        _one_line_in_skgates_words(bad)
        assert "md, json, html" in bad


def test_agents_get_every_run_option_and_every_error_in_one_line(tmp_path: Path) -> None:
    import anyio

    anyio.run(_agents_options, tmp_path)


def test_every_request_read_before_stdin_closed_is_answered(tmp_path: Path) -> None:
    """A client that writes its requests and closes stdin gets every answer (issue 30):
    the SDK's loop alone ended at end of input and dropped the requests still running."""
    client = {"name": "t", "version": "0"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    msgs: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "preflight", "arguments": {"command": ["true"]}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
    ]
    env = _server_env()
    done = subprocess.run(
        [sys.executable, "-m", "skgate", "mcp"],
        input="".join(json.dumps(m) + "\n" for m in msgs),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    assert sorted(a["id"] for a in answers) == [1, 2, 3]
    assert all("result" in a for a in answers), answers


def _serve_lines(tmp: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], str]:
    """Each tool call's result (by call order) from one server that read them all on
    stdin, and what the server wrote on stderr."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    msgs: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for n, (tool, arguments) in enumerate(calls, 1):
        params = {"name": tool, "arguments": arguments}
        msgs.append({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
    done = subprocess.run(
        [sys.executable, "-m", "skgate", "mcp", "--max-wait", "1"],
        input="".join(json.dumps(m) + "\n" for m in msgs),
        capture_output=True,
        text=True,
        env=_server_env(),
        cwd=tmp,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    by_id = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    return [by_id[n]["result"] for n in range(1, len(calls) + 1)], done.stderr


def test_a_path_no_tool_can_use_is_one_line_never_a_traceback(tmp_path: Path) -> None:
    """A path too long for the kernel, one holding a NUL byte (JSON carries one) or an
    empty one: each tool said only "Error executing tool status" and the server logged a
    traceback (OSError ENAMETOOLONG, ValueError "embedded null byte"); an empty path was
    read as the server's working directory, and preflight took a cwd that does not exist.
    Now skgate's one line, exit status 2, as the command line says it, and nothing on the
    server's stderr."""
    long = "a" * 5000
    calls: list[tuple[str, dict[str, Any]]] = [
        ("status", {"attempt": long}),
        ("wait", {"attempt": long, "max_seconds": 0}),
        ("report", {"attempt": long}),
        ("stop", {"attempt": long, "reason": "r"}),
        ("status", {"attempt": "r\x00"}),
        ("check_outputs", {"directory": "\x00"}),
        ("preflight", {"command": ["true"], "root": "\x00"}),
        ("start", {"command": ["sleep", "1\x00"], "root": str(tmp_path / "r")}),
        ("status", {"attempt": ""}),
        ("check_outputs", {"directory": ""}),
        ("preflight", {"command": ["true"], "cwd": str(tmp_path / "no-such-dir")}),
    ]
    results, stderr = _serve_lines(tmp_path, calls)
    assert "Traceback" not in stderr, stderr
    for (tool, _), result in zip(calls, results, strict=True):
        assert result.get("isError"), (tool, result)
        text = result["content"][0]["text"]
        _one_line_in_skgates_words(text)
        assert text.endswith("(exit status 2)"), text
    texts = [r["content"][0]["text"] for r in results]
    assert all("File name too long; check the path" in t for t in texts[:4]), texts
    assert all("holds a NUL byte" in t for t in texts[4:8]), texts
    assert all("is empty; give a path" in t for t in texts[8:10]), texts
    # preflight refuses what start refuses (it said would_block: false).
    assert "does not exist; pass an existing one" in texts[10], texts
    assert not (tmp_path / "r").exists()
