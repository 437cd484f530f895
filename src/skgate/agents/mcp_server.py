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

import inspect
import logging
import os
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skgate import __version__
from skgate.api import lifecycle
from skgate.evidence.files import DEFAULT_ROOT, EVENTS, is_attempt_dir
from skgate.evidence.ledger import latest
from skgate.model.errors import SkgateError, UsageError, path_error
from skgate.model.frozen import fields
from skgate.model.outcomes import PackageMode
from skgate.model.phrases import LANGS, Lang
from skgate.model.request import RunRequest
from skgate.preflight.inputs import check_inputs
from skgate.preflight.prepare import prepare
from skgate.preflight.render import preflight_record
from skgate.preflight.request import validate
from skgate.read.liveness import current_verdict
from skgate.report import facts, load
from skgate.report import markdown as report
from skgate.workdir import outputs_check

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

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


def _fail(exc: SkgateError | OSError) -> Exception:
    """The tool error an agent reads: skgate's own one line, with its exit status. An
    ``OSError`` naming a path the agent gave (too long, missing, of the wrong type) is
    said as the command line says it; one naming none is skgate's own, raised as is."""
    from mcp.server.mcpserver.exceptions import ToolError  # noqa: PLC0415

    said = path_error(exc) if isinstance(exc, OSError) else exc
    if said is None:
        return exc
    return ToolError(f"skgate: {said} (exit status {said.exit_code})")


#: Arguments that name a path (of the tools and of the request they build): an empty one
#: would be read as the server's own working directory.
PATH_ARGUMENTS = frozenset(
    {"attempt", "target", "directory", "opp", "root", "cwd", "outputs", "python", "hook_baseline"}
)


def arguments_unusable(tool: str, arguments: Mapping[str, Any]) -> str:
    """One line naming an argument no path or command can take: a string holding a NUL
    byte (JSON carries one; ``open`` and ``exec`` refuse it), or an empty path ('' when
    every argument is usable)."""
    for name, value in arguments.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and "\0" in item:
                return (
                    f"skgate: {tool}: '{name}' holds a NUL byte, which no path or argument "
                    f"can hold (exit status {UsageError.exit_code})"
                )
        if name in PATH_ARGUMENTS and value == "":
            return (
                f"skgate: {tool}: '{name}' is empty; give a path (an empty one would be "
                f"read as '.') (exit status {UsageError.exit_code})"
            )
    return ""


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


#: RunRequest fields that the tools name as the CLI does (``--package``, ``--foreign``).
AGENT_NAMES = {"argv": "command", "package_mode": "package", "foreign_policy": "foreign"}

#: RunRequest fields the tools do not take, and why; every other field is an argument
#: of ``start`` and ``preflight``, derived from the request model so they cannot drift.
NOT_FOR_AGENTS = {
    "quiet": "always on: the server's stdout is the protocol",
    "retry_of": "set by skgate retry, which links a retry to its attempt",
    "scan_interval": "a test setting, hidden from the CLI too",
}


def _agent_type(hint: Any) -> Any:
    """A request field's type as JSON carries it: tuples are lists, mappings objects."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        return list[typing.get_args(hint)[0]]  # type: ignore[misc]
    if origin is Mapping:
        return dict[str, str]
    return hint


def request_parameters(*, command_required: bool) -> list[inspect.Parameter]:
    """The tool arguments of a run request: one per RunRequest field an agent may set."""
    hints = typing.get_type_hints(RunRequest)
    params: list[inspect.Parameter] = []
    # Every default, as a request with only the required fields has it (a frozen record).
    defaults = RunRequest(argv=(), cwd="", root="")
    for field_name in fields(RunRequest):
        if field_name in NOT_FOR_AGENTS:
            continue
        kind = inspect.Parameter.KEYWORD_ONLY
        name, hint = AGENT_NAMES.get(field_name, field_name), _agent_type(hints[field_name])
        if field_name == "argv":
            default: Any = inspect.Parameter.empty if command_required else []
        elif field_name == "cwd":  # the server's working directory
            hint, default = str | None, None
        elif field_name == "root":
            default = str(DEFAULT_ROOT)
        else:
            default = getattr(defaults, field_name)
        if isinstance(default, tuple):
            default = list(default)
        params.append(inspect.Parameter(name, kind, default=default, annotation=hint))
    return params


def request_from_arguments(arguments: Mapping[str, Any]) -> RunRequest:
    """The RunRequest of a ``start``/``preflight`` call (arguments already typed)."""
    back = {agent: field for field, agent in AGENT_NAMES.items()}
    fields = {back.get(k, k): v for k, v in arguments.items()}
    for name, value in fields.items():
        if isinstance(value, list):
            fields[name] = tuple(value)
    fields["cwd"] = str(Path(fields.get("cwd") or Path.cwd()).absolute())
    fields["root"] = str(Path(fields.get("root") or DEFAULT_ROOT).absolute())
    fields["devices"] = tuple(sorted(set(fields.get("devices", ()))))
    return RunRequest(**fields, quiet=True)


def _with_request_signature(fn: Any, *, command_required: bool) -> Any:
    """``fn(**arguments)`` with the request's arguments as its signature (the SDK reads
    it, with ``inspect.signature``, to make the tool's input schema)."""
    fn.__signature__ = inspect.Signature(
        request_parameters(command_required=command_required),
        return_annotation=dict[str, Any],
    )
    return fn


