"""/mcp as the MCP specification and the ops' own defaults ask: the Origin check, what an MCP
session fills into a call (and what it leaves alone), the tools' input schemas, and JSON-RPC's
shapes (ids, batches, versions, unknown tools, cursors, internal errors)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import mcp
from chalicelib.auth import mint_token
from chalicelib.deps import Deps, set_deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.providers.llm import FakeLLM
from chalicelib.registry import registered
from tests.conftest import make_settings


def _post(client, path: str, message: Any, token: str | None = None, **headers: str):
    hdrs = {"Content-Type": "application/json", **headers}
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    body = message if isinstance(message, str) else json.dumps(message)
    resp = client.http.post(path, headers=hdrs, body=body)
    return resp.status_code, json.loads(resp.body or b"null"), resp.headers


def _rpc(method: str, params: dict[str, Any] | None = None, req_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}}


class Session:
    """An MCP session opened with initialize, calling tools as a client would."""

    def __init__(self, client, token: str | None, query: str = "") -> None:
        self.client, self.token, self.query = client, token, query
        status, body, headers = self.send(_rpc("initialize", {"clientInfo": {"name": "probe"}}))
        assert status == 200 and "result" in body, body
        self.id = headers["Mcp-Session-Id"]

    def send(self, message: Any, **headers: str):
        extra = {"Mcp-Session-Id": self.id} if hasattr(self, "id") else {}
        return _post(self.client, "/mcp" + self.query, message, self.token, **extra, **headers)

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        status, body, _ = self.send(_rpc("tools/call", {"name": name, "arguments": arguments}))
        assert status == 200 and "result" in body, body
        result = body["result"]
        return (
            json.loads(result["content"][0]["text"])
            if result["isError"]
            else result["structuredContent"]
        )

    def op(self, op: str, **args: Any) -> dict[str, Any]:
        return self.tool(mcp.GENERIC_TOOL, op=op, args=args)


# ---- Origin ---------------------------------------------------------------------------------


@pytest.fixture
def local_client(pool, embedder, org):
    """The app as `make run` serves it: LOOM_AUTH=off, one org, no token."""
    from chalice.test import Client

    from app import app

    set_deps(Deps(make_settings(auth="off", org=org), pool=pool, embedder=embedder, llm=FakeLLM()))
    with Client(app) as c:
        yield c
    set_deps(None)


def _memories(pool, org: str) -> int:
    with pool.connection() as conn:
        return conn.execute("SELECT count(*) FROM loom.memories WHERE org = %s", (org,)).fetchone()[
            0
        ]


FOREIGN = [
    {"Origin": "http://evil.example", "Host": "127.0.0.1:7777"},
    {"Origin": "null", "Host": "127.0.0.1:7777"},
    # A page on another port of this machine is another origin.
    {"Origin": "http://localhost:9999", "Host": "localhost:7777"},
    {"Origin": "http://127.0.0.1:9999", "Host": "127.0.0.1:7777"},
    {"Host": "rebound.evil.example:7777"},  # a DNS name rebound to 127.0.0.1
    {"Origin": "http://rebound.evil.example:7777", "Host": "rebound.evil.example:7777"},
]


@pytest.mark.parametrize("headers", FOREIGN)
def test_with_auth_off_a_page_of_another_origin_or_a_rebound_name_is_refused(
    local_client, pool, org, headers
):
    """GIVEN a server with LOOM_AUTH=off (no token stands between a browser and the API)
    WHEN a memory.set arrives over /v1 and over /mcp as a page of another web origin would send
    it (a plain-text "simple request", with no preflight), or through a DNS name rebound to this
    machine
    THEN both answer 403 naming LOOM_AUTH, and nothing is stored.
    """
    body = {"namespace": "ns", "agent": "a", "key": "user/bank", "value": "Pay attacker."}
    status, answer, _ = _post(
        local_client, "/v1/memory.set", body, **{"Content-Type": "text/plain"}, **headers
    )
    assert status == 403 and "LOOM_AUTH" in answer["error"]["message"], answer
    call = _rpc("tools/call", {"name": "loom_memory_set", "arguments": body})
    status, answer, _ = _post(local_client, "/mcp", call, **headers)
    assert status == 403, answer
    assert _memories(pool, org) == 0


@pytest.mark.parametrize("host", ["127.0.0.1:7777", "localhost:7777", "[::1]:7777"])
def test_with_auth_off_this_machines_own_pages_and_clients_are_served(
    local_client, pool, org, host
):
    """GIVEN a server with LOOM_AUTH=off
    WHEN memory.set arrives addressed to a loopback name, from its own dashboard's origin
    THEN it is stored."""
    body = {"namespace": "ns", "agent": "a", "key": "user/drink", "value": "Tea."}
    origin = {"Origin": f"http://{host}", "Host": host}
    status, answer, _ = _post(local_client, "/v1/memory.set", body, **origin)
    assert status == 200, answer
    assert _memories(pool, org) == 1


def test_with_tokens_mcp_refuses_another_origin_and_serves_its_own(client, deps, org):
    """GIVEN a server with tokens, reached as loom.example
    WHEN /mcp gets a request whose Origin is another site, then one from its own origin
    THEN the first answers 403 and the second is served."""
    token = mint_token(deps, org=org, role="writer")
    host = {"Host": "loom.example"}
    status, _, _ = _post(client, "/mcp", _rpc("ping"), token, Origin="https://evil.example", **host)
    assert status == 403
    status, body, _ = _post(
        client, "/mcp", _rpc("ping"), token, Origin="https://loom.example", **host
    )
    assert (status, body["result"]) == (200, {})


# ---- what the session fills -----------------------------------------------------------------


def test_the_session_leaves_an_erasures_and_a_blacklists_whole_org_default_alone(
    client, api, deps, org
):
    """GIVEN an MCP session opened on ?namespace=ns1, and user u1 holding a fact in ns2
    WHEN it asks erasure.request for u1 with no namespace (the whole org) and memory.blacklist
    with namespace "" (the whole org)
    THEN the erasure covers every namespace (u1's fact in ns2 is gone) and the pattern is
    listed for the whole org: the session's namespace is not filled in where a missing one
    means every namespace."""
    admin = mint_token(deps, org=org, role="org_admin")
    api.ok("memory.set", token=admin, namespace="ns2", agent="a", user_id="u1",
           key="u1/drink", value="u1 drinks tea")  # fmt: skip
    s = Session(client, admin, "?namespace=ns1")

    erased = s.tool("loom_erasure_request", kind="user", user_id="u1")
    listed = s.op("memory.blacklist", namespace="", pattern="secret-*")

    assert erased["namespaces"] is None and erased["status"] == "done", erased
    got = api.ok("memory.get", token=admin, namespace="ns2", agent="a", user_id="u1",
                 key="u1/drink")  # fmt: skip
    assert got["found"] is False
    assert listed["namespace"] == "", listed


def test_the_session_fills_reads_and_patches_only_where_the_call_left_an_identity_out(
    client, api, deps, org
):
    """GIVEN a thread created in run r1 and written over HTTP by agents a1 and a2, and an MCP
    session on ?namespace=ns1 whose agent is the client's name
    WHEN the session lists the thread with agent "" (every agent) and no run filter, lists
    threads with the default agent ("*"), updates the thread's title only, then appends
    THEN the list holds both agents' turns, the threads listing holds the thread, the update
    leaves its run as it was, and the append (a write) joins the session's implicit run."""
    writer = mint_token(deps, org=org, role="org_admin")
    api.ok("conversation.set_logging", token=writer, namespace="ns1", enabled=True)
    api.ok("conversation.create", token=writer, namespace="ns1", agent="a1", thread_id="t1",
           run_id="r1")  # fmt: skip
    for agent in ("a1", "a2"):
        api.ok("conversation.append", token=writer, namespace="ns1", agent=agent,
               thread_id="t1", role="user", content=f"hello from {agent}", run_id="r1")  # fmt: skip
    s = Session(client, writer, "?namespace=ns1")

    listed = s.op("conversation.list", thread_id="t1", agent="")
    threads = s.tool("loom_conversation_threads")
    updated = s.op("conversation.update", thread_id="t1", title="Greetings")
    appended = s.tool("loom_conversation_append", thread_id="t2", role="user", content="hi")

    assert updated["updated"] is True, updated
    assert sorted(r["agent"] for r in listed["rows"]) == ["a1", "a2"], listed
    assert [t["thread_id"] for t in threads["threads"]] == ["t1"], threads
    thread = api.ok("conversation.get", token=writer, namespace="ns1", agent="-", thread_id="t1")
    assert (thread["title"], thread["run_id"]) == ("Greetings", "r1"), thread
    assert appended["stored"] is True
    t2 = api.ok("conversation.list", token=writer, namespace="ns1", agent="-", thread_id="t2")
    assert [r["run_id"][:4] for r in t2["rows"]] == ["mcp-"], t2


def test_a_session_opened_in_another_org_is_not_used(client, api, deps, org):
    """GIVEN an MCP session opened on ?namespace=ns1 by a token of another org minted with the
    same subject
    WHEN a token of this org calls memory.set with that session id
    THEN it is no session of this caller's: 404 (initialize one), and nothing is written."""
    other = mint_token(deps, org=org + "-b", role="writer", subject="ci-bot")
    mine = mint_token(deps, org=org, role="writer", subject="ci-bot")
    theirs = Session(client, other, "?namespace=ns1")
    mine_on_theirs = Session(client, mine)
    mine_on_theirs.id = theirs.id

    call = _rpc(
        "tools/call", {"name": "loom_memory_set", "arguments": {"key": "u/x", "value": "y"}}
    )
    status, body, _ = mine_on_theirs.send(call)

    assert status == 404 and "initialize" in body["error"]["message"], body
    assert _memories(deps.pool, org) == 0


# ---- input schemas --------------------------------------------------------------------------


@pytest.mark.parametrize("toolset", ["core", "all"])
def test_no_tool_asks_for_what_the_token_or_the_session_fills(toolset):
    """GIVEN the tool listings
    WHEN each tool's input schema is read
    THEN none names org (the token's) and none requires org, namespace or agent (the session
    fills them), so a client validating arguments accepts the README's own call."""
    for tool in mcp.list_tools(toolset):
        schema = tool["inputSchema"]
        assert "org" not in schema.get("properties", {}), tool["name"]
        assert not {"org", "namespace", "agent"} & set(schema.get("required", [])), tool["name"]
    append = next(t for t in mcp.list_tools("all") if t["name"] == "loom_conversation_append")
    assert set(append["inputSchema"]["required"]) == {"thread_id", "role", "content"}


# ---- JSON-RPC shapes -------------------------------------------------------------------------


@pytest.fixture
def session(client, deps, org) -> Session:
    return Session(client, mint_token(deps, org=org, role="writer"), "?namespace=ns1")


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600),
        ('{"jsonrpc": "2.0", "id": NaN, "method": "ping"}', -32700),
        ([], -32600),
    ],
)
def test_a_request_whose_id_or_method_json_rpc_does_not_allow_is_an_invalid_request(
    session, message, code
):
    """GIVEN an open session
    WHEN a request's id is null, an object, a boolean or a fraction, its method no string, its
    id NaN (no JSON), or the batch empty
    THEN it answers 400 with the JSON-RPC error and a null id, never echoing the id."""
    status, body, _ = session.send(message)
    assert (status, body["error"]["code"], body["id"]) == (400, code, None), body


