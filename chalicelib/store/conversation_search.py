"""conversation.search reads: vector ranking (exact for small scopes) and the substring fallback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

# A scope up to this many embedded turns is ranked exactly: cheap, and never comes back short.
EXACT_SCAN_MAX_ROWS = 5000
_ensured_indexes: set[int] = set()


@dataclass(frozen=True)
class TurnFilter:
    org: str
    namespaces: list[str]
    agent: str | None = None
    thread_id: str | None = None
    run_id: str | None = None
    role: str | None = None
    user_id: str | None = None


def ensure_vector_index(conn: Connection, dim: int) -> None:
    """The HNSW index for one dimension (vectors of several models share the column)."""
    if dim in _ensured_indexes:
        return
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON loom.conversation_embeddings"
            " USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
            " WHERE dim = {dim} AND tombstoned_at IS NULL AND embedding IS NOT NULL"
        ).format(name=sql.Identifier(f"conversation_embeddings_hnsw_{dim}"), dim=sql.Literal(dim))
    )
    _ensured_indexes.add(dim)


def _filters(f: TurnFilter, alias: str) -> tuple[sql.Composable, dict[str, Any]]:
    col = sql.Identifier
    conds: list[sql.Composable] = [
        sql.SQL("{}.org = %(org)s AND {}.namespace = ANY(%(namespaces)s)").format(
            col(alias), col(alias)
        )
    ]
    params: dict[str, Any] = {"org": f.org, "namespaces": f.namespaces}
    for name in ("agent", "thread_id", "run_id", "role", "user_id"):
        value = getattr(f, name)
        if value is not None:
            conds.append(sql.SQL("{}.{} = %({})s").format(col(alias), col(name), sql.SQL(name)))
            params[name] = value
    return sql.SQL(" AND ").join(conds), params


def _embedded(dim: int) -> sql.Composable:
    return sql.SQL(
        "e.model = %(model)s AND e.dim = {dim} AND e.tombstoned_at IS NULL"
        " AND e.embedding IS NOT NULL"
    ).format(dim=sql.Literal(dim))


def scope_size(conn: Connection, f: TurnFilter, *, model: str, dim: int, cap: int) -> int:
    """Embedded turns in scope, counted up to `cap`."""
    where, params = _filters(f, "e")
    query = sql.SQL(
        "SELECT count(*) FROM (SELECT 1 FROM loom.conversation_embeddings e"
        " WHERE {where} AND {embedded} LIMIT %(cap)s) s"
    ).format(where=where, embedded=_embedded(dim))
    row = conn.execute(query, {**params, "model": model, "cap": cap}).fetchone()
    return int(row[0]) if row else 0


def vector_search(
    conn: Connection,
    f: TurnFilter,
    *,
    model: str,
    dim: int,
    query_vec: np.ndarray,
    k: int,
    excerpt_chars: int,
    exact: bool,
) -> list[dict[str, Any]]:
    """Top-k live turns by cosine similarity, most similar first."""
    where, params = _filters(f, "e")
    distance = sql.SQL("(e.embedding::vector({dim}) <=> %(q)s::vector({dim}))").format(
        dim=sql.Literal(dim)
    )
    # `+ 0` keeps the planner off the HNSW index: an exact scan of a small scope.
    order = sql.SQL("{} + 0").format(distance) if exact else distance
    query = sql.SQL(
        "SELECT e.msg_id, e.thread_id, e.namespace, e.agent, e.role, e.user_id, e.run_id, c.ts,"
        " left(c.content, %(excerpt)s) AS excerpt, 1 - {distance} AS similarity"
        " FROM loom.conversation_embeddings e JOIN loom.conversations c"
        " ON c.org = e.org AND c.namespace = e.namespace AND c.thread_id = e.thread_id"
        " AND c.agent = e.agent AND c.msg_id = e.msg_id AND c.tombstoned_at IS NULL"
        " WHERE {where} AND {embedded} ORDER BY {order} LIMIT %(k)s"
    ).format(distance=distance, where=where, embedded=_embedded(dim), order=order)
    params.update(model=model, q=query_vec, k=k, excerpt=excerpt_chars)
    with conn.transaction():
        if not exact:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(40, k))))
        with conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(query, params).fetchall()
    rows.sort(key=lambda r: r["similarity"], reverse=True)  # relaxed order may be off slightly
    return rows


def substring_search(
    conn: Connection, f: TurnFilter, *, needle: str, limit: int, offset: int
) -> list[dict[str, Any]]:
    """Live turns whose text contains `needle` (case-blind), newest first."""
    where, params = _filters(f, "c")
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = sql.SQL(
        "SELECT c.msg_id, c.thread_id, c.namespace, c.agent, c.role, c.user_id, c.run_id, c.ts,"
        " c.content FROM loom.conversations c WHERE {where} AND c.tombstoned_at IS NULL"
        " AND c.content ILIKE %(pattern)s ESCAPE '\\'"
        " ORDER BY c.ts DESC, c.msg_id LIMIT %(limit)s OFFSET %(offset)s"
    ).format(where=where)
    params.update(pattern=f"%{escaped}%", limit=limit, offset=offset)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
