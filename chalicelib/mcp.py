"""The MCP endpoint (streamable HTTP, stateless JSON-RPC POSTs) over the op registry.

Every op is the tool `loom_<op>` (dots as underscores): the default core listing, `?toolset=all`
for more; ops listed in neither are called through `loom_op`; hidden ops are not callable here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.errors import ForbiddenError, LoomError, UnknownOpError
from chalicelib.registry import OpSpec, call, output_schema, registered, unstorable

SERVER_INFO = {"name": "loom", "version": "0.1.0"}
PROTOCOL_VERSIONS = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SESSION_HEADER = "Mcp-Session-Id"
GENERIC_TOOL = "loom_op"
INSTRUCTIONS = (
    "Loom is the memory of this agent: memory.search before answering from memory, memory.set"
    " for a fact you already know, memory.set_from_messages to have the server extract facts."
)
Answer = tuple[int, dict[str, Any] | None, dict[str, str]]


def tool_name(op: str) -> str:
    return "loom_" + op.replace(".", "_")


def _listed(spec: OpSpec, toolset: str) -> bool:
    return spec.mcp == "core" or (toolset == "all" and spec.mcp == "all")


def _input_schema(spec: OpSpec) -> dict[str, Any]:
    """The op's input schema without the fields its model keeps off MCP (`mcp_hidden`)."""
    schema = spec.input_model.model_json_schema()
    for name in getattr(spec.input_model, "mcp_hidden", ()):
        schema.get("properties", {}).pop(name, None)
    return schema


def _tool(spec: OpSpec) -> dict[str, Any]:
    doc = (spec.fn.__doc__ or spec.name).strip().splitlines()[0]
    return {
        "name": tool_name(spec.name),
        "description": doc,
        "inputSchema": _input_schema(spec),
        "outputSchema": output_schema(spec),
        "annotations": {
            "readOnlyHint": spec.kind == "read",
            "idempotentHint": spec.kind != "write",
        },
    }


def list_tools(toolset: str) -> list[dict[str, Any]]:
    tools = [_tool(s) for s in registered().values() if _listed(s, toolset)]
    unlisted = sorted(s.name for s in registered().values() if s.mcp in ("unlisted", "all"))
    tools.append(
        {
            "name": GENERIC_TOOL,
            "description": "Call any Loom op by name, e.g. conversation.get: "
            + ", ".join(unlisted),
            "inputSchema": {
                "type": "object",
                "properties": {"op": {"type": "string"}, "args": {"type": "object"}},
                "required": ["op"],
            },
        }
    )
    return tools


def _resolve_tool(name: str, arguments: dict[str, Any]) -> tuple[OpSpec, dict[str, Any]]:
    ops = registered()
    if name == GENERIC_TOOL:
        op_name, args = arguments.get("op"), arguments.get("args") or {}
        spec = ops.get(op_name) if isinstance(op_name, str) else None
        if spec is None:
            raise UnknownOpError(f"no op named {op_name!r}")
        if not isinstance(args, dict):
            raise LoomError("loom_op args must be an object")
    else:
        spec = next((s for s in ops.values() if tool_name(s.name) == name), None)
        if spec is None:
            raise UnknownOpError(f"no tool named {name!r}")
        args = arguments
    if spec.mcp == "hidden":
        raise ForbiddenError(f"{spec.name} is not available over MCP; use HTTP")
    return spec, dict(args)


def _call_tool(
    params: Mapping[str, Any], caller: Caller, deps: Deps, session: dict[str, Any] | None
) -> dict[str, Any]:
    try:
        spec, args = _resolve_tool(str(params.get("name")), dict(params.get("arguments") or {}))
        if session:  # the session fills what the call leaves out
            fields = spec.input_model.model_fields
            for key in ("namespace", "agent", "run_id"):
                if key in fields and args.get(key) in (None, "") and session.get(key):
                    args[key] = session[key]
        out = call(spec.name, args, caller, deps).body
    except LoomError as exc:
        return {"content": [{"type": "text", "text": json.dumps(exc.to_body())}], "isError": True}
    return {
        "content": [{"type": "text", "text": json.dumps(out, default=str)}],
        "structuredContent": out,
        "isError": False,
    }


def _refused_text(named: Mapping[str, Any]) -> str | None:
    """Why one of these values (each absent, or a string) cannot be kept, or None."""
    for key, value in named.items():
        why = "must be a string" if not isinstance(value, str) else unstorable(value)
        if value is not None and why:
            return f"{key}: {why}"
    return None


def _error(req_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}}


def handle(
    raw: bytes | str | None,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    caller: Caller,
    deps: Deps,
) -> Answer:
    """One JSON-RPC message: a request answers 200 with its result, a notification 202."""
    from chalicelib.store import mcp_sessions

    try:
        msg = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return 400, _error(None, -32700, "parse error: the body is not JSON"), {}
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "method" not in msg:
        return 400, _error(None, -32600, "invalid request: one JSON-RPC 2.0 object"), {}
    if "id" not in msg:
        return 202, None, {}  # a notification (initialized, cancelled, ...)
    req_id, method = msg["id"], msg["method"]
    params: dict[str, Any] = msg["params"] if isinstance(msg.get("params"), dict) else {}
    toolset = query.get("toolset", "core")
    session_id = next((v for k, v in headers.items() if k.lower() == "mcp-session-id"), None)
    extra: dict[str, str] = {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        info = params.get("clientInfo") or {}
        client = info.get("name") if isinstance(info, dict) else None
        named = {"clientInfo.name": client, **{k: query.get(k) for k in ("namespace", "agent")}}
        refused = _refused_text(named)
        if refused:
            return 200, _error(req_id, -32602, f"invalid params: {refused}"), extra
        client = client or "mcp-client"
        with deps.pool.connection() as conn:
            session_id = mcp_sessions.open_session(
                conn,
                org=caller.org,
                principal=caller.principal,
                client_name=str(client)[:200],
                namespace=query.get("namespace") or caller.namespace or "",
                agent=query.get("agent") or str(client)[:200],
            )
        extra[SESSION_HEADER] = session_id
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": list_tools(toolset)}
    elif method == "tools/call":
        if not isinstance(params.get("name"), str) or not isinstance(
            params.get("arguments") or {}, dict
        ):
            return 200, _error(req_id, -32602, "invalid params: name (a string) and arguments "
                               "(an object) name the tool call"), extra  # fmt: skip
        session = None
        if session_id and unstorable(session_id) is None:
            idle = deps.live().mcp_session_run_idle_seconds
            with deps.pool.connection() as conn:
                session = mcp_sessions.touch_session(conn, session_id, caller.principal, idle)
        result = _call_tool(params, caller, deps, session)
    else:
        return 200, _error(req_id, -32601, f"method not found: {method}"), extra
    return 200, {"jsonrpc": "2.0", "id": req_id, "result": result}, extra
