"""Shared helpers for the saved-message, compaction and titler tests.

This module holds no tests; the test_saved_*.py, test_compact*.py and test_titler*.py modules
import from it.
"""

from __future__ import annotations

from typing import Any

from tests.integration.test_conversation_support import NS, Tenant

OFF_NS = "ns-off"  # a namespace whose recording switch is explicitly off
MODEL = "fake-bow"  # FakeEmbedder's name, stored beside every vector


# Compaction's turns: a distinct topic word each (twice), and the summary its model writes.
_TOPIC_WORDS = (
    "orchard kiln barge quarry lantern meadow foundry glacier vineyard harbour chapel granary"
    " aqueduct bazaar citadel dockyard estuary fjord grotto hamlet isthmus jetty keep lagoon"
    " marsh"
)
TOPICS = _TOPIC_WORDS.split()
SUMMARY = "Summary: the crew agreed to relocate the orchard and fire the kiln on tuesday."


def content(i: int) -> str:
    return f"the {TOPICS[i]} {TOPICS[i]} is item {i} of the plan"


def open_tenant(api: Any, deps: Any, org: str) -> Tenant:
    """An org with recording on in NS and explicitly off in OFF_NS."""
    t = Tenant.open(api, deps, org)
    t.set_logging(OFF_NS, False)
    return t


def save(
    t: Tenant,
    conv: str,
    msg: str,
    content: str = "a message worth keeping",
    *,
    user: str = "u1",
    role: str = "user",
    agent: str = "a1",
    **kw: Any,
) -> dict[str, Any]:
    kw.setdefault("as_", "writer")
    return t.ok(
        "conversation.save_message",
        agent=agent,
        conversation_id=conv,
        message_id=msg,
        role=role,
        content=content,
        user_id=user,
        **kw,
    )


def unsave(t: Tenant, conv: str, msg: str, *, user: str = "u1", **kw: Any) -> dict[str, Any]:
    kw.setdefault("as_", "writer")
    return t.ok(
        "conversation.unsave_message",
        agent="a1",
        conversation_id=conv,
        message_id=msg,
        user_id=user,
        **kw,
    )


def search_saved(t: Tenant, query: str, *, user: str = "u1", **kw: Any) -> list[dict[str, Any]]:
    kw.setdefault("as_", "viewer")
    kw.setdefault("top_k", 200)
    body = t.ok("conversation.search_saved_messages", agent="*", query=query, user_id=user, **kw)
    return body["hits"]


def hit_ids(hits: list[dict[str, Any]]) -> list[str]:
    return [h["message_id"] for h in hits]


def list_saved(t: Tenant, *, user: str = "u1", **kw: Any) -> dict[str, Any]:
    kw.setdefault("as_", "viewer")
    return t.ok("conversation.list_saved_messages", agent="*", user_id=user, **kw)


def saved_status(
    t: Tenant, conv: str, msg_ids: list[str], *, user: str = "u1", **kw: Any
) -> list[str]:
    """Which of these messages the user has saved (conversation.saved_status, as a viewer)."""
    kw.setdefault("as_", "viewer")
    out = t.ok(
        "conversation.saved_status",
        agent="*",
        user_id=user,
        conversation_id=conv,
        message_ids=msg_ids,
        **kw,
    )
    return out["saved"]


def _dicts(pool: Any, sql: str, params: tuple) -> list[dict[str, Any]]:
    with pool.connection() as conn:
        cur = conn.execute(sql, params)
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def transcript(pool: Any, org: str, msg_id: str | None = None) -> list[dict[str, Any]]:
    """The org's transcript rows (live and tombstoned), with the saved flags."""
    return _dicts(
        pool,
        "SELECT namespace, thread_id, agent, msg_id, role, content, user_id, run_id, ts,"
        " is_saved, saved_at, tombstoned_at FROM loom.conversations"
        " WHERE org = %s AND (%s::text IS NULL OR msg_id = %s) ORDER BY ts, msg_id, agent",
        (org, msg_id, msg_id),
    )


def vectors(pool: Any, org: str, msg_id: str | None = None) -> list[dict[str, Any]]:
    """The org's embedding rows (live and tombstoned), with the saved flags."""
    return _dicts(
        pool,
        "SELECT namespace, thread_id, msg_id, model, agent, role, user_id, run_id, text,"
        " embedding IS NOT NULL AS has_vector, error, ts, is_saved, saved_at, tombstoned_at"
        " FROM loom.conversation_embeddings"
        " WHERE org = %s AND (%s::text IS NULL OR msg_id = %s) ORDER BY ts, msg_id",
        (org, msg_id, msg_id),
    )


def namespaces(pool: Any, org: str) -> list[tuple]:
    with pool.connection() as conn:
        return conn.execute(
            "SELECT * FROM loom.namespaces WHERE org = %s ORDER BY namespace", (org,)
        ).fetchall()


def execute(pool: Any, sql: str, params: tuple = ()) -> None:
    with pool.connection() as conn:
        conn.execute(sql, params)


def insert_saved_row(
    pool: Any,
    org: str,
    conv: str,
    msg: str,
    content: str,
    *,
    namespace: str = NS,
    user: str = "u1",
    role: str = "user",
    agent: str = "a1",
    saved_at: str | None = "now",
) -> None:
    """A saved transcript row as an earlier build wrote it, with its lexical index."""
    execute(
        pool,
        "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role, content,"
        " user_id, ts, is_saved, saved_at, saved_tsv, saved_len)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp(), true,"
        " CASE WHEN %s::text IS NULL THEN NULL ELSE clock_timestamp() END,"
        " to_tsvector('simple', %s), (SELECT coalesce(sum(array_length(u.positions, 1)), 0)"
        "   FROM unnest(to_tsvector('simple', %s)) u))",
        (org, namespace, conv, agent, msg, role, content, user, saved_at, content, content),
    )


__all__ = ["NS", "Tenant"]
