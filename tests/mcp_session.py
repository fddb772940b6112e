"""An MCP client session with the official `mcp` package: `python tests/mcp_session.py URL`.
Prints one JSON line: the tools listed, the append's result, the turn read back."""

from __future__ import annotations

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        tools = [t.name for t in (await s.list_tools()).tools]
        appended = await s.call_tool(
            "loom_conversation_append",
            {"thread_id": "mcp-thread", "role": "user", "content": "Hello from an MCP client."},
        )
        got = await s.call_tool(
            "loom_op",
            {"op": "conversation.get", "args": {"thread_id": "mcp-thread", "agent": "-",
                                                 "include_messages": True}},
        )  # fmt: skip
        hidden = await s.call_tool("loom_op", {"op": "conversation.search", "args": {"query": "x"}})
        searched = await s.call_tool(
            "loom_search", {"query": "Hello from an MCP client", "sections": ["conversation"]}
        )
    report = {
        "tools_all": tools,
        "append": appended.structured_content,
        "read_back": [m["content"] for m in got.structured_content["messages"]],
        "hidden_is_error": hidden.is_error,
        "searched": [h["thread_id"] for h in searched.structured_content["conversation"]],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
