"""conversation.search's lexical leg: BM25 over each indexed turn's window.

The corpus statistics are the caller's scope's own (never another tenant's). A scope of up to
SAMPLE_ROWS windows is read whole, so its statistics are exact. In a larger one (counted once
a minute), a term is rare under 0.5% of the scope (between RARE_DF_MIN and RARE_DF windows).
Its document frequency is estimated from a sample of about LARGE_SAMPLE_ROWS (drawn once a
minute, every lexeme in it counted), and counted exactly through the GIN index where the
sample puts it under COUNT_BELOW of the rare line, too few of its windows sampled to say more;
a count reads a row for each window it finds, so one nearer the line is taken as common on its
estimate. Documents are gathered through the rare terms (the ones that decide a BM25 ranking),
and the common terms add their weight to those documents only. A query of common terms alone
gathers the documents holding all of them.

The sample is drawn from random pages of the table (TABLESAMPLE SYSTEM) when the scope holds
at least SPREAD_MIN_SHARE of it, so it spreads over every thread and month of the scope; rows
read in table order would be one stretch of it, whose topics skew a common term's count many
times over. A scope that is a small part of a large table would cost too many pages that way,
and is sampled in table order.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

from chalicelib.store.conversation_search import (
    TurnFilter,
    filter_params,
    filter_shape,
    scope_where,
    similarities,
)

BM25_K1 = 1.2
BM25_B = 0.75
SAMPLE_ROWS = 5000
# A scope known to be large estimates its common terms from these: at 2,000 rather than 500,
# fewer of a query's new words look rare in the sample and are counted through the index.
LARGE_SAMPLE_ROWS = 2000
RARE_DF = 500  # a term in fewer windows than this (or 0.5% of a scope, at least 100) is rare
RARE_DF_MIN = 100
RARE_SHARE = 0.005
# A term the sample puts at half the rare line or more (at least 5 of its windows sampled) is
# taken as common on that estimate, uncounted. On LoCoMo turns repeated to 100,000 (the bench's
# scope), hybrid's p95 fell from 3.2x a semantic one to 2.6-2.95x, and BM25 and hybrid found
# an evidence turn as often as when every term under the line was counted (0.46-0.48 of the
# dev questions either way, the sample's draw moving it by 0.01).
COUNT_BELOW = 0.5
MAX_TERMS = 64
CANDIDATES_MAX = 1500
# A fallback's windows hold only some of the query's words: a sample of 150 of them found an
# evidence turn as often as one of 500 (at 100,000 turns, LoCoMo repeated: BM25 0.488 and
# hybrid 0.493 of the dev questions, against 0.496 and 0.478) for a third of the work.
FALLBACK_CANDIDATES = 150
RELAXED_TERMS = 3  # a query of common terms no window holds all of: windows holding its rarest
STATS_TTL_SECONDS = 60.0
# A scope holding at least this share of the table's rows is sampled at random pages: that
# reads at most 1 / SPREAD_MIN_SHARE times the pages a stretch of as many rows would.
SPREAD_MIN_SHARE = 0.25

# A large scope's (n, avgdl, until, percent of pages a spread sample reads, 0 for none), and
# each term's (df, rare, until) in it: counted once a minute, in this process.
_stats: dict[tuple[Any, ...], tuple[float, ...]] = {}
# A large scope's sample, as (until, rows sampled, lexeme -> sampled windows holding it); a
# few thousand lexemes each, so only so many scopes are kept.
_lexicons: dict[tuple[Any, ...], tuple[float, float, dict[str, int]]] = {}
LEXICONS_MAX = 16


def _indexed() -> sql.Composable:
    # A row of a turn the transcript never recorded has no window; the mark is read too.
    return sql.SQL(
        "e.model = %(model)s AND e.tombstoned_at IS NULL AND e.window_tsv IS NOT NULL"
        " AND NOT e.saved_only"
    )


_LEXEMES = (
    # The query's lexemes, as the windows were parsed; one with a backslash cannot be written
    # as a tsquery literal and is left out.
    "SELECT DISTINCT term FROM"
    " unnest(tsvector_to_array(to_tsvector('english'::regconfig, %(query)s))) AS term"
    " WHERE position(E'\\\\' in term) = 0 ORDER BY term LIMIT " + str(MAX_TERMS)
)


@functools.cache
def _sample_query(shape: tuple[str, ...]) -> str:
    # How many of the windows first met (up to the cap) hold each term, and their number and
    # mean length: the whole scope when it is small.
    return (
        sql.SQL(
            "WITH sample AS MATERIALIZED (SELECT e.window_tsv, e.window_len"
            "  FROM loom.conversation_embeddings e WHERE {where} AND {indexed}"
            "  LIMIT %(cap)s)"
            " SELECT q.term, (SELECT count(*) FROM sample s"
            "  WHERE s.window_tsv @@ quote_literal(q.term)::tsquery) AS hits,"
            " (SELECT count(*) FROM sample) AS n,"
            " (SELECT coalesce(avg(window_len), 0) FROM sample) AS avgdl"
            " FROM unnest(%(terms)s::text[]) AS q(term)"
        )
        .format(where=scope_where("e", shape), indexed=_indexed())
        .as_string()
    )


@functools.cache
def _lexicon_query(shape: tuple[str, ...], spread: bool) -> str:
    # A large scope's sample as counts: its size, then how many of its windows hold each
    # lexeme (the rows first met, or those of a share of the table's pages picked at random).
    pages = sql.SQL(" TABLESAMPLE SYSTEM (%(percent)s::float4)" if spread else "")
    return (
        sql.SQL(
            "WITH sample AS MATERIALIZED (SELECT e.window_tsv"
            "  FROM loom.conversation_embeddings e{pages} WHERE {where} AND {indexed}"
            "  LIMIT %(cap)s)"
            " SELECT NULL::text AS term, count(*) AS hits FROM sample"
            " UNION ALL SELECT u.term, count(*) FROM sample s"
            "  CROSS JOIN LATERAL unnest(tsvector_to_array(s.window_tsv)) AS u(term)"
            "  GROUP BY u.term"
        )
        .format(pages=pages, where=scope_where("e", shape), indexed=_indexed())
        .as_string()
    )


@functools.cache
def _scope_query(shape: tuple[str, ...]) -> str:
    return (
        sql.SQL(
            "SELECT count(*) AS n, coalesce(avg(e.window_len), 0) AS avgdl,"
            # The table's rows as last counted by ANALYZE (-1 before the first: unknown).
            " (SELECT c.reltuples FROM pg_class c"
            "  WHERE c.oid = 'loom.conversation_embeddings'::regclass) AS table_rows"
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


# PostgreSQL's ts_rank of a one-lexeme query, over a window whose positions all weigh 1, is
# H / ZETA2 with H = sum(1 / j^2 for j in 1..tf) (calc_rank_or, with its constant ZETA2). As
# 1 / (n + 1) < ZETA2 - H < 1 / n, floor(1 / (ZETA2 - H)) is tf itself (0 for an absent
# lexeme): a term's frequency read in C, where unnesting every window costs 4 us a window.
_RANK_ZETA2 = "1.64493406685"


@functools.cache
def _score_query(
    shape: tuple[str, ...], n_terms: int, dim: int | None = None, fallbacks: int = 0
) -> str:
    # With a query vector of `dim`, each hit also carries both of its vectors' similarities.
    vectors = sql.SQL(", {}").format(similarities("e2", dim, True)) if dim else sql.SQL("")
    # Each term's BM25 weight, idf * (k1 + 1) * tf / (tf + norm), with tf written once and
    # (k1 + 1) taken out of the sum. The candidate's norm is a column of its own, computed as
    # it is read: a subquery beside the sum was folded into it, twice in each term's weight.
    bm25 = sql.SQL(" + ").join(
        sql.SQL(
            "(%(idf)s::float8[])[{i}] * (1 - c.norm / (c.norm + floor(1 / ({zeta2}"
            " * (1 - ts_rank('{{1,1,1,1}}', c.mine, (%(lexemes)s::tsquery[])[{i}], 0))))))"
        ).format(i=sql.Literal(i), zeta2=sql.SQL(_RANK_ZETA2))
        for i in range(1, n_terms + 1)
    )
    # The candidates: windows matching the gather query, or, when none does, the first of the
    # fallback queries that some window matches (each read only if all before it found none).
    gathers: list[sql.Composable] = [sql.SQL("%(gather)s::tsquery")]
    gathers += [sql.SQL("(%(fallbacks)s::tsquery[])[{}]").format(i + 1) for i in range(fallbacks)]
    steps = sql.SQL(", ").join(
        sql.SQL(
            # Each candidate's window is read (and decompressed) once: its query lexemes, with
            # their positions, are what every term's ts_rank reads.
            "cand{i} AS MATERIALIZED (SELECT e.ctid AS rid, e.msg_id,"
            "  ts_filter(setweight(e.window_tsv, 'A', %(terms)s::text[]), '{{a}}') AS mine,"
            "  {k1}::float8 * (1 - {b} + {b} * e.window_len / %(avgdl)s) AS norm"
            "  FROM loom.conversation_embeddings e WHERE {none_yet}{where}"
            "  AND {indexed} AND e.window_tsv @@ {gather} LIMIT {budget})"
        ).format(
            i=sql.Literal(i),
            budget=sql.SQL("%(cand)s") if i == 0 else sql.Literal(FALLBACK_CANDIDATES),
            none_yet=sql.SQL("").join(
                sql.SQL("NOT EXISTS (SELECT 1 FROM cand{}) AND ").format(sql.Literal(j))
                for j in range(i)
            ),
            where=scope_where("e", shape),
            indexed=_indexed(),
            gather=gather,
            k1=sql.Literal(BM25_K1),
            b=sql.Literal(BM25_B),
        )
        for i, gather in enumerate(gathers)
    )
    cand = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT * FROM cand{}").format(sql.Literal(i)) for i in range(len(gathers))
    )
    return (
        sql.SQL(
            "WITH {steps}, cand AS ({cand}),"
            " scored AS (SELECT c.rid, c.msg_id, c.mine, ({k1} + 1) * ({bm25}) AS score"
            "  FROM cand c ORDER BY score DESC, c.msg_id LIMIT %(k)s)"
            " SELECT e2.msg_id, e2.thread_id, e2.namespace, e2.agent, e2.role, e2.user_id,"
            " e2.run_id, e2.ts, e2.text, sc.score, tsvector_to_array(sc.mine) AS terms{vectors}"
            " FROM scored sc JOIN loom.conversation_embeddings e2 ON e2.ctid = sc.rid"
            " ORDER BY sc.score DESC, e2.msg_id"
        )
        .format(
            steps=steps,
            cand=cand,
            k1=sql.Literal(BM25_K1),
            bm25=bm25,
            vectors=vectors,
        )
        .as_string()
    )


def _tsquery(terms: list[str], op: str) -> str:
    return f" {op} ".join("'" + t.replace("'", "''") + "'" for t in terms)


@dataclass(frozen=True)
class Bm25Read:
    """A BM25 read with the query's lexemes and statistics known: its statement's shape and
    parameters."""

    shape: tuple[str, ...]
    params: dict[str, Any]


def read_window_hits(
    conn: Connection, planned: Bm25Read, query_vec: np.ndarray | None = None
) -> list[dict[str, Any]]:
    """The hits of a planned BM25 read, best first, each with its first 2,048 characters
    (`text`), its score and the query lexemes its window holds; with a query vector, also the
    similarities of its two vectors to it (`similarity`, `in_context`)."""
    params = planned.params if query_vec is None else {**planned.params, "q": query_vec}
    query = _score_query(
        planned.shape,
        len(params["terms"]),
        None if query_vec is None else len(query_vec),
        len(params["fallbacks"]),
    )
    # Read in binary: each hit's lexemes (an array) and time load without parsing text.
    with conn.cursor(row_factory=dict_row, binary=True) as cur:
        return cur.execute(query, params).fetchall()


def plan_window_search(
    conn: Connection, f: TurnFilter, *, model: str, query: str, k: int
) -> Bm25Read | None:
    """The query's lexemes and their statistics in the caller's scope (counted or recalled),
    and the windows to gather; None when no window can match."""
    shape = filter_shape(f)
    _, params = filter_params(f, "e")
    params.update(model=model, query=query)
    with conn.cursor(row_factory=dict_row) as cur:
        query_terms = [r["term"] for r in cur.execute(_LEXEMES, params).fetchall()]
        if not query_terms:
            return None  # no searchable word in the query
        large = _known_size(f, model)
        if large is None:
            params.update(terms=query_terms, cap=SAMPLE_ROWS + 1)
            sample = cur.execute(_sample_query(shape), params).fetchall()
            n, avgdl = float(sample[0]["n"]), float(sample[0]["avgdl"])
            hits = {r["term"]: float(r["hits"]) for r in sample}
        if large is None and n <= SAMPLE_ROWS:  # the whole scope: exact statistics
            df = hits
            gather, op = [t for t, h in hits.items() if h > 0], "|"
            budget = SAMPLE_ROWS + 1  # every window holding a term
        else:
            if large is None:
                large = _scope_size(cur, f, shape, params)
                if not large[2]:  # no spread sample: the rows read so far are the sample
                    _remember(f, model, _large_scope_df(cur, shape, params, hits, large[0], n))
            n, avgdl, percent = large
            known = _known_terms(f, model, query_terms)
            unknown = [t for t in query_terms if t not in known]
            if unknown:
                sampled, lexicon = _lexicon(cur, f, shape, params, percent)
                hits = {t: float(lexicon.get(t, 0)) for t in unknown}
                counted = _large_scope_df(cur, shape, params, hits, n, sampled)
                _remember(f, model, counted)
                known.update(counted)
            df = {t: known[t][0] for t in query_terms}
            gather, op = _gather([t for t in query_terms if known[t][1]], df)
            # Windows holding every common term are many and rank alike: a sample of them.
            budget = CANDIDATES_MAX if op == "|" else CANDIDATES_MAX // 3
    if not gather or n == 0:
        return None
    terms = list(df)
    idf = [math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms]
    params.update(
        terms=terms,
        lexemes=[_tsquery([t], "|") for t in terms],
        idf=idf,
        gather=_tsquery(gather, op),
        avgdl=max(avgdl, 1.0),
        k=k,
        cand=budget,
        fallbacks=_fallbacks(gather, df) if op == "&" else [],
    )
    return Bm25Read(shape, params)


def _known_size(f: TurnFilter, model: str) -> tuple[float, float, float] | None:
    """A large scope's windows, mean length and spread-sample percentage, while its count is
    under a minute old."""
    cached = _stats.get((f, model))
    if cached is not None and cached[2] > time.monotonic():
        return cached[0], cached[1], cached[3]
    return None


def _scope_size(
    cur: Any, f: TurnFilter, shape: tuple[str, ...], params: dict
) -> tuple[float, float, float]:
    """Count a large scope's windows and their mean length, and choose the share of the
    table's pages a spread sample reads (0: the scope is too small a part of the table); kept
    for a minute."""
    key = (f, params["model"])
    row = cur.execute(_scope_query(shape), params).fetchone()
    n, avgdl = float(row["n"]), float(row["avgdl"])
    table_rows = float(row["table_rows"])
    spread = n > 0 and table_rows >= 0 and n >= SPREAD_MIN_SHARE * table_rows
    percent = min(100.0, 100.0 * LARGE_SAMPLE_ROWS / n) if spread else 0.0
    _keep({key: (n, avgdl, time.monotonic() + STATS_TTL_SECONDS, percent)})
    return n, avgdl, percent


def _lexicon(
    cur: Any, f: TurnFilter, shape: tuple[str, ...], params: dict, percent: float
) -> tuple[float, dict[str, int]]:
    """A large scope's sample (rows read, and how many of them hold each lexeme), drawn once a
    minute: every query meeting new terms in that minute counts them in the same rows."""
    key = (f, params["model"])
    cached = _lexicons.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1], cached[2]
    # A spread sample reads about LARGE_SAMPLE_ROWS of the scope; the cap only bounds an
    # unlucky draw (stopping early would favour the table's first pages).
    cap = 4 * LARGE_SAMPLE_ROWS if percent else LARGE_SAMPLE_ROWS
    rows = cur.execute(
        _lexicon_query(shape, bool(percent)), {**params, "cap": cap, "percent": percent}
    ).fetchall()
    sampled = float(next(r["hits"] for r in rows if r["term"] is None))
    lexicon = {r["term"]: int(r["hits"]) for r in rows if r["term"] is not None}
    if len(_lexicons) >= LEXICONS_MAX:
        _lexicons.clear()
    _lexicons[key] = (time.monotonic() + STATS_TTL_SECONDS, sampled, lexicon)
    return sampled, lexicon


def _rare_df(n: float) -> int:
    """Below this many windows a term is rare in a scope of n: RARE_SHARE of it, within
    RARE_DF_MIN and RARE_DF."""
    return min(RARE_DF, max(RARE_DF_MIN, int(n * RARE_SHARE)))


def _large_scope_df(
    cur: Any, shape: tuple[str, ...], params: dict, hits: dict[str, float], n: float, sampled: float
) -> dict[str, tuple[float, bool]]:
    """Each term's document frequency in a scope of n windows larger than the sample (each of
    the `sampled` rows standing for n / sampled), and whether it is rare (counted exactly: the
    sample put it under COUNT_BELOW of the rare line)."""
    per_row = n / max(sampled, 1.0)
    rare_df = _rare_df(n)
    estimated_above = rare_df * COUNT_BELOW
    out = {t: (h * per_row, False) for t, h in hits.items() if h * per_row >= estimated_above}
    maybe_rare = [t for t in hits if t not in out]
    if maybe_rare:
        counted = cur.execute(
            _df_query(shape), {**params, "terms": maybe_rare, "rare": rare_df}
        ).fetchall()
        for r in counted:  # a count reaching rare_df stopped there: common
            df = float(r["df"])
            out[r["term"]] = (df, df > 0) if df < rare_df else (float(rare_df), False)
    return out


def _gather(rare: list[str], df: dict[str, float]) -> tuple[list[str], str]:
    """The rarest terms while their windows fit the candidate budget, any of them; with no rare
    term, every term at once (but those no window holds: they would make it match nothing)."""
    if not rare:
        return [t for t, n in df.items() if n > 0], "&"
    rare = sorted(rare, key=lambda t: df[t])
    gather, budget = rare[:1], df[rare[0]]
    for t in rare[1:]:
        budget += df[t]
        if budget > CANDIDATES_MAX:
            break
        gather.append(t)
    return gather, "|"


def _fallbacks(common: list[str], df: dict[str, float]) -> list[str]:
    """What a query of common terms alone gathers when no window holds all of them: the
    windows holding its two rarest, else those holding any of its RELAXED_TERMS rarest."""
    rarest = sorted(common, key=lambda t: df[t])[:RELAXED_TERMS]
    if len(rarest) < 2:
        return []
    both = [_tsquery(rarest[:2], "&")] if len(common) > 2 else []
    return [*both, _tsquery(rarest, "|")]


def _known_terms(f: TurnFilter, model: str, terms: list[str]) -> dict[str, tuple[float, bool]]:
    """The terms whose frequency in this large scope was counted under a minute ago."""
    now = time.monotonic()
    out = {}
    for t in terms:
        cached = _stats.get((f, model, t))
        if cached is not None and cached[2] > now:
            out[t] = (cached[0], bool(cached[1]))
    return out


def _remember(f: TurnFilter, model: str, counted: dict[str, tuple[float, bool]]) -> None:
    until = time.monotonic() + STATS_TTL_SECONDS
    _keep({(f, model, t): (df, float(rare), until) for t, (df, rare) in counted.items()})


def _keep(entries: dict[tuple[Any, ...], tuple[float, ...]]) -> None:
    """Store counts in the process's statistics, emptied whole when they grow past a bound."""
    if len(_stats) > 50_000:
        _stats.clear()
    _stats.update(entries)
