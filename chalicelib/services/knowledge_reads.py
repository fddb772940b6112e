"""Knowledge search over chunks, shared by knowledge.search and the reads that serve an agent
its knowledge (the agent-tag rule: docs/decisions/0023-knowledge.md)."""

from __future__ import annotations

import re
from typing import Any, Literal

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.providers.embedder import EmbedderError
from chalicelib.search.ranking import centred_excerpt, rrf
from chalicelib.sensitivity import is_sensitive
from chalicelib.store import knowledge as store
from chalicelib.store.pool import autocommit_connection

SearchMode = Literal["hybrid", "semantic", "lexical"]
LEG_DEPTH = 100
EXCERPT_CHARS = 400
_TERM = re.compile(r"\w{3,}")


def search_chunks(
    deps: Deps, f: store.DocFilter, query: str, top_k: int, mode: SearchMode = "hybrid"
) -> list[dict[str, Any]]:
    """The top_k chunks for `query`: vector and BM25 legs fused by reciprocal rank (hybrid), or
    one leg alone. A hit: namespace, uri, title, chunk, excerpt, score, tags. Never a chunk,
    title or tag that reads as high."""
    query_vec = None
    if mode != "lexical":
        try:
            query_vec = deps.embedder.embed_query(query)
        except EmbedderError:
            query_vec = None  # the words still find chunks in hybrid mode
    vec_rows: list[dict[str, Any]] = []
    lex_rows: list[dict[str, Any]] = []
    with autocommit_connection(deps.pool) as conn:
        if query_vec is not None:
            vec_rows = store.vector_leg(
                conn, f, model=deps.embedder.name, query_vec=query_vec, depth=LEG_DEPTH
            )
        if mode != "semantic":
            lex_rows = store.lexical_leg(conn, f, query=query, depth=LEG_DEPTH)
    ranked: list[tuple[Any, float]]
    if mode == "semantic":
        # No floor: a chunk of 3,200 characters scores lower against a short query than the
        # turns the embedder's floor was set on.
        ranked = [(_ident(r), r["score"]) for r in vec_rows]
    elif mode == "lexical":
        ranked = [(_ident(r), r["score"]) for r in lex_rows]
    else:
        ranked = rrf([([_ident(r) for r in vec_rows], 1.0), ([_ident(r) for r in lex_rows], 1.0)])
    rows: dict[Any, dict[str, Any]] = {_ident(r): r for r in lex_rows + vec_rows}
    terms = _TERM.findall(query)
    hits: list[dict[str, Any]] = []
    for ident, score in ranked:
        # Checked again with today's guard, in rank order until top_k are found: a chunk an
        # earlier build indexed is no hit if it now reads as high, nor one whose title or tags
        # (shown with it) do.
        if len(hits) == top_k:
            break
        if not _shows_high(rows[ident]):
            hits.append(_hit(rows[ident], score, terms))
    return hits


def _ident(row: dict[str, Any]) -> tuple[str, str, int]:
    return (row["namespace"], row["uri"], row["ordinal"])


def _shows_high(row: dict[str, Any]) -> bool:
    return any(is_sensitive(t) for t in (row["text"], row["title"], row["uri"], *row["tags"]))


def _hit(row: dict[str, Any], score: float, terms: list[str]) -> dict[str, Any]:
    return {
        "namespace": row["namespace"],
        "uri": row["uri"],
        "title": row["title"],
        "chunk": row["ordinal"],
        "excerpt": centred_excerpt(row["text"], terms, EXCERPT_CHARS, stems=True),
        "score": float(score),
        "tags": row["tags"],
    }


def served_chunks(
    deps: Deps, caller: Caller, org: str, namespace: str, agent: str, query: str, top_k: int
) -> list[dict[str, Any]]:
    """The knowledge an agent's read is served for `query`: a document tagged agent:<a> goes to
    agent <a> only, a read under '*' is served every bot's documents, one under '-' none tagged
    for a named bot, and a document with no agent: tag goes to every read."""
    if not _readable(caller, org, namespace):
        return []
    f = store.DocFilter(org=org, namespaces=(namespace,), agent=reader_agent(caller, agent))
    return search_chunks(deps, f, query, top_k)


def reader_agent(caller: Caller, agent: str) -> str:
    """The agent a read is served knowledge as: a token pinned to one end user reads as the bot
    it names, whatever the body says, and as no bot ('-') when it names none."""
    speaks = caller.speaks_for(agent)
    return "-" if speaks is None else speaks


def _readable(caller: Caller, org: str, namespace: str) -> bool:
    """Whether the caller's token may read this namespace's knowledge."""
    if caller.org != org and not caller.any_org:
        return False
    return caller.namespace is None or caller.namespace == namespace


def whole_documents(
    deps: Deps, caller: Caller, org: str, namespace: str, agent: str, uris: list[str],
    *, max_chars: int | None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The documents at `uris` served to `agent`, whole (of at most `max_chars` when bounded),
    none holding a chunk that reads as high."""
    if not uris or not _readable(caller, org, namespace):
        return []
    with autocommit_connection(deps.pool) as conn:
        rows = store.served_documents(
            conn,
            org,
            namespace,
            reader_agent(caller, agent),
            uris=uris,
            max_chars=max_chars,
            with_text=True,
        )
    return [r for r in rows if not _shows_high(r)]


def served_document_list(
    deps: Deps, caller: Caller, org: str, namespace: str, agent: str, limit: int
) -> list[dict[str, Any]]:
    """The documents served to `agent`, newest first, without their text."""
    if not _readable(caller, org, namespace):
        return []
    with autocommit_connection(deps.pool) as conn:
        rows = store.served_documents(
            conn, org, namespace, reader_agent(caller, agent), limit=limit
        )
    return listed_documents(rows)


def listed_documents(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Documents as a list shows them: none whose uri (its name) reads as high; a title that
    does is shown blank, and tags that do are left out."""
    return [
        r
        | {
            "title": "" if is_sensitive(r["title"]) else r["title"],
            "tags": [t for t in r["tags"] if not is_sensitive(t)],
        }
        for r in rows
        if not is_sensitive(r["uri"])
    ]
