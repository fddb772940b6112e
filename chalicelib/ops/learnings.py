"""learnings.list and learnings.review: an admin reads the rules bots stated about themselves,
with the end users' quotes that support them, and promotes or rejects each (extraction.txt;
knowledge-and-agent-reads.md, "Learnings"; decision 0027)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.cursors import decode_cursor, encode_cursor
from chalicelib.errors import ConflictError
from chalicelib.ops.common import Ident, OpOutput, OrgScoped
from chalicelib.ops.knowledge import PublishInput, publish
from chalicelib.registry import OpContext, op
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.memory_writer import Entry, write_entries
from chalicelib.store import learnings as store
from chalicelib.store.pool import autocommit_connection

Status = Literal["pending", "promoted", "rejected"]
CandidateId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class ListInput(OrgScoped):
    status: Status | None = None
    agent: Ident | None = None
    limit: int = Field(default=50, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(max_length=2_000)] | None = None


class Rationale(OpOutput):
    user_quote: str  # the user turn before the assistant stated the rule
    rule_quote: str  # the rule as the assistant said it


class Candidate(OpOutput):
    candidate_id: str
    agent: str
    key: str
    text: str
    support: int
    rationale: Rationale | None
    status: Status
    destination: str
    decided_by: str
    decided_at: datetime | None
    note: str
    created_at: datetime


class ListOutput(OpOutput):
    candidates: list[Candidate]
    next_cursor: str | None


@op("learnings.list", role="admin", kind="read", mcp="unlisted")
def list_learnings(inp: ListInput, ctx: OpContext) -> ListOutput:
    """The namespace's learnings review queue, newest first, filtered by `status` and `agent`:
    each candidate's rule, its supporters left (`support`) and, as `rationale`, the earliest
    remaining supporter's quotes. At most 200 a page."""
    before = None
    if inp.cursor:
        ts, (cid,) = decode_cursor(inp.cursor, 1)
        before = (ts, cid)
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = store.list_candidates(
            conn, inp.org, inp.namespace, status=inp.status, agent=inp.agent,
            limit=inp.limit + 1, before=before,
        )  # fmt: skip
    more, rows = len(rows) > inp.limit, rows[: inp.limit]
    last = rows[-1] if rows else None
    cursor = encode_cursor(last["created_at"], last["candidate_id"]) if more and last else None
    return ListOutput(candidates=[_candidate(r) for r in rows], next_cursor=cursor)


def _candidate(row: dict[str, Any]) -> Candidate:
    """A listed candidate; a quote that reads as high today is shown blank."""
    rationale = None
    if row["support"]:
        rationale = Rationale(
            user_quote=_guarded(row["user_quote"]), rule_quote=_guarded(row["rule_quote"])
        )
    fields = {k: row[k] for k in Candidate.model_fields if k in row}
    return Candidate(**fields | {"rationale": rationale})


def _guarded(quote: str | None) -> str:
    return "" if not quote or is_sensitive(quote) else quote


class ReviewInput(OrgScoped):
    candidate_id: CandidateId
    decision: Literal["promote", "reject"]
    destination: Literal["knowledge", "memory"] = "knowledge"
    note: Annotated[str, StringConstraints(max_length=2_000)] = ""


class ReviewOutput(OpOutput):
    found: bool
    candidate_id: str
    status: Status | None = None
    version: int = 0
    destination: str = ""
    uri: str = ""  # the learning://<candidate_id> document a knowledge promotion published
    key: str = ""  # the agent memory's key a memory promotion wrote


@op("learnings.review", role="admin", kind="write", audited=True, mcp="unlisted")
def review(inp: ReviewInput, ctx: OpContext) -> ReviewOutput:
    """Promote or reject one candidate. A promotion to knowledge (the default) publishes the
    rule as learning://<candidate_id>, tagged agent:<agent> (none for a rule of every agent)
    and authored by the reviewer, served to that bot's reads only; to memory, it writes the
    agent's memory row (user_id -, source learning:<candidate_id>). A rejection serves
    nothing; a promoted rule's document stays until knowledge.delete removes it. `found` is
    false for an id the queue does not hold."""
    reviewer = ctx.caller.principal or "local"
    ident = (inp.org, inp.namespace, inp.candidate_id)
    with ctx.deps.pool.connection() as conn, conn.transaction():
        row = store.lock_candidate(conn, *ident)
        if row is None:
            return ReviewOutput(found=False, candidate_id=inp.candidate_id)
        if inp.decision == "promote" and not row["text"]:
            raise ConflictError(
                f"candidate {inp.candidate_id} has no rule left to promote: its last supporter"
                " was erased; reject it, or wait for the bot to state the rule again"
            )
        status = "promoted" if inp.decision == "promote" else "rejected"
        destination = inp.destination if inp.decision == "promote" else ""
        decided = store.decide(
            conn, *ident, status=status, destination=destination, decided_by=reviewer,
            note=inp.note,
        )  # fmt: skip
    out = ReviewOutput(
        found=True, candidate_id=inp.candidate_id, status=decided["status"],
        version=decided["version"], destination=destination,
    )  # fmt: skip
    if destination == "knowledge":
        out.uri = _publish(inp, row, ctx)
    elif destination == "memory":
        out.key = _remember(inp, row, ctx, reviewer)
    return out


def _publish(inp: ReviewInput, row: dict[str, Any], ctx: OpContext) -> str:
    """The rule as a knowledge document of the namespace, tagged for its bot."""
    uri = f"{store.LEARNING_SCHEME}{inp.candidate_id}"
    tags = [] if row["agent"] == "-" else [f"agent:{row['agent']}"]
    doc = PublishInput(
        org=inp.org, namespace=inp.namespace, uri=uri, title=row["key"], text=row["text"],
        tags=tags,
    )  # fmt: skip
    publish(doc, ctx)
    return uri


def _remember(inp: ReviewInput, row: dict[str, Any], ctx: OpContext, reviewer: str) -> str:
    """The rule as the agent's memory row, shared by the namespace's users (user_id -)."""
    write_entries(
        ctx.deps, org=inp.org, namespace=inp.namespace, user_id="-",
        entries=[Entry(key=row["key"], value=row["text"])],
        source=f"learning:{inp.candidate_id}", agent=row["agent"], principal=reviewer,
    )  # fmt: skip
    return str(row["key"])
