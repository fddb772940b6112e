"""conversation.search: namespace fan-out; semantic (vector ranking over the floor, substring
fallback), lexical (BM25 over turn windows) and hybrid (both, fused by reciprocal rank)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Literal

import numpy as np

from chalicelib.legs import beside
from chalicelib.providers.embedder import EmbedderError
from chalicelib.ranking import centred_excerpt, rrf
from chalicelib.registry import OpContext
from chalicelib.sensitivity import reads_as_high
from chalicelib.store.conversation_search import (
    TurnFilter,
    bounded_exact_search,
    known_large,
    substring_search,
    vector_search,
)
from chalicelib.store.namespaces import org_namespaces
from chalicelib.store.pool import read_connection
from chalicelib.store.window_search import plan_window_search, read_window_hits

_FALLBACK_PAGES = 5  # substring pages read to fill top_k past turns that read as high


def fan_out(ctx: OpContext, org: str, namespace: str, scope: str) -> tuple[list[str], list[str]]:
    """The namespaces a search reads, and those an all_mine search skipped at the cap."""
    if scope == "this" or ctx.caller.namespace is not None:
        return [namespace], []
    cap = ctx.live().memory_search_fanout_max_namespaces
    with read_connection(ctx.deps.pool) as conn:
        mine = org_namespaces(conn, org)  # every one skipped is named
    others = [ns for ns in mine if ns != namespace]
    return [namespace, *others[: cap - 1]], others[cap - 1 :]


SearchMode = Literal["semantic", "lexical", "hybrid"]
# The turns each leg hands hybrid's fusion (top_k when larger); BM25's also bound the lexical
# mode's read, whose hits beyond top_k stand in for any the guard drops.
VECTOR_LEG_DEPTH = 20
BM25_LEG_DEPTH = 15
VECTOR_LEG_WEIGHT = 0.5  # each of the turn's two vector rankings in the fusion; BM25 weighs 1
HitKey = tuple[str, str, str]


def search_turns(
    ctx: OpContext,
    filt: TurnFilter,
    query: str,
    top_k: int,
    mode: SearchMode = "semantic",
    lexical_weight: float = 1.0,
) -> list[dict[str, Any]]:
    """Hits best first. semantic: the turn's vector over the floor (substring hits newest
    first when the embedder fails); lexical: BM25 over each turn's window; hybrid: the turns
    nearest by their own vector and BM25's, ranked by each of their two vectors and fused with
    BM25's ranking by reciprocal rank, no floor (the lexical leg alone when the embedder
    fails)."""
    excerpt_chars = ctx.live().conversation_search_excerpt_chars
    if mode == "semantic":
        return _semantic(ctx, filt, query, top_k, excerpt_chars)
    bm25_depth = max(BM25_LEG_DEPTH, top_k)
    if mode == "lexical":
        lexical = _lexical_rows(ctx, filt, query, bm25_depth)
        return _fuse(None, lexical, 1.0, top_k, excerpt_chars)
    vector_depth = max(VECTOR_LEG_DEPTH, top_k)
    # The vector leg beside, embedding the query first; the lexical leg here reads its
    # statistics meanwhile, then its hits with their similarities once the vector is known.
    embedded: Future[np.ndarray | None] = Future()

    def vector_leg() -> list[dict[str, Any]] | None:
        query_vec = None
        try:
            query_vec = ctx.deps.embedder.embed_query(query)
        except EmbedderError:
            return None  # fail open: the lexical leg answers alone
        finally:
            embedded.set_result(query_vec)
        with read_connection(ctx.deps.pool) as conn:
            return _vector_rows(ctx, conn, filt, query_vec, vector_depth, in_context=True)

    vector_rows = beside(vector_leg)
    # With weight 0 BM25 takes no part: its hits would join the turns the vectors rank.
    lexical = _lexical_rows(ctx, filt, query, bm25_depth, embedded.result) if lexical_weight else []
    vectors = vector_rows.result()
    if vectors is None and not lexical_weight:  # the embedder failed: BM25 answers alone
        lexical = _lexical_rows(ctx, filt, query, bm25_depth)
    return _fuse(vectors, lexical, lexical_weight, top_k, excerpt_chars)


def _semantic(
    ctx: OpContext, filt: TurnFilter, query: str, top_k: int, excerpt_chars: int
) -> list[dict[str, Any]]:
    embedder = ctx.deps.embedder
    try:
        query_vec = embedder.embed_query(query)
    except EmbedderError:
        return _substring_hits(ctx, filt, query, top_k, excerpt_chars)
    floor = _floor(ctx)
    with read_connection(ctx.deps.pool) as conn:
        rows = _vector_rows(ctx, conn, filt, query_vec, top_k)
    return [
        _as_hit(r, r["text"][:excerpt_chars], r["similarity"], r["similarity"])
        for r in rows
        if r["similarity"] >= floor and not reads_as_high(r["text"])
    ]


_NOT_SHOWN = ("text", "terms", "score", "similarity", "in_context")


def _as_hit(row: dict[str, Any], excerpt: str, similarity: float | None, score: float) -> dict:
    """A hit as returned: its row without the text it was found by, with its excerpt."""
    hit = {f: v for f, v in row.items() if f not in _NOT_SHOWN}
    return {**hit, "excerpt": excerpt, "similarity": similarity, "score": score}


def _floor(ctx: OpContext) -> float:
    floor = ctx.live().conversation_search_min_similarity
    return ctx.deps.embedder.default_floor if floor is None else floor


def _vector_rows(
    ctx: OpContext,
    conn: Any,
    filt: TurnFilter,
    query_vec: Any,
    k: int,
    *,
    in_context: bool = False,
) -> list[dict[str, Any]]:
    """Top k by the turn's own vector: exact in a small scope, else through the HNSW index;
    each row with the text it was embedded from and its similarities (with `in_context`, its
    context vector's too)."""
    embedder = ctx.deps.embedder
    dim = len(query_vec)
    common: dict[str, Any] = {
        "model": embedder.name,
        "dim": dim,
        "query_vec": query_vec,
        "k": k,
        "in_context": in_context,
    }
    rows = None
    if not known_large(filt, embedder.name, dim):
        rows = bounded_exact_search(conn, filt, **common)
    if rows is None:  # a large scope: the HNSW index, scanning on until k pass
        rows = vector_search(conn, filt, **common, exact=False)
    return rows


def _lexical_rows(
    ctx: OpContext,
    filt: TurnFilter,
    query: str,
    k: int,
    query_vec: Callable[[], np.ndarray | None] | None = None,
) -> list[dict[str, Any]]:
    """BM25 hits best first; with a query vector (asked for once the statistics are read, on
    no connection), each with its similarities. A hit whose text reads as high (indexed before
    today's guard read it so) is dropped where hits are shown (`_fuse`), as a vector hit is:
    only the few shown are read by the guard."""
    pool, model = ctx.deps.pool, ctx.deps.embedder.name
    with read_connection(pool) as conn:
        planned = plan_window_search(conn, filt, model=model, query=query, k=k)
        rows = [] if planned is None or query_vec else read_window_hits(conn, planned)
    if planned is not None and query_vec is not None:
        vector = query_vec()  # waited for holding no connection
        with read_connection(pool) as conn:
            rows = read_window_hits(conn, planned, vector)
    return rows


def _fuse(
    vector_rows: list[dict[str, Any]] | None,
    lexical: list[dict[str, Any]],
    lexical_weight: float,
    top_k: int,
    excerpt_chars: int,
) -> list[dict[str, Any]]:
    """BM25's order alone (lexical mode, or hybrid without the embedder), else the fusion by
    reciprocal rank of three rankings of the turns either leg found: by the turn's own vector,
    by its context vector (half weight each: two views of one signal) and by BM25 (scaled by
    lexical_weight). A hit carries its own vector's similarity when it was read; a BM25 hit's
    excerpt is centred on the query's words."""

    def key(r: dict[str, Any]) -> HitKey:
        return (r["namespace"], r["thread_id"], r["msg_id"])

    # Each turn once: the BM25 row (its excerpt centred on the query's words), else the
    # vector leg's.
    found = {key(r): r for r in lexical}
    rows: dict[HitKey, dict[str, Any]] = {key(r): r for r in vector_rows or ()}
    rows.update(found)

    def shown(k: Any, score: float) -> dict[str, Any] | None:
        r = rows[k]
        if reads_as_high(r["text"]):  # indexed before today's guard read it as high
            return None
        if k in found:
            excerpt = centred_excerpt(r["text"], r["terms"], excerpt_chars, stems=True)
        else:
            excerpt = r["text"][:excerpt_chars]
        return _as_hit(r, excerpt, r.get("similarity"), score)

    ranked: list[tuple[Any, float]]  # (HitKey, score), best first
    if vector_rows is None:
        ranked = [(key(r), r["score"]) for r in lexical]
    else:

        def by(field: str) -> list[HitKey]:
            # A zero query vector's similarities are NaN: no ranking.
            values = ((r.get(field), k) for k, r in rows.items())
            # Ties go by msg_id, as the store ranks them.
            scored = [(-v, k[2], k) for v, k in values if v is not None and v == v]
            return [k for _, _, k in sorted(scored)]

        ranked = rrf(
            [
                (by("similarity"), VECTOR_LEG_WEIGHT),
                (by("in_context"), VECTOR_LEG_WEIGHT),
                ([key(r) for r in lexical], lexical_weight),
            ]
        )
    out: list[dict[str, Any]] = []
    for k, score in ranked:
        hit = shown(k, score)
        if hit is not None:
            out.append(hit)
            if len(out) == top_k:
                break
    return out


def _substring_hits(
    ctx: OpContext, filt: TurnFilter, query: str, top_k: int, excerpt_chars: int
) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    page = max(top_k * 2, 20)
    with read_connection(ctx.deps.pool) as conn:
        for n in range(_FALLBACK_PAGES):
            rows = substring_search(conn, filt, needle=query, limit=page, offset=n * page)
            for r in rows:
                key = (r["namespace"], r["thread_id"], r["msg_id"])
                if key in seen or reads_as_high(r["content"]):
                    continue
                seen.add(key)
                content = r.pop("content")
                hits.append({**r, "excerpt": content[:excerpt_chars], "similarity": None})
                if len(hits) == top_k:
                    return hits
            if len(rows) < page:
                break
    return hits
