"""Memories: rows with versions, blacklist patterns, and the two search legs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

_ROW = (
    "user_id, key, kind, value, tags, version, pinned, locked, source, agent, session_id,"
    " content_hash, valid_at, observation_date, created_at, updated_at, confidence"
)


@dataclass
class MemoryWrite:
    key: str
    value: str
    content_hash: str
    kind: str = "fact"
    tags: list[str] = field(default_factory=list)
    source: str = "set"
    agent: str = "-"
    session_id: str = "-"
    valid_at: datetime | None = None
    observation_date: date | None = None
    pinned: bool | None = None
    locked: bool | None = None
    vector: np.ndarray | None = None
    embed_model: str | None = None
    # Text (or the part of it an embedder is sent) that reads as high: never embedded (dim -1,
    # not a backlog the embedding worker retries).
    withheld: bool = False


def lock_rows(
    conn: Connection, org: str, namespace: str, user_id: str, keys: list[str]
) -> dict[str, dict[str, Any]]:
    """The live and retired rows of these keys, locked for the write. Each key is locked
    first whether or not a row holds it (in key order, so two writers never wait on each
    other): two first writes of one key take turns, and the second gets its verdict from the
    row the first wrote."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s || k, 4))"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i",
            (f"{org}\x1f{namespace}\x1f{user_id}\x1f", sorted(set(keys))),
        )
        rows = cur.execute(
            f"SELECT {_ROW}, retired_at FROM loom.memories WHERE org = %s AND namespace = %s"
            " AND user_id = %s AND key = ANY(%s) FOR UPDATE",
            (org, namespace, user_id, keys),
        ).fetchall()
    return {r["key"]: r for r in rows}


def blacklist_patterns(conn: Connection, org: str, namespace: str) -> list[str]:
    rows = conn.execute(
        "SELECT pattern FROM loom.memory_blacklist WHERE org = %s AND namespace IN ('', %s)",
        (org, namespace),
    ).fetchall()
    return [r[0] for r in rows]


def add_blacklist(conn: Connection, org: str, namespace: str, pattern: str) -> None:
    conn.execute(
        "INSERT INTO loom.memory_blacklist (org, namespace, pattern) VALUES (%s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        (org, namespace, pattern),
    )


def remove_blacklist(conn: Connection, org: str, namespace: str, pattern: str) -> bool:
    return bool(
        conn.execute(
            "DELETE FROM loom.memory_blacklist WHERE org = %s AND namespace = %s AND pattern = %s",
            (org, namespace, pattern),
        ).rowcount
    )


def write_memory(
    conn: Connection, org: str, namespace: str, user_id: str, w: MemoryWrite, version: int,
    verdict: str,
) -> None:  # fmt: skip
    """Upsert the row at `version` and keep that version in the history."""
    conn.execute(
        "INSERT INTO loom.memories AS m (org, namespace, user_id, key, kind, value, tags, version,"
        " pinned, locked, source, agent, session_id, content_hash, valid_at, observation_date,"
        " embed_model, dim, embedding)"
        " VALUES (%(org)s, %(ns)s, %(user)s, %(key)s, %(kind)s, %(value)s, %(tags)s, %(version)s,"
        " coalesce(%(pinned)s, false), coalesce(%(locked)s, false), %(source)s, %(agent)s,"
        " %(session)s, %(hash)s, %(valid_at)s, %(obs)s, %(model)s, %(dim)s, %(vec)s)"
        " ON CONFLICT (org, namespace, user_id, key) DO UPDATE SET kind = EXCLUDED.kind,"
        " value = EXCLUDED.value, tags = EXCLUDED.tags, version = EXCLUDED.version,"
        # A row brought back after a delete starts unpinned and unlocked, as a new one does.
        " pinned = coalesce(%(pinned)s, CASE WHEN m.retired_at IS NULL THEN m.pinned END, false),"
        " locked = coalesce(%(locked)s, CASE WHEN m.retired_at IS NULL THEN m.locked END, false),"
        " source = EXCLUDED.source, agent = EXCLUDED.agent, session_id = EXCLUDED.session_id,"
        " content_hash = EXCLUDED.content_hash, valid_at = EXCLUDED.valid_at,"
        " observation_date = EXCLUDED.observation_date, embed_model = EXCLUDED.embed_model,"
        " dim = EXCLUDED.dim, embedding = EXCLUDED.embedding, updated_at = now(),"
        # A new version is judged afresh: a demotion was of the text it replaces.
        " confidence = 1.0, confidence_before = NULL,"
        # Names read from another value are read again from this one.
        " entities = CASE WHEN m.value IS DISTINCT FROM EXCLUDED.value THEN NULL"
        "  ELSE m.entities END,"
        " retired_at = NULL",
        {
            "org": org,
            "ns": namespace,
            "user": user_id,
            "key": w.key,
            "kind": w.kind,
            "value": w.value,
            "tags": w.tags,
            "version": version,
            "pinned": w.pinned,
            "locked": w.locked,
            "source": w.source,
            "agent": w.agent,
            "session": w.session_id,
            "hash": w.content_hash,
            "valid_at": w.valid_at,
            "obs": w.observation_date,
            "model": w.embed_model if w.vector is not None else None,
            "dim": len(w.vector) if w.vector is not None else (-1 if w.withheld else 0),
            "vec": w.vector,
        },
    )
    conn.execute(
        "INSERT INTO loom.memory_versions (org, namespace, user_id, key, version, value, tags,"
        " verdict, source) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        (org, namespace, user_id, w.key, version, w.value, w.tags, verdict, w.source),
    )


