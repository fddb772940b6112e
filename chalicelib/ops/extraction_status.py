"""Deferred batches: the namespace's view, and an agent's own batches by queue_id."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.auth import Caller, ReadScope
from chalicelib.errors import ForbiddenError
from chalicelib.ops.common import AgentScoped, OpOutput
from chalicelib.providers.queue import send_committed
from chalicelib.registry import OpContext, op
from chalicelib.store import extraction_queue as store
from chalicelib.store.pool import autocommit_connection

QueueId = Annotated[str, StringConstraints(min_length=1, max_length=100)]
EXPIRED_DAYS = 29
USER_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user")


class Batch(OpOutput):
    queue_id: str
    status: str
    attempts: int
    sizes: dict[str, Any]
    last_error: str
    held_reason: str = ""
    created_at: datetime
    updated_at: datetime


def _refuse_unpinned_user_bound(caller: Caller) -> None:
    """A token bounded to own_user that pins no user has no user whose batches it may read."""
    if caller.read_scope == "own_user" and caller.read_user_id is None:
        raise ForbiddenError("a token bounded to a user it does not pin cannot read batches")


class StatusInput(AgentScoped):
    queue_ids: Annotated[list[QueueId], Field(max_length=100)] | None = None
    status: Literal["pending", "running", "held", "done", "failed"] | None = None
    limit: int = Field(default=50, ge=1, le=200)


class StatusOutput(OpOutput):
    batches: list[Batch]


@op("memory.extraction_status", role="viewer", kind="read", mcp="hidden", scopes=USER_SCOPES)
def extraction_status(inp: StatusInput, ctx: OpContext) -> StatusOutput:
    """The namespace's deferred batches by id or status; a user-bounded token sees its user's."""
    _refuse_unpinned_user_bound(ctx.caller)
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = store.statuses(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            queue_ids=inp.queue_ids,
            status=inp.status,
            principal=None,
            only_principal=False,
            user_id=ctx.caller.read_user_id,
            limit=inp.limit,
        )
    return StatusOutput(batches=[Batch(**r) for r in rows])


class MineInput(AgentScoped):
    queue_ids: Annotated[list[QueueId], Field(min_length=1, max_length=20)]


class MineOutput(OpOutput):
    batches: list[Batch]
    unknown: list[str]


def _own_batches(ctx: OpContext, inp: MineInput) -> dict[str, dict[str, Any]]:
    """Only what this principal queued in this namespace, inside its read scope."""
    caller: Caller = ctx.caller
    _refuse_unpinned_user_bound(caller)
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = store.statuses(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            queue_ids=inp.queue_ids,
            status=None,
            principal=caller.principal,
            only_principal=True,
            user_id=caller.read_user_id,
            limit=len(inp.queue_ids),
        )
    return {r["queue_id"]: r for r in rows}


@op("memory.extraction_status_mine", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def extraction_status_mine(inp: MineInput, ctx: OpContext) -> MineOutput:
    """Each of the caller's own batches; any other id comes back in `unknown`."""
    mine = _own_batches(ctx, inp)
    return MineOutput(
        batches=[Batch(**mine[q]) for q in inp.queue_ids if q in mine],
        unknown=[q for q in inp.queue_ids if q not in mine],
    )


class RetryOutput(OpOutput):
    requeued: list[str]
    expired: list[str]
    model_calls_off: list[str]
    left_alone: list[str]
    unknown: list[str]


@op("memory.extraction_retry_mine", role="writer", kind="idempotent", mcp="all", scopes=USER_SCOPES)
def extraction_retry_mine(inp: MineInput, ctx: OpContext) -> RetryOutput:
    """Replay the caller's failed batches once more; waiting or done batches are left alone."""
    mine = _own_batches(ctx, inp)
    now = ctx.deps.clock()
    expired = [
        q for q, r in mine.items()
        if r["status"] == "failed" and (now - r["created_at"]).days >= EXPIRED_DAYS
    ]  # fmt: skip
    failed = [q for q, r in mine.items() if r["status"] == "failed" and q not in expired]
    off: list[str] = []
    if failed and ctx.deps.model_calls_off(inp.org):  # no new retry while switched off
        failed, off = [], failed
    with ctx.deps.pool.connection() as conn:
        requeued = store.request_retry(conn, failed, EXPIRED_DAYS)
    for queue_id in requeued:
        send_committed(ctx.deps.queue, queue_id)
    done = set(requeued) | set(expired) | set(off)
    return RetryOutput(
        requeued=[q for q in inp.queue_ids if q in requeued],
        expired=[q for q in inp.queue_ids if q in expired],
        model_calls_off=[q for q in inp.queue_ids if q in off],
        left_alone=[q for q in inp.queue_ids if q in mine and q not in done],
        unknown=[q for q in inp.queue_ids if q not in mine],
    )
