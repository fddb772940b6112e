"""The MCP endpoint (streamable HTTP, stateless JSON-RPC POSTs) over the op registry.

Every op is the tool `loom_<op>` (dots as underscores): the default core listing, `?toolset=all`
for more; ops listed in neither are called through `loom_op`; hidden ops are not callable here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types import (
    CallToolResult,
    EmptyResult,
    ErrorData,
    Implementation,
    InitializeResult,
    JSONRPCError,
    JSONRPCResponse,
    ListToolsResult,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolAnnotations,
    ToolsCapability,
)
from pydantic import BaseModel

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.errors import ForbiddenError, LoomError, UnknownOpError
from chalicelib.observability import logger
from chalicelib.registry import (
    OpSpec,
    call,
    op_description,
    output_schema,
    registered,
)
from chalicelib.services import mcp_sessions
from chalicelib.storable import unstorable

SERVER_INFO = {"name": "loom", "version": "0.1.0"}
# The revisions that open a session with `initialize`, newest first (an unknown one asked for
# is answered with the newest).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SESSION_HEADER = "Mcp-Session-Id"
GENERIC_TOOL = "loom_op"
INSTRUCTIONS = (
    "Loom is the memory of this agent: memory.search before answering from memory, memory.set"
    " for a fact you already know, memory.set_from_messages to have the server extract facts."
)
# (status, body: one JSON-RPC answer or none, headers)
Answer = tuple[int, dict[str, Any] | None, dict[str, str]]


def tool_name(op: str) -> str:
    return "loom_" + op.replace(".", "_")


def _listed(spec: OpSpec, toolset: str) -> bool:
    return spec.mcp == "core" or (toolset == "all" and spec.mcp == "all")


# Filled by the transport: the org from the token; namespace and agent from the MCP session
# when a call leaves them out.
_FROM_TOKEN = ("org",)
_FROM_SESSION = ("namespace", "agent")


def _input_schema(spec: OpSpec) -> dict[str, Any]:
    """The op's input schema without the fields its model keeps off MCP (`mcp_hidden`) or the
    token fills, and with what the session fills optional."""
    schema = spec.input_model.model_json_schema()
    for name in (*getattr(spec.input_model, "mcp_hidden", ()), *_FROM_TOKEN):
        schema.get("properties", {}).pop(name, None)
    if "required" in schema:
        dropped = (*_FROM_TOKEN, *_FROM_SESSION)
        schema["required"] = [name for name in schema["required"] if name not in dropped]
    return schema


def _dump(message: BaseModel) -> dict[str, Any]:
    # The fields given, none of the type's defaults: an answer names only what it means.
    return message.model_dump(by_alias=True, exclude_unset=True)


def _tool(spec: OpSpec) -> Tool:
    return Tool(
        name=tool_name(spec.name),
        description=op_description(spec),
        input_schema=_input_schema(spec),
        output_schema=output_schema(spec),
        annotations=ToolAnnotations(
            read_only_hint=spec.kind == "read",
            idempotent_hint=spec.kind != "write",
        ),
    )


def _tools(toolset: str) -> list[Tool]:
    tools = [_tool(s) for s in registered().values() if _listed(s, toolset)]
    unlisted = sorted(s.name for s in registered().values() if s.mcp in ("unlisted", "all"))
    tools.append(
        Tool(
            name=GENERIC_TOOL,
            description="Call any Loom op by name, e.g. conversation.get: " + ", ".join(unlisted),
            input_schema={
                "type": "object",
                "properties": {"op": {"type": "string"}, "args": {"type": "object"}},
                "required": ["op"],
            },
        )
    )
    return tools


def list_tools(toolset: str) -> list[dict[str, Any]]:
    return [_dump(tool) for tool in _tools(toolset)]


class UnknownToolError(Exception):
    """A tools/call naming no tool: a protocol error (-32602), not a tool's own error."""


def _resolve_tool(name: str, arguments: dict[str, Any]) -> tuple[OpSpec, dict[str, Any]]:
    ops = registered()
    if name == GENERIC_TOOL:
        op_name, args = arguments.get("op"), arguments.get("args")
        args = {} if args is None else args
        spec = ops.get(op_name) if isinstance(op_name, str) else None
        if spec is None:
            raise UnknownOpError(f"no op named {op_name!r}")
        if not isinstance(args, dict):
            raise LoomError("loom_op args must be an object")
    else:
        spec = next((s for s in ops.values() if tool_name(s.name) == name), None)
        if spec is None:
            raise UnknownToolError(f"Unknown tool: {name}")
        args = arguments
    if spec.mcp == "hidden":
        raise ForbiddenError(f"{spec.name} is not available over MCP; use HTTP")
    return spec, dict(args)