def set_flags(
    conn: Connection, org: str, namespace: str, user_id: str, key: str,
    pinned: bool | None, locked: bool | None,
) -> bool:  # fmt: skip
    return bool(
        conn.execute(
            "UPDATE loom.memories SET pinned = coalesce(%s, pinned), locked = coalesce(%s, locked)"
            " WHERE org = %s AND namespace = %s AND user_id = %s AND key = %s"
            " AND retired_at IS NULL",
            (pinned, locked, org, namespace, user_id, key),
        ).rowcount
    )


def get_memory(
    conn: Connection, org: str, namespace: str, user_id: str, key: str
) -> dict[str, Any] | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_ROW} FROM loom.memories WHERE org = %s AND namespace = %s"
            " AND user_id = %s AND key = %s AND retired_at IS NULL",
            (org, namespace, user_id, key),
        ).fetchone()


def retire(conn: Connection, org: str, namespace: str, user_id: str, keys: list[str]) -> list[str]:
    """Retire live rows (a delete, or a forget request); returns the keys retired."""
    rows = conn.execute(
        "UPDATE loom.memories SET retired_at = now() WHERE org = %s AND namespace = %s"
        " AND user_id = %s AND key = ANY(%s) AND retired_at IS NULL AND NOT locked RETURNING key",
        (org, namespace, user_id, keys),
    ).fetchall()
    return [r[0] for r in rows]


def stored_hashes(
    conn: Connection, org: str, namespace: str, user_id: str, hashes: list[str]
) -> set[str]:
    rows = conn.execute(
        "SELECT content_hash FROM loom.memories WHERE org = %s AND namespace = %s"
        " AND user_id IN (%s, '-') AND content_hash = ANY(%s) AND retired_at IS NULL",
        (org, namespace, user_id, hashes),
    ).fetchall()
    return {r[0] for r in rows}


def namespace_categories(conn: Connection, org: str, namespace: str, limit: int = 50) -> list[str]:
    """The namespace's taxonomy: its most used `category:` tags."""
    rows = conn.execute(
        "SELECT t, count(*) FROM loom.memories, unnest(tags) t WHERE org = %s AND namespace = %s"
        " AND retired_at IS NULL AND t LIKE 'category:%%' GROUP BY t ORDER BY 2 DESC, t LIMIT %s",
        (org, namespace, limit),
    ).fetchall()
    return [r[0] for r in rows]


def _scope(users: list[str] | None) -> sql.Composable:
    base = "m.org = %(org)s AND m.namespace = %(ns)s AND m.retired_at IS NULL"
    if users is None:
        return sql.SQL(base)
    return sql.SQL(base + " AND m.user_id = ANY(%(users)s)")


def vector_leg(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    users: list[str] | None,
    model: str,
    query_vec: np.ndarray,
    depth: int,
    kinds: list[str],
) -> list[dict[str, Any]]:
    """Memories by cosine similarity (an exact scan of the scope)."""
    dim = len(query_vec)
    query = sql.SQL(
        "SELECT {row}, 1 - (m.embedding::vector({dim}) <=> %(q)s::vector({dim})) AS score"
        " FROM loom.memories m WHERE {scope} AND m.embed_model = %(model)s AND m.dim = {dim}"
        " AND m.kind = ANY(%(kinds)s)"
        " ORDER BY (m.embedding::vector({dim}) <=> %(q)s::vector({dim})) + 0, m.key"
        " LIMIT %(depth)s"
    ).format(row=sql.SQL(_ROW), dim=sql.Literal(dim), scope=_scope(users))
    params: dict[str, Any] = {"org": org, "ns": namespace, "users": users, "model": model}
    params.update(q=query_vec, depth=depth, kinds=kinds)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