@pytest.mark.parametrize("version", [None, "2025-03-26", "2025-06-18", "2025-11-25", "2024-11-05"])
def test_a_batch_is_refused_whole_in_every_version(session, version):
    """GIVEN an open session, its client speaking any version (MCP removed JSON-RPC batching
    in 2025-06-18, and this server takes one message a POST whatever the version)
    WHEN a batch of a ping, a notification and a tools/list arrives
    THEN it answers 400 with a single JSON-RPC error -32600 and a null id, and no request of
    it is answered."""
    batch = [_rpc("ping", req_id=1), {"jsonrpc": "2.0", "method": "notifications/initialized"},
             _rpc("tools/list", req_id=2)]  # fmt: skip
    headers = {} if version is None else {"MCP-Protocol-Version": version}
    status, body, _ = session.send(batch, **headers)
    assert status == 400 and isinstance(body, dict), body
    assert body["error"]["code"] == -32600 and body["id"] is None
    assert "result" not in body


def test_versions_are_negotiated_among_those_with_an_initialize_handshake(client, deps, org):
    """GIVEN a client asking for a version this server does not know (or a newer one without
    the handshake)
    WHEN it initializes THEN it is answered with the newest handshake version, 2025-11-25; a
    known one is echoed; a request whose MCP-Protocol-Version header names an unknown version
    answers 400."""
    token = mint_token(deps, org=org, role="writer")
    for asked, answered in [("2099-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25"),
                            ("2025-06-18", "2025-06-18"), (None, "2025-11-25")]:  # fmt: skip
        init = _rpc("initialize", {"protocolVersion": asked})
        status, body, _ = _post(client, "/mcp", init, token)
        assert body["result"]["protocolVersion"] == answered, (asked, body)
    status, body, _ = _post(client, "/mcp", _rpc("ping"), token,
                            **{"MCP-Protocol-Version": "1900-01-01"})  # fmt: skip
    assert status == 400 and body["error"]["code"] == -32600, body
    status, body, _ = _post(client, "/mcp", _rpc("ping"), token,
                            **{"MCP-Protocol-Version": "2025-06-18"})  # fmt: skip
    assert (status, body["result"]) == (200, {})


