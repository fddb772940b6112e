"""Hashed API tokens."""

from __future__ import annotations

from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row


def insert_token(
    conn: Connection,
    *,
    token_hash: str,
    org: str,
    role: str,
    namespace: str | None,
    read_scope: str,
    read_user_id: str | None,
    subject: str,
) -> None:
    conn.execute(
        "INSERT INTO loom.tokens"
        " (token_hash, org, role, namespace, read_scope, read_user_id, subject)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (token_hash, org, role, namespace, read_scope, read_user_id, subject),
    )


def find_live_token(conn: Connection, token_hash: str) -> dict[str, Any] | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT org, role, namespace, read_scope, read_user_id, subject FROM loom.tokens"
            " WHERE token_hash = %s AND revoked_at IS NULL",
            (token_hash,),
        ).fetchone()