def _call_tool(
    params: Mapping[str, Any], caller: Caller, deps: Deps, session: dict[str, Any] | None
) -> CallToolResult:
    try:
        spec, args = _resolve_tool(str(params.get("name")), dict(params.get("arguments") or {}))
        if session:
            _fill_from_session(spec, args, session)
        out = call(spec.name, args, caller, deps).body
    except LoomError as exc:
        text = TextContent(type="text", text=json.dumps(exc.to_body()))
        return CallToolResult(content=[text], is_error=True)
    text = TextContent(type="text", text=json.dumps(out, default=str))
    return CallToolResult(content=[text], structured_content=out, is_error=False)


def _fill_from_session(spec: OpSpec, args: dict[str, Any], session: Mapping[str, Any]) -> None:
    """What the session fills of a call: the namespace and agent an op needs and the call left
    out, and its implicit run as the run a write joins. A field whose default means something
    keeps it (erasure's namespace None is the whole org, a blacklist's "" too; threads' agent
    "*" is every agent), as do an explicit agent "" (every agent) and the run filters and
    patches of reads and updates."""
    fields = spec.input_model.model_fields
    for key in _FROM_SESSION:
        field = fields.get(key)
        left_out = args.get(key) is None or (key == "namespace" and args.get(key) == "")
        if field is not None and field.is_required() and left_out and session.get(key):
            args[key] = session[key]
    run = fields.get("run_id")
    joins_run = run is not None and spec.kind != "read" and run.default == "-"
    if joins_run and args.get("run_id") in (None, "") and session.get("run_id"):
        args["run_id"] = session["run_id"]


def _refused_text(named: Mapping[str, Any]) -> str | None:
    """Why one of these values (each absent, or a string) cannot be kept, or None."""
    for key, value in named.items():
        why = "must be a string" if not isinstance(value, str) else unstorable(value)
        if value is not None and why:
            return f"{key}: {why}"
    return None


def _error(req_id: Any, code: int, message: str) -> dict[str, Any]:
    error = ErrorData(code=code, message=message)
    return _dump(JSONRPCError(jsonrpc="2.0", id=req_id, error=error))


