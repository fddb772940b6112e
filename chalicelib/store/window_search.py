"""conversation.search's lexical leg: BM25 over each indexed turn's window.

The corpus statistics are the caller's scope's own (never another tenant's). A scope of up to
SAMPLE_ROWS windows is read whole, so its statistics are exact. In a larger one (counted once
a minute), a term's document frequency is counted exactly through the GIN index up to RARE_DF
and estimated from a sample of LARGE_SAMPLE_ROWS above it; documents are gathered through the
rare terms (the ones that decide a BM25 ranking), and the common terms add their weight to
those documents only. A query of common terms alone gathers the documents holding all of them.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row

from chalicelib.store.conversation_search import (
    TurnFilter,
    filter_params,
    filter_shape,
    scope_where,
)

BM25_K1 = 1.2
BM25_B = 0.75
SAMPLE_ROWS = 5000
LARGE_SAMPLE_ROWS = 1000  # a scope known to be large estimates its common terms from these
RARE_DF = 1000
MAX_TERMS = 64
CANDIDATES_MAX = 5000
STATS_TTL_SECONDS = 60.0

_stats: dict[tuple[Any, ...], tuple[float, float, float]] = {}  # scope -> (n, avgdl, until)


def _indexed() -> sql.Composable:
    return sql.SQL("e.model = %(model)s AND e.tombstoned_at IS NULL AND e.window_tsv IS NOT NULL")


@functools.cache
def _sample_query(shape: tuple[str, ...]) -> str:
    # The query's lexemes (as the windows were parsed), and how many of the sampled windows
    # hold each; a lexeme with a backslash cannot be written as a tsquery literal and is left
    # out.
    return (
        sql.SQL(
            "WITH q AS (SELECT DISTINCT term FROM"
            "  unnest(tsvector_to_array(to_tsvector('english'::regconfig, %(query)s))) AS term"
            "  WHERE position(E'\\\\' in term) = 0 LIMIT {terms}),"
            " sample AS MATERIALIZED (SELECT e.window_tsv, e.window_len"
            "  FROM loom.conversation_embeddings e WHERE {where} AND {indexed} LIMIT %(cap)s)"
            " SELECT q.term, (SELECT count(*) FROM sample s"
            "  WHERE s.window_tsv @@ quote_literal(q.term)::tsquery) AS hits,"
            " (SELECT count(*) FROM sample) AS n,"
            " (SELECT coalesce(avg(window_len), 0) FROM sample) AS avgdl"
            " FROM q ORDER BY q.term"
        )
        .format(where=scope_where("e", shape), indexed=_indexed(), terms=sql.Literal(MAX_TERMS))
        .as_string()
    )


@functools.cache
def _scope_query(shape: tuple[str, ...]) -> str:
    return (
        sql.SQL(
            "SELECT count(*) AS n, coalesce(avg(e.window_len), 0) AS avgdl"
            " FROM loom.conversation_embeddings e WHERE {where} AND {indexed}"
        )
        .format(where=scope_where("e", shape), indexed=_indexed())
        .as_string()
    )


@functools.cache
def _df_query(shape: tuple[str, ...]) -> str:
    return (
        sql.SQL(
            "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM loom.conversation_embeddings e"
            "  WHERE {where} AND {indexed} AND e.window_tsv @@ quote_literal(t.term)::tsquery"
            "  LIMIT %(rare)s) x) AS df"
            " FROM unnest(%(terms)s::text[]) AS t(term)"
        )
        .format(where=scope_where("e", shape), indexed=_indexed())
        .as_string()
    )


@functools.cache
def _score_query(shape: tuple[str, ...]) -> str:
    return (
        sql.SQL(
            "WITH t AS (SELECT * FROM unnest(%(terms)s::text[], %(idf)s::float8[])"
            "  AS t(term, idf)),"
            " cand AS MATERIALIZED (SELECT e.ctid AS rid, e.msg_id, e.window_tsv, e.window_len"
            "  FROM loom.conversation_embeddings e WHERE {where} AND {indexed}"
            "  AND e.window_tsv @@ %(gather)s::tsquery LIMIT {cap}),"
            # Only the query's lexemes of each window: weight them, keep the weighted.
            " m AS (SELECT c.rid, c.msg_id, c.window_len, u.lexeme,"
            "  coalesce(array_length(u.positions, 1), 1)::float8 AS tf FROM cand c"
            "  CROSS JOIN LATERAL unnest(ts_filter(setweight(c.window_tsv, 'A', %(terms)s::text[]),"
            "  '{{a}}')) u),"
            " scored AS (SELECT m.rid, m.msg_id, sum(t.idf * m.tf * ({k1} + 1) / (m.tf + {k1}"
            "  * (1 - {b} + {b} * m.window_len / %(avgdl)s))) AS score,"
            "  array_agg(m.lexeme) AS terms"
            "  FROM m JOIN t ON t.term = m.lexeme GROUP BY m.rid, m.msg_id"
            "  ORDER BY score DESC, m.msg_id LIMIT %(k)s)"
            " SELECT e2.msg_id, e2.thread_id, e2.namespace, e2.agent, e2.role, e2.user_id,"
            " e2.run_id, e2.ts, e2.text, sc.score, sc.terms"
            " FROM scored sc JOIN loom.conversation_embeddings e2 ON e2.ctid = sc.rid"
            " ORDER BY sc.score DESC, e2.msg_id"
        )
        .format(
            where=scope_where("e", shape),
            indexed=_indexed(),
            cap=sql.Literal(CANDIDATES_MAX),
            k1=sql.Literal(BM25_K1),
            b=sql.Literal(BM25_B),
        )
        .as_string()
    )


def _tsquery(terms: list[str], op: str) -> str:
    return f" {op} ".join("'" + t.replace("'", "''") + "'" for t in terms)


def window_search(
    conn: Connection, f: TurnFilter, *, model: str, query: str, k: int
) -> list[dict[str, Any]]:
    """Up to k indexed turns by BM25 over their windows, best first, each with its first
    2,048 characters (`text`), its score and the query lexemes its window holds."""
    shape = filter_shape(f)
    _, params = filter_params(f, "e")
    large = _known_size(f, model)
    params.update(model=model, query=query, cap=LARGE_SAMPLE_ROWS if large else SAMPLE_ROWS + 1)
    with conn.cursor(row_factory=dict_row) as cur:
        sample = cur.execute(_sample_query(shape), params).fetchall()
        if not sample:
            return []  # no searchable word in the query
        n, avgdl = float(sample[0]["n"]), float(sample[0]["avgdl"])
        hits = {r["term"]: float(r["hits"]) for r in sample}
        if large is None and n <= SAMPLE_ROWS:  # the whole scope: exact statistics
            df, gather = hits, [t for t, h in hits.items() if h > 0]
            op = "|"
        else:
            sampled = n
            n, avgdl = large or _scope_size(cur, f, shape, params)
            df, gather, op = _large_scope_df(cur, shape, params, hits, n / max(sampled, 1.0))
        if not gather or n == 0:
            return []
        terms = list(df)
        idf = [math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms]
        params.update(terms=terms, idf=idf, gather=_tsquery(gather, op), avgdl=max(avgdl, 1.0), k=k)
        return cur.execute(_score_query(shape), params).fetchall()


def _known_size(f: TurnFilter, model: str) -> tuple[float, float] | None:
    """A large scope's windows and mean length, while its count is under a minute old."""
    cached = _stats.get((f, model))
    if cached is not None and cached[2] > time.monotonic():
        return cached[0], cached[1]
    return None


