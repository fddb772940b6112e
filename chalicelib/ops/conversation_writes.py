"""Writing the transcript: append a turn, create or update a thread, delete a thread."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator, model_validator

from chalicelib.errors import BadRequestError
from chalicelib.ops.common import AgentScoped, Ident, OpOutput, check_turn_key
from chalicelib.ops.conversation_fields import (
    Content,
    MsgId,
    Role,
    ThreadId,
    any_agent,
    metadata_bounded,
)
from chalicelib.registry import OpContext, op
from chalicelib.services.turn_writer import AppendReason, record_turns
from chalicelib.store.compaction_rows import SUMMARY_ID_PREFIX
from chalicelib.store.namespaces import ensure_namespace
from chalicelib.store.threads import update_thread, upsert_thread
from chalicelib.store.turn_tombstones import delete_thread
from chalicelib.store.turn_writes import NewTurn


def derive_msg_id(thread_id: str, role: str, content: str) -> str:
    """The server's id for a turn sent without one: a hash of thread, role and content."""
    digest = hashlib.sha256(f"{thread_id}\x1f{role}\x1f{content}".encode()).hexdigest()
    return f"h-{digest[:32]}"


DERIVED_MSG_ID_SHAPE = derive_msg_id("", "", "")  # any derived id is this long


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

    _bounded = field_validator("metadata")(metadata_bounded)

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

    _bounded = field_validator("metadata")(metadata_bounded)


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

    _bounded = field_validator("metadata")(metadata_bounded)


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
