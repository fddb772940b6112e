"""The reads an agent makes before it answers: everything it should know, in one call.

Each leg is the plane's own op, called for the same caller (so its scope, its tenant lines and
its sensitivity rules hold), and the legs run concurrently."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.auth import ReadScope
from chalicelib.concurrent_work import run_concurrently
from chalicelib.context_budget import Item, Section, pack
from chalicelib.errors import BadRequestError, UnavailableError
from chalicelib.ops.common import AgentScoped, Ident, OpOutput
from chalicelib.ops.memory import read_users, shows_high
from chalicelib.providers.llm import LLMError
from chalicelib.registry import OpContext, call, op
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.knowledge_reads import (
    served_chunks,
    served_document_list,
    whole_documents,
)
from chalicelib.services.memory_quality import filter_ranked
from chalicelib.storable import unstorable
from chalicelib.store import memories as memory_store
from chalicelib.store.extraction_queue import has_pending
from chalicelib.store.pool import autocommit_connection

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


def _memories(inp: PackInput, ctx: OpContext) -> tuple[list[Item], bool]:
    body: dict[str, Any] = {"namespace": inp.namespace, "agent": inp.agent}
    if inp.user_id is not None:
        body["user_id"] = inp.user_id
    if inp.query.strip():
        body |= {"query": inp.query, "top_k": MEMORY_TOP_K, "quality_filter": True}
        out = call("memory.search", body, ctx.caller, ctx.deps).body
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
        body = base | {"top_k": inp.top_k, "quality_filter": True}
        if inp.user_id is not None:
            body["user_id"] = inp.user_id
        legs["memory"] = lambda: call("memory.search", body, ctx.caller, ctx.deps).body
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


# ---- memory.ask: a question answered from every plane --------------------------------------

WHOLE_DOCUMENT_CHARS = 4_000
ASK_SYSTEM = (
    "Answer the question from the numbered passages only. Cite each passage you use by its"
    " number in square brackets, as [2]. If the passages do not answer it, say so in one"
    " sentence. Do not use anything you know beyond them."
)
_URI = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>)\]]+", re.IGNORECASE)


class AskInput(AgentScoped):
    agent: Ident = "*"
    user_id: Ident | None = None
    question: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    top_k: int = Field(default=8, ge=1, le=50)
    synthesize: bool = False


class Passage(OpOutput):
    source: Literal["memory", "knowledge", "transcript"]
    text: str
    score: float
    key: str | None = None
    version: int | None = None
    uri: str | None = None
    chunk: int | None = None
    whole_document: bool = False


class AskOutput(OpOutput):
    passages: list[Passage]
    pending_extraction: bool
    answer: str | None = None
    answer_error: str | None = None


def _memory_passages(inp: AskInput, ctx: OpContext) -> tuple[list[Passage], bool]:
    body: dict[str, Any] = {
        "namespace": inp.namespace,
        "agent": inp.agent,
        "query": inp.question,
        "top_k": inp.top_k,
        "quality_filter": True,
    }
    if inp.user_id is not None:
        body["user_id"] = inp.user_id
    out = call("memory.search", body, ctx.caller, ctx.deps).body
    passages = [
        Passage(
            source="transcript" if h["kind"] == "chunk" else "memory",
            text=h["value"],
            score=h["score"],
            key=h["key"],
            version=h["version"],
        )
        for h in out["hits"]
    ]
    return passages, bool(out["pending_extraction"])


def _knowledge_passages(inp: AskInput, ctx: OpContext) -> list[Passage]:
    """The served chunks; a document the question names by uri, or a short best hit, whole."""
    hits = served_chunks(
        ctx.deps, ctx.caller, inp.org, inp.namespace, inp.agent, inp.question, inp.top_k
    )
    named = [m.group(0).rstrip(".,;:!?") for m in _URI.finditer(inp.question)]
    wanted = named or ([hits[0]["uri"]] if hits else [])
    whole = whole_documents(
        ctx.deps,
        ctx.caller,
        inp.org,
        inp.namespace,
        inp.agent,
        wanted,
        max_chars=None if named else WHOLE_DOCUMENT_CHARS,
    )
    passages = [
        Passage(source="knowledge", text=d["text"], score=1.0, uri=d["uri"], whole_document=True)
        for d in whole
    ]
    shown = {d["uri"] for d in whole}
    passages += [
        Passage(
            source="knowledge", text=h["excerpt"], score=h["score"], uri=h["uri"], chunk=h["chunk"]
        )
        for h in hits
        if h["uri"] not in shown
    ]
    return passages


def _synthesized(
    ctx: OpContext, org: str, question: str, passages: list[Passage]
) -> tuple[str, str]:
    """The model's answer from the passages, or why there is none (the passages stand alone)."""
    llm = ctx.deps.llm
    if not llm.answers:
        return "", "no model is configured (LOOM_LLM_PROVIDER)"
    try:
        if ctx.deps.model_calls_off(org):
            return "", "the org's model calls are switched off (model_calls_off)"
    except UnavailableError as exc:  # the switch unread for too long: no call, fail open
        return "", exc.message
    if not passages:
        return "", "no passage to answer from"
    numbered = "\n\n".join(f"[{i}] ({p.source}) {p.text}" for i, p in enumerate(passages, 1))
    try:
        result = llm.complete(ASK_SYSTEM, f"Question: {question}\n\nPassages:\n{numbered}")
    except LLMError as exc:
        return "", f"the model failed: {exc}"
    if is_sensitive(result.text):
        return "", "the model's answer reads as high and is withheld"
    return result.text.strip(), ""