def test_an_unknown_tool_and_a_cursor_never_issued_are_invalid_params(session):
    """GIVEN an open session
    WHEN it calls a tool no listing names, or asks tools/list for a cursor it was never given
    THEN both answer the JSON-RPC error -32602 (loom_op naming an unknown op stays the tool's
    own error)."""
    status, body, _ = session.send(_rpc("tools/call", {"name": "nope", "arguments": {}}))
    assert (status, body["error"]["code"]) == (200, -32602), body
    assert "nope" in body["error"]["message"]
    status, body, _ = session.send(_rpc("tools/list", {"cursor": "not-a-cursor"}))
    assert body["error"]["code"] == -32602, body
    assert session.op("no.such")["error"]["code"] == "unknown_op"


class BuggyEmbedder(FakeEmbedder):
    """Fails as no provider error names (a bug)."""

    def embed_query(self, text: str) -> Any:
        raise RuntimeError("a bug")


def test_an_unexpected_error_inside_a_tool_call_is_a_json_rpc_internal_error(session, deps, pool):
    """GIVEN an op that fails in a way no error of the service names (a bug: its embedder
    raises what no provider error names)
    WHEN a tool call reaches it
    THEN it answers HTTP 200 with JSON-RPC error -32603 and the request's id, not a 500 in the
    HTTP API's error shape."""
    set_deps(Deps(deps.settings, pool=pool, embedder=BuggyEmbedder(), llm=deps.llm))
    search = {"name": "loom_memory_search", "arguments": {"query": "where the user lives"}}
    status, body, _ = session.send(_rpc("tools/call", search, req_id=7))
    assert (status, body["id"], body["error"]["code"]) == (200, 7, -32603), body


