"""The MCP server's tools: `ask`, `wait` and `request_approval`, one definition for both
transports. A tool is thin: check the arguments with the API's own request models, reach aye
through an AgentPort (in-process on `/mcp`, over the HTTP API for `aye mcp`), and render the
result as the contract says: `structuredContent` and the same JSON as text, or an error result
whose text starts with the contract's error code."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from ask_api.http import ApiError
from ask_api.mcp import guide
from ask_api.mcp.arguments import Arguments, body_of, checked, input_schema, validated, waiting_of
from ask_api.schemas import AskBodyBase, CallBodyBase
from core.domain.kinds import Kinds
from core.domain.logline import emit

log = logging.getLogger("aye.mcp")

# Clients cut a silent tool call off (the TypeScript SDK after 60 s); progress every few seconds
# keeps the call alive well inside the contract's "at least every 10 s".
PROGRESS_EVERY_S = 5.0
Context = ServerRequestContext[Any, Any]


class AgentPort(Protocol):
    """aye, as the one agent a tool call acts for. Every failure is an ApiError carrying the
    contract's error code."""

    async def create(self, body: AskBodyBase, raw: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/asks: the ask as the agent sees it."""
        ...

    async def wait(self, ref: str, seconds: int) -> dict[str, Any]:
        """Park on one of the agent's asks: the ask once it closes, or after `seconds` (or at
        once when aye is stopping) as it stands."""
        ...

    async def call(self, body: CallBodyBase, raw: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/calls: its body (`decision`, `ask` or `approval`, a refusal's `error`)."""
        ...


PortFor = Callable[[Context], AgentPort]
Report = Callable[[float, float, str], Awaitable[None]]


