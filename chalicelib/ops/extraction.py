"""memory.set_from_messages: the server decides what in a transcript is durable."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, date, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StringConstraints, field_validator

from chalicelib.config import Settings
from chalicelib.errors import BadRequestError, ValidationFailedError
from chalicelib.extraction.learnings import STAGE, file_agent_rules
from chalicelib.extraction.pipeline import (
    MAX_STEPS,
    ExtractionFailedError,
    Run,
    check_steps,
    is_coding_capture,
    run_pipeline,
    run_step,
)
from chalicelib.extraction.records import VALIDATION_RETRIES, extract_record
from chalicelib.extraction.steps import planned_model_calls  # (registers the default steps)
from chalicelib.ops.common import Moment, OpInput, OpOutput
from chalicelib.ops.memory import USER_SCOPES, MemoryScoped, WrittenOut, write_user
from chalicelib.providers.queue import send_committed
from chalicelib.registry import OpContext, op
from chalicelib.services.memory_writer import Entry, mint_key, write_entries
from chalicelib.store import erasure_jobs
from chalicelib.store import evidence as evidence_store
from chalicelib.store import extraction_queue as queue_store
from chalicelib.store import memories as memory_store
from chalicelib.store.extraction_support import Drop, record_drops
from chalicelib.store.pool import autocommit_connection, database_clock

MAX_INSTRUCTIONS = 4096
Short = Annotated[str, StringConstraints(max_length=2000)]
Tag = Annotated[str, StringConstraints(max_length=100)]
StepId = Annotated[str, StringConstraints(max_length=200)]


class Message(OpInput):
    role: Literal["user", "assistant", "system", "tool"]
    content: Annotated[str, StringConstraints(max_length=200_000)]
    timestamp: Moment | None = None
    name: Annotated[str, StringConstraints(max_length=200)] = ""


class SetFromMessagesInput(MemoryScoped):
    # Filled by the capture plugins and the deferred queue, not by a model: not in the MCP schema.
    mcp_hidden: ClassVar[tuple[str, ...]] = ("session_values", "request_id", "request_time")
    messages: Annotated[list[Message], Field(min_length=1, max_length=400)]
    last_messages: Annotated[list[Message], Field(max_length=20)] = Field(default_factory=list)
    observation_date: date | None = None
    # When the request was made (a deferred one is replayed later): what an unset
    # observation_date, and a turn without a timestamp, are dated by. Unset: now.
    request_time: Moment | None = None
    extra_tags: Annotated[
        list[Annotated[str, StringConstraints(max_length=100)]], Field(max_length=50)
    ] = Field(default_factory=list)
    extraction_instructions: Annotated[str, StringConstraints(max_length=MAX_INSTRUCTIONS)] = ""
    record_schema: dict[str, Any] | None = None
    # A record's key, bounded as every memory key is ("" when no record is asked for).
    memory_key: Annotated[str, StringConstraints(max_length=300, pattern=r"^([^\s\x00]+)?$")] = ""
    valid_at: Moment | None = None
    recalled_keys: Annotated[list[Short], Field(max_length=200)] = Field(default_factory=list)
    session_values: Annotated[list[Short], Field(max_length=100)] = Field(default_factory=list)
    pipeline_steps: (
        Annotated[
            list[Annotated[str, StringConstraints(max_length=200)]], Field(max_length=MAX_STEPS)
        ]
        | None
    ) = None
    defer: bool | None = None
    agent_learnings: bool | None = None
    request_id: Annotated[str, StringConstraints(max_length=100)] = ""  # replays reuse evidence

    @field_validator("record_schema")
    @classmethod
    def _schema_is_an_object(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        props = value.get("properties")
        if not isinstance(props, dict) or not all(isinstance(p, dict) for p in props.values()):
            raise ValueError("record_schema must be a JSON schema object with properties")
        required = value.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ValueError("record_schema.required must be a list of property names")
        for name, prop in props.items():
            kind = prop.get("type", "string")
            kinds = kind if isinstance(kind, list) else [kind]
            if not kinds or not all(isinstance(k, str) for k in kinds):
                raise ValueError(f"record_schema.properties.{name}.type must name JSON types")
        return value


class SetFromMessagesOutput(OpOutput):
    written: list[WrittenOut]
    deferred: bool = False
    deferred_by: str = ""
    queue_id: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    # Of tokens_in, what the provider served from its prompt cache, where it says.
    cached_tokens_in: int = 0
    # Model calls Loom's response cache answered (no tokens spent), and those prompts' tokens.
    response_cache_hits: int = 0
    response_cache_tokens_in: int = 0
    segments: int = 0
    segmenter: str = "whole"
    forgotten: int = 0
    forgotten_keys: list[str] = Field(default_factory=list)
    evidence_ids: list[int] = Field(default_factory=list)
    learning_candidates: int = 0
    stage_ms: dict[str, float] = Field(default_factory=dict)
    observation_date_source: Literal["caller", "request_time", ""] = ""
    stubbed_fields: list[str] = Field(default_factory=list)
    pipeline_errors: list[str] = Field(default_factory=list)
    under_operator_policy: bool = False


@op("memory.set_from_messages", role="writer", kind="write", mcp="core", scopes=USER_SCOPES)
def set_from_messages(inp: SetFromMessagesInput, ctx: OpContext) -> SetFromMessagesOutput:
    """Store the turns as evidence, extract durable facts, and write them with verdicts.

    One request makes at most LOOM_MEMORY_EXTRACT_MAX_MODEL_CALLS model calls (100 by
    default), each tried at most twice: one per segment of the transcript
    (LOOM_MEMORY_EXTRACT_SIZE_SEGMENT_CHARS, 12,000 characters by default), one for the
    coverage sweep and one per verifier model when those are on; a typed record takes up to 3.
    A request that could take more is refused with 422 before any call: send its turns in
    smaller requests."""
    if inp.record_schema is not None and not inp.memory_key:
        raise BadRequestError("record_schema needs memory_key: the key the record is written at")
    check_steps(inp.pipeline_steps)
    check_model_calls(inp, ctx)
    live = ctx.live()
    deps = ctx.deps
    deferred_by = _deferral(inp, ctx)
    if deferred_by is not None:
        return _enqueue(inp, ctx, deferred_by)
    policy = deps.extraction_policy(inp.org, inp.namespace)  # 503 when policies are stale
    deps.require_model_calls(inp.org)
    with autocommit_connection(deps.pool) as conn:
        began = database_clock(conn)
    now = inp.request_time or deps.clock()
    run = _new_run(inp, ctx, live, policy, now)
    # The turns are stored first, so memory.recall and memory.evidence hold them whether or
    # not anything is extracted, a failed model call included (the spec's order).
    context = _context(inp, run)
    run_step(run, "loom.store_evidence", lambda r: _store_evidence(r, now, context))
    stubbed, forgotten = _extract_and_write(run, inp, now, began)
    out = _answer(inp, run, stubbed, forgotten, under_policy=policy is not None)
    _name_unapplied(inp, ctx, out)
    return out


def _new_run(
    inp: SetFromMessagesInput,
    ctx: OpContext,
    live: Settings,
    policy: str | None,
    now: datetime,
) -> Run:
    """The extraction run of this request: who it writes for, the turns, what it reads."""
    return Run(
        deps=ctx.deps,
        caller=ctx.caller,
        live=live,
        org=inp.org,
        namespace=inp.namespace,
        agent=inp.agent,
        user_id=write_user(ctx.caller, inp.user_id),
        session_id=inp.session_id,
        request_id=inp.request_id or uuid.uuid4().hex,
        messages=[m.model_dump() for m in inp.messages],
        last_messages=[m.model_dump() for m in inp.last_messages],
        observation_date=inp.observation_date or now.astimezone(UTC).date(),
        extra_tags=inp.extra_tags,
        instructions=inp.extraction_instructions,
        policy=policy,
        recalled_keys=inp.recalled_keys,
        session_values=inp.session_values,
        valid_at=inp.valid_at,
        agent_learnings=live.memory_extract_agent_learnings
        and inp.agent_learnings is not False
        and not is_coding_capture(inp.extra_tags),  # coding captures never
    )


def _extract_and_write(
    run: Run, inp: SetFromMessagesInput, now: datetime, began: datetime
) -> tuple[list[str], list[str]]:
    """Extract from the turns and write what comes out (a typed record, or the pipeline's facts
    with their evidence links, forgets and the session digest), then settle the run, failed or
    not; the record's stubbed fields and the keys forgotten."""
    stubbed: list[str] = []
    forgotten: list[str] = []
    # What follows the extraction fails open like the pipeline's steps: a write the database
    # refuses (a digest key too wide for its index) is named in pipeline_errors, and what the
    # earlier steps wrote stands.
    try:
        if inp.record_schema is not None:
            stubbed = extract_record(run, inp.record_schema, inp.memory_key)
        else:
            run_pipeline(run, inp.pipeline_steps)
            run_step(run, STAGE, file_agent_rules)
            if run.evidence_ids:
                run_step(run, "loom.link_evidence", _link_evidence)
            run_step(run, "loom.forget", lambda r: forgotten.extend(_forget(r)))
            run_step(run, "loom.session_digest", lambda r: _write_digest_and_chunks(r, now))
    except ExtractionFailedError as exc:
        # Its calls were paid for: the 502 names their tokens, and an answer that did not
        # parse is counted in loom.memory_drops.
        exc.spent = {
            "tokens_in": run.tokens_in,
            "tokens_out": run.tokens_out,
            "cached_tokens_in": run.cached_tokens_in,
        }
        _settle(run, began)
        raise
    _settle(run, began)
    return stubbed, forgotten


