"""The vector leg's SQL: a scope's filter, vector ranking (exact for small scopes), the HNSW
index a dimension, and the substring fallback."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

_DEFAULT_EF_SEARCH = 100  # set on every pooled connection; raised for a larger top_k
_ensured_indexes: set[int] = set()  # the database's state, not a tuning: one per process


@dataclass(frozen=True)
class TurnFilter:
    org: str
    namespaces: tuple[str, ...]
    agent: str | None = None
    thread_id: str | None = None
    run_id: str | None = None
    role: str | None = None
    user_id: str | None = None


def ensure_vector_index(conn: Connection, dim: int, known: set[int] | None = None) -> None:
    """The HNSW index for a dimension, noted in `known` (None: the process's). Run in a transaction
    of its own before any thread lease: the build locks the table, and a lease holder deadlocks."""
    known = _ensured_indexes if known is None else known
    if dim in known:
        return
    # Serialises two first embeds of a dimension: IF NOT EXISTS alone races on the catalogue.
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('loom.vector_index'), %s)", (dim,))
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON loom.conversation_embeddings"
            " USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
            " WHERE dim = {dim} AND tombstoned_at IS NULL AND embedding IS NOT NULL"
        ).format(name=sql.Identifier(vector_index_name(dim)), dim=sql.Literal(dim))
    )
    known.add(dim)


def vector_index_ready(dim: int, known: set[int] | None = None) -> bool:
    """True once this process (`known`, when given) has made sure of the dimension's index."""
    return dim in (_ensured_indexes if known is None else known)


def vector_index_name(dim: int) -> str:
    return f"conversation_embeddings_hnsw_{dim}"


_FILTER_FIELDS = ("agent", "thread_id", "run_id", "role", "user_id")
_SHOWN = ("msg_id", "thread_id", "namespace", "agent", "role", "user_id", "run_id", "ts")


def filter_params(f: TurnFilter, alias: str) -> tuple[sql.Composable, dict[str, Any]]:
    """The WHERE clause for a filter's shape (cached) and its parameters."""
    present = filter_shape(f)
    params: dict[str, Any] = {"org": f.org, "namespaces": list(f.namespaces)}
    params.update({name: getattr(f, name) for name in present})
    return scope_where(alias, present), params


def filter_shape(f: TurnFilter) -> tuple[str, ...]:
    return tuple(name for name in _FILTER_FIELDS if getattr(f, name) is not None)


@functools.cache
def scope_where(alias: str, present: tuple[str, ...]) -> sql.Composable:
    a = sql.Identifier(alias)
    conds = [sql.SQL("{a}.org = %(org)s AND {a}.namespace = ANY(%(namespaces)s)").format(a=a)]
    conds += [sql.SQL("{}.{} = %({})s").format(a, sql.Identifier(n), sql.SQL(n)) for n in present]
    return sql.SQL(" AND ").join(conds)


def returned(alias: str, text: str = "text") -> sql.Composable:
    """What a hit shows, and the text (its embedded prefix, or the turn) the caller's guard
    checks and cuts to an excerpt."""
    return sql.SQL(", ").join(sql.Identifier(alias, c) for c in (*_SHOWN, text))


def similarities(alias: str, dim: int, in_context: bool) -> sql.Composable:
    """A row's similarity to %(q)s by its own vector (and with `in_context`, by its context
    vector); NULL for a row of another dimension."""
    names = {"similarity": "embedding"}
    if in_context:
        names["in_context"] = "context_embedding"
    return sql.SQL(", ").join(
        sql.SQL(
            "CASE WHEN {a}.dim = {dim} THEN"
            " 1 - ({a}.{column}::vector({dim}) <=> %(q)s::vector({dim})) END AS {name}"
        ).format(
            a=sql.Identifier(alias),
            dim=sql.Literal(dim),
            column=sql.Identifier(column),
            name=sql.Identifier(name),
        )
        for name, column in names.items()
    )


# The scope carries row ids and distances, measured as it is read: the rest is read for the top k.
_BOUNDED = (
    "WITH scope AS MATERIALIZED (SELECT e.ctid AS rid, e.msg_id, {distance} AS distance"
    " FROM loom.conversation_embeddings e WHERE {where} AND {embedded} LIMIT %(cap)s),"
    " top AS (SELECT s.rid, s.distance FROM scope s"
    "  ORDER BY s.distance, s.msg_id LIMIT %(k)s)"
    " SELECT {returned}, {similarities}, (SELECT count(*) FROM scope) AS scope_rows"
    " FROM top JOIN loom.conversation_embeddings e2 ON e2.ctid = top.rid"
    " ORDER BY top.distance, e2.msg_id"
)
# The embedding row carries what a hit shows, so ranking reads one table, as pgvector's does.
_RANKING = (
    "SELECT {returned}, {similarities} FROM loom.conversation_embeddings e"
    " WHERE {where} AND {embedded} ORDER BY {distance} LIMIT %(k)s"
)


@functools.cache
def _vector_query(
    template: str, alias: str, shape: tuple[str, ...], dim: int, in_context: bool
) -> str:
    # The embedded predicate is the index's, so the planner can use it. A row of a turn the
    # transcript never recorded (a save's alone: recorded.py) is no transcript hit.
    embedded = sql.SQL(
        "e.model = %(model)s AND e.dim = {dim} AND e.tombstoned_at IS NULL"
        " AND e.embedding IS NOT NULL AND NOT e.saved_only"
    )
    # Its own vector's cosine distance: the index's order.
    distance = sql.SQL("(e.embedding::vector({dim}) <=> %(q)s::vector({dim}))")
    return (
        sql.SQL(template)
        .format(
            where=scope_where("e", shape),
            embedded=embedded.format(dim=sql.Literal(dim)),
            distance=distance.format(dim=sql.Literal(dim)),
            returned=returned(alias),
            similarities=similarities(alias, dim, in_context),
        )
        .as_string()
    )


def table_rows(conn: Connection) -> float:
    """The embedding table's rows as the planner last estimated them (0 before any ANALYZE)."""
    row = conn.execute(
        "SELECT greatest(reltuples, 0) FROM pg_class"
        " WHERE oid = 'loom.conversation_embeddings'::regclass"
    ).fetchone()
    return float(row[0]) if row else 0.0


def bounded_exact_search(
    conn: Connection,
    f: TurnFilter,
    *,
    model: str,
    dim: int,
    query_vec: np.ndarray,
    k: int,
    max_rows: int,
    in_context: bool = False,
) -> list[dict[str, Any]] | None:
    """Rank the scope exactly in one query if it holds at most `max_rows` embedded turns; None
    when it holds more."""
    params = {**filter_params(f, "e")[1], "model": model, "q": query_vec, "k": k}
    query = _vector_query(_BOUNDED, "e2", filter_shape(f), dim, in_context)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query, {**params, "cap": max_rows + 1}).fetchall()
    if rows and rows[0]["scope_rows"] > max_rows:
        return None
    for r in rows:
        del r["scope_rows"]
    return rows


