"""The observe plane: tool observations recorded as they happen; no model call."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, StringConstraints

from chalicelib.ops.common import AgentScoped, Ident, Moment, OpOutput
from chalicelib.ops.memory import USER_SCOPES, write_user
from chalicelib.registry import OpContext, op
from chalicelib.store import observations as store

Text = Annotated[str, StringConstraints(max_length=20_000)]
Path = Annotated[str, StringConstraints(max_length=1000)]
SessionId = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class RecordInput(AgentScoped):
    session_id: SessionId
    user_id: Ident = "-"
    run_id: Ident = "-"
    tool: Annotated[str, StringConstraints(max_length=200)] = ""
    action: Annotated[str, StringConstraints(min_length=1, max_length=2000)]
    input: Text = ""
    output: Text = ""
    files: Annotated[
        list[Annotated[str, StringConstraints(max_length=1000)]], Field(max_length=100)
    ] = Field(default_factory=list)
    ts: Moment | None = None


class RecordOutput(OpOutput):
    observation_id: int
    session_id: str
    ts: datetime


@op("observe.record", role="writer", kind="write", mcp="all", scopes=USER_SCOPES)
def observe_record(inp: RecordInput, ctx: OpContext) -> RecordOutput:
    """Record one tool observation into the episodic plane, verbatim."""
    with ctx.deps.pool.connection() as conn:
        obs_id, ts = store.record(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            agent=inp.agent,
            user_id=write_user(ctx.caller, inp.user_id),
            session_id=inp.session_id,
            tool=inp.tool,
            action=inp.action,
            input_text=inp.input,
            output_text=inp.output,
            files=inp.files,
            ts=inp.ts,
        )
    return RecordOutput(observation_id=obs_id, session_id=inp.session_id, ts=ts)


class CrystallizeInput(AgentScoped):
    session_id: SessionId
    user_id: Ident = "-"


class CrystallizeOutput(OpOutput):
    session_id: str
    observations: int


@op("observe.crystallize", role="writer", kind="idempotent", mcp="all", scopes=USER_SCOPES)
def observe_crystallize(inp: CrystallizeInput, ctx: OpContext) -> CrystallizeOutput:
    """Mark the caller's user's observations of a session ready for the observe_extract
    worker; other users' observations of the same session id are left alone."""
    user_id = write_user(ctx.caller, inp.user_id)
    with ctx.deps.pool.connection() as conn:
        n = store.crystallize(conn, inp.org, inp.namespace, inp.session_id, user_id)
    return CrystallizeOutput(session_id=inp.session_id, observations=n)