def _schema_phrase(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """What a JSON schema property asks for, in words ('a number', 'one of ...')."""
    ref = prop.get("$ref")
    if isinstance(ref, str):
        prop = defs.get(ref.rsplit("/", 1)[-1], {})
    if "enum" in prop:
        return "one of " + ", ".join(repr(v) for v in prop["enum"])
    options = prop.get("anyOf")
    if isinstance(options, list):
        words = [_schema_phrase(o, defs) for o in options if o.get("type") != "null"]
        return " or ".join(words)
    kind = str(prop.get("type"))
    if kind == "array":
        return f"a list of {_PLURAL.get(str(prop.get('items', {}).get('type')), 'values')}"
    if kind == "object":
        return "an object of names to strings"
    return _SINGULAR.get(kind, "a value")


_SINGULAR = {
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
}
_PLURAL = {"number": "numbers", "integer": "integers", "string": "strings"}


def arguments_refused(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """One line naming the arguments a tool does not take ('' when all are known)."""
    known = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(known))
    if not unknown:
        return ""
    return (
        f"skgate: {tool}: unknown argument(s) {', '.join(unknown)}; {tool} takes "
        f"{', '.join(sorted(known))} (exit status {UsageError.exit_code})"
    )


def arguments_wrong(
    tool: str, errors: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]
) -> str:
    """One line, in skgate's words, for the arguments that do not fit the tool's schema
    (from the validator's error list: the field names, never its own text or links)."""
    props, defs = schema.get("properties", {}), schema.get("$defs", {})
    parts: list[str] = []
    for name in dict.fromkeys(str(e["loc"][0]) for e in errors if e.get("loc")):
        if any(e.get("type") == "missing" and str(e["loc"][0]) == name for e in errors):
            parts.append(f"'{name}' is required")
        else:
            parts.append(f"'{name}' must be {_schema_phrase(props.get(name, {}), defs)}")
    said = "; ".join(parts) or "bad arguments"
    return f"skgate: {tool}: {said} (exit status {UsageError.exit_code})"