def handle(
    raw: bytes | str | None,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    caller: Caller,
    deps: Deps,
) -> Answer:
    """One JSON-RPC message: a request answers 200 with its result, a notification 202.

    A batch (a JSON array) is refused whole, none of its messages run: MCP removed batching in
    2025-06-18, and one POST running hundreds of tool calls would escape every per-request
    bound. Every revision's client can send its messages one a POST."""
    try:
        msg = json.loads(raw or b"", parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return 400, _error(None, -32700, "parse error: the body is not JSON"), {}
    asked = _header(headers, "mcp-protocol-version")
    if asked is not None and asked not in PROTOCOL_VERSIONS:
        known = ", ".join(PROTOCOL_VERSIONS)
        return 400, _error(None, -32600, f"unsupported MCP-Protocol-Version {asked!r}; "
                           f"this server speaks {known}"), {}  # fmt: skip
    if isinstance(msg, list):
        return 400, _error(None, -32600, "invalid request: one JSON-RPC message a POST; this"
                           " server takes no batch"), {}  # fmt: skip
    return answer_message(msg, query, headers, caller, deps)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _valid_id(req_id: Any) -> bool:
    """MCP: a request id is a string or an integer, never null."""
    return isinstance(req_id, str) or (isinstance(req_id, int) and not isinstance(req_id, bool))


@dataclass(frozen=True)
class Request:
    """One JSON-RPC request, as its method's handler reads it."""

    id: str | int
    params: dict[str, Any]
    query: Mapping[str, str]
    caller: Caller
    deps: Deps
    session: dict[str, Any] | None  # the caller's open session, when the request names one


class RequestError(Exception):
    """A request answered with a JSON-RPC error (HTTP 200) instead of a result."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


# A handler's result, and the headers its answer carries.
Reply = tuple[dict[str, Any], dict[str, str]]


def _answer_initialize(request: Request) -> Reply:
    """Open a session: the revision both sides speak, what this server offers, and its id."""
    params, query = request.params, request.query
    asked = params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    info = params.get("clientInfo") or {}
    client = info.get("name") if isinstance(info, dict) else None
    refused = _refused_text({"clientInfo.name": client}) or _refused_name(query)
    if refused:
        raise RequestError(-32602, f"invalid params: {refused}")
    client = client or "mcp-client"
    session_id = mcp_sessions.open_session(
        request.deps,
        request.caller,
        client_name=str(client)[:200],
        namespace=query.get("namespace") or request.caller.namespace or "",
        agent=query.get("agent") or str(client)[:200],
    )
    result = InitializeResult(
        protocol_version=version,
        capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=False)),
        server_info=Implementation(name=SERVER_INFO["name"], version=SERVER_INFO["version"]),
        instructions=INSTRUCTIONS,
    )
    return _dump(result), {SESSION_HEADER: session_id}


def _answer_ping(request: Request) -> Reply:
    return _dump(EmptyResult()), {}


def _answer_tools_list(request: Request) -> Reply:
    if request.params.get("cursor") is not None:  # no listing is paged, so no cursor was issued
        raise RequestError(-32602, "invalid params: unknown cursor")
    tools = _tools(request.query.get("toolset", "core"))
    return _dump(ListToolsResult(tools=tools)), {}


def _answer_tools_call(request: Request) -> Reply:
    params = request.params
    arguments = params.get("arguments")
    if not isinstance(params.get("name"), str) or not isinstance(
        {} if arguments is None else arguments, dict
    ):
        raise RequestError(-32602, "invalid params: name (a string) and arguments (an object)"
                           " name the tool call")  # fmt: skip
    try:
        result = _call_tool(params, request.caller, request.deps, request.session)
    except UnknownToolError as exc:
        raise RequestError(-32602, str(exc)) from exc
    except Exception as exc:
        logger.exception("unhandled MCP tool error", extra={"tool": params.get("name")})
        raise RequestError(-32603, "internal error; see the server log") from exc
    return _dump(result), {}


METHODS: dict[str, Callable[[Request], Reply]] = {
    "initialize": _answer_initialize,
    "ping": _answer_ping,
    "tools/list": _answer_tools_list,
    "tools/call": _answer_tools_call,
}


def _not_a_request(msg: Any) -> Answer | None:
    """The answer to a message that is no request: 400 for one that is not JSON-RPC 2.0 (or
    has a bad method or id), 202 for a notification (initialized, cancelled, ...); else None."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "method" not in msg:
        return 400, _error(None, -32600, "invalid request: one JSON-RPC 2.0 object"), {}
    if not isinstance(msg["method"], str):
        return 400, _error(None, -32600, "invalid request: method must be a string"), {}
    if "id" not in msg:
        return 202, None, {}
    if not _valid_id(msg["id"]):
        return 400, _error(None, -32600, "invalid request: id must be a string or an integer"), {}
    return None


def answer_message(
    msg: Any,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    caller: Caller,
    deps: Deps,
) -> Answer:
    """Answer one JSON-RPC message: past its envelope and the session it names (any but an
    initialize), its method's handler answers it."""
    not_a_request = _not_a_request(msg)
    if not_a_request is not None:
        return not_a_request
    req_id, method = msg["id"], msg["method"]
    session_id = _header(headers, "mcp-session-id")
    session: dict[str, Any] | None = None
    if method != "initialize" and session_id is not None:
        session = _session(session_id, caller, deps, call=method == "tools/call")
        if session is None:
            # A session this server never opened for this caller (or one it no longer holds):
            # MCP's 404 tells the client to initialize a new one.
            unknown = "unknown Mcp-Session-Id: initialize a new session"
            return 404, _error(req_id, -32001, unknown), {}
    handler = METHODS.get(method)
    if handler is None:
        return 200, _error(req_id, -32601, f"method not found: {method}"), {}
    params: dict[str, Any] = msg["params"] if isinstance(msg.get("params"), dict) else {}
    try:
        result, extra = handler(Request(req_id, params, query, caller, deps, session))
    except RequestError as exc:
        return 200, _error(req_id, exc.code, exc.message), {}
    return 200, _dump(JSONRPCResponse(jsonrpc="2.0", id=req_id, result=result)), extra


def _session(session_id: str, caller: Caller, deps: Deps, *, call: bool) -> dict[str, Any] | None:
    """The caller's open session of this id, or None. A tool call is noted on it (its implicit
    run goes on, or a new one starts after the idle time); a ping or a listing is no call and
    only checks that it exists (answered as an empty session)."""
    if unstorable(session_id) is not None:
        return None  # no id this server issued
    if not call:
        return {} if mcp_sessions.session_exists(deps, caller, session_id) else None
    return mcp_sessions.touch_session(deps, caller, session_id)


def _refused_name(query: Mapping[str, str]) -> str | None:
    """Why the namespace or agent a session is opened with could never be used, or None."""
    from chalicelib.names import is_name

    for key in ("namespace", "agent"):
        value = query.get(key)
        if value is None:
            continue
        why = unstorable(value)
        if why:
            return f"{key}: {why}"
        if not is_name(value):
            return f"{key}: 1 to 256 characters, no spaces"
    return None
