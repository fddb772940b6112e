"""/mcp answers malformed JSON-RPC params with a JSON-RPC error (-32602), never a 500, and
keeps nothing of them."""

from __future__ import annotations

import json

import pytest

from chalicelib.auth import mint_token
from chalicelib.mcp import list_tools


def _mcp(client, token, message, query="", **headers):
    resp = client.http.post(
        "/mcp" + query,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}",
                 **headers},
        body=json.dumps(message),
    )  # fmt: skip
    return resp.status_code, json.loads(resp.body or b"{}")


def _sessions(pool, org):
    with pool.connection() as conn:
        row = conn.execute("SELECT count(*) FROM loom.mcp_sessions WHERE org = %s", (org,))
        return row.fetchone()[0]


@pytest.mark.parametrize(
    ("params", "query"),
    [
        ({"clientInfo": {"name": "a\u0000b"}}, ""),
        ({"clientInfo": {"name": "\ud800"}}, ""),
        ({"clientInfo": {"name": {"x": 1}}}, ""),
        ({}, "?namespace=%00"),
        ({}, "?agent=%00"),
    ],
)
def test_an_initialize_naming_what_cannot_be_kept_is_invalid_params(
    client, deps, org, pool, params, query
):
    """GIVEN an initialize whose client name, or namespace or agent in the query, holds a NUL,
    a lone surrogate or is no string
    WHEN it is posted THEN it answers a JSON-RPC error -32602 and opens no session."""
    token = mint_token(deps, org=org, role="writer")
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    status, body = _mcp(client, token, message, query)
    assert (status, body["error"]["code"]) == (200, -32602), body
    assert _sessions(pool, org) == 0


@pytest.mark.parametrize("info", ["x", [1], None])
def test_a_client_info_that_is_no_object_is_read_as_none(client, deps, org, info):
    """GIVEN an initialize whose clientInfo is a string, a list or null
    WHEN it is posted THEN the session opens as for a client that gave no name."""
    token = mint_token(deps, org=org, role="writer")
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": info}}
    status, body = _mcp(client, token, message)
    assert status == 200 and "result" in body, body


@pytest.mark.parametrize(
    "params",
    [
        {"name": "loom_system_whoami", "arguments": "ab"},
        {"name": "loom_system_whoami", "arguments": 5},
        {"name": "loom_system_whoami", "arguments": True},
        {"name": "loom_system_whoami", "arguments": [1]},
        {"name": "loom_system_whoami", "arguments": [["zz", 1], [5, 2]]},
        # Empty or false, they are still no object.
        {"name": "loom_system_whoami", "arguments": []},
        {"name": "loom_system_whoami", "arguments": ""},
        {"name": "loom_system_whoami", "arguments": 0},
        {"name": "loom_system_whoami", "arguments": False},
        {"name": ["loom_system_whoami"]},
    ],
)
def test_a_tool_call_whose_arguments_are_no_object_is_invalid_params(client, deps, org, params):
    """GIVEN a tools/call whose arguments are a string, a number, a boolean or a list (pairs
    included), or whose name is no string
    WHEN it is posted THEN it answers a JSON-RPC error -32602."""
    token = mint_token(deps, org=org, role="writer")
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    status, body = _mcp(client, token, message)
    assert (status, body["error"]["code"]) == (200, -32602), body


@pytest.mark.parametrize("args", [[], "", 0, False])
def test_a_loom_op_call_whose_args_are_no_object_is_a_tool_error(client, deps, org, args):
    """GIVEN a loom_op tools/call whose args are empty or false but no object
    WHEN it is posted THEN the tool answers an error result, and the op is not run."""
    token = mint_token(deps, org=org, role="writer")
    params = {"name": "loom_op", "arguments": {"op": "system.whoami", "args": args}}
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    status, body = _mcp(client, token, message)
    assert status == 200 and body["result"]["isError"] is True, body
    assert "args must be an object" in body["result"]["content"][0]["text"]


@pytest.mark.parametrize("session_id", ["abc\u0000def", "deadbeef" * 4])
@pytest.mark.parametrize("method", ["tools/call", "tools/list", "ping"])
def test_a_session_id_this_server_never_opened_is_a_404(client, deps, org, session_id, method):
    """GIVEN a request whose Mcp-Session-Id names no session this server opened (one holding a
    NUL, or one it never issued)
    WHEN it is posted THEN it answers 404 with a JSON-RPC error, so the client initializes a
    new session (MCP's rule for a session the server does not hold)."""
    token = mint_token(deps, org=org, role="writer")
    params = {"name": "loom_system_whoami", "arguments": {}} if method == "tools/call" else {}
    message = {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}
    status, body = _mcp(client, token, message, **{"Mcp-Session-Id": session_id})
    assert status == 404 and "initialize" in body["error"]["message"], body


def test_session_values_and_the_replay_id_are_not_in_the_mcp_schema():
    """GIVEN the MCP tool listing WHEN memory.set_from_messages is read from it
    THEN its input schema offers the messages but not session_values (the spec keeps them off
    MCP) nor the deferred queue's request_id."""
    (tool,) = [t for t in list_tools("core") if t["name"] == "loom_memory_set_from_messages"]
    offered = tool["inputSchema"]["properties"]
    assert "messages" in offered
    assert "session_values" not in offered and "request_id" not in offered