def _answer(
    inp: SetFromMessagesInput,
    run: Run,
    stubbed: list[str],
    forgotten: list[str],
    *,
    under_policy: bool,
) -> SetFromMessagesOutput:
    written = [WrittenOut(**w.__dict__) for w in run.written]
    return SetFromMessagesOutput(
        written=[w for w in written if not w.key.startswith(("chunk:", "digest:"))],
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        cached_tokens_in=run.cached_tokens_in,
        response_cache_hits=run.response_cache_hits,
        response_cache_tokens_in=run.response_cache_tokens_in,
        segments=run.segments,
        segmenter=run.segmenter,
        forgotten=len(forgotten),
        forgotten_keys=forgotten,
        evidence_ids=run.evidence_ids,
        learning_candidates=run.learning_candidates,
        stage_ms=run.stage_ms,
        observation_date_source="caller" if inp.observation_date else "request_time",
        stubbed_fields=stubbed,
        pipeline_errors=run.pipeline_errors,
        under_operator_policy=under_policy,
    )


def _settle(run: Run, began: datetime) -> None:
    """Count the run's drops, and run again an erasure of this user that ran while the model
    answered: it ran before these writes (a deferred replay, or a request outlasting it)."""
    with run.deps.pool.connection() as conn:
        record_drops(conn, run.org, run.namespace, run.drops, run.user_id)
        erasure_jobs.erase_again(
            conn, org=run.org, namespace=run.namespace, user_id=run.user_id, since=began
        )


