"""conversation.search: namespace fan-out; semantic (vector ranking over the floor, substring
fallback), lexical (BM25 over turn windows) and hybrid (both, fused by reciprocal rank)."""

from __future__ import annotations

from typing import Any, Literal

from chalicelib.legs import beside
from chalicelib.providers.embedder import EmbedderError
from chalicelib.ranking import centred_excerpt, rrf
from chalicelib.registry import OpContext
from chalicelib.sensitivity import reads_as_high
from chalicelib.store.conversation_search import (
    VECTOR_COLUMNS,
    Column,
    TurnFilter,
    bounded_exact_search,
    known_large,
    substring_search,
    vector_search,
)
from chalicelib.store.namespaces import org_namespaces
from chalicelib.store.pool import read_connection
from chalicelib.store.window_search import window_search

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
LEG_DEPTH = 60  # each leg's ranks fused in hybrid mode (top_k when larger)
VECTOR_LEG_WEIGHT = 0.5  # each of the turn's two vectors in the fusion; BM25 weighs 1
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
    first when the embedder fails); lexical: BM25 over each turn's window; hybrid: the turn's
    vector, its vector in context and the window's BM25, fused by reciprocal rank with no
    floor (the lexical leg alone when the embedder fails)."""
    excerpt_chars = ctx.live().conversation_search_excerpt_chars
    if mode == "semantic":
        return _semantic(ctx, filt, query, top_k, excerpt_chars)
    depth = max(LEG_DEPTH, top_k)
    vector_legs: list[list[dict[str, Any]]] = []
    if mode == "lexical":
        lexical = _lexical_rows(ctx, filt, query, depth)
        return _fuse(vector_legs, lexical, lexical_weight, top_k, excerpt_chars)
    lexical_rows = beside(lambda: _lexical_rows(ctx, filt, query, depth))
    try:
        query_vec = ctx.deps.embedder.embed_query(query)
    except EmbedderError:
        pass  # fail open: the lexical leg still answers
    else:

        def vector_leg(column: Column) -> list[dict[str, Any]]:
            with read_connection(ctx.deps.pool) as conn:
                return _vector_rows(ctx, conn, filt, query_vec, depth, column)

        # Every leg on a connection of its own: the context leg beside, the turn's own here.
        own, in_context = VECTOR_COLUMNS
        context_rows = beside(lambda: vector_leg(in_context))
        vector_legs = [vector_leg(own), context_rows.result()]
    return _fuse(vector_legs, lexical_rows.result(), lexical_weight, top_k, excerpt_chars)


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
        rows = _vector_rows(ctx, conn, filt, query_vec, top_k, "embedding")
    return [
        _as_hit(r, r["text"][:excerpt_chars], r["similarity"], r["similarity"])
        for r in rows
        if r["similarity"] >= floor and not reads_as_high(r["text"])
    ]


def _as_hit(row: dict[str, Any], excerpt: str, similarity: float | None, score: float) -> dict:
    """A hit as returned: its row without the text it was found by, with its excerpt."""
    hit = {f: v for f, v in row.items() if f not in ("text", "terms", "score", "similarity")}
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
    column: Column,
) -> list[dict[str, Any]]:
    """Top k by one vector column: exact in a small scope, else through the HNSW index; each
    row with the text it was embedded from."""
    embedder = ctx.deps.embedder
    dim = len(query_vec)
    common: dict[str, Any] = {
        "model": embedder.name,
        "dim": dim,
        "query_vec": query_vec,
        "k": k,
        "column": column,
    }
    rows = None
    if not known_large(filt, embedder.name, dim):
        rows = bounded_exact_search(conn, filt, **common)
    if rows is None:  # a large scope: the HNSW index, scanning on until k pass
        rows = vector_search(conn, filt, **common, exact=False)
    return rows


def _lexical_rows(ctx: OpContext, filt: TurnFilter, query: str, k: int) -> list[dict[str, Any]]:
    """BM25 hits best first, without any whose text reads as high (checked on the leg's own
    thread, beside the vector legs)."""
    with read_connection(ctx.deps.pool) as conn:
        rows = window_search(conn, filt, model=ctx.deps.embedder.name, query=query, k=k)
    return [r for r in rows if not reads_as_high(r["text"])]


def _fuse(
    vector_legs: list[list[dict[str, Any]]],
    lexical: list[dict[str, Any]],
    lexical_weight: float,
    top_k: int,
    excerpt_chars: int,
) -> list[dict[str, Any]]:
    """The legs fused by reciprocal rank (one leg keeps its own order and score). A hit the
    turn's own vector found carries its similarity; a BM25 hit's excerpt is centred on the
    query's words."""

    def key(r: dict[str, Any]) -> HitKey:
        return (r["namespace"], r["thread_id"], r["msg_id"])

    # Each turn once: the BM25 row (its excerpt centred on the query's words), else the row
    # of the turn's own vector (the first leg), else of its context vector.
    rows: dict[HitKey, dict[str, Any]] = {}
    for leg in reversed(vector_legs):
        rows.update((key(r), r) for r in leg)
    similarity = {key(r): r["similarity"] for r in vector_legs[0]} if vector_legs else {}
    found = {key(r): r for r in lexical}  # checked with the guard on the leg's thread

    def shown(k: Any, score: float) -> dict[str, Any] | None:
        if k in found:
            r = found[k]
            excerpt = centred_excerpt(r["text"], r["terms"], excerpt_chars, stems=True)
            return _as_hit(r, excerpt, similarity.get(k), score)
        r = rows[k]
        if reads_as_high(r["text"]):  # indexed before today's guard read it as high
            return None
        return _as_hit(r, r["text"][:excerpt_chars], similarity.get(k), score)

    ranked: list[tuple[Any, float]]  # (HitKey, score), best first
    if not vector_legs:  # lexical mode, or hybrid without the embedder: BM25 as it ranks
        ranked = [(key(r), r["score"]) for r in lexical]
    else:
        # The two vector legs are two views of one signal: together they weigh as much as BM25.
        legs = [([key(r) for r in leg], VECTOR_LEG_WEIGHT) for leg in vector_legs]
        legs.append(([key(r) for r in lexical], lexical_weight))
        ranked = rrf(legs)
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