@pytest.mark.parametrize("query", ["?namespace=bad%20ns", "?agent=", "?namespace=" + "n" * 300])
def test_an_initialize_naming_a_namespace_or_agent_no_op_accepts_is_invalid_params(
    client, deps, org, query
):
    """GIVEN an initialize whose ?namespace= or ?agent= no op would accept (a space, empty,
    over 256 characters)
    WHEN it is posted THEN it answers -32602 naming the field, and opens no session."""
    token = mint_token(deps, org=org, role="writer")
    status, body, headers = _post(client, "/mcp" + query, _rpc("initialize"), token)
    assert (status, body["error"]["code"]) == (200, -32602), body
    assert "Mcp-Session-Id" not in headers


def test_a_ping_or_a_listing_is_no_call_on_the_session(client, deps, pool, org):
    """GIVEN an open MCP session
    WHEN the client pings and lists tools, then calls a tool
    THEN the ping and the listing leave the session's last call as it was (its implicit run
    closes after LOOM_MCP_SESSION_RUN_IDLE_SECONDS without a call), and the tool call notes
    one."""
    token = mint_token(deps, org=org, role="writer")
    s = Session(client, token, "?namespace=ns1")

    def last_seen():
        with pool.connection() as conn:
            return conn.execute(
                "SELECT last_seen_at FROM loom.mcp_sessions WHERE session_id = %s", (s.id,)
            ).fetchone()[0]

    before = last_seen()
    for method in ("ping", "tools/list"):
        status, body, _ = s.send(_rpc(method))
        assert status == 200 and "result" in body, body
    assert last_seen() == before
    s.tool("loom_system_whoami")
    assert last_seen() > before