def vector_search(
    conn: Connection,
    f: TurnFilter,
    *,
    model: str,
    dim: int,
    query_vec: np.ndarray,
    k: int,
    in_context: bool = False,
) -> list[dict[str, Any]]:
    """Top-k embedded turns by cosine similarity in the HNSW index's order, most similar first."""
    _, params = filter_params(f, "e")
    query = _vector_query(_RANKING, "e", filter_shape(f), dim, in_context)
    params.update(model=model, q=query_vec, k=k)
    wide = k > _DEFAULT_EF_SEARCH
    with conn.cursor(row_factory=dict_row) as cur:
        if wide:
            cur.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(k)))
        try:
            rows = cur.execute(query, params).fetchall()
        finally:
            if wide:
                cur.execute("RESET hnsw.ef_search")
    rows.sort(key=lambda r: r["similarity"], reverse=True)  # relaxed order may be off slightly
    return rows


def substring_search(
    conn: Connection, f: TurnFilter, *, needle: str, limit: int, offset: int
) -> list[dict[str, Any]]:
    """Live recorded turns whose text contains `needle` (case-blind), newest first."""
    where, params = filter_params(f, "c")
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = sql.SQL(
        "SELECT {returned} FROM loom.conversations c WHERE {where} AND c.tombstoned_at IS NULL"
        " AND NOT c.saved_only AND c.content ILIKE %(pattern)s ESCAPE '\\'"
        " ORDER BY c.ts DESC, c.msg_id LIMIT %(limit)s OFFSET %(offset)s"
    ).format(returned=returned("c", "content"), where=where)
    params.update(pattern=f"%{escaped}%", limit=limit, offset=offset)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