def ok(data: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(data, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


def failed(error: ApiError) -> types.CallToolResult:
    """An error result: its text starts with the contract's code (`invalid_field: …`)."""
    body: dict[str, Any] = {"error": error.code, "message": error.message}
    if error.field is not None:
        body["field"] = error.field
    text = f"{error.code}: {error.message}"
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=body, is_error=True
    )


class Progress:
    """Progress notifications for one tool call; the SDK sends them only when the client asked,
    with a progressToken. A client that has gone loses nothing: the ask stays open."""

    def __init__(self, ctx: Context) -> None:
        self.session = ctx.session

    async def __call__(self, done: float, total: float, message: str) -> None:
        try:
            await self.session.report_progress(done, total, message)
        except Exception as exc:  # the client went: the wait goes on, the ask is not lost
            log.debug("progress not sent: %s", type(exc).__name__)


async def waited(port: AgentPort, ref: str, wait_s: int, report: Report) -> dict[str, Any]:
    """Park on the ask up to `wait_s`, telling the client how long it has waited every
    PROGRESS_EVERY_S, so that it does not cut the call off."""
    if wait_s <= 0:
        return await port.wait(ref, 0)
    ticker = asyncio.create_task(_tick(ref, wait_s, report))
    try:
        return await port.wait(ref, wait_s)
    finally:
        ticker.cancel()


async def _tick(ref: str, wait_s: int, report: Report) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
        waited_s = min(round(loop.time() - started), wait_s)
        await report(waited_s, wait_s, f"{ref}: waiting for a person ({waited_s}s of {wait_s}s)")


def refusal(view: dict[str, Any]) -> dict[str, Any] | None:
    """The `/v1/calls` body for an approval that closed without approving the call (None
    while it is open or once it is approved): refused (by whom, why), timed out, withdrawn."""
    if view["status"] == "open" or view.get("outcome") == "approved":
        return None
    out: dict[str, Any] = {"decision": "refuse", "approval": view["id"]}
    if view.get("outcome") == "approval_refused":
        out.update(error="approval_refused", message="a person refused this call",
                   by=view.get("by"), note=(view.get("answer") or {}).get("note"), repeat=False)
    elif view["status"] == "withdrawn":
        out.update(error="approval_withdrawn",
                   message="the approval was withdrawn before anyone decided")
    else:
        out.update(error="approval_timed_out", message="nobody approved this call in time")
    return out


class Tools:
    """The three tools, for whichever agent `port_for` finds behind a call."""

    def __init__(self, port_for: PortFor, kinds: Kinds) -> None:
        self.port_for = port_for
        self.arguments = Arguments.build(kinds)
        self.tools = [
            _tool("ask", "Ask a person", guide.ASK,
                  input_schema(self.arguments.ask, guide.ASK_FIELDS), read_only=False),
            _tool("wait", "Wait for an answer", guide.WAIT,
                  input_schema(self.arguments.wait, guide.WAIT_FIELDS), read_only=True),
            _tool("request_approval", "Request approval", guide.REQUEST_APPROVAL,
                  input_schema(self.arguments.call, guide.APPROVAL_FIELDS), read_only=False),
        ]
        self.run: dict[str, Callable[[AgentPort, dict[str, Any], Report], Awaitable[dict[str, Any]]]]
        self.run = {"ask": self.ask, "wait": self.wait, "request_approval": self.request_approval}

    def schema_of(self, name: str) -> Mapping[str, Any] | None:
        return next((t.input_schema for t in self.tools if t.name == name), None)

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        run = self.run.get(params.name)
        if run is None:
            # Not the model's mistake to correct in a result: the spec makes it a protocol error.
            raise MCPError(types.INVALID_PARAMS, f"no tool named {params.name!r}: the tools are "
                           "ask, wait and request_approval")
        try:
            port = self.port_for(ctx)  # first: it refuses a call whose body held a key twice
            raw = checked(params.arguments)
            return ok(await run(port, raw, Progress(ctx)))
        except ApiError as error:
            emit(log, "mcp.tool_error", tool=params.name, error=error.code)
            return failed(error)

    async def ask(self, port: AgentPort, raw: dict[str, Any], report: Report) -> dict[str, Any]:
        """Ask, then wait up to wait_s for the answer: the ask as it stands then."""
        args = validated(self.arguments.ask, raw)
        body = body_of(raw)
        view = await port.create(args, body)
        wait_s = waiting_of(raw)
        if view["status"] != "open" or wait_s == 0:
            return view
        await report(0, wait_s, f"asked {view['ref']}: waiting up to {wait_s}s for a person")
        return await waited(port, view["ref"], wait_s, report)

    async def wait(self, port: AgentPort, raw: dict[str, Any], report: Report) -> dict[str, Any]:
        args = validated(self.arguments.wait, raw)
        return await waited(port, args.ref, args.wait_s, report)

    async def request_approval(
        self, port: AgentPort, raw: dict[str, Any], report: Report
    ) -> dict[str, Any]:
        """The `/v1/calls` decision; a pending approval waited on up to wait_s, and once
        approved the same call made again, which uses the approval: an `allow` is already
        used for this call."""
        args = validated(self.arguments.call, raw)
        body = body_of(raw)
        reply = await port.call(args, body)
        if reply.get("decision") != "pending":
            return reply
        wait_s = waiting_of(raw)
        pending = reply["ask"]
        await report(0, wait_s, f"{pending['ref']}: waiting up to {wait_s}s for an approval")
        view = await waited(port, pending["ref"], wait_s, report)
        if view["status"] == "open":
            return {"decision": "pending", "ask": view}
        return refusal(view) or await port.call(args, body)


def _tool(
    name: str, title: str, description: str, schema: dict[str, Any], read_only: bool
) -> types.Tool:
    hints = types.ToolAnnotations(
        title=title, read_only_hint=read_only, destructive_hint=False,
        idempotent_hint=read_only, open_world_hint=True,
    )
    return types.Tool(name=name, title=title, description=description, input_schema=schema,
                      annotations=hints)


def build_server(port_for: PortFor, kinds: Kinds) -> Server[Any]:
    """aye's MCP server: its instructions and its three tools (their `work` made of `kinds`'
    variants), each call reaching aye through `port_for(ctx)`."""
    tools = Tools(port_for, kinds)
    return Server(
        "aye", version=_version(), instructions=guide.INSTRUCTIONS,
        on_list_tools=tools.list_tools, on_call_tool=tools.call_tool,
        get_tool_input_schema=tools.schema_of,
    )


def _version() -> str:
    try:
        return importlib.metadata.version("aye")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
