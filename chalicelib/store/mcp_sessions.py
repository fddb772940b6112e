"""MCP sessions and their implicit runs."""

from __future__ import annotations

import uuid
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row


def open_session(
    conn: Connection, *, org: str, principal: str | None, client_name: str, namespace: str,
    agent: str,
) -> str:  # fmt: skip
    session_id = uuid.uuid4().hex
    conn.execute(
        "INSERT INTO loom.mcp_sessions (session_id, org, principal, client_name, namespace,"
        " agent, run_id) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (session_id, org, principal, client_name, namespace, agent, f"mcp-{session_id[:12]}-1"),
    )
    return session_id


def session_open(conn: Connection, session_id: str, org: str, principal: str | None) -> bool:
    """Whether this org and principal opened the session (a read: no call is noted)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM loom.mcp_sessions WHERE session_id = %s AND org = %s"
        " AND principal IS NOT DISTINCT FROM %s)",
        (session_id, org, principal),
    ).fetchone()
    return bool(row and row[0])


def touch_session(
    conn: Connection, session_id: str, org: str, principal: str | None, idle_seconds: int
) -> dict[str, Any] | None:
    """The session (only for the org and principal that opened it), with a new implicit run
    when the last call was longer ago than `idle_seconds`."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "UPDATE loom.mcp_sessions SET"
            " run_id = CASE WHEN last_seen_at < now() - make_interval(secs => %(idle)s)"
            "  THEN 'mcp-' || left(session_id, 12) || '-' || (split_part(run_id, '-', 3)::int + 1)"
            "  ELSE run_id END,"
            " run_started_at = CASE WHEN last_seen_at < now() - make_interval(secs => %(idle)s)"
            "  THEN now() ELSE run_started_at END,"
            " last_seen_at = now()"
            " WHERE session_id = %(id)s AND org = %(org)s"
            " AND principal IS NOT DISTINCT FROM %(principal)s"
            " RETURNING org, namespace, agent, run_id, client_name",
            {"idle": idle_seconds, "id": session_id, "org": org, "principal": principal},
        ).fetchone()
