"""The lexical leg's SQL: a query's lexemes, a scope's statistics (counted or sampled) and the
BM25 read over the windows."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

from chalicelib.search.store_vectors import returned, scope_where, similarities

# A row of a turn the transcript never recorded has no window; the mark is read too.
_INDEXED = sql.SQL(
    "e.model = %(model)s AND e.tombstoned_at IS NULL AND e.window_tsv IS NOT NULL"
    " AND NOT e.saved_only"
)

# The query's lexemes as the windows were parsed; one with a backslash is no tsquery literal.
_LEXEMES = (
    "SELECT DISTINCT term FROM"
    " unnest(tsvector_to_array(to_tsvector('english'::regconfig, %(query)s))) AS term"
    " WHERE position(E'\\\\' in term) = 0 ORDER BY term LIMIT %(max_terms)s"
)
# How many of the windows first met (up to the cap) hold each term; their number, mean length.
_SAMPLE = (
    "WITH sample AS MATERIALIZED (SELECT e.window_tsv, e.window_len"
    "  FROM loom.conversation_embeddings e WHERE {where} AND {indexed} LIMIT %(cap)s)"
    " SELECT q.term, (SELECT count(*) FROM sample s"
    "  WHERE s.window_tsv @@ quote_literal(q.term)::tsquery) AS hits,"
    " (SELECT count(*) FROM sample) AS n,"
    " (SELECT coalesce(avg(window_len), 0) FROM sample) AS avgdl"
    " FROM unnest(%(terms)s::text[]) AS q(term)"
)
# A sample's size (the NULL term), then how many of its windows hold each lexeme.
_LEXICON = (
    "WITH sample AS MATERIALIZED (SELECT e.window_tsv"
    "  FROM loom.conversation_embeddings e WHERE {where} AND {indexed} LIMIT %(cap)s)"
    " SELECT NULL::text AS term, count(*) AS hits FROM sample"
    " UNION ALL SELECT u.term, count(*) FROM sample s"
    "  CROSS JOIN LATERAL unnest(tsvector_to_array(s.window_tsv)) AS u(term)"
    "  GROUP BY u.term"
)
_COUNT = (
    "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM loom.conversation_embeddings e"
    "  WHERE {where} AND {indexed} AND e.window_tsv @@ quote_literal(t.term)::tsquery"
    "  LIMIT %(line)s) x) FROM unnest(%(unseen)s::text[]) AS t(term)"
)
_SCOPE = (
    "SELECT count(*), coalesce(avg(e.window_len), 0)"
    " FROM loom.conversation_embeddings e WHERE {where} AND {indexed}"
)


@functools.cache
def _scoped(template: str, shape: tuple[str, ...]) -> str:
    where = scope_where("e", shape)
    return sql.SQL(template).format(where=where, indexed=_INDEXED).as_string()


def query_lexemes(conn: Connection, params: dict[str, Any]) -> list[str]:
    return [r[0] for r in conn.execute(_LEXEMES, params).fetchall()]


def sample_terms(
    conn: Connection, shape: tuple[str, ...], params: dict[str, Any]
) -> tuple[float, float, dict[str, float]]:
    """The windows first met (up to `cap`): their number, mean length and each term's hits."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(_scoped(_SAMPLE, shape), params).fetchall()
    hits = {r["term"]: float(r["hits"]) for r in rows}
    return float(rows[0]["n"]), float(rows[0]["avgdl"]), hits


def sample_lexicon(
    conn: Connection, shape: tuple[str, ...], params: dict[str, Any]
) -> tuple[float, dict[str, int]]:
    """A scope's first `cap` rows: rows read, and how many of them hold each lexeme."""
    lexicon: dict[str | None, int] = dict(conn.execute(_scoped(_LEXICON, shape), params).fetchall())
    return float(lexicon.pop(None)), {t: int(h) for t, h in lexicon.items() if t is not None}


def count_windows(
    conn: Connection, shape: tuple[str, ...], params: dict[str, Any], terms: list[str], line: int
) -> dict[str, float]:
    """How many of a scope's windows hold each term, counted through the GIN index up to
    `line` (a count reaching it stopped there)."""
    query = _scoped(_COUNT, shape)
    rows = conn.execute(query, {**params, "unseen": terms, "line": line}).fetchall()
    return {t: float(c) for t, c in rows}


def scope_size(
    conn: Connection, shape: tuple[str, ...], params: dict[str, Any]
) -> tuple[float, float]:
    """A scope's windows and their mean length."""
    row = conn.execute(_scoped(_SCOPE, shape), params).fetchone()
    assert row is not None
    return float(row[0]), float(row[1])


