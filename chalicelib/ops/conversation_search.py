"""conversation.search: namespace fan-out, vector ranking over the floor, substring fallback."""

from __future__ import annotations

from typing import Any

from chalicelib.providers.embedder import EmbedderError
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

_FALLBACK_PAGES = 5  # substring pages read to fill top_k past turns that read as high


def fan_out(ctx: OpContext, org: str, namespace: str, scope: str) -> tuple[list[str], list[str]]:
    """The namespaces a search reads, and those an all_mine search skipped at the cap."""
    if scope == "this" or ctx.caller.namespace is not None:
        return [namespace], []
    cap = ctx.live().memory_search_fanout_max_namespaces
    with read_connection(ctx.deps.pool) as conn:
        mine = org_namespaces(conn, org, limit=cap + 1000)
    others = [ns for ns in mine if ns != namespace]
    return [namespace, *others[: cap - 1]], others[cap - 1 :]


def search_turns(ctx: OpContext, filt: TurnFilter, query: str, top_k: int) -> list[dict[str, Any]]:
    """Hits most similar first over the floor; on embedder failure, substring hits newest first."""
    live = ctx.live()
    embedder = ctx.deps.embedder
    excerpt_chars = live.conversation_search_excerpt_chars
    try:
        query_vec = embedder.embed_query(query)
    except EmbedderError:
        return _substring_hits(ctx, filt, query, top_k, excerpt_chars)
    floor = live.conversation_search_min_similarity
    if floor is None:
        floor = embedder.default_floor
    dim = len(query_vec)
    common: dict[str, Any] = {
        "model": embedder.name,
        "dim": dim,
        "query_vec": query_vec,
        "k": top_k,
        "excerpt_chars": excerpt_chars,
    }
    with read_connection(ctx.deps.pool) as conn:
        rows = None
        if not known_large(filt, embedder.name, dim):
            rows = bounded_exact_search(conn, filt, **common)
        if rows is None:  # a large scope: the HNSW index, scanning on until top_k pass
            rows = vector_search(conn, filt, **common, exact=False)
    return [r for r in rows if r["similarity"] >= floor]


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
