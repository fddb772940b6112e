"""Tokens as an earlier build minted them, grants that are no longer minted included: a read
scope of own_session, or own_user with no pinned user. Stored as mint stored them."""

from __future__ import annotations

import secrets
from typing import Any

from chalicelib.auth import TOKEN_PREFIX, hash_token
from chalicelib.store.tokens import insert_token


def legacy_token(
    pool: Any,
    *,
    org: str,
    role: str = "writer",
    read_scope: str,
    read_user_id: str | None = None,
    namespace: str | None = None,
) -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with pool.connection() as conn:
        insert_token(
            conn,
            token_hash=hash_token(token),
            org=org,
            role=role,
            namespace=namespace,
            read_scope=read_scope,
            read_user_id=read_user_id,
            subject=f"legacy-{secrets.token_hex(4)}",
        )
    return token
