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
    """The HNSW index for one dimension (vectors of several models share a column), noted in
    `known` (None: the process's own record) once made sure of.

    Run it in a transaction of its own, before any thread lease: building the index locks
    the table until commit, and a writer holding a lease would wait on it (a deadlock)."""
    known = _ensured_indexes if known is None else known
    if dim in known:
        return
    # Two first embeds of a dimension at once: the second waits for the first's index (IF NOT
    # EXISTS alone races on the catalogue and fails one of them).
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
    """True once this process (`known`, when given) has made sure of the HNSW indexes for this
    dimension."""
    return dim in (_ensured_indexes if known is None else known)


def vector_index_name(dim: int) -> str:
    return f"conversation_embeddings_hnsw_{dim}"


_FILTER_FIELDS = ("agent", "thread_id", "run_id", "role", "user_id")


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
    col = sql.Identifier
    conds: list[sql.Composable] = [
        sql.SQL("{}.org = %(org)s AND {}.namespace = ANY(%(namespaces)s)").format(
            col(alias), col(alias)
        )
    ]
    for name in present:
        conds.append(sql.SQL("{}.{} = %({})s").format(col(alias), col(name), sql.SQL(name)))
    return sql.SQL(" AND ").join(conds)


def _embedded(dim: int) -> sql.Composable:
    # The predicate is the index's, so the planner can use it. A row of a turn the transcript
    # never recorded (a save's alone: recorded.py) is no transcript hit.
    return sql.SQL(
        "e.model = %(model)s AND e.dim = {dim} AND e.tombstoned_at IS NULL"
        " AND e.embedding IS NOT NULL AND NOT e.saved_only"
    ).format(dim=sql.Literal(dim))


def returned(alias: str) -> sql.Composable:
    """What a hit shows: its row, and the text it was embedded from (the turn's first 2,048
    characters), which the caller checks with today's guard and cuts to an excerpt."""
    columns = ("msg_id", "thread_id", "namespace", "agent", "role", "user_id", "run_id", "ts")
    return sql.SQL(", ").join(sql.Identifier(alias, c) for c in (*columns, "text"))


def similarities(alias: str, dim: int, in_context: bool) -> sql.Composable:
    """A row's similarity to the query vector %(q)s (its own vector), and with `in_context` its
    context vector's (`in_context`). NULL for a row without vectors of the query's dimension."""
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
    with conn.cursor(row_factory=dict_row) as cur:
        query = _bounded_query(filter_shape(f), dim, in_context)
        rows = cur.execute(query, {**params, "cap": max_rows + 1}).fetchall()
    if rows and rows[0]["scope_rows"] > max_rows:
        return None
    for r in rows:
        del r["scope_rows"]
    return rows


def _distance(dim: int) -> sql.Composable:
    """A row's cosine distance to the query vector (its own vector's: the index's order)."""
    return sql.SQL("(e.embedding::vector({dim}) <=> %(q)s::vector({dim}))").format(
        dim=sql.Literal(dim)
    )


@functools.cache
def _bounded_query(shape: tuple[str, ...], dim: int, in_context: bool) -> str:
    distance = _distance(dim)
    return (
        sql.SQL(
            # The scope carries row ids and distances, measured as it is read: the rest is read
            # for the top k.
            "WITH scope AS MATERIALIZED (SELECT e.ctid AS rid, e.msg_id, {distance} AS distance"
            " FROM loom.conversation_embeddings e WHERE {where} AND {embedded} LIMIT %(cap)s),"
            " top AS (SELECT s.rid, s.distance FROM scope s"
            "  ORDER BY s.distance, s.msg_id LIMIT %(k)s)"
            " SELECT {returned}, {similarities}, (SELECT count(*) FROM scope) AS scope_rows"
            " FROM top JOIN loom.conversation_embeddings e2 ON e2.ctid = top.rid"
            " ORDER BY top.distance, e2.msg_id"
        )
        .format(
            where=scope_where("e", shape),
            embedded=_embedded(dim),
            returned=returned("e2"),
            similarities=similarities("e2", dim, in_context),
            distance=distance,
        )
        .as_string()
    )


def vector_search(
    conn: Connection,
    f: TurnFilter,
    *,
    model: str,
    dim: int,
    query_vec: np.ndarray,
    k: int,
    exact: bool,
    in_context: bool = False,
) -> list[dict[str, Any]]:
    """Top-k embedded turns by cosine similarity (of the ranking's vector), most similar
    first."""
    _, params = filter_params(f, "e")
    query = _ranking_query(filter_shape(f), dim, exact, in_context)
    params.update(model=model, q=query_vec, k=k)
    wide = not exact and k > _DEFAULT_EF_SEARCH
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


@functools.cache
def _ranking_query(shape: tuple[str, ...], dim: int, exact: bool, in_context: bool) -> str:
    distance = _distance(dim)
    # `+ 0` keeps the planner off the HNSW index: an exact scan of a small scope.
    order = sql.SQL("{} + 0").format(distance) if exact else distance
    # The embedding row carries what a hit shows (its text is the turn's first 2,048
    # characters), so ranking reads one table, as the raw pgvector query does.
    return (
        sql.SQL(
            "SELECT {returned}, {similarities} FROM loom.conversation_embeddings e"
            " WHERE {where} AND {embedded} ORDER BY {order} LIMIT %(k)s"
        )
        .format(
            returned=returned("e"),
            similarities=similarities("e", dim, in_context),
            where=scope_where("e", shape),
            embedded=_embedded(dim),
            order=order,
        )
        .as_string()
    )


def substring_search(
    conn: Connection, f: TurnFilter, *, needle: str, limit: int, offset: int
) -> list[dict[str, Any]]:
    """Live recorded turns whose text contains `needle` (case-blind), newest first."""
    where, params = filter_params(f, "c")
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = sql.SQL(
        "SELECT c.msg_id, c.thread_id, c.namespace, c.agent, c.role, c.user_id, c.run_id, c.ts,"
        " c.content FROM loom.conversations c WHERE {where} AND c.tombstoned_at IS NULL"
        " AND NOT c.saved_only"
        " AND c.content ILIKE %(pattern)s ESCAPE '\\'"
        " ORDER BY c.ts DESC, c.msg_id LIMIT %(limit)s OFFSET %(offset)s"
    ).format(where=where)
    params.update(pattern=f"%{escaped}%", limit=limit, offset=offset)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
