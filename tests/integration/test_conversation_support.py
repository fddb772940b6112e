"""Shared helpers for the conversation-plane tests: a tenant with tokens, and row snapshots.

This module holds no tests; the test_conversation_*.py modules import from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from chalicelib.auth import mint_token
from tests.conftest import live_setting as live_settings

NS = "ns-main"
TABLES = (
    "loom.conversations",
    "loom.conversation_threads",
    "loom.conversation_embeddings",
    "loom.namespaces",
)


@dataclass
class Tenant:
    """One org seen over HTTP, with an org-wide token per role; logging is on in NS."""

    api: Any
    deps: Any
    org: str
    tokens: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, api: Any, deps: Any, org: str, *, logging_on: tuple[str, ...] = (NS,)):
        tenant = cls(api=api, deps=deps, org=org)
        for role in ("viewer", "writer", "admin", "org_admin"):
            tenant.tokens[role] = mint_token(deps, org=org, role=role)
        for ns in logging_on:
            tenant.set_logging(ns, True)
        return tenant

    def token(self, role: str = "org_admin", **kw: Any) -> str:
        """A fresh token of this org (namespace-bound or read-scoped when asked)."""
        return mint_token(self.deps, org=self.org, role=role, **kw)

    def post(self, op: str, *, as_: str = "org_admin", token: str | None = None, **body: Any):
        """(status, body) of POST /v1/<op>; namespace defaults to NS unless given (or None)."""
        if "namespace" not in body:
            body["namespace"] = NS
        elif body["namespace"] is None:
            del body["namespace"]
        return self.api.post(op, token=token or self.tokens[as_], **body)

    def ok(self, op: str, **kw: Any) -> dict[str, Any]:
        status, data = self.post(op, **kw)
        assert status == 200, (op, status, data)
        return data

    def set_logging(self, ns: str, enabled: bool) -> dict[str, Any]:
        return self.ok("conversation.set_logging", namespace=ns, enabled=enabled, as_="admin")

    def append(
        self, thread_id: str, content: str, *, role: str = "user", agent: str = "a1", **kw: Any
    ) -> dict[str, Any]:
        kw.setdefault("as_", "writer")
        return self.ok(
            "conversation.append",
            thread_id=thread_id,
            content=content,
            role=role,
            agent=agent,
            **kw,
        )

    def search(self, query: str, *, agent: str = "*", **kw: Any) -> dict[str, Any]:
        kw.setdefault("as_", "viewer")
        return self.ok("conversation.search", query=query, agent=agent, **kw)

    def hit_ids(self, query: str, **kw: Any) -> list[str]:
        return [h["msg_id"] for h in self.search(query, **kw)["hits"]]


def snapshot(pool: Any, org: str) -> dict[str, list[tuple]]:
    """Every row an org holds in the conversation plane, in a stable order."""
    out = {}
    with pool.connection() as conn:
        for table in TABLES:
            rows = conn.execute(f"SELECT * FROM {table} WHERE org = %s", (org,)).fetchall()
            out[table] = sorted(tuple(str(v) for v in r) for r in rows)
    return out


def turn_rows(pool: Any, org: str, thread_id: str | None = None) -> list[dict[str, Any]]:
    """The org's rows in loom.conversations (live and tombstoned), oldest first."""
    sql = (
        "SELECT namespace, thread_id, agent, msg_id, role, content, tombstoned_at"
        " FROM loom.conversations WHERE org = %s AND (%s::text IS NULL OR thread_id = %s)"
        " ORDER BY ts, msg_id"
    )
    with pool.connection() as conn:
        cur = conn.execute(sql, (org, thread_id, thread_id))
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def embedding_rows(pool: Any, org: str, thread_id: str | None = None) -> list[dict[str, Any]]:
    """The org's rows in loom.conversation_embeddings (live and tombstoned)."""
    sql = (
        "SELECT namespace, thread_id, msg_id, model, agent, role, text, dim,"
        " embedding IS NULL AS vector_missing, error, tombstoned_at"
        " FROM loom.conversation_embeddings"
        " WHERE org = %s AND (%s::text IS NULL OR thread_id = %s) ORDER BY ts, msg_id"
    )
    with pool.connection() as conn:
        cur = conn.execute(sql, (org, thread_id, thread_id))
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


@contextmanager
def live_setting(pool: Any, name: str, value: str) -> Iterator[None]:
    """Set one live setting for the block (see tests.conftest.live_setting)."""
    with live_settings(pool, **{name: value}):
        yield
