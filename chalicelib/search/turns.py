"""conversation.search's modes: semantic (vectors over a floor, substring fallback), lexical
(BM25 over turn windows) and hybrid (both, fused by reciprocal rank)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from chalicelib.concurrent_work import run_concurrently
from chalicelib.providers.embedder import EmbedderError
from chalicelib.search.lexical import plan_window_search
from chalicelib.search.ranking import centred_excerpt, rrf
from chalicelib.search.store_vectors import (
    TurnFilter,
    bounded_exact_search,
    substring_search,
    table_rows,
    vector_search,
)
from chalicelib.search.store_windows import read_window_hits
from chalicelib.sensitivity import is_sensitive
from chalicelib.store.pool import autocommit_connection

if TYPE_CHECKING:
    from chalicelib.deps import Deps

SearchMode = Literal["semantic", "lexical", "hybrid"]
HitKey = tuple[str, str, str]


def search_turns(
    deps: Deps,
    filt: TurnFilter,
    query: str,
    top_k: int,
    mode: SearchMode = "semantic",
    lexical_weight: float = 1.0,
) -> list[dict[str, Any]]:
    """Hits best first (hybrid's under no floor); without the embedder, semantic falls back to
    substring hits (newest first) and hybrid to the lexical leg alone."""
    excerpt_chars = deps.live().conversation_search_excerpt_chars
    if mode == "semantic":
        return _semantic(deps, filt, query, top_k, excerpt_chars)
    tuning = deps.search_tuning
    # Also the lexical mode's read: hits past top_k stand in for any the guard drops.
    bm25_depth = max(tuning.bm25_leg_depth, top_k)
    if mode == "lexical":
        lexical = _lexical_rows(deps, filt, query, bm25_depth)
        return _fuse(deps, None, lexical, 1.0, top_k, excerpt_chars)
    vector_depth = max(tuning.vector_leg_depth, top_k)
    # The vector leg beside, embedding the query; the lexical leg reads its statistics
    # meanwhile, then its hits with their similarities once the vector is known.
    embedded: Future[np.ndarray | None] = Future()

    def vector_leg() -> list[dict[str, Any]] | None:
        query_vec = None
        try:
            query_vec = deps.embedder.embed_query(query)
        except EmbedderError:
            return None  # fail open: the lexical leg answers alone
        finally:
            embedded.set_result(query_vec)
        with autocommit_connection(deps.pool) as conn:
            return vector_leg_rows(deps, conn, filt, query_vec, vector_depth, in_context=True)

    vector_rows = run_concurrently(vector_leg)
    # With weight 0 BM25 takes no part: its hits would join the turns the vectors rank.
    lexical = (
        _lexical_rows(deps, filt, query, bm25_depth, embedded.result) if lexical_weight else []
    )
    vectors = vector_rows.result()
    if vectors is None and not lexical_weight:  # the embedder failed: BM25 answers alone
        lexical = _lexical_rows(deps, filt, query, bm25_depth)
    return _fuse(deps, vectors, lexical, lexical_weight, top_k, excerpt_chars)


def _semantic(
    deps: Deps, filt: TurnFilter, query: str, top_k: int, excerpt_chars: int
) -> list[dict[str, Any]]:
    try:
        query_vec = deps.embedder.embed_query(query)
    except EmbedderError:
        return _substring_hits(deps, filt, query, top_k, excerpt_chars)
    floor = deps.live().conversation_search_min_similarity
    floor = deps.embedder.default_floor if floor is None else floor
    with autocommit_connection(deps.pool) as conn:
        rows = vector_leg_rows(deps, conn, filt, query_vec, top_k)
    return [
        _as_hit(r, r["text"][:excerpt_chars], r["similarity"], r["similarity"])
        for r in rows
        if r["similarity"] >= floor and not is_sensitive(r["text"])
    ]


def _key(r: dict[str, Any]) -> HitKey:
    return (r["namespace"], r["thread_id"], r["msg_id"])


_NOT_SHOWN = ("text", "terms", "score", "similarity", "in_context", "before")


def _as_hit(row: dict[str, Any], excerpt: str, similarity: float | None, score: float) -> dict:
    """A hit as returned: its row without the text it was found by, with its excerpt."""
    hit = {f: v for f, v in row.items() if f not in _NOT_SHOWN}
    return {**hit, "excerpt": excerpt, "similarity": similarity, "score": score}


def vector_leg_rows(
    deps: Deps, conn: Any, filt: TurnFilter, query_vec: Any, k: int, *, in_context: bool = False
) -> list[dict[str, Any]]:
    """Top k by the turn's own vector, with its similarities: exact in a small scope (or one not
    known to be large), else through the HNSW index."""
    tuning, caches, model = deps.search_tuning, deps.search_caches, deps.embedder.name
    dim = len(query_vec)
    common: dict[str, Any] = {"model": model, "dim": dim, "query_vec": query_vec, "k": k}
    key, rows = (filt, model, dim), None
    if not caches.fresh(caches.large, key):  # not known to be large
        max_rows = _exact_scan_bound(conn, deps)
        rows = bounded_exact_search(conn, filt, **common, max_rows=max_rows, in_context=in_context)
        if rows is None:
            ttl, bound = tuning.large_scope_ttl_seconds, tuning.large_scopes_max
            caches.keep(caches.large, {key: True}, ttl, bound)
    if rows is None:  # a large scope: the HNSW index, scanning on until k pass
        rows = vector_search(conn, filt, **common, in_context=in_context)
    return rows


def _exact_scan_bound(conn: Any, deps: Deps) -> int:
    """The most rows a scope may hold and be ranked exactly: exact_scan_max_rows, or more (to
    the ceiling) while the scope is a small share of the table (decision 0004)."""
    tuning, caches = deps.search_tuning, deps.search_caches
    rows = caches.fresh(caches.table_rows, "rows")
    if rows is None:
        rows = table_rows(conn)
        caches.keep(caches.table_rows, {"rows": rows}, tuning.large_scope_ttl_seconds, 1)
    share = min(tuning.exact_scan_ceiling, int(tuning.exact_scan_share * rows))
    return max(tuning.exact_scan_max_rows, share)


def _lexical_rows(
    deps: Deps,
    filt: TurnFilter,
    query: str,
    k: int,
    query_vec: Callable[[], np.ndarray | None] | None = None,
) -> list[dict[str, Any]]:
    """BM25 hits best first; with a query vector (awaited once the statistics are read, on no
    connection), each with its similarities and followed by the turn before it."""
    tuning, caches = deps.search_tuning, deps.search_caches
    with autocommit_connection(deps.pool) as conn:
        planned = plan_window_search(
            conn, filt, model=deps.embedder.name, query=query, k=k, tuning=tuning, caches=caches
        )
        rows = [] if planned is None or query_vec else read_window_hits(conn, planned)
    if planned is not None and query_vec is not None:
        vector = query_vec()  # waited for holding no connection
        with autocommit_connection(deps.pool) as conn:
            rows = read_window_hits(conn, planned, vector, befores=True)
    return rows


def _fuse(
    deps: Deps,
    vector_rows: list[dict[str, Any]] | None,
    lexical: list[dict[str, Any]],
    lexical_weight: float,
    top_k: int,
    excerpt_chars: int,
) -> list[dict[str, Any]]:
    """BM25's order alone, else reciprocal rank fusion of three rankings of the turns either leg
    found: own and context vector (vector_leg_weight each) and BM25 (lexical_weight)."""
    # Each turn once, where BM25 first ranked it, else the vector leg's row.
    found: dict[HitKey, dict[str, Any]] = {}
    for r in lexical:
        found.setdefault(_key(r), r)
    rows: dict[HitKey, dict[str, Any]] = {_key(r): r for r in vector_rows or ()}
    rows.update(found)

    ranked: list[tuple[Any, float]]  # (HitKey, score), best first
    if vector_rows is None:
        ranked = [(k, r["score"]) for k, r in found.items()]
    else:

        def by(field: str) -> list[HitKey]:
            # A zero query vector's similarities are NaN: no ranking. Ties go by msg_id.
            values = [(-v, k[2], k) for k, r in rows.items() if (v := r.get(field)) is not None]
            return [k for _, _, k in sorted(v for v in values if v[0] == v[0])]

        weight = deps.search_tuning.vector_leg_weight
        ranked = rrf(
            [(by("similarity"), weight), (by("in_context"), weight), (list(found), lexical_weight)]
        )
    out: list[dict[str, Any]] = []
    for k, score in ranked:
        r = rows[cast(HitKey, k)]
        # Indexed before today's guard read it as high: checked here, on the few hits shown.
        if is_sensitive(r["text"]):
            continue
        if k in found:
            excerpt = centred_excerpt(r["text"], r["terms"], excerpt_chars, stems=True)
        else:
            excerpt = r["text"][:excerpt_chars]
        out.append(_as_hit(r, excerpt, r.get("similarity"), score))
        if len(out) == top_k:
            break
    return out


def _substring_hits(
    deps: Deps, filt: TurnFilter, query: str, top_k: int, excerpt_chars: int
) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = []
    seen: set[HitKey] = set()
    page = max(top_k * 2, 20)
    with autocommit_connection(deps.pool) as conn:
        for n in range(deps.search_tuning.substring_pages):
            rows = substring_search(conn, filt, needle=query, limit=page, offset=n * page)
            for r in rows:
                key = _key(r)
                if key in seen or is_sensitive(r["content"]):
                    continue
                seen.add(key)
                content = r.pop("content")
                hits.append({**r, "excerpt": content[:excerpt_chars], "similarity": None})
                if len(hits) == top_k:
                    return hits
            if len(rows) < page:
                break
    return hits