def lexical_leg(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    users: list[str] | None,
    query: str,
    depth: int,
    kinds: list[str],
) -> list[dict[str, Any]]:
    """Memories whose words match any of the query's, by ts_rank_cd."""
    q = sql.SQL(
        "WITH tq AS (SELECT to_tsquery('simple', string_agg(quote_literal(t), ' | ')) AS q"
        "  FROM unnest(tsvector_to_array(to_tsvector('simple', %(query)s))) t)"
        " SELECT {row}, ts_rank_cd(m.search_tsv, tq.q) AS score FROM loom.memories m, tq"
        " WHERE {scope} AND m.kind = ANY(%(kinds)s) AND m.search_tsv @@ tq.q"
        " ORDER BY score DESC, m.key LIMIT %(depth)s"
    ).format(row=sql.SQL(_ROW), scope=_scope(users))
    params: dict[str, Any] = {"org": org, "ns": namespace, "users": users, "query": query}
    params.update(depth=depth, kinds=kinds)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(q, params).fetchall()


def keys_by_subject(
    conn: Connection, org: str, namespace: str, user_id: str, prefixes: list[str]
) -> list[str]:
    """Live keys under any of these subject prefixes (what a forget request names)."""
    rows = conn.execute(
        "SELECT key FROM loom.memories WHERE org = %s AND namespace = %s AND user_id = %s"
        " AND retired_at IS NULL AND kind IN ('fact', 'record')"
        " AND EXISTS (SELECT 1 FROM unnest(%s::text[]) p WHERE starts_with(key, p))",
        (org, namespace, user_id, prefixes),
    ).fetchall()
    return [r[0] for r in rows]


def rows_without(conn: Connection, what: str, limit: int) -> list[dict[str, Any]]:
    """Live rows lacking entities (`what="entities"`) or a vector (`what="vector"`)."""
    cond = "entities IS NULL" if what == "entities" else "dim = 0"
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT org, namespace, user_id, key, value FROM loom.memories"
            f" WHERE {cond} AND retired_at IS NULL ORDER BY updated_at LIMIT %s",
            (limit,),
        ).fetchall()


def set_entities(conn: Connection, rows: list[tuple[str, str, str, str, list[str]]]) -> None:
    """(org, namespace, user_id, key, entities) rows."""
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE loom.memories SET entities = %s WHERE org = %s AND namespace = %s"
            " AND user_id = %s AND key = %s",
            [(e, o, n, u, k) for o, n, u, k, e in rows],
        )


def set_vectors(
    conn: Connection, model: str, rows: list[tuple[str, str, str, str, np.ndarray]]
) -> None:
    """(org, namespace, user_id, key, vector) rows."""
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE loom.memories SET embedding = %s, dim = %s, embed_model = %s"
            " WHERE org = %s AND namespace = %s AND user_id = %s AND key = %s AND dim = 0",
            [(v, len(v), model, o, n, u, k) for o, n, u, k, v in rows],
        )


# The stack's order: pinned first, then by confidence, then the newest; ties by user and key.
# As one ascending tuple, so a page starts after the last row of the one before it.
# Microseconds as a whole number: a cursor carries them exactly.
_STACK_ORDER = (
    "(NOT m.pinned, -m.confidence::float8,"
    " -(extract(epoch FROM m.updated_at) * 1000000)::bigint, m.user_id, m.key)"
)


def stack_page(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    users: list[str] | None,
    kinds: list[str],
    after: list[Any] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Live memories in the stack's order, after the sort key `after` (a row's `stack_key`)."""
    query = sql.SQL(
        "SELECT {row}, json_build_array" + _STACK_ORDER + " AS stack_key"
        " FROM loom.memories m WHERE {scope} AND m.kind = ANY(%(kinds)s)"
        + (" AND " + _STACK_ORDER + " > (%(a0)s, %(a1)s, %(a2)s, %(a3)s, %(a4)s)" if after else "")
        + " ORDER BY "
        + _STACK_ORDER.strip("()")
        + " LIMIT %(limit)s"
    ).format(row=sql.SQL(_ROW), scope=_scope(users))
    params: dict[str, Any] = {"org": org, "ns": namespace, "users": users, "kinds": kinds}
    params["limit"] = limit
    if after:
        params.update({f"a{i}": v for i, v in enumerate(after)})
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