# ---- what the listings carry ----------------------------------------------------------------


def _ops_listed(spec_mcp: str) -> set[str]:
    """The registered ops of one MCP listing: core, all, unlisted or hidden."""
    return {name for name, spec in registered().items() if spec.mcp == spec_mcp}


def _listing(session: Session) -> tuple[set[str], set[str]]:
    """The tool names a tools/list answers, and the ops loom_op's description names."""
    status, body, _ = session.send(_rpc("tools/list"))
    assert status == 200 and "result" in body, body
    tools = body["result"]["tools"]
    generic = next(t for t in tools if t["name"] == mcp.GENERIC_TOOL)
    named = generic["description"].split(": ", 1)[1].split(", ")
    return {t["name"] for t in tools}, set(named)


def _call(session: Session, name: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """(isError, the answer) of one tools/call."""
    status, body, _ = session.send(_rpc("tools/call", {"name": name, "arguments": arguments}))
    assert status == 200 and "result" in body, body
    result = body["result"]
    return result["isError"], json.loads(result["content"][0]["text"])


@pytest.mark.parametrize("query", ["?namespace=ns1", "?namespace=ns1&toolset=all"])
def test_a_hidden_op_is_not_listed_and_not_callable_over_mcp(client, deps, org, query):
    """GIVEN an MCP session on the core listing, and one on ?toolset=all
    WHEN it lists its tools, then calls each op hidden from MCP (conversation.search and
    memory.extraction_status among them) by its own tool name and through loom_op
    THEN no tool carries it and loom_op's description does not name it, and each call is a
    tool error answering forbidden (use HTTP)."""
    hidden = _ops_listed("hidden")
    assert {"conversation.search", "memory.extraction_status"} <= hidden
    s = Session(client, mint_token(deps, org=org, role="org_admin"), query)
    names, generic = _listing(s)
    for op in sorted(hidden):
        assert mcp.tool_name(op) not in names and op not in generic, op
        for tool, args in ((mcp.tool_name(op), {"query": "x"}),
                           (mcp.GENERIC_TOOL, {"op": op, "args": {"query": "x"}})):  # fmt: skip
            is_error, answer = _call(s, tool, **args)
            assert is_error and answer["error"]["code"] == "forbidden", (op, tool, answer)
            assert "HTTP" in answer["error"]["message"]


def test_an_unlisted_op_is_absent_from_every_listing_and_callable_through_loom_op(
    client, api, deps, org
):
    """GIVEN a thread recorded over HTTP, and MCP sessions on the core listing and on
    ?toolset=all
    WHEN each lists its tools, then calls conversation.get (unlisted) through loom_op
    THEN neither listing carries a tool of any unlisted op, loom_op's description names each
    one, and the call answers the thread's turns; an op of the all toolset
    (conversation.threads) is listed on ?toolset=all only."""
    unlisted = _ops_listed("unlisted")
    assert {"conversation.get", "conversation.list", "conversation.save_message"} <= unlisted
    token = mint_token(deps, org=org, role="org_admin")
    api.ok("conversation.set_logging", token=token, namespace="ns1", enabled=True)
    api.ok("conversation.append", token=token, namespace="ns1", agent="a1", thread_id="t1",
           role="user", content="the ferry leaves at nine", msg_id="m1")  # fmt: skip
    for toolset in ("", "&toolset=all"):
        s = Session(client, token, "?namespace=ns1" + toolset)
        names, generic = _listing(s)
        for op in sorted(unlisted):
            assert mcp.tool_name(op) not in names and op in generic, (toolset, op)
        assert ("loom_conversation_threads" in names) is bool(toolset)
        got = s.op("conversation.get", thread_id="t1", agent="", include_messages=True)
        assert [(m["msg_id"], m["content"]) for m in got["messages"]] == [
            ("m1", "the ferry leaves at nine")]  # fmt: skip
