"""MCP sessions: one opened at initialize, then found (a ping, a listing) or touched (a call)."""

from __future__ import annotations

from typing import Any

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.store import mcp_sessions as store


def open_session(
    deps: Deps, caller: Caller, *, client_name: str, namespace: str, agent: str
) -> str:
    """A new session of this caller's, with its first implicit run; its id."""
    with deps.pool.connection() as conn:
        return store.open_session(
            conn,
            org=caller.org,
            principal=caller.principal,
            client_name=client_name,
            namespace=namespace,
            agent=agent,
        )


def session_exists(deps: Deps, caller: Caller, session_id: str) -> bool:
    """Whether this caller opened the session (no call is noted)."""
    with deps.pool.connection() as conn:
        return store.session_open(conn, session_id, caller.org, caller.principal)


def touch_session(deps: Deps, caller: Caller, session_id: str) -> dict[str, Any] | None:
    """The caller's session, a call noted on it: its implicit run goes on, or a new one starts
    after the idle time; None when this caller opened no such session."""
    with deps.pool.connection() as conn:
        idle = deps.live().mcp_session_run_idle_seconds
        return store.touch_session(conn, session_id, caller.org, caller.principal, idle)
