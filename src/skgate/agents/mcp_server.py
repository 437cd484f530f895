"""``skgate mcp``: skgate's tools for AI agents, as a Model Context Protocol server (stdio).

Built on the official MCP Python SDK (``mcp``, the optional extra ``skgate[mcp]``), with
its high-level ``MCPServer``: each tool is a plain function whose type hints are its
input schema. Every tool returns the JSON that the matching CLI command prints with
``--json`` (``start``, ``status``, ``wait``, ``stop``, ``check-outputs``, ``preflight``;
``report --format json`` or the Markdown text for ``report``), so an agent and a script
read the same records.

The server never signals anything itself. The only tool that leads to a signal is
``stop``, and that signal goes to the attempt's runner (pid and start time checked),
which then ends its own process group (C4). The contract's rules for the agent are said
once, in the server's instructions (and the skill file, docs/skills/skgate/SKILL.md);
each tool's description says only what it does, what it returns and how it fails.

One argument name for the attempt in every tool that takes one: ``attempt`` (issue 23).
``status``, ``wait`` and ``report`` still accept the old ``target`` for one release.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from skgate import __version__
from skgate.api import lifecycle
from skgate.evidence.files import DEFAULT_ROOT, EVENTS, is_attempt_dir
from skgate.evidence.ledger import latest
from skgate.model.errors import SkgateError, UsageError
from skgate.model.outcomes import PackageMode
from skgate.model.phrases import LANGS, Lang
from skgate.model.request import RunRequest
from skgate.preflight.prepare import prepare
from skgate.preflight.render import preflight_record
from skgate.read.liveness import current_verdict
from skgate.report import facts, load
from skgate.report import markdown as report
from skgate.workdir import outputs_check

#: The wait tool's bound when the server is started without ``--max-wait``: well under
#: the few minutes an agent's tool call may last, so a wait never becomes the agent's
#: own timeout (which would leave the agent blind, although the compile runs on).
DEFAULT_MAX_WAIT = 240.0
DEFAULT_WAIT = 60.0

RULES = (
    "Rules (skgate's process-safety contract): never kill or signal compiler processes "
    "(opc, op_compiler), by pid, by name or by age, and never delete the evidence; "
    "*_compile_error.log files seen while the compile lives are provisional (C1): they are "
    "not failures; a long-running or quiet compiler is not hung; interrupt only with the "
    "stop tool; report only what skgate's verdict says, in its words."
)

INSTRUCTIONS = (
    "skgate runs a CANN SuperKernel static compile under a process-safety gate and tells "
    "its state in one of five words: in_progress, succeeded, failed, interrupted, unknown "
    "(plus not_started when nothing launched). Drive a compile like this: start (returns "
    "at once with the attempt directory), then call wait with that attempt and max_seconds "
    "again until its outcome is 'final', then report (lang en or zh) and paste that report. "
    "Every tool that takes an attempt calls it 'attempt'. " + RULES
)


def _fail(exc: SkgateError) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError  # noqa: PLC0415

    return ToolError(f"skgate: {exc} (exit status {exc.exit_code})")


#: The old argument name, said in each description that still takes it.
_OLD_NAME = (
    "The attempt (or evidence root) is 'attempt' (default ./skgate-runs); 'target' is its "
    "deprecated old name, accepted until the next release."
)

_log = logging.getLogger("skgate.mcp")


def _one_name(attempt: str | None, target: str | None, tool: str) -> str:
    """``attempt``, or the deprecated ``target`` (with a note on the server's log)."""
    if attempt is not None and target is not None and attempt != target:
        raise UsageError(f"{tool}: give the attempt once, as 'attempt' ('target' is its old name)")
    if target is not None and attempt is None:
        _log.warning("skgate mcp: %s: 'target' is deprecated; call it 'attempt'", tool)
        return target
    return attempt if attempt is not None else str(DEFAULT_ROOT)


def _attempt(target: str) -> Path:
    path = Path(target)
    return path if is_attempt_dir(path) or (path / EVENTS).is_file() else latest(path)


def _request(
    command: list[str],
    *,
    root: str,
    cwd: str | None,
    timeout: float,
    grace: float,
    jobs: str | None,
    package: str,
    foreign: str,
    lease_timeout: float,
    devices: list[int],
    env: dict[str, str],
    summary_patterns: list[str],
) -> RunRequest:
    if package not in {m.value for m in PackageMode}:
        raise UsageError(f"package {package!r}: use 'required' or 'optional'")
    return RunRequest(
        argv=tuple(command),
        cwd=str(Path(cwd or Path.cwd()).absolute()),
        root=str(Path(root).absolute()),
        timeout=timeout,
        grace=grace,
        jobs=jobs,
        package_mode=PackageMode(package),
        foreign_policy=foreign,
        lease_timeout=lease_timeout,
        devices=tuple(sorted(set(devices))),
        env=dict(env),
        summary_patterns=tuple(summary_patterns),
        quiet=True,
    )


def build_server(max_wait: float | None = None) -> Any:
    """The MCP server with skgate's tools (needs the ``mcp`` package)."""
    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415

    bound = DEFAULT_MAX_WAIT if max_wait is None else max_wait
    server = MCPServer("skgate", instructions=INSTRUCTIONS, version=__version__)

    @server.tool(
        description="Start a compile command under the gate with a detached runner and "
        "return at once: {attempt, state (in_progress | not_started), phase (running | "
        "waiting_for_blockers | not_started), runner_pid, waiting_for}. The compile keeps "
        "running after this call and after your own tool call ends. A foreign compiler or "
        "a leased device is waited for by the runner (never signalled). Next: call wait "
        "with the attempt. Fails (tool error, exit status 2) on bad input, nothing "
        "recorded; state not_started (with reasons) when refused before launch."
    )
    def start(
        command: list[str],
        *,
        root: str = str(DEFAULT_ROOT),
        cwd: str | None = None,
        timeout: float = RunRequest.timeout,
        grace: float = RunRequest.grace,
        jobs: str | None = None,
        package: str = PackageMode.OPTIONAL.value,
        foreign: str = "wait",
        lease_timeout: float = RunRequest.lease_timeout,
        devices: list[int] | None = None,
        env: dict[str, str] | None = None,
        summary_patterns: list[str] | None = None,
    ) -> dict[str, Any]:
        try:
            request = _request(
                command,
                root=root,
                cwd=cwd,
                timeout=timeout,
                grace=grace,
                jobs=jobs,
                package=package,
                foreign=foreign,
                lease_timeout=lease_timeout,
                devices=devices or [],
                env=env or {},
                summary_patterns=summary_patterns or [],
            )
            return lifecycle.start(request).to_dict()
        except SkgateError as exc:
            raise _fail(exc) from None

    @server.tool(
        description="Read-only state of an attempt (or of the newest attempt of an "
        "evidence root): the verdict record {state, cause, reasons, missing, census, "
        "summary}. in_progress means keep waiting; counts while in_progress are "
        "provisional (C1). Fails when the path is neither an attempt nor a root. " + _OLD_NAME
    )
    def status(attempt: str | None = None, target: str | None = None) -> dict[str, Any]:
        try:
            return current_verdict(_attempt(_one_name(attempt, target, "status"))).to_dict()
        except SkgateError as exc:
            raise _fail(exc) from None

    @server.tool(
        description=f"Wait read-only, at most max_seconds (capped at {bound:g} s), for an "
        "attempt's final verdict. Returns {outcome: final | in_progress | runner_gone, "
        "state, exit_code, deadline_remaining_s, progress (provisional counts, C1), "
        "verdict}. On in_progress simply call wait again: the compile is untouched and "
        "keeps running. Never signals anything. runner_gone: the runner died without a "
        "verdict (a clean retry is needed). " + _OLD_NAME
    )
    def wait(
        attempt: str | None = None, max_seconds: float = DEFAULT_WAIT, target: str | None = None
    ) -> dict[str, Any]:
        try:
            seconds = min(max(0.0, float(max_seconds)), bound)
            name = _one_name(attempt, target, "wait")
            return lifecycle.wait(name, max_seconds=seconds).to_dict()
        except SkgateError as exc:
            raise _fail(exc) from None

    @server.tool(
        description="The one sanctioned way to interrupt an attempt: asks its runner to "
        "end its own process group (SIGTERM, grace, SIGKILL to that group only), recorded "
        "with your reason; the verdict becomes interrupted/external, which is not a "
        "compiler failure and needs a clean retry. Returns {outcome, state, ...} "
        "(skgate.stop/1); on a final attempt it changes nothing. Signals only the runner; "
        "fails (exit status 5) when the runner is gone, nothing signalled."
    )
    def stop(attempt: str, reason: str) -> dict[str, Any]:
        try:
            return lifecycle.stop(attempt, reason).to_dict()
        except SkgateError as exc:
            raise _fail(exc) from None

    @server.tool(
        name="report",
        description="The attempt's (or a root's) report in the contract's words, in "
        "lang 'en' or 'zh'; format 'md' gives {format, lang, text} with the Markdown to "
        "paste as is, 'json' the report record. Fails on a bad lang or format, or a path "
        "that is neither an attempt nor a root. " + _OLD_NAME,
    )
    def report_tool(  # the tool is named "report"; the function is named apart
        attempt: str | None = None,
        lang: str = "en",
        format: str = "md",
        target: str | None = None,
    ) -> dict[str, Any]:
        try:
            if lang not in LANGS or format not in facts.FORMATS:
                raise UsageError("lang must be en or zh and format md or json")
            lg = Lang(lang)  # the MCP edge: a string in, a Lang inside
            rep = load.build_report(Path(_one_name(attempt, target, "report")), current_verdict)
            if format == "json":
                data: dict[str, Any] = facts.report_json(rep, lg)
                return data
            return {"format": "md", "lang": lang, "text": report.render(rep, lg, "md")}
        except SkgateError as exc:
            raise _fail(exc) from None

    @server.tool(
        description="C8 output check of an outputs directory (*.run is the success "
        "artifact). Pass attempt to judge only after that attempt's natural return; "
        "without it the result rests on file names alone and says so. Pass opp (default "
        "$ASCEND_OPP_PATH) to name the dumped op types with no installed static binary. "
        "Returns {status, messages, counts, installed, exit_code}. Fails when directory "
        "is not a directory or attempt is not an attempt directory."
    )
    def check_outputs(
        directory: str,
        package: str = PackageMode.OPTIONAL.value,
        attempt: str | None = None,
        opp: str | None = None,
    ) -> dict[str, Any]:
        try:
            if package not in {m.value for m in PackageMode}:
                raise UsageError(f"package {package!r}: use 'required' or 'optional'")
            verdict = None
            if attempt is not None:
                if not is_attempt_dir(Path(attempt)):
                    raise UsageError(f"attempt {attempt}: not an attempt directory")
                verdict = current_verdict(Path(attempt))
            result = outputs_check.check_outputs(
                Path(directory),
                PackageMode(package),
                verdict,
                outputs_check.opp_dir(opp, os.environ),
            )
            return result.to_dict()
        except SkgateError as exc:
            raise _fail(exc) from None

    @server.tool(
        description="Check a command line before starting it (start-up hooks, compile "
        "jobs, foreign compilers, leases) without launching, waiting or leasing anything: "
        "{would_block, blocked, controls}. Fails on bad input (exit status 2)."
    )
    def preflight(
        command: list[str] | None = None,
        *,
        root: str = str(DEFAULT_ROOT),
        cwd: str | None = None,
        jobs: str | None = None,
        devices: list[int] | None = None,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        try:
            request = _request(
                command or [],
                root=root,
                cwd=cwd,
                timeout=RunRequest.timeout,
                grace=RunRequest.grace,
                jobs=jobs,
                package=PackageMode.OPTIONAL.value,
                foreign="wait",
                lease_timeout=RunRequest.lease_timeout,
                devices=devices or [],
                env=env or {},
                summary_patterns=[],
            )
            plan = prepare(request, Path(request.root), None, take_leases=False)
            return preflight_record(plan)
        except SkgateError as exc:
            raise _fail(exc) from None

    return server


def serve(max_wait: float | None = None) -> int:
    """Run the server on stdin/stdout until the client closes it (``skgate mcp``)."""
    try:
        server = build_server(max_wait)
    except ImportError:
        raise UsageError(
            "the MCP server needs the optional 'mcp' package: pip install 'skgate[mcp]'"
        ) from None
    server.run("stdio")
    return 0
