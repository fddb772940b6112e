"""The reads that give an agent what it should know, in one call: context.pack, and search
over every plane (loom_search).

Each leg is the plane's own op, called for the same caller (so its scope, its tenant lines and
its sensitivity rules hold), and the legs run concurrently."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.auth import ReadScope
from chalicelib.concurrent_work import run_concurrently
from chalicelib.context_budget import Item, Section, pack
from chalicelib.ops.common import AgentScoped, Ident, OpOutput
from chalicelib.registry import OpContext, call, op
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.knowledge_reads import (
    served_chunks,
    served_document_list,
)

USER_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user")
MEMORY_TOP_K = 20
KNOWLEDGE_TOP_K = 10
CONVERSATION_TOP_K = 5
# Memories half the budget, knowledge a quarter, the brief and the transcript the rest.
SHARES = {
    "memories": 1 / 2,
    "knowledge": 1 / 4,
    "brief": 1 / 12,
    "recent": 1 / 12,
    "conversation": 1 / 12,
}
TITLES = {
    "memories": "Memories",
    "knowledge": "Knowledge",
    "brief": "Session brief",
    "recent": "Recent turns",
    "conversation": "Related conversation",
}


class PackInput(AgentScoped):
    user_id: Ident | None = None
    query: Annotated[str, StringConstraints(max_length=10_000)] = ""
    budget_tokens: int = Field(default=2_000, ge=100, le=32_000)
    include_memories: bool = True
    include_knowledge: bool = True
    brief_key: Annotated[str, StringConstraints(max_length=400)] = ""
    project: Annotated[str, StringConstraints(max_length=256)] = ""
    branch: Annotated[str, StringConstraints(max_length=256)] = ""
    session_id: Ident = "-"
    thread_id: Ident | None = None
    recent_turns: int = Field(default=0, ge=0, le=200)
    include_conversation: bool = False


class PackedSection(OpOutput):
    name: str
    items: list[dict[str, Any]]


class PackOutput(OpOutput):
    text: str
    sections: list[PackedSection]
    tokens: int
    truncated: bool
    pending_extraction: bool


Leg = Callable[[], tuple[list[Item], bool]]  # the section's items, and pending_extraction


def memory_search(
    ctx: OpContext, inp: AgentScoped, user_id: str | None, query: str, top_k: int
) -> dict[str, Any]:
    """memory.search of the read's scope with junk left out (quality_filter), as the caller."""
    body: dict[str, Any] = {"namespace": inp.namespace, "agent": inp.agent, "query": query}
    body |= {"top_k": top_k, "quality_filter": True}
    if user_id is not None:
        body["user_id"] = user_id
    return call("memory.search", body, ctx.caller, ctx.deps).body


def _memories(inp: PackInput, ctx: OpContext) -> tuple[list[Item], bool]:
    body: dict[str, Any] = {"namespace": inp.namespace, "agent": inp.agent}
    if inp.user_id is not None:
        body["user_id"] = inp.user_id
    if inp.query.strip():
        out = memory_search(ctx, inp, inp.user_id, inp.query, MEMORY_TOP_K)
        rows = out["hits"]
    else:
        out = call("memory.stack", body | {"limit": MEMORY_TOP_K}, ctx.caller, ctx.deps).body
        rows = out["memories"]
    items = [
        Item(f"- **{r['key']}**: {r['value']}", {"key": r["key"], "version": r["version"]})
        for r in rows
    ]
    return items, bool(out.get("pending_extraction"))


def _knowledge(inp: PackInput, ctx: OpContext) -> tuple[list[Item], bool]:
    """Chunks the query finds among the documents served to this agent; without a query, the
    served documents' titles (newest first)."""
    args = (ctx.deps, ctx.caller, inp.org, inp.namespace, inp.agent)
    if not inp.query.strip():
        docs = served_document_list(*args, limit=KNOWLEDGE_TOP_K)
        return [
            Item(f"- **{d['title'] or d['uri']}** ({d['uri']})", {"uri": d["uri"]}) for d in docs
        ], False
    hits = served_chunks(*args, inp.query, KNOWLEDGE_TOP_K)
    items = [
        Item(
            f"- **{h['title'] or h['uri']}** ({h['uri']}): {h['excerpt']}",
            {"uri": h["uri"], "chunk": h["chunk"]},
        )
        for h in hits
    ]
    return items, False


def _brief(inp: PackInput, ctx: OpContext) -> tuple[list[Item], bool]:
    body: dict[str, Any] = {"namespace": inp.namespace, "agent": inp.agent}
    body |= {"user_id": inp.user_id or "-", "session_id": inp.session_id}
    key = inp.brief_key
    if not key and inp.branch:  # the project's newest brief on that branch
        listed = call(
            "session.brief_list", body | {"project": inp.project, "limit": 50}, ctx.caller, ctx.deps
        ).body
        key = next((b["brief_key"] for b in listed["briefs"] if b["branch"] == inp.branch), "")
        if not key:
            return [], False
    got = call(
        "session.brief_get", body | {"brief_key": key, "project": inp.project}, ctx.caller, ctx.deps
    ).body
    if not got["found"]:
        return [], False
    source = {"brief_key": got["brief_key"], "revision": got["revision"]}
    return [Item(got["rendered"], source)], False


