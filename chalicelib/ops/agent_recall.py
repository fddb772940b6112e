"""The reads that recall for an agent: memory.ask (a question answered from every plane)
and memory.stack (what Loom knows about a user, without a query)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from chalicelib.concurrent_work import run_concurrently
from chalicelib.cursors import decode_key, encode_key
from chalicelib.errors import UnavailableError
from chalicelib.ops.agent_context import KNOWLEDGE_TOP_K, USER_SCOPES, memory_search
from chalicelib.ops.common import AgentScoped, Ident, OpOutput
from chalicelib.ops.memory import read_users, shows_high
from chalicelib.providers.llm import LLMError
from chalicelib.registry import OpContext, op
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.knowledge_reads import (
    served_chunks,
    served_document_list,
    whole_documents,
)
from chalicelib.services.memory_quality import filter_ranked
from chalicelib.store import memories as memory_store
from chalicelib.store.extraction_queue import has_pending
from chalicelib.store.pool import autocommit_connection

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
    out = memory_search(ctx, inp, inp.user_id, inp.question, inp.top_k)
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


# A stack page's sort key: (not pinned, -confidence, -updated_at in microseconds, user_id, key).
STACK_KEY = (bool, float, int, str, str)


@op("memory.stack", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def memory_stack(inp: StackInput, ctx: OpContext) -> StackOutput:
    """The scope's memories with no query: pinned first, then by confidence and recency, junk
    left out (`filtered` counts it by class), a page at a time (`next_cursor`); the knowledge
    documents served to this agent are listed first, on the first page. Text that reads as high
    is never returned."""
    after = decode_key(inp.cursor, STACK_KEY) if inp.cursor is not None else None
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
        next_cursor=encode_key(*rows[-1]["stack_key"]) if len(rows) == inp.limit else None,
        pending_extraction=pending,
    )
