"""Namespaces and their conversation-logging switch (off unless a row says on)."""

from __future__ import annotations

from psycopg import Connection


def ensure_namespace(conn: Connection, org: str, namespace: str) -> None:
    conn.execute(
        "INSERT INTO loom.namespaces (org, namespace) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (org, namespace),
    )


def set_conversation_logging(conn: Connection, org: str, namespace: str, enabled: bool) -> bool:
    row = conn.execute(
        "INSERT INTO loom.namespaces (org, namespace, conversation_logging_enabled)"
        " VALUES (%s, %s, %s) ON CONFLICT (org, namespace) DO UPDATE"
        " SET conversation_logging_enabled = EXCLUDED.conversation_logging_enabled,"
        " updated_at = now() RETURNING conversation_logging_enabled",
        (org, namespace, enabled),
    ).fetchone()
    return bool(row and row[0])


def conversation_logging_enabled(conn: Connection, org: str, namespace: str) -> bool:
    """Fails closed: a namespace with no row does not record."""
    row = conn.execute(
        "SELECT conversation_logging_enabled FROM loom.namespaces"
        " WHERE org = %s AND namespace = %s",
        (org, namespace),
    ).fetchone()
    return bool(row and row[0])


def org_namespaces(conn: Connection, org: str, limit: int | None = None) -> list[str]:
    """An org's namespaces, most recently changed first (all of them when `limit` is None)."""
    rows = conn.execute(
        "SELECT namespace FROM loom.namespaces WHERE org = %s"
        " ORDER BY updated_at DESC, namespace LIMIT %s",
        (org, limit),
    ).fetchall()
    return [r[0] for r in rows]