def _recent(inp: PackInput, ctx: OpContext) -> tuple[list[Item], bool]:
    body = {
        "namespace": inp.namespace,
        "agent": inp.agent,
        "thread_id": inp.thread_id,
        "include_messages": True,
        "limit": inp.recent_turns,
        "order": "desc",
    }
    got = call("conversation.get", body, ctx.caller, ctx.deps).body
    turns = list(reversed(got.get("messages") or []))  # oldest of the last ones first
    items = [
        Item(f"- {t['role']}: {t['content']}", {"msg_id": t["msg_id"]})
        for t in turns
        if t["role"] in ("user", "assistant")
    ]
    return items, False


def _conversation(inp: PackInput, ctx: OpContext) -> tuple[list[Item], bool]:
    body = {
        "namespace": inp.namespace,
        "agent": inp.agent,
        "query": inp.query,
        "top_k": CONVERSATION_TOP_K,
        "namespace_scope": "this",
        "search_mode": "hybrid",
    }
    hits = call("conversation.search", body, ctx.caller, ctx.deps).body["hits"]
    items = [
        Item(
            f"- {h['role']} ({h['thread_id']}): {h['excerpt']}",
            {"msg_id": h["msg_id"], "thread_id": h["thread_id"]},
        )
        for h in hits
    ]
    return items, False


def _legs(inp: PackInput, ctx: OpContext) -> dict[str, Leg]:
    legs: dict[str, Leg] = {}
    if inp.include_memories:
        legs["memories"] = lambda: _memories(inp, ctx)
    if inp.include_knowledge:
        legs["knowledge"] = lambda: _knowledge(inp, ctx)
    if inp.brief_key or inp.project:
        legs["brief"] = lambda: _brief(inp, ctx)
    if inp.thread_id and inp.recent_turns:
        legs["recent"] = lambda: _recent(inp, ctx)
    if inp.include_conversation and inp.query.strip():
        legs["conversation"] = lambda: _conversation(inp, ctx)
    return legs


@op("context.pack", role="viewer", kind="read", mcp="core", scopes=USER_SCOPES)
def context_pack(inp: PackInput, ctx: OpContext) -> PackOutput:
    """What an agent should know before it answers, in one call, within `budget_tokens`:
    memories (by the query, else pinned first, then by confidence and recency; junk left out),
    the knowledge served to this agent, the session brief, the thread's recent turns and, with
    `include_conversation`, turns the query finds: Markdown ready for a prompt (`text`) and the
    same items with their sources (`sections`).

    `tokens` is an estimate (one token per four bytes of UTF-8, rounded up) and never above
    the budget. Text that reads as high is never returned."""
    legs = _legs(inp, ctx)
    running = {name: run_concurrently(leg) for name, leg in legs.items()}
    found = {name: future.result() for name, future in running.items()}
    sections = [
        Section(name, TITLES[name], share, [i for i in found[name][0] if not is_sensitive(i.text)])
        for name, share in SHARES.items()
        if name in found
    ]
    packed = pack(sections, inp.budget_tokens, refuse=is_sensitive)
    return PackOutput(
        text=packed.text,
        sections=[PackedSection.model_validate(s) for s in packed.sections],
        tokens=packed.tokens,
        truncated=packed.truncated,
        pending_extraction=any(p for _, p in found.values()),
    )


# ---- search: one query over every plane ----------------------------------------------------

SearchSection = Literal["memory", "knowledge", "conversation"]
EVERY_SECTION: list[SearchSection] = ["memory", "knowledge", "conversation"]


class SearchEverywhereInput(AgentScoped):
    agent: Ident = "-"
    user_id: Ident | None = None
    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    top_k: int = Field(default=5, ge=1, le=50)
    sections: list[SearchSection] = Field(default_factory=lambda: list(EVERY_SECTION), min_length=1)


class SearchEverywhereOutput(OpOutput):
    memory: list[dict[str, Any]]
    knowledge: list[dict[str, Any]]
    conversation: list[dict[str, Any]]
    pending_extraction: bool


@op("search", role="viewer", kind="read", mcp="core", scopes=USER_SCOPES)
def search_everywhere(inp: SearchEverywhereInput, ctx: OpContext) -> SearchEverywhereOutput:
    """One query over every plane, answered in sections: `memory` (junk left out), `knowledge`
    (the documents served to this agent) and `conversation` (conversation.search), each
    `top_k`; `sections` picks which. The agent defaults to '-'."""
    base: dict[str, Any] = {"namespace": inp.namespace, "agent": inp.agent, "query": inp.query}
    legs: dict[str, Callable[[], Any]] = {}
    if "memory" in inp.sections:
        legs["memory"] = lambda: memory_search(ctx, inp, inp.user_id, inp.query, inp.top_k)
    if "knowledge" in inp.sections:
        legs["knowledge"] = lambda: served_chunks(
            ctx.deps, ctx.caller, inp.org, inp.namespace, inp.agent, inp.query, inp.top_k
        )
    # A user-bounded token reads no namespace-wide transcript: left out unless asked for (then
    # conversation.search answers its 403).
    asked = "sections" in inp.model_fields_set or not ctx.caller.bounded
    if "conversation" in inp.sections and asked:
        body = base | {"top_k": inp.top_k, "namespace_scope": "this", "search_mode": "hybrid"}
        legs["conversation"] = lambda: call("conversation.search", body, ctx.caller, ctx.deps).body
    running = {name: run_concurrently(leg) for name, leg in legs.items()}
    found = {name: future.result() for name, future in running.items()}
    memory = found.get("memory") or {"hits": [], "pending_extraction": False}
    return SearchEverywhereOutput(
        memory=memory["hits"],
        knowledge=found.get("knowledge") or [],
        conversation=(found.get("conversation") or {"hits": []})["hits"],
        pending_extraction=bool(memory.get("pending_extraction")),
    )
