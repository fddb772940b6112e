"""conversation.search: ranked turns across the namespaces a caller reads."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from chalicelib.ops.common import AgentScoped, Ident, OpOutput
from chalicelib.ops.conversation_fields import Role, ThreadId, any_agent
from chalicelib.registry import OpContext, op
from chalicelib.search.store_vectors import TurnFilter
from chalicelib.search.turns import SearchMode, search_turns
from chalicelib.store.namespaces import org_namespaces
from chalicelib.store.pool import autocommit_connection


class SearchInput(AgentScoped):
    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    thread_id: ThreadId | None = None
    run_id: Ident | None = None
    role: Role | None = None
    user_id: Ident | None = None
    top_k: int = Field(default=20, ge=1, le=200)
    namespace_scope: Literal["this", "all_mine"] = "all_mine"
    search_mode: SearchMode = Field(
        default="semantic",
        description="semantic: cosine similarity of each turn's first 2,048 characters, over"
        " the floor; lexical: BM25 over each turn with its date and neighbours; hybrid: the"
        " turn's vector, its vector read after the turn before it, and the BM25 leg, fused by"
        " reciprocal rank (no floor).",
    )
    lexical_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Weight of the BM25 leg in the hybrid fusion; 1.0 = equal weight, 0 = the"
        " vectors alone (no BM25 read).",
    )


class ConversationHit(OpOutput):
    msg_id: str
    thread_id: str
    role: str
    excerpt: str
    similarity: float | None
    score: float | None = Field(
        default=None,
        description="The rank's score: the similarity (semantic), BM25 (lexical) or the fused"
        " reciprocal-rank score (hybrid); none on the substring fallback.",
    )
    agent: str
    user_id: str
    run_id: str
    ts: datetime
    namespace: str


class SearchOutput(OpOutput):
    hits: list[ConversationHit]
    namespaces_skipped: list[str]


def fan_out(ctx: OpContext, org: str, namespace: str, scope: str) -> tuple[list[str], list[str]]:
    """The namespaces a search reads, and those an all_mine search skipped at the cap."""
    if scope == "this" or ctx.caller.namespace is not None:
        return [namespace], []
    cap = ctx.live().memory_search_fanout_max_namespaces
    with autocommit_connection(ctx.deps.pool) as conn:
        mine = org_namespaces(conn, org)  # every one skipped is named
    others = [ns for ns in mine if ns != namespace]
    return [namespace, *others[: cap - 1]], others[cap - 1 :]


@op("conversation.search", role="viewer", kind="read", mcp="hidden")
def search(inp: SearchInput, ctx: OpContext) -> SearchOutput:
    """Rank embedded turns over the floor; substring match when the embedder is down."""
    namespaces, skipped = fan_out(ctx, inp.org, inp.namespace, inp.namespace_scope)
    filt = TurnFilter(
        org=inp.org,
        namespaces=tuple(namespaces),
        agent=any_agent(inp.agent),
        thread_id=inp.thread_id,
        run_id=None if inp.run_id in (None, "-") else inp.run_id,
        role=inp.role,
        user_id=None if inp.user_id in (None, "-") else inp.user_id,
    )
    hits = search_turns(ctx.deps, filt, inp.query, inp.top_k, inp.search_mode, inp.lexical_weight)
    return SearchOutput(hits=[ConversationHit(**h) for h in hits], namespaces_skipped=skipped)
