"""The memory plane: durable facts written, read, searched and forgotten by key."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.auth import Caller, ReadScope
from chalicelib.blacklist import MAX_PATTERN_CHARS
from chalicelib.errors import BadRequestError
from chalicelib.ops.common import AgentScoped, Ident, Moment, OpInput, OpOutput
from chalicelib.providers.embedder import EmbedderError
from chalicelib.registry import OpContext, op
from chalicelib.search.ranking import rrf
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.memory_quality import filter_ranked
from chalicelib.services.memory_writer import Entry, write_entries
from chalicelib.store import evidence as evidence_store
from chalicelib.store import memories as store
from chalicelib.store import memory_quality as quality_store
from chalicelib.store.audit import write_audit
from chalicelib.store.extraction_queue import has_pending
from chalicelib.store.pool import autocommit_connection

USER_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user")
Key = Annotated[str, StringConstraints(min_length=1, max_length=300, pattern=r"^[^\s\x00]+$")]
Value = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=100)]
LEG_DEPTH = 100
# Each leg's depth under quality_filter: junk left out still leaves top_k to fill.
FILTERED_LEG_DEPTH = 300
RECALL_SCAN = 2000  # the most turns memory.recall reads for one answer
RECALL_MIN_PAGE = 50  # turns memory.recall reads a round trip, at least


def write_user(caller: Caller, user_id: str) -> str:
    """The one user whose rows an op reads or changes by key: the token's pinned user, else the
    body's user_id, else the namespace's shared rows ("-"). (A token bounded to one user names
    one: the registry refuses it none, "-" or "*", the shared rows not being its to change.)"""
    if caller.read_user_id:
        return caller.read_user_id
    return "-" if user_id in ("", "-") else user_id


def read_users(caller: Caller, user_id: str | None) -> list[str] | None:
    """The users a read covers: one user and the namespace's shared rows, or everyone (never
    for a token bounded to one user, which the registry makes name one)."""
    user = caller.read_user_id or (user_id if user_id not in (None, "", "-") else None)
    return None if user is None else [user, "-"]


class EntryIn(OpInput):
    key: Key
    value: Value
    tags: Annotated[list[Tag], Field(max_length=50)] = Field(default_factory=list)
    valid_at: Moment | None = None
    observation_date: date | None = None
    pin: bool | None = None
    lock: bool | None = None

    def entry(self) -> Entry:
        return Entry(
            key=self.key,
            value=self.value,
            tags=self.tags,
            valid_at=self.valid_at,
            observation_date=self.observation_date,
            pinned=self.pin,
            locked=self.lock,
        )


class WrittenOut(OpOutput):
    key: str
    version: int
    conflict_verdict: str
    peers: list[str]
    memory_key: str = ""  # the same key, under the name the SDK examples read

    def model_post_init(self, __context: Any) -> None:
        self.memory_key = self.memory_key or self.key


class MemoryScoped(AgentScoped):
    user_id: Ident = "-"
    session_id: Ident = "-"
    run_id: Ident = "-"


class SetInput(MemoryScoped, EntryIn):
    pass


class BulkSetInput(MemoryScoped):
    entries: Annotated[list[EntryIn], Field(min_length=1, max_length=500)]


class WriteOutput(OpOutput):
    written: list[WrittenOut]


def _write(ctx: OpContext, inp: MemoryScoped, entries: list[Entry]) -> WriteOutput:
    written = write_entries(
        ctx.deps,
        org=inp.org,
        namespace=inp.namespace,
        user_id=write_user(ctx.caller, inp.user_id),
        entries=entries,
        source="set",
        agent=inp.agent,
        session_id=inp.session_id,
        principal=ctx.caller.principal or "local",
    )
    return WriteOutput(written=[WrittenOut(**w.__dict__) for w in written])


@op("memory.set", role="writer", kind="idempotent", mcp="core", scopes=USER_SCOPES)
def memory_set(inp: SetInput, ctx: OpContext) -> WriteOutput:
    """Write one fact the caller already knows; a changed value is a new version."""
    return _write(ctx, inp, [inp.entry()])


@op("memory.bulk_set", role="writer", kind="idempotent", mcp="all", scopes=USER_SCOPES)
def memory_bulk_set(inp: BulkSetInput, ctx: OpContext) -> WriteOutput:
    """Write up to 500 facts, each with its verdict."""
    keys = [e.key for e in inp.entries]
    if len(set(keys)) != len(keys):
        raise BadRequestError("entries name one key twice; send each key once")
    return _write(ctx, inp, [e.entry() for e in inp.entries])


class GetInput(MemoryScoped):
    key: Key


class MemoryOut(OpOutput):
    key: str
    value: str
    kind: str
    tags: list[str]
    version: int
    user_id: str
    pinned: bool
    locked: bool
    updated_at: datetime
    confidence: float  # in [0, 1]: 1.0 as written, lowered by memory.apply demote


class GetOutput(OpOutput):
    found: bool
    memory: MemoryOut | None


@op("memory.get", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def memory_get(inp: GetInput, ctx: OpContext) -> GetOutput:
    """One memory by key; text that reads as high is served here only, with an audit row."""
    user = write_user(ctx.caller, inp.user_id)
    with ctx.deps.pool.connection() as conn:
        row = store.get_memory(conn, inp.org, inp.namespace, user, inp.key)
        if row is not None:
            # A clean-up leaves alone what an agent still asks for by name (--days).
            quality_store.mark_read(conn, inp.org, inp.namespace, user, inp.key, ctx.deps.clock())
        if row is not None and is_sensitive(row["value"]):
            write_audit(
                conn,
                org=inp.org,
                namespace=inp.namespace,
                op="memory.sensitive_read",
                principal=ctx.caller.principal or "local",
                body_sha256=row["content_hash"],
            )
    if row is None:
        return GetOutput(found=False, memory=None)
    return GetOutput(found=True, memory=_memory_out(row))


def _memory_out(row: dict[str, Any]) -> MemoryOut:
    return MemoryOut(**{k: row[k] for k in MemoryOut.model_fields})


class DeleteInput(MemoryScoped):
    key: Key


class DeleteOutput(OpOutput):
    deleted: bool
    key: str


@op("memory.delete", role="writer", kind="idempotent", audited=True, mcp="all", scopes=USER_SCOPES)
def memory_delete(inp: DeleteInput, ctx: OpContext) -> DeleteOutput:
    """Retire a memory (a locked one stays)."""
    user = write_user(ctx.caller, inp.user_id)
    with ctx.deps.pool.connection() as conn:
        retired = store.retire(conn, inp.org, inp.namespace, user, [inp.key])
    return DeleteOutput(deleted=bool(retired), key=inp.key)


class SearchInput(AgentScoped):
    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    user_id: Ident | None = None
    top_k: int = Field(default=10, ge=1, le=100)
    search_mode: Literal["hybrid", "semantic", "lexical"] = "hybrid"
    include_chunks: bool = True
    # Leave out junk (trajectory steps, narration, tool hints, code locations, probes,
    # one-moment status) and restatements of a higher-ranked hit; nothing is deleted.
    quality_filter: bool = False


class MemoryHit(OpOutput):
    key: str
    value: str
    score: float
    tags: list[str]
    user_id: str
    version: int
    kind: str
    confidence: float


HIT_FIELDS = [name for name in MemoryHit.model_fields if name != "score"]


class SearchOutput(OpOutput):
    hits: list[MemoryHit]
    # Under quality_filter: what was left out of the answer, by class.
    filtered: dict[str, int] = Field(default_factory=dict)
    # A deferred batch of the users this search reads has not run yet (whoever queued it).
    pending_extraction: bool = False


@op("memory.search", role="viewer", kind="read", mcp="core", scopes=USER_SCOPES)
def memory_search(inp: SearchInput, ctx: OpContext) -> SearchOutput:
    """Memories by meaning and by words, fused by reciprocal rank, in the caller's scope.
    Text that reads as high is never returned."""
    users = read_users(ctx.caller, inp.user_id)
    kinds = ["fact", "record", "digest"] + (["chunk"] if inp.include_chunks else [])
    scope: dict[str, Any] = {"org": inp.org, "namespace": inp.namespace, "users": users}
    vec_rows: list[dict[str, Any]] = []
    lex_rows: list[dict[str, Any]] = []
    query_vec = None
    depth = FILTERED_LEG_DEPTH if inp.quality_filter else LEG_DEPTH
    if inp.search_mode != "lexical":
        try:
            query_vec = ctx.deps.embedder.embed_query(inp.query)
        except EmbedderError:
            query_vec = None
    with autocommit_connection(ctx.deps.pool) as conn:
        if query_vec is not None:
            vec_rows = store.vector_leg(
                conn,
                **scope,
                model=ctx.deps.embedder.name,
                query_vec=query_vec,
                depth=depth,
                kinds=kinds,
            )
        if inp.search_mode != "semantic":
            lex_rows = store.lexical_leg(conn, **scope, query=inp.query, depth=depth, kinds=kinds)
        pending = has_pending(conn, inp.org, inp.namespace, users)
        ranked, filtered = _ranked(conn, ctx, inp, vec_rows, lex_rows)
    hits = [MemoryHit(**{**{k: r[k] for k in HIT_FIELDS}, "score": s}) for r, s in ranked]
    return SearchOutput(hits=hits, pending_extraction=pending, filtered=filtered)


def _ranked(
    conn: Any,
    ctx: OpContext,
    inp: SearchInput,
    vec_rows: list[dict[str, Any]],
    lex_rows: list[dict[str, Any]],
) -> tuple[list[tuple[dict[str, Any], float]], dict[str, int]]:
    """The legs fused by reciprocal rank, cut to top_k (under quality_filter, once junk and
    restatements are left out), with the rows left out by class."""
    floor = ctx.deps.embedder.default_floor
    # Both legs checked with today's guard: a value an earlier build embedded or indexed
    # before the guard read it as high is never a hit, nor is a row whose key or tags (shown
    # with the hit) read as high.
    vec_rows = [r for r in vec_rows if r["score"] >= floor and not shows_high(r)]
    lex_rows = [r for r in lex_rows if not shows_high(r)]
    rows = {(r["user_id"], r["key"]): r for r in lex_rows + vec_rows}
    legs = [([(r["user_id"], r["key"]) for r in vec_rows], 1.0)]
    legs.append(([(r["user_id"], r["key"]) for r in lex_rows], 1.0))
    fused = rrf(legs)
    scores = {ident: score for ident, score in fused}
    order = [rows[ident] for ident, _ in fused]  # type: ignore[index]
    if not inp.quality_filter:
        return [(r, scores[(r["user_id"], r["key"])]) for r in order[: inp.top_k]], {}
    kept, filtered = filter_ranked(conn, ctx.deps, inp.org, inp.namespace, order, inp.top_k)
    return [(r, scores[(r["user_id"], r["key"])]) for r in kept], filtered


def shows_high(row: dict[str, Any]) -> bool:
    """Whether a hit would show text that reads as high: its value, key or a tag."""
    return any(is_sensitive(text) for text in (row["value"], row["key"], *row["tags"]))


# ---- evidence and recall -------------------------------------------------------------------


class EvidenceInput(MemoryScoped):
    key: Key


class EvidenceTurn(OpOutput):
    evidence_id: int
    version: int
    role: str
    name: str
    content: str
    span: str
    ts: datetime
    session_id: str


class EvidenceOutput(OpOutput):
    key: str
    turns: list[EvidenceTurn]


@op("memory.evidence", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def memory_evidence(inp: EvidenceInput, ctx: OpContext) -> EvidenceOutput:
    """The source turns one memory was extracted from, with the supporting span."""
    user = write_user(ctx.caller, inp.user_id)
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = evidence_store.evidence_for(conn, inp.org, inp.namespace, user, inp.key)
    turns = []
    for r in rows:
        # A turn (or a cited span) that reads as high is listed with its text blank: only
        # memory.get, with a memory.sensitive_read audit row, serves such text.
        turn = {k: r[k] for k in EvidenceTurn.model_fields}
        for part in ("content", "span", "name"):
            if is_sensitive(turn[part]):
                turn[part] = ""
        turns.append(EvidenceTurn(**turn))
    return EvidenceOutput(key=inp.key, turns=turns)


class RecallInput(AgentScoped):
    query: Annotated[str, StringConstraints(max_length=1000)] = ""
    user_id: Ident | None = None
    since: Moment | None = None
    until: Moment | None = None
    role: Literal["user", "assistant", "system", "tool"] | None = None
    limit: int = Field(default=20, ge=1, le=200)


class RecallTurn(OpOutput):
    evidence_id: int
    user_id: str
    agent: str
    session_id: str
    role: str
    name: str
    content: str
    ts: datetime


class RecallOutput(OpOutput):
    turns: list[RecallTurn]


@op("memory.recall", role="viewer", kind="read", mcp="all", scopes=USER_SCOPES)
def memory_recall(inp: RecallInput, ctx: OpContext) -> RecallOutput:
    """Raw turns extractions read, by text, time window and role, newest first."""
    users = read_users(ctx.caller, inp.user_id)
    found: list[dict[str, Any]] = []
    before: tuple[datetime, int] | None = None
    scanned = 0
    # Most answers take one page; a small limit among many turns that read as high still
    # takes few round trips.
    page_size = max(inp.limit, RECALL_MIN_PAGE)
    with autocommit_connection(ctx.deps.pool) as conn:
        # A turn that reads as high is never a recall hit (as memory.search never serves such
        # a chunk); pages continue past them until the limit is met or RECALL_SCAN rows read.
        while len(found) < inp.limit and scanned < RECALL_SCAN:
            page = evidence_store.recall(
                conn,
                org=inp.org,
                namespace=inp.namespace,
                users=users,
                query=inp.query,
                since=inp.since,
                until=inp.until,
                role=inp.role,
                limit=page_size,
                before=before,
            )
            scanned += len(page)
            # A turn whose text, or speaker's name, reads as high is no hit.
            found += [
                r for r in page if not (is_sensitive(r["content"]) or is_sensitive(r["name"]))
            ]
            if len(page) < page_size:
                break
            before = (page[-1]["ts"], page[-1]["evidence_id"])
    return RecallOutput(turns=[RecallTurn(**r) for r in found[: inp.limit]])


# ---- blacklist -----------------------------------------------------------------------------


class BlacklistInput(OpInput):
    org: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    namespace: Annotated[str, StringConstraints(max_length=256)] = ""  # "" = the whole org
    pattern: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PATTERN_CHARS)]
    remove: bool = False


class BlacklistOutput(OpOutput):
    pattern: str
    namespace: str
    listed: bool


@op("memory.blacklist", role="admin", kind="idempotent", audited=True, mcp="unlisted")
def memory_blacklist(inp: BlacklistInput, ctx: OpContext) -> BlacklistOutput:
    """Add (or with remove=true, drop) a pattern no memory write may match: a regular
    expression of at most 500 characters in RE2's syntax, case-blind, run by RE2 in time
    linear in the value whatever the pattern. One RE2 cannot compile (a lookaround, a
    backreference, a pattern too large) matches as plain text, case-blind."""
    with ctx.deps.pool.connection() as conn:
        if inp.remove:
            store.remove_blacklist(conn, inp.org, inp.namespace, inp.pattern)
        else:
            store.add_blacklist(conn, inp.org, inp.namespace, inp.pattern)
    return BlacklistOutput(pattern=inp.pattern, namespace=inp.namespace, listed=not inp.remove)
