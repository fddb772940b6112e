"""Hashed API tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row

# What `loom token list` shows of a token: never the token, never its hash.
_SHOWN = (
    "id, org, role, namespace, read_scope, read_user_id, agent, subject, created_at,"
    " expires_at, revoked_at"
)


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
    expires_at: datetime | None = None,
    agent: str | None = None,
) -> int:
    """Store a token's hash and grants; returns the id it is listed and revoked by."""
    row = conn.execute(
        "INSERT INTO loom.tokens (token_hash, org, role, namespace, read_scope, read_user_id,"
        " agent, subject, expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (token_hash, org, role, namespace, read_scope, read_user_id, agent, subject, expires_at),
    ).fetchone()
    assert row is not None
    return int(row[0])


def find_token(conn: Connection, token_hash: str) -> dict[str, Any] | None:
    """A token's grants with its revocation and expiry, read on every request: a revoke
    reaches every server at once."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT org, role, namespace, read_scope, read_user_id, agent, subject, expires_at,"
            " revoked_at FROM loom.tokens WHERE token_hash = %s",
            (token_hash,),
        ).fetchone()


def list_tokens(conn: Connection, org: str | None) -> list[dict[str, Any]]:
    """Every token (of one org when named), oldest first."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_SHOWN} FROM loom.tokens"
            " WHERE %(org)s::text IS NULL OR org = %(org)s ORDER BY id",
            {"org": org},
        ).fetchall()


def revoke_token(
    conn: Connection, *, token_id: int | None = None, token_hash: str | None = None
) -> dict[str, Any] | None:
    """Revoke the token with this id or hash; None when there is no such token. One revoked
    before keeps its first revocation time, and `revoked_now` says which it was."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "UPDATE loom.tokens SET revoked_at = coalesce(revoked_at, now())"
            " WHERE id = %(id)s OR token_hash = %(hash)s"
            f" RETURNING {_SHOWN}, revoked_at = now() AS revoked_now",
            {"id": token_id, "hash": token_hash},
        ).fetchone()
