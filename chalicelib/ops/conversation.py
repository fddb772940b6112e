"""The conversation plane, transcript half: record, read, search and delete turns."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from chalicelib.cursors import decode_cursor, encode_cursor
from chalicelib.errors import BadRequestError, ValidationFailedError
from chalicelib.ops.common import AgentScoped, Ident, OpOutput, OrgScoped, check_turn_key
from chalicelib.ops.turn_writer import AppendReason, record_turns
from chalicelib.registry import OpContext, op
from chalicelib.search.store_vectors import TurnFilter
from chalicelib.search.turns import SearchMode, search_turns
from chalicelib.sensitivity import excerpt_reads_as_high, reads_as_high
from chalicelib.store.compaction_rows import SUMMARY_ID_PREFIX
from chalicelib.store.namespaces import (
    conversation_logging_enabled,
    ensure_namespace,
    org_namespaces,
    set_conversation_logging,
)
from chalicelib.store.pool import read_connection
from chalicelib.store.threads import get_thread, recent_threads, update_thread, upsert_thread
from chalicelib.store.turn_pages import count_live_turns, page_turns
from chalicelib.store.turn_tombstones import delete_thread
from chalicelib.store.turn_writes import NewTurn

Role = Literal["user", "assistant", "system", "tool"]
ThreadId = Annotated[str, StringConstraints(min_length=1, max_length=256)]
MsgId = Annotated[str, StringConstraints(max_length=256)]
Content = Annotated[str, StringConstraints(max_length=1_000_000)]
MAX_METADATA_BYTES = 64 * 1024
ANY_AGENT = ("", "-", "*")


def _metadata_bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value, default=str)) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes of JSON")
    return value


def any_agent(agent: str) -> str | None:
    """'' / '-' / '*' read every agent's turns; any other value reads that agent's."""
    return None if agent in ANY_AGENT else agent


def derive_msg_id(thread_id: str, role: str, content: str) -> str:
    """The server's id for a turn sent without one: a hash of thread, role and content."""
    digest = hashlib.sha256(f"{thread_id}\x1f{role}\x1f{content}".encode()).hexdigest()
    return f"h-{digest[:32]}"


DERIVED_MSG_ID_SHAPE = derive_msg_id("", "", "")  # any derived id is this long


# ---- set_logging ---------------------------------------------------------------------------


class SetLoggingInput(OrgScoped):
    enabled: bool


class SetLoggingOutput(OpOutput):
    namespace: str
    enabled: bool


@op(
    "conversation.set_logging",
    role="admin",
    kind="idempotent",
    audited=True,
    mcp="unlisted",
)
def set_logging(inp: SetLoggingInput, ctx: OpContext) -> SetLoggingOutput:
    """Switch transcript recording for one namespace (off until an admin turns it on)."""
    with ctx.deps.pool.connection() as conn:
        enabled = set_conversation_logging(conn, inp.org, inp.namespace, inp.enabled)
    return SetLoggingOutput(namespace=inp.namespace, enabled=enabled)


class GetLoggingInput(OrgScoped):
    pass


@op("conversation.get_logging", role="viewer", kind="read", mcp="unlisted")
def get_logging(inp: GetLoggingInput, ctx: OpContext) -> SetLoggingOutput:
    """Whether this namespace records transcripts (false for a namespace never switched on)."""
    with read_connection(ctx.deps.pool) as conn:
        enabled = conversation_logging_enabled(conn, inp.org, inp.namespace)
    return SetLoggingOutput(namespace=inp.namespace, enabled=enabled)


# ---- append --------------------------------------------------------------------------------