# What a request's extraction reads beside its turns: kept with them, so `loom reextract`
# replays the request as it was (a coding capture stays one, its echoes are dropped again).
REPLAYED_FIELDS = {
    "last_messages",
    "extra_tags",
    "extraction_instructions",
    "record_schema",
    "memory_key",
    "valid_at",
    "recalled_keys",
    "session_values",
}


def _context(inp: SetFromMessagesInput, run: Run) -> dict[str, Any]:
    """The request's replayed fields as sent, and the observation date it was read under (an
    unset one was the request's day: a replay later must not move it)."""
    sent = inp.model_dump(mode="json", include=REPLAYED_FIELDS, exclude_defaults=True)
    return {**sent, "observation_date": run.observation_date.isoformat()}


def check_model_calls(inp: SetFromMessagesInput, ctx: OpContext) -> None:
    """Refuse (422), before any model call and before a deferred request is queued, one whose
    extraction could make more model calls than LOOM_MEMORY_EXTRACT_MAX_MODEL_CALLS."""
    if not ctx.deps.llm.answers:
        return  # the stock fake is never called
    live = ctx.live()
    ceiling = live.memory_extract_max_model_calls
    if inp.record_schema is not None:
        needed, why = 1 + VALIDATION_RETRIES, "a typed record and its retries"
    else:
        messages = [{"content": m.content} for m in inp.messages]
        needed = planned_model_calls(messages, inp.extra_tags, inp.pipeline_steps, live)
        why = (
            f"one a segment of {live.memory_extract_size_segment_chars:,} characters, with"
            " the coverage sweep and verifiers when on"
        )
    if needed > ceiling:
        raise ValidationFailedError(
            f"messages: this request could take {needed} model calls ({why}); a request"
            f" makes at most {ceiling} (LOOM_MEMORY_EXTRACT_MAX_MODEL_CALLS): send the turns"
            " in smaller requests"
        )