def _scope_size(
    cur: Any, f: TurnFilter, shape: tuple[str, ...], params: dict
) -> tuple[float, float]:
    """Count a large scope's windows and their mean length (kept for a minute)."""
    key = (f, params["model"])
    row = cur.execute(_scope_query(shape), params).fetchone()
    n, avgdl = float(row["n"]), float(row["avgdl"])
    if len(_stats) > 10_000:
        _stats.clear()
    _stats[key] = (n, avgdl, time.monotonic() + STATS_TTL_SECONDS)
    return n, avgdl


def _large_scope_df(
    cur: Any, shape: tuple[str, ...], params: dict, hits: dict[str, float], per_row: float
) -> tuple[dict[str, float], list[str], str]:
    """Document frequencies in a scope larger than the sample (each sampled row standing for
    `per_row`), and the terms to gather by."""
    maybe_rare = [t for t, h in hits.items() if h * per_row < RARE_DF]
    df = {t: max(h * per_row, float(RARE_DF)) for t, h in hits.items()}
    rare: list[str] = []
    if maybe_rare:
        counted = cur.execute(
            _df_query(shape), {**params, "terms": maybe_rare, "rare": RARE_DF}
        ).fetchall()
        for r in counted:
            if r["df"] < RARE_DF:
                df[r["term"]] = float(r["df"])
                if r["df"] > 0:
                    rare.append(r["term"])
    if rare:
        return df, rare, "|"
    return df, list(df), "&"