class AppendInput(AgentScoped):
    thread_id: ThreadId
    msg_id: MsgId = ""
    role: Role
    content: Content
    reasoning: Content = ""
    user_id: Ident = "-"
    run_id: Ident = "-"
    metadata: dict[str, Any] = Field(default_factory=dict)
    tokens: int = Field(default=0, ge=0, le=2**31 - 1)

    _bounded = field_validator("metadata")(_metadata_bounded)

    @field_validator("msg_id")
    @classmethod
    def _not_a_summary_id(cls, msg_id: str) -> str:
        # Compaction alone writes summaries: a client turn under such an id would be taken
        # for one (erased with the turns it names, retired unread by the next compaction).
        if msg_id.startswith(SUMMARY_ID_PREFIX):
            raise ValueError(
                f"msg_id may not start with {SUMMARY_ID_PREFIX!r}: compaction writes those"
            )
        return msg_id

    @model_validator(mode="after")
    def _key_fits(self) -> AppendInput:
        msg_id = self.msg_id or DERIVED_MSG_ID_SHAPE  # as long as the id derived for it
        check_turn_key(self.org, self.namespace, self.thread_id, msg_id, self.agent)
        return self


class AppendOutput(OpOutput):
    msg_id: str
    ts: datetime
    stored: bool
    reason: AppendReason


@op("conversation.append", role="writer", kind="idempotent", mcp="all")
def append(inp: AppendInput, ctx: OpContext) -> AppendOutput:
    """Log one turn, once; embed it for search when it is a plain user or assistant turn."""
    turn = NewTurn(
        org=inp.org,
        namespace=inp.namespace,
        thread_id=inp.thread_id,
        agent=inp.agent,
        msg_id=inp.msg_id or derive_msg_id(inp.thread_id, inp.role, inp.content),
        role=inp.role,
        content=inp.content,
        reasoning=inp.reasoning,
        user_id=inp.user_id,
        run_id=inp.run_id,
        metadata=inp.metadata,
        tokens=inp.tokens,
    )
    (done,) = record_turns(ctx.deps, [turn])
    return AppendOutput(msg_id=done.msg_id, ts=done.ts, stored=done.stored, reason=done.reason)


# ---- create / update -----------------------------------------------------------------------


class CreateInput(AgentScoped):
    thread_id: ThreadId
    title: Annotated[str, StringConstraints(max_length=1000)] = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    run_id: Ident = "-"
    user_id: Ident = "-"

    _bounded = field_validator("metadata")(_metadata_bounded)


class CreateOutput(OpOutput):
    thread_id: str
    created_at: datetime


@op("conversation.create", role="writer", kind="idempotent", mcp="unlisted")
def create(inp: CreateInput, ctx: OpContext) -> CreateOutput:
    """Open (or re-open) a thread row: title, metadata and run_id up front."""
    with ctx.deps.pool.connection() as conn:
        ensure_namespace(conn, inp.org, inp.namespace)
        written = upsert_thread(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            thread_id=inp.thread_id,
            agent=inp.agent,
            title=inp.title,
            metadata=inp.metadata,
            run_id=inp.run_id or "-",  # "" is no run, as update reads it
            user_id=inp.user_id,
        )
    return CreateOutput(thread_id=inp.thread_id, created_at=written)


class UpdateInput(AgentScoped):
    thread_id: ThreadId
    title: Annotated[str, StringConstraints(max_length=1000)] | None = None
    metadata: dict[str, Any] | None = None
    run_id: Ident | None = None

    _bounded = field_validator("metadata")(_metadata_bounded)


class UpdateOutput(OpOutput):
    updated: bool
    thread_id: str
    updated_at: datetime | None


@op("conversation.update", role="writer", kind="idempotent", mcp="unlisted")
def update(inp: UpdateInput, ctx: OpContext) -> UpdateOutput:
    """Change a thread's title, metadata (replaced whole) or run_id ("" detaches it)."""
    run_id = None if inp.run_id in (None, "-") else (inp.run_id or "-")
    if inp.title is None and inp.metadata is None and run_id is None:
        raise BadRequestError("conversation.update needs at least one of title, metadata, run_id")
    with ctx.deps.pool.connection() as conn:
        updated_at = update_thread(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            thread_id=inp.thread_id,
            title=inp.title,
            metadata=inp.metadata,
            run_id=run_id,
        )
    return UpdateOutput(
        updated=updated_at is not None, thread_id=inp.thread_id, updated_at=updated_at
    )


# ---- get / list ----------------------------------------------------------------------------