def _name_unapplied(inp: SetFromMessagesInput, ctx: OpContext, out: SetFromMessagesOutput) -> None:
    """Name in ignored_args what the request asked for and the settings do not allow."""
    if inp.agent_learnings and not ctx.live().memory_extract_agent_learnings:
        out._not_applied.append("agent_learnings")  # only the setting turns it on


def _deferral(inp: SetFromMessagesInput, ctx: OpContext) -> str | None:
    """ "request" for defer=true, "allowlist" for an agent LOOM_EXTRACTION_DEFER_AGENTS names
    (typed records never), None to extract inline (an explicit defer=false always does)."""
    if inp.defer is True:
        return "request"
    if inp.defer is False or inp.record_schema is not None:
        return None
    agents = ctx.live().extraction_defer_agents
    service_account = ctx.caller.principal is not None  # a token, not the local user
    if inp.agent in agents or ("*" in agents and service_account):
        return "allowlist"
    return None


def _enqueue(inp: SetFromMessagesInput, ctx: OpContext, deferred_by: str) -> SetFromMessagesOutput:
    """Store the request, commit, then send the message that carries only its queue_id."""
    queue_id = uuid.uuid4().hex
    request = inp.model_dump(mode="json", exclude={"defer"})
    request["request_time"] = (inp.request_time or ctx.deps.clock()).isoformat()
    user = write_user(ctx.caller, inp.user_id)
    with ctx.deps.pool.connection() as conn:
        queue_store.enqueue(
            conn,
            queue_id=queue_id,
            org=inp.org,
            namespace=inp.namespace,
            agent=inp.agent,
            user_id=user,
            principal=ctx.caller.principal,
            read_user_id=ctx.caller.read_user_id,
            token_agent=ctx.caller.agent,
            request=request,
            sizes={
                "messages": len(inp.messages),
                "chars": sum(len(m.content) for m in inp.messages),
            },
        )
    send_committed(ctx.deps.queue, queue_id)
    out = SetFromMessagesOutput(
        written=[], deferred=True, deferred_by=deferred_by, queue_id=queue_id
    )
    _name_unapplied(inp, ctx, out)
    return out


