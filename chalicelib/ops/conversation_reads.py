"""Reading the transcript: one thread (get), its turns by cursor (list), recent threads."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from chalicelib.cursors import decode_cursor, encode_cursor
from chalicelib.errors import ValidationFailedError
from chalicelib.ops.common import AgentScoped, Ident, OpOutput, OrgScoped
from chalicelib.ops.conversation_fields import ThreadId, any_agent
from chalicelib.registry import OpContext, op
from chalicelib.sensitivity import is_sensitive, is_sensitive_excerpt
from chalicelib.store.threads import get_thread, recent_threads
from chalicelib.store.turn_pages import count_live_turns, page_turns

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
        title="" if is_sensitive(thread.get("title", "")) else thread.get("title", ""),
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
            "title": "" if is_sensitive(r["title"]) else r["title"],
            "agent": r["agent"],
            "msg_count": r["msg_count"],
            "last_excerpt": "" if is_sensitive_excerpt(last, shown) else last[:shown],
            "last_ts": r["last_ts"],
        }
        out.append({k: summary[k] for k in wanted})
    return ThreadsOutput(threads=out)