# ts_rank of one lexeme over a window weighing 1 everywhere is H(tf) / ZETA2, H the sum of
# 1 / j^2 for j up to tf: floor(1 / (ZETA2 - H)) recovers tf, read in C.
_RANK_ZETA2 = "1.64493406685"
# Each term's idf * (k1 + 1) * tf / (tf + norm), (k1 + 1) taken out of the sum.
_TERM = (
    "(%(idf)s::float8[])[{i}] * (1 - c.norm / (c.norm + floor(1 / ({zeta2}"
    " * (1 - ts_rank('{{1,1,1,1}}', c.mine, (%(lexemes)s::tsquery[])[{i}], 0))))))"
)
# Windows matching `gather`, each read (and decompressed) once, filtered to the query's lexemes.
_GATHERED = (
    "{name} AS MATERIALIZED (SELECT e.ctid AS rid, e.msg_id,"
    " ts_filter(setweight(e.window_tsv, 'A', %(terms)s::text[]), '{{a}}') AS mine,"
    " %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * e.window_len / %(avgdl)s)"
    " AS norm FROM loom.conversation_embeddings e WHERE {unless}{where} AND {indexed}"
    " AND e.window_tsv @@ {gather}::tsquery LIMIT {budget})"
)
# Each hit followed by the live turn before it in its thread (often the one it answers).
_BEFORES = (
    " UNION ALL {hit} FROM scored sc JOIN loom.conversation_embeddings h ON h.ctid = sc.rid"
    " CROSS JOIN LATERAL (SELECT p.ctid AS rid FROM loom.conversation_embeddings p"
    "  WHERE p.org = h.org AND p.namespace = h.namespace AND p.thread_id = h.thread_id"
    "  AND p.model = h.model AND p.tombstoned_at IS NULL AND NOT p.saved_only"
    "  AND (p.ts, p.msg_id) < (h.ts, h.msg_id) ORDER BY p.ts DESC, p.msg_id DESC LIMIT 1) b"
    " JOIN loom.conversation_embeddings e2 ON e2.ctid = b.rid WHERE {where}"
)
_UNLESS_FIRST = "NOT EXISTS (SELECT 1 FROM first) AND "
_FALLBACK = "{}, {}, cand AS (SELECT * FROM first UNION ALL SELECT * FROM second)"
_SCORE = (
    "WITH {cand},"
    " scored AS (SELECT c.rid, c.msg_id, c.mine, (%(k1)s::float8 + 1) * ({bm25}) AS score"
    "  FROM cand c ORDER BY score DESC, c.msg_id LIMIT %(k)s)"
    " {hit} FROM scored sc JOIN loom.conversation_embeddings e2 ON e2.ctid = sc.rid"
    "{befores} ORDER BY score DESC, before, msg_id"
)


@functools.cache
def _score_query(
    shape: tuple[str, ...], n_terms: int, dim: int | None, befores: bool, fallback: bool
) -> str:
    # With a query vector of `dim`, each hit also carries both of its vectors' similarities.
    vectors = sql.SQL(", {}").format(similarities("e2", dim, True)) if dim else sql.SQL("")
    zeta2 = sql.SQL(_RANK_ZETA2)
    bm25 = sql.SQL(" + ").join(
        sql.SQL(_TERM).format(i=sql.Literal(i), zeta2=zeta2) for i in range(1, n_terms + 1)
    )

    def gathered(name: str, gather: str, budget: str, unless: str = "") -> sql.Composable:
        return sql.SQL(_GATHERED).format(
            name=sql.SQL(name),
            unless=sql.SQL(unless),
            where=scope_where("e", shape),
            indexed=_INDEXED,
            gather=sql.SQL(gather),
            budget=sql.SQL(budget),
        )

    def hit(terms: str, before: str) -> sql.Composable:
        return sql.SQL("SELECT {}, sc.score, {} AS terms, {} AS before{}").format(
            returned("e2"), sql.SQL(terms), sql.SQL(before), vectors
        )

    cand = gathered("cand", "%(gather)s", "%(cand)s")
    if fallback:  # the fallback's windows, when none matches the gather query
        first = gathered("first", "%(gather)s", "%(cand)s")
        second = gathered("second", "%(fallback)s", "%(fallback_cand)s", _UNLESS_FIRST)
        cand = sql.SQL(_FALLBACK).format(first, second)
    before = sql.SQL(_BEFORES).format(
        hit=hit("'{}'::text[]", "true"), where=scope_where("e2", shape)
    )
    return (
        sql.SQL(_SCORE)
        .format(
            cand=cand,
            bm25=bm25,
            hit=hit("tsvector_to_array(sc.mine)", "false"),
            befores=before if befores else sql.SQL(""),
        )
        .as_string()
    )


@dataclass(frozen=True)
class Bm25Read:
    """A BM25 read with the query's lexemes and statistics known: its shape and parameters."""

    shape: tuple[str, ...]
    params: dict[str, Any]


def read_window_hits(
    conn: Connection,
    planned: Bm25Read,
    query_vec: np.ndarray | None = None,
    *,
    befores: bool = False,
) -> list[dict[str, Any]]:
    """A planned BM25 read's hits, best first, with their text, score and the lexemes matched; with
    a query vector, both similarities; with `befores`, each followed by the turn before it."""
    params = planned.params if query_vec is None else {**planned.params, "q": query_vec}
    dim = None if query_vec is None else len(query_vec)
    fallback = params.get("fallback") is not None
    query = _score_query(planned.shape, len(params["terms"]), dim, befores, fallback)
    # Read in binary: each hit's lexemes (an array) and time load without parsing text.
    with conn.cursor(row_factory=dict_row, binary=True) as cur:
        return cur.execute(query, params).fetchall()