def _store_evidence(run: Run, now: datetime, context: dict[str, Any]) -> None:
    """The turns, so facts trace to sentences and the raw wording stays searchable, and what
    the request read beside them. A request id whose stored turns differ from these names
    another request: these are stored apart, and the run goes on under the id they were
    stored under (the digest's key too)."""
    turns = [
        (i, m["role"], m["name"], m["content"], m["timestamp"] or now)
        for i, m in enumerate(run.messages)
    ]
    with run.deps.pool.connection() as conn:
        run.evidence_ids, run.request_id = evidence_store.store_turns(
            conn,
            org=run.org,
            namespace=run.namespace,
            user_id=run.user_id,
            agent=run.agent,
            session_id=run.session_id,
            request_id=run.request_id,
            turns=turns,
        )
        evidence_store.store_context(
            conn,
            org=run.org,
            namespace=run.namespace,
            user_id=run.user_id,
            request_id=run.request_id,
            context=context,
        )


def _link_evidence(run: Run) -> None:
    links = []
    for written in run.written:
        fact = run.written_from.get(written.key)  # by key: later steps may drop facts
        if fact is None or written.conflict_verdict not in ("created", "updated"):
            continue
        for i in fact.indices or range(len(run.messages)):
            links.append((written.key, written.version, run.evidence_ids[i], fact.span))
    with run.deps.pool.connection() as conn:
        evidence_store.link(conn, run.org, run.namespace, run.user_id, links)


def _forget(run: Run) -> list[str]:
    """Retire what the user asked to forget: by subject and attribute, else by content."""
    if not run.forget:
        return []
    keys: set[str] = set()
    with run.deps.pool.connection() as conn:
        for f in run.forget:
            subject, attribute = str(f.get("subject") or ""), str(f.get("attribute") or "")
            if subject and attribute:
                keys.add(mint_key(subject, attribute))
            text = str(f.get("text") or "").strip()
            if f["by_content"] and len(text) >= 3:
                rows = memory_store.lexical_leg(
                    conn,
                    org=run.org,
                    namespace=run.namespace,
                    users=[run.user_id],
                    query=text,
                    depth=5,
                    kinds=["fact", "record"],
                )
                keys.update(r["key"] for r in rows if text.lower() in r["value"].lower())
        return sorted(memory_store.retire(conn, run.org, run.namespace, run.user_id, sorted(keys)))


def _write_digest_and_chunks(run: Run, now: datetime) -> None:
    """The session digest and verbatim chunks (those that read as high are never embedded)."""
    entries = []
    if run.digest:
        key = f"digest:{run.session_id if run.session_id != '-' else run.request_id}"
        entries.append(Entry(key=key, value=run.digest, kind="digest", tags=run.extra_tags))
    # Keyed by content hash, so a chunk repeated in one transcript (the same pasted log twice)
    # is one chunk: written once, counted once against the cap.
    chunks = {
        "chunk:" + hashlib.sha256(text.encode()).hexdigest()[:24]: text
        for text in _chunks(run.messages, run.live.memory_chunk_chars)
    }
    cap = run.live.memory_chunks_max_per_call
    if len(chunks) > cap:
        run.drops.append(Drop("chunks", "chunk_cap", len(chunks) - cap, f"cap {cap}"))
    for key, text in list(chunks.items())[:cap]:
        entries.append(Entry(key=key, value=text, kind="chunk", tags=run.extra_tags))
    if entries:
        run.written += write_entries(
            run.deps,
            org=run.org,
            namespace=run.namespace,
            user_id=run.user_id,
            entries=entries,
            source="extraction",
            agent=run.agent,
            session_id=run.session_id,
            principal=run.caller.principal or "local",
        )


def _chunks(messages: list[dict[str, Any]], size: int) -> list[str]:
    """Turn-aligned verbatim chunks of about `size` characters."""
    out, current = [], ""
    for m in messages:
        line = f"{m['role']}: {m['content']}"
        if current and len(current) + len(line) > size:
            out.append(current)
            current = ""
        current = f"{current}\n{line}".strip()
    if current:
        out.append(current)
    return out
