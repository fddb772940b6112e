"""MCP sessions as the /mcp endpoint keeps them: opened by `initialize`, found again by the
Mcp-Session-Id header (only by the org and principal that opened them), each in a transaction
of its own."""

from __future__ import annotations

from typing import Any

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.store import mcp_sessions


def open_session(
    deps: Deps, caller: Caller, *, client_name: str, namespace: str, agent: str
) -> str:
    """A new session's id."""
    with deps.pool.connection() as conn:
        return mcp_sessions.open_session(
            conn,
            org=caller.org,
            principal=caller.principal,
            client_name=client_name,
            namespace=namespace,
            agent=agent,
        )


def find_session(
    deps: Deps, caller: Caller, session_id: str, *, call: bool
) -> dict[str, Any] | None:
    """The caller's open session of this id, or None. A tool call is noted on it (its implicit
    run goes on, or a new one starts after the idle time); anything else only checks that it
    exists (answered as an empty session)."""
    with deps.pool.connection() as conn:
        if not call:
            found = mcp_sessions.session_open(conn, session_id, caller.org, caller.principal)
            return {} if found else None
        idle = deps.live().mcp_session_run_idle_seconds
        return mcp_sessions.touch_session(conn, session_id, caller.org, caller.principal, idle)