def _server_class() -> type[MCPServer]:
    """MCPServer that refuses unknown arguments and says bad ones in skgate's words."""
    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415
    from mcp.server.mcpserver.exceptions import ToolError  # noqa: PLC0415
    from pydantic import ValidationError  # noqa: PLC0415

    class SkgateServer(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            schema = next((t.input_schema for t in await self.list_tools() if t.name == name), None)
            if schema is not None and (line := arguments_refused(name, arguments, schema)):
                # The SDK's argument model ignores a name it does not know; an agent that
                # misspells verdict_from must hear it, not get another run (issue 30).
                raise ToolError(line)
            if line := arguments_unusable(name, arguments):
                raise ToolError(line)
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if schema is None or not isinstance(exc.__cause__, ValidationError):
                    raise
                raise ToolError(arguments_wrong(name, exc.__cause__.errors(), schema)) from None

    return SkgateServer


def build_server(max_wait: float | None = None) -> Any:
    """The MCP server with skgate's tools (needs the ``mcp`` package)."""
    bound = DEFAULT_MAX_WAIT if max_wait is None else max_wait
    server = _server_class()("skgate", instructions=INSTRUCTIONS, version=__version__)

    def start(**arguments: Any) -> dict[str, Any]:
        try:
            return lifecycle.start(request_from_arguments(arguments)).to_dict()
        except (SkgateError, OSError) as exc:
            raise _fail(exc) from None

    server.add_tool(
        _with_request_signature(start, command_required=True),
        name="start",
        description="Start a compile command under the gate with a detached runner and "
        "return as soon as the attempt is recorded: {attempt, state (in_progress), phase "
        "(preflight), runner_pid, waiting_for}. Takes every option "
        "of 'skgate run' (verdict_from, completion_marker, approved_hooks, python, ...). "
        "The detached runner goes on: preflight, a wait for blockers, the launch or a "
        "refusal (status and wait say which). Next: call wait with the attempt. Fails "
        "(tool error, exit status 2) on bad input, nothing recorded.",
    )

    @server.tool(
        description="Read-only state of an attempt (or of the newest attempt of an "
        "evidence root): the verdict record {state, cause, reasons, missing, census, "
        "summary}. in_progress means keep waiting; counts while in_progress are "
        "provisional (C1). Fails when the path is neither an attempt nor a root. " + _OLD_NAME
    )
    def status(attempt: str | None = None, target: str | None = None) -> dict[str, Any]:
        try:
            return current_verdict(_attempt(_one_name(attempt, target, "status"))).to_dict()
        except (SkgateError, OSError) as exc:
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
        except (SkgateError, OSError) as exc:
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
        except (SkgateError, OSError) as exc:
            raise _fail(exc) from None

    @server.tool(
        name="report",
        description="The attempt's (or a root's) report in the contract's words, in "
        "lang 'en' or 'zh'; format 'md' gives {format, lang, text} with the Markdown to "
        "paste as is, 'html' the same with the page (one file, no links out), 'json' the "
        "report record. Fails on a bad lang or format, or a path "
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
                raise UsageError(
                    f"lang must be en or zh and format one of {', '.join(facts.FORMATS)}"
                )
            lg = Lang(lang)  # the MCP edge: a string in, a Lang inside
            rep = load.build_report(Path(_one_name(attempt, target, "report")), current_verdict)
            if format == "json":
                data: dict[str, Any] = facts.report_json(rep, lg)
                return data
            # md and html are text to pass on as is; never one in place of the other.
            return {"format": format, "lang": lang, "text": report.render(rep, lg, format)}
        except (SkgateError, OSError) as exc:
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
        except (SkgateError, OSError) as exc:
            raise _fail(exc) from None

    def preflight(**arguments: Any) -> dict[str, Any]:
        try:
            request = request_from_arguments(arguments)
            # What start would refuse (a cwd that does not exist, a bad pattern) is
            # refused here too, never "would_block: false"; a command stays optional.
            validate(request, command=bool(request.argv))
            check_inputs(request)
            plan = prepare(request, Path(request.root), None, take_leases=False)
            return preflight_record(plan)
        except (SkgateError, OSError) as exc:
            raise _fail(exc) from None

    server.add_tool(
        _with_request_signature(preflight, command_required=False),
        name="preflight",
        description="Check a command line before starting it (start-up hooks, compile "
        "jobs, foreign compilers, leases) without launching, waiting or leasing anything: "
        "{would_block, blocked, controls}. Takes the options of start. Fails on bad input "
        "(exit status 2).",
    )

    return server


async def _serve_stdio(server: Any, bound: float) -> None:
    """Serve on stdin/stdout and answer every request read before stdin closed.

    The SDK ends its loop at end of input and cancels the requests still running, so a
    client that writes its requests and closes stdin lost the last answers (issue 30).
    Here the loop reads through a relay that holds end-of-input back until every
    request read has had its response or error written, or was cancelled by the client
    (which then expects none), for at most the longest tool call (``bound``) and a margin.
    """
    import anyio  # noqa: PLC0415
    import mcp_types  # noqa: PLC0415
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    lowlevel = server._lowlevel_server  # mcp 2.x: what MCPServer.run_stdio_async runs
    pending: set[Any] = set()
    answered = anyio.Event()
    async with stdio_server() as (read, write):
        to_loop, loop_in = anyio.create_memory_object_stream[Any](0)
        loop_out, from_loop = anyio.create_memory_object_stream[Any](0)

        async def relay_in() -> None:
            nonlocal answered
            async with to_loop:
                async for item in read:
                    message = getattr(item, "message", None)
                    if isinstance(message, mcp_types.JSONRPCRequest):
                        pending.add(message.id)
                    elif isinstance(message, mcp_types.JSONRPCNotification) and (
                        message.method == "notifications/cancelled"
                    ):
                        pending.discard(dict(message.params or {}).get("requestId"))
                    await to_loop.send(item)
                with anyio.move_on_after(bound + 30.0):
                    while pending:  # end of input: the open requests are answered first
                        await answered.wait()
                        answered = anyio.Event()

        async def relay_out() -> None:
            async with from_loop, write:  # the transport ends when its writer closes
                async for item in from_loop:
                    await write.send(item)
                    message = item.message
                    if isinstance(message, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)):
                        pending.discard(message.id)
                        answered.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay_in)
            tasks.start_soon(relay_out)
            async with loop_out:
                await lowlevel.run(loop_in, loop_out, lowlevel.create_initialization_options())


def serve(max_wait: float | None = None) -> int:
    """Run the server on stdin/stdout until the client closes it (``skgate mcp``)."""
    try:
        server = build_server(max_wait)
        import anyio  # noqa: PLC0415
    except ImportError:
        raise UsageError(
            "the MCP server needs the optional 'mcp' package: pip install 'skgate[mcp]'"
        ) from None
    anyio.run(_serve_stdio, server, DEFAULT_MAX_WAIT if max_wait is None else max_wait)
    return 0
