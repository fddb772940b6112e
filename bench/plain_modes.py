"""The baseline of PostgreSQL's own ranking: plain lexical (ts_rank_cd over each turn's window,
gathered by any of the query's words) and plain hybrid (the hybrid mode's vector leg fused by
reciprocal rank, k = 60, with the plain lexical list), as pgvector-python's hybrid example."""

from __future__ import annotations

from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row

from chalicelib.auth import Caller
from chalicelib.concurrent_work import run_concurrently
from chalicelib.deps import Deps
from chalicelib.search.ranking import rrf
from chalicelib.search.store_vectors import TurnFilter, filter_params, returned
from chalicelib.search.turns import vector_leg_rows
from chalicelib.sensitivity import is_sensitive
from chalicelib.store.pool import autocommit_connection

PLAIN_MODES = ("plain lexical", "plain hybrid")
LEG_DEPTH = 20  # each leg's list, as in pgvector-python's example

# The OR of the query's lexemes, gathered through the GIN index, top k by ts_rank_cd, over the
# windows the BM25 leg reads.
_PLAIN = (
    "SELECT {returned}, ts_rank_cd(e.window_tsv, q.query) AS score"
    " FROM (SELECT string_agg(quote_literal(t), ' | ')::tsquery AS query"
    "  FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig, %(query)s))) t"
    "  WHERE position(E'\\\\' in t) = 0) q, loom.conversation_embeddings e"
    " WHERE {where} AND e.model = %(model)s AND e.tombstoned_at IS NULL"
    " AND e.window_tsv IS NOT NULL AND NOT e.saved_only AND e.window_tsv @@ q.query"
    " ORDER BY score DESC, e.msg_id LIMIT %(k)s"
)


def plain_window_hits(
    conn: Connection, f: TurnFilter, *, model: str, query: str, k: int
) -> list[dict[str, Any]]:
    """The top k windows holding any of the query's words, by ts_rank_cd, best first."""
    where, params = filter_params(f, "e")
    params.update(model=model, query=query, k=k)
    query_sql = sql.SQL(_PLAIN).format(returned=returned("e"), where=where)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query_sql, params).fetchall()


def plain_search(
    deps: Deps, caller: Caller, namespace: str, query: str, top_k: int, mode: str
) -> list[str]:
    """The msg_ids of a plain mode's top_k hits in one namespace, best first (those that read
    as high left out, as the op leaves them out)."""
    filt = TurnFilter(org=caller.org, namespaces=(namespace,))
    model = deps.embedder.name

    def lexical(k: int) -> list[dict[str, Any]]:
        with autocommit_connection(deps.pool) as conn:
            return plain_window_hits(conn, filt, model=model, query=query, k=k)

    if mode == "plain lexical":
        rows = {r["msg_id"]: r for r in lexical(top_k)}
        ranked = list(rows)
    else:

        def vector_leg() -> list[dict[str, Any]]:
            query_vec = deps.embedder.embed_query(query)
            with autocommit_connection(deps.pool) as conn:
                depth = max(deps.search_tuning.vector_leg_depth, top_k)
                return vector_leg_rows(deps, conn, filt, query_vec, depth)

        vectors = run_concurrently(vector_leg)
        words = lexical(max(LEG_DEPTH, top_k))
        near = vectors.result()
        rows = {r["msg_id"]: r for r in near} | {r["msg_id"]: r for r in words}
        fused = rrf([([r["msg_id"] for r in near], 1.0), ([r["msg_id"] for r in words], 1.0)])
        ranked = [str(m) for m, _ in fused]
    shown: list[str] = []
    for m in ranked:
        if not is_sensitive(rows[m]["text"]):
            shown.append(m)
            if len(shown) == top_k:
                break
    return shown