@op("memory.ask", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def memory_ask(inp: AskInput, ctx: OpContext) -> AskOutput:
    """A question answered from every plane: `passages` (memory facts, knowledge chunks and the
    transcript chunks extraction kept, each with its source and score). A question naming a
    document's uri, or whose best knowledge hit is a document of at most 4,000 characters,
    gets that whole document as one passage. With `synthesize` and a configured model, an
    `answer` written from those passages only, citing them by number; with no model, or one that
    fails, the passages come back alone with `answer_error`. The agent defaults to '*'."""
    mem = run_concurrently(lambda: _memory_passages(inp, ctx))
    knowledge = _knowledge_passages(inp, ctx)
    memories, pending = mem.result()
    passages = [p for p in knowledge + memories if not is_sensitive(p.text)]
    passages.sort(key=lambda p: (not p.whole_document, -p.score))
    out = AskOutput(passages=passages, pending_extraction=pending)
    if inp.synthesize:
        answer, error = _synthesized(ctx, inp.org, inp.question, passages)
        out.answer, out.answer_error = (answer or None), (error or None)
    return out


# ---- memory.stack: what Loom knows about this user -----------------------------------------


class StackInput(AgentScoped):
    user_id: Ident | None = None
    limit: int = Field(default=50, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(max_length=2_000)] | None = None


class StackMemory(OpOutput):
    key: str
    value: str
    tags: list[str]
    user_id: str
    version: int
    kind: str
    pinned: bool
    confidence: float
    updated_at: datetime


class StackDocument(OpOutput):
    uri: str
    title: str
    tags: list[str]
    version: int
    updated_at: datetime
    chars: int


class StackOutput(OpOutput):
    documents: list[StackDocument]
    memories: list[StackMemory]
    filtered: dict[str, int]
    next_cursor: str | None
    pending_extraction: bool


def _stack_cursor(key: list[Any] | None) -> str | None:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode() if key else None


def _stack_after(cursor: str | None) -> list[Any] | None:
    """The sort key a cursor carries; one this server did not issue is a 400."""
    if cursor is None:
        return None
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        # (not pinned, -confidence, -updated_at in microseconds, user_id, key)
        kinds: tuple[tuple[type, ...], ...] = ((bool,), (int, float), (int,), (str,), (str,))
        if (
            not isinstance(key, list)
            or len(key) != 5
            or not all(
                isinstance(v, t)
                and (t == (bool,) or not isinstance(v, bool))
                and unstorable(v) is None
                for v, t in zip(key, kinds, strict=True)
            )
        ):
            raise ValueError("not a stack cursor")
        key[1] = float(key[1])
    except (ValueError, TypeError, RecursionError) as exc:
        raise BadRequestError("cursor is not one this server issued; pass next_cursor") from exc
    return key


@op("memory.stack", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def memory_stack(inp: StackInput, ctx: OpContext) -> StackOutput:
    """The scope's memories with no query: pinned first, then by confidence and recency, junk
    left out (`filtered` counts it by class), a page at a time (`next_cursor`); the knowledge
    documents served to this agent are listed first, on the first page. Text that reads as high
    is never returned."""
    after = _stack_after(inp.cursor)
    users = read_users(ctx.caller, inp.user_id)
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = memory_store.stack_page(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            users=users,
            kinds=["fact", "record", "digest"],
            after=after,
            limit=inp.limit,
        )
        shown = [r for r in rows if not shows_high(r)]
        kept, filtered = filter_ranked(conn, ctx.deps, inp.org, inp.namespace, shown, len(shown))
        pending = has_pending(conn, inp.org, inp.namespace, users)
    documents = []
    if after is None:
        documents = served_document_list(
            ctx.deps, ctx.caller, inp.org, inp.namespace, inp.agent, limit=KNOWLEDGE_TOP_K
        )
    return StackOutput(
        documents=[StackDocument.model_validate(d) for d in documents],
        memories=[StackMemory(**{k: r[k] for k in StackMemory.model_fields}) for r in kept],
        filtered=filtered,
        next_cursor=_stack_cursor(rows[-1]["stack_key"]) if len(rows) == inp.limit else None,
        pending_extraction=pending,
    )