class TurnOut(OpOutput):
    msg_id: str
    thread_id: str
    role: str
    content: str
    reasoning: str
    agent: str
    user_id: str
    run_id: str
    metadata: dict[str, Any]
    tokens: int
    ts: datetime


def within_bytes(rows: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The first turns whose JSON, as the answer writes it, fits in `budget` bytes; the first
    turn always, so a page of one turn larger than the budget still moves the reader on."""
    kept: list[dict[str, Any]] = []
    used = 0
    for row in rows:
        size = len(json.dumps(TurnOut(**row).model_dump(mode="json"), separators=(",", ":")))
        if kept and used + size > budget:
            break
        kept.append(row)
        used += size
    return kept


class GetInput(AgentScoped):
    thread_id: ThreadId
    include_messages: bool = False
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=1_000_000)
    order: Literal["asc", "desc"] = "asc"


class GetOutput(OpOutput):
    found: bool
    thread_id: str
    title: str
    metadata: dict[str, Any]
    run_id: str
    user_id: str
    agent: str
    created_at: datetime | None
    updated_at: datetime | None
    msg_count: int
    messages: list[TurnOut]
    next_cursor: str | None


@op("conversation.get", role="viewer", kind="read", mcp="unlisted")
def get(inp: GetInput, ctx: OpContext) -> GetOutput:
    """One thread's metadata, and a page of its turns when asked.

    A page ends early once its turns reach LOOM_CONVERSATION_PAGE_MAX_BYTES of JSON (1 MiB by
    default; one turn always): the next starts at offset + len(messages)."""
    agent = any_agent(inp.agent)
    scope = (inp.org, inp.namespace, inp.thread_id)
    with ctx.deps.pool.connection() as conn:
        thread = get_thread(conn, *scope)
        msg_count = count_live_turns(conn, *scope, agent)
        # Found: a thread row, or any agent's live turn (this agent may have none).
        found = bool(thread) or msg_count > 0
        if not found and agent is not None:
            found = count_live_turns(conn, *scope, None) > 0
        rows: list[dict[str, Any]] = []
        if inp.include_messages:
            budget = ctx.live().conversation_page_max_bytes
            fetched, _ = page_turns(
                conn,
                org=inp.org,
                namespace=inp.namespace,
                thread_id=inp.thread_id,
                agent=agent,
                limit=inp.limit,
                max_bytes=budget,
                offset=inp.offset,
                descending=inp.order == "desc",
            )
            rows = within_bytes(fetched, budget)
    # A page the byte budget cut short goes on at offset + len(messages), or at next_cursor.
    more = inp.order == "asc" and rows and inp.offset + len(rows) < msg_count
    next_cursor = encode_cursor(rows[-1]["ts"], rows[-1]["msg_id"]) if more else None
    latest_writer = max(rows, key=lambda r: (r["ts"], r["msg_id"]))["agent"] if rows else ""
    thread = thread or {}
    created = thread.get("origin") == "create"  # a titler's row: the thread is appends only
    return GetOutput(
        found=found,
        thread_id=inp.thread_id,
        title="" if reads_as_high(thread.get("title", "")) else thread.get("title", ""),
        metadata=thread.get("metadata", {}),
        run_id=thread.get("run_id", "-"),
        user_id=thread.get("user_id", "-"),
        agent=thread["agent"] if created else latest_writer,
        created_at=thread["created_at"] if created else None,
        updated_at=thread["updated_at"] if created else None,
        msg_count=msg_count,
        messages=[TurnOut(**r) for r in rows],
        next_cursor=next_cursor,
    )


class ListInput(AgentScoped):
    thread_id: ThreadId
    run_id: Ident | None = None
    limit: int = Field(default=100, ge=1, le=1000)
    cursor: str | None = None


class ListOutput(OpOutput):
    rows: list[TurnOut]
    next_cursor: str | None


@op("conversation.list", role="viewer", kind="read", mcp="unlisted")
def list_turns(inp: ListInput, ctx: OpContext) -> ListOutput:
    """A thread's turns, oldest first, by keyset cursor: no turn skipped or repeated.

    A page ends early once its turns reach LOOM_CONVERSATION_PAGE_MAX_BYTES of JSON (1 MiB by
    default; one turn always); next_cursor goes on from the last turn it holds."""
    after = None
    if inp.cursor:
        ts, (msg_id,) = decode_cursor(inp.cursor, 1)
        after = (ts, msg_id)
    budget = ctx.live().conversation_page_max_bytes
    with ctx.deps.pool.connection() as conn:
        rows, held = page_turns(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            thread_id=inp.thread_id,
            agent=any_agent(inp.agent),
            limit=inp.limit + 1,  # one more than the page: whether a next page exists
            max_bytes=budget,
            after=after,
            run_id=None if inp.run_id in (None, "-") else inp.run_id,
        )
    page = within_bytes(rows[: inp.limit], budget)
    more = len(page) < held  # turns past the limit, or cut by the byte budget
    return ListOutput(
        rows=[TurnOut(**r) for r in page],
        next_cursor=encode_cursor(page[-1]["ts"], page[-1]["msg_id"]) if more else None,
    )


# ---- threads -------------------------------------------------------------------------------

THREAD_FIELDS = ("thread_id", "title", "agent", "msg_count", "last_excerpt", "last_ts")


class ThreadsInput(OrgScoped):
    agent: Ident = "*"
    window_days: int = Field(default=30, ge=1, le=365)
    limit: int = Field(default=30, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=100_000)
    fields: list[str] | None = None


class ThreadsOutput(OpOutput):
    threads: list[dict[str, Any]]


@op("conversation.threads", role="viewer", kind="read", mcp="all")
def threads(inp: ThreadsInput, ctx: OpContext) -> ThreadsOutput:
    """Recent threads, newest first; a last turn or title that reads as high shows empty."""
    wanted = inp.fields or list(THREAD_FIELDS)
    unknown = sorted(set(wanted) - set(THREAD_FIELDS))
    if unknown:
        raise ValidationFailedError(
            f"fields: unknown {', '.join(unknown)}; known: {', '.join(THREAD_FIELDS)}"
        )
    shown = ctx.live().conversation_search_excerpt_chars
    with ctx.deps.pool.connection() as conn:
        rows = recent_threads(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            agent=any_agent(inp.agent),
            window_days=inp.window_days,
            limit=inp.limit,
            offset=inp.offset,
        )
    out = []
    for r in rows:
        last = r["last_content"]
        summary = {
            "thread_id": r["thread_id"],
            "title": "" if reads_as_high(r["title"]) else r["title"],
            "agent": r["agent"],
            "msg_count": r["msg_count"],
            "last_excerpt": "" if excerpt_reads_as_high(last, shown) else last[:shown],
            "last_ts": r["last_ts"],
        }
        out.append({k: summary[k] for k in wanted})
    return ThreadsOutput(threads=out)


# ---- delete --------------------------------------------------------------------------------


class DeleteInput(AgentScoped):
    thread_id: ThreadId
    confirm_thread_id: str


class DeleteOutput(OpOutput):
    tombstoned_at: datetime
    thread_id: str
    rows_affected: dict[str, int]
    total: int


@op("conversation.delete", role="admin", kind="idempotent", audited=True, mcp="unlisted")
def delete(inp: DeleteInput, ctx: OpContext) -> DeleteOutput:
    """Tombstone a thread; an embedding another agent's live copy holds passes to that copy."""
    if inp.confirm_thread_id != inp.thread_id:
        raise BadRequestError("confirm_thread_id must equal thread_id; nothing was deleted")
    with ctx.deps.pool.connection() as conn:
        when, affected = delete_thread(
            conn, inp.org, inp.namespace, inp.thread_id, any_agent(inp.agent)
        )
    return DeleteOutput(
        tombstoned_at=when,
        thread_id=inp.thread_id,
        rows_affected=affected,
        total=sum(affected.values()),
    )


# ---- search --------------------------------------------------------------------------------


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
    with read_connection(ctx.deps.pool) as conn:
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
