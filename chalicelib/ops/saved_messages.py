"""Saving single messages: a user's opt-in search, whether or not the namespace records."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, StringConstraints, model_validator

from chalicelib.auth import ReadScope
from chalicelib.concurrent_work import run_concurrently
from chalicelib.cursors import decode_cursor, encode_cursor
from chalicelib.deps import Deps
from chalicelib.errors import UnavailableError, ValidationFailedError
from chalicelib.ops.common import AgentScoped, Ident, OpOutput, check_turn_key
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.registry import OpContext, op
from chalicelib.search.ranking import centred_excerpt, rrf
from chalicelib.sensitivity import (
    is_sensitive,
    is_sensitive_embedded,
    is_sensitive_excerpt,
)
from chalicelib.store import saved_messages as store
from chalicelib.store.pool import autocommit_connection
from chalicelib.store.saved_search import lexical_leg, vector_leg
from chalicelib.store.thread_leases import take_thread_lease
from chalicelib.store.turn_tombstones import settle_turn_embedding
from chalicelib.store.turn_writes import NewTurn

USER_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user")  # a user-pinned token works
ThreadId = Annotated[str, StringConstraints(min_length=1, max_length=256)]
MsgId = Annotated[str, StringConstraints(min_length=1, max_length=256)]
SaveReason = Literal[
    "", "duplicate", "owner_mismatch", "deleted", "unsupported_role", "embed_failed",
    "high_sensitivity",
]  # fmt: skip
LEG_DEPTH = 100  # candidates each leg hands to the fusion
SAVE_ATTEMPTS = 4  # reads of a message that changed while it was being saved, at most


class SavedRow(OpOutput):
    conversation_id: str
    message_id: str
    role: str
    excerpt: str
    score: float | None = None
    saved_at: datetime | None
    ts: datetime


# ---- save ----------------------------------------------------------------------------------


class SaveInput(AgentScoped):
    conversation_id: ThreadId
    message_id: MsgId
    role: Literal["user", "assistant"]
    content: Annotated[str, StringConstraints(max_length=1_000_000)]
    user_id: Ident

    @model_validator(mode="after")
    def _key_fits(self) -> SaveInput:
        check_turn_key(self.org, self.namespace, self.conversation_id, self.message_id, self.agent)
        return self


class SaveOutput(OpOutput):
    conversation_id: str
    message_id: str
    indexed: bool
    reason: SaveReason
    ts: datetime


@op(
    "conversation.save_message",
    role="writer",
    kind="idempotent",
    mcp="unlisted",
    scopes=USER_SCOPES,
)
def save_message(inp: SaveInput, ctx: OpContext) -> SaveOutput:
    """Flag one message saved for its user (storing it if the transcript does not hold it),
    and make sure it has a vector; retrying repairs whatever an earlier call left undone."""
    saving = _Saving(inp, ctx.deps, shared_ok=not ctx.caller.bounded)
    for _ in range(SAVE_ATTEMPTS):
        answer = _attempt_save(saving)
        if answer is not None:
            return answer
    raise UnavailableError(
        "conversation.save_message: the message kept changing while it was saved; retry"
    )


@dataclass
class _Saving:
    """One save_message call: the message, whether the caller may claim a shared row, and what
    its texts embedded to."""

    inp: SaveInput
    deps: Deps
    # A token pinned to one user saves only rows that are new or already that user's: claiming
    # a shared turn would hand it a transcript read its scope refuses.
    shared_ok: bool
    # What each text embedded to (a vector, or the embed's error), kept across attempts.
    embedded: dict[str, tuple[np.ndarray | None, str | None]] = field(default_factory=dict)

    def find_copy(self, conn: Any) -> dict[str, Any] | None:
        inp = self.inp
        key = (inp.org, inp.namespace, inp.conversation_id, inp.message_id)
        return store.find_copy(conn, *key, inp.agent, self.deps.embedder.name, inp.user_id)

    def embed(self, text: str) -> tuple[np.ndarray | None, str | None]:
        if text not in self.embedded:
            try:
                self.embedded[text] = (self.deps.embedder.embed_documents([text])[0], None)
            except EmbedderError as exc:
                self.embedded[text] = (None, str(exc)[:1000])
        return self.embedded[text]

    def answer(self, indexed: bool, reason: SaveReason, ts: datetime | None = None) -> SaveOutput:
        return SaveOutput(
            conversation_id=self.inp.conversation_id,
            message_id=self.inp.message_id,
            indexed=indexed,
            reason=reason,
            ts=ts or self.deps.clock(),
        )


def _attempt_save(s: _Saving) -> SaveOutput | None:
    """Read the message, embed it when its row has no vector, and save it under the lease;
    None when it changed in between (read it again)."""
    inp = s.inp
    with autocommit_connection(s.deps.pool) as conn:
        copy = s.find_copy(conn)
    if copy is not None:
        refusal = _refusal(copy, inp.user_id, s.shared_ok)
        if refusal:
            return s.answer(False, refusal)
        if copy["is_saved"] and copy["has_vector"] and copy["vector_flagged"]:
            return s.answer(True, "duplicate", copy["ts"])
    content = copy["content"] if copy else inp.content
    if is_sensitive_embedded(content, EMBED_CHARS):
        return s.answer(False, "high_sensitivity")
    has_vector = copy is not None and copy["has_vector"]
    embedding = (None, None) if has_vector else s.embed(content[:EMBED_CHARS])
    turn = NewTurn(
        org=inp.org,
        namespace=inp.namespace,
        thread_id=inp.conversation_id,
        agent=copy["agent"] if copy else inp.agent,
        msg_id=inp.message_id,
        role=copy["role"] if copy else inp.role,
        content=content,
        user_id=inp.user_id,
    )
    return _save_under_lease(s, copy, turn, embedding)


def _save_under_lease(
    s: _Saving,
    read: dict[str, Any] | None,
    turn: NewTurn,
    embedding: tuple[np.ndarray | None, str | None],
) -> SaveOutput | None:
    """Under the thread's lease: store the message if it is new, claim it for the user, and
    flag its vector row; None when it changed since `read` (read it again)."""
    inp, model = s.inp, s.deps.embedder.name
    vector, error = embedding
    with s.deps.pool.connection() as conn:
        take_thread_lease(conn, inp.org, inp.namespace, inp.conversation_id)
        # Under the lease: the message as it stands now. An append or save that stored it
        # meanwhile, an unsave that removed it, or a vector that went means what was read
        # (and embedded) is stale: read it again, with the stored turn's text.
        landed = s.find_copy(conn)
        if _moved(read, landed, turn.content):
            return None
        if landed is None:
            store.insert_saved_turn(conn, turn)
        else:
            refusal = _refusal(landed, inp.user_id, s.shared_ok)
            if refusal:
                return s.answer(False, refusal)
            turn = replace(turn, agent=landed["agent"])
        claimed = store.claim_saved(
            conn,
            inp.org,
            inp.namespace,
            inp.conversation_id,
            turn.agent,
            inp.message_id,
            inp.user_id,
            shared_ok=s.shared_ok,
        )
        if claimed is None:
            conn.rollback()
            latest = s.find_copy(conn)
            refusal = _refusal(latest, inp.user_id, s.shared_ok) if latest else ""
            # A refusal now, or the copy went meanwhile: read the message again.
            return s.answer(False, refusal) if refusal else None
        store.flag_embedding(
            conn,
            replace(turn, run_id=claimed["run_id"], role=claimed["role"]),
            model=model,
            text=turn.content[:EMBED_CHARS],
            ts=claimed["ts"],
            saved_at=claimed["saved_at"],
            vector=vector,
            error=error,
            fresh=vector is not None or error is not None,
        )
    if error is not None:
        return s.answer(False, "embed_failed", claimed["ts"])
    return s.answer(True, "", claimed["ts"])


def _moved(read: dict[str, Any] | None, now: dict[str, Any] | None, content: str) -> bool:
    """Whether the message changed, between the read outside the lease and the one under it,
    in a way that makes what was read or embedded stale."""
    if read is None:  # new then: one stored meanwhile with the same text is saved in place
        return now is not None and now["content"] != content
    if now is None:  # removed meanwhile (an unsave where the namespace does not record)
        return True
    return (
        now["agent"] != read["agent"]
        or now["content"] != read["content"]
        or (read["has_vector"] and not now["has_vector"])
    )


def _refusal(copy: dict[str, Any], user: str, shared_ok: bool) -> SaveReason:
    """Why a stored message cannot be saved by `user`, or "" when it can; a shared row ("-")
    is another owner's unless `shared_ok`."""
    if copy["deleted"]:
        return "deleted"
    if copy["role"] not in ("user", "assistant"):
        return "unsupported_role"
    owners = ("-", user) if shared_ok else (user,)
    if copy["user_id"] not in owners or copy["saved_elsewhere"]:
        return "owner_mismatch"
    if copy["vector_owner"] not in (None, "-", user):
        # The copies share one vector row, and it indexes another user's copy: saving this one
        # would hand that user's row (and words) to the caller.
        return "owner_mismatch"
    if is_sensitive_embedded(copy["content"], EMBED_CHARS):
        return "high_sensitivity"
    return ""


# ---- unsave --------------------------------------------------------------------------------


class UnsaveInput(AgentScoped):
    conversation_id: ThreadId
    message_id: MsgId
    user_id: Ident


class UnsaveOutput(OpOutput):
    conversation_id: str
    message_id: str
    found: bool
    removed: bool
    ts: datetime


@op(
    "conversation.unsave_message",
    role="writer",
    kind="idempotent",
    mcp="unlisted",
    scopes=USER_SCOPES,
)
def unsave_message(inp: UnsaveInput, ctx: OpContext) -> UnsaveOutput:
    """Withdraw a saved message: the flag goes; the turn goes too where the row existed only
    because of the save, which no transcript read serves even once the namespace records (a
    turn the transcript recorded stays, even once recording is off). Never says who else
    saved it."""
    key = (inp.org, inp.namespace, inp.conversation_id)
    removed = False
    with ctx.deps.pool.connection() as conn:
        take_thread_lease(conn, *key)
        unflagged = store.unflag_saved(conn, *key, inp.message_id, inp.user_id)
        if unflagged is not None:
            agent, removed = unflagged
            store.withdraw_embedding(conn, *key, inp.message_id)
            if removed:
                store.remove_turn(conn, *key, agent, inp.message_id)
                # Another agent's live copy may hold the row: it passes there, else goes.
                settle_turn_embedding(conn, *key, inp.message_id)
    return UnsaveOutput(
        conversation_id=inp.conversation_id,
        message_id=inp.message_id,
        found=unflagged is not None,
        removed=removed,
        ts=ctx.deps.clock(),
    )


# ---- list / status -------------------------------------------------------------------------

SAVED_FIELDS = tuple(f for f in SavedRow.model_fields if f != "score")  # score is for hits


def _check_fields(fields: list[str] | None) -> list[str]:
    wanted = fields or list(SAVED_FIELDS)
    unknown = sorted(set(wanted) - set(SAVED_FIELDS))
    if unknown:
        raise ValidationFailedError(
            f"fields: unknown {', '.join(unknown)}; known: {', '.join(SAVED_FIELDS)}"
        )
    return wanted


def _before(cursor: str | None) -> tuple[datetime, str, str] | None:
    if not cursor:
        return None
    ts, (thread_id, msg_id) = decode_cursor(cursor, 2)
    return ts, thread_id, msg_id


class ListSavedInput(AgentScoped):
    user_id: Ident
    conversation_id: ThreadId | None = None
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = None
    fields: list[str] | None = None


class ListSavedOutput(OpOutput):
    rows: list[dict[str, Any]]
    next_cursor: str | None


@op(
    "conversation.list_saved_messages",
    role="viewer",
    kind="read",
    mcp="unlisted",
    scopes=USER_SCOPES,
)
def list_saved_messages(inp: ListSavedInput, ctx: OpContext) -> ListSavedOutput:
    """One user's saved messages, most recently saved first; `ts` is when it was saved."""
    wanted = _check_fields(inp.fields)
    shown = ctx.live().conversation_search_excerpt_chars
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = store.list_saved(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            user=inp.user_id,
            thread_id=inp.conversation_id,
            before=_before(inp.cursor),
            limit=inp.limit + 1,
        )
    page = rows[: inp.limit]
    out = []
    for r in page:
        content = r.pop("content")
        r["excerpt"] = "" if is_sensitive_excerpt(content, shown) else content[:shown]
        out.append(SavedRow(**r).model_dump(include=set(wanted)))
    last = page[-1] if page else None
    more = len(rows) > inp.limit and last is not None
    return ListSavedOutput(
        rows=out,
        next_cursor=encode_cursor(last["ts"], last["conversation_id"], last["message_id"])
        if more and last
        else None,
    )


class SavedStatusInput(AgentScoped):
    user_id: Ident
    conversation_id: ThreadId
    message_ids: Annotated[list[MsgId], Field(min_length=1, max_length=500)]


class SavedStatusOutput(OpOutput):
    saved: list[str]


@op("conversation.saved_status", role="viewer", kind="read", mcp="unlisted", scopes=USER_SCOPES)
def saved_status(inp: SavedStatusInput, ctx: OpContext) -> SavedStatusOutput:
    """Which of these messages this user has saved, in the order asked."""
    with autocommit_connection(ctx.deps.pool) as conn:
        saved = store.saved_among(
            conn, inp.org, inp.namespace, inp.user_id, inp.conversation_id, inp.message_ids
        )
    return SavedStatusOutput(saved=[m for m in dict.fromkeys(inp.message_ids) if m in saved])


# ---- search --------------------------------------------------------------------------------


class SearchSavedInput(AgentScoped):
    user_id: Ident
    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    conversation_id: ThreadId | None = None
    role: Literal["user", "assistant"] | None = None
    top_k: int = Field(default=20, ge=1, le=200)
    search_mode: Literal["hybrid", "semantic", "lexical"] = "hybrid"
    lexical_weight: float = Field(default=1.0, ge=0.0, le=1.0)


class SearchSavedOutput(OpOutput):
    hits: list[SavedRow]


@op(
    "conversation.search_saved_messages",
    role="viewer",
    kind="read",
    mcp="unlisted",
    scopes=USER_SCOPES,
)
def search_saved_messages(inp: SearchSavedInput, ctx: OpContext) -> SearchSavedOutput:
    """Hybrid search over one user's saved messages: a vector leg on the first 2,048
    characters and a BM25 leg over the whole text, fused by reciprocal rank."""
    shown = ctx.live().conversation_search_excerpt_chars
    scope: dict[str, Any] = {
        "org": inp.org,
        "namespace": inp.namespace,
        "user": inp.user_id,
        "thread_id": inp.conversation_id,
        "role": inp.role,
    }
    pool = ctx.deps.pool

    def vector() -> list[dict[str, Any]]:
        if inp.search_mode == "lexical":
            return []
        try:
            query_vec = ctx.deps.embedder.embed_query(inp.query)
        except EmbedderError:
            return []  # fail open: the lexical leg still answers
        with autocommit_connection(pool) as conn:
            return vector_leg(
                conn, **scope, model=ctx.deps.embedder.name, query_vec=query_vec, depth=LEG_DEPTH
            )

    def lexical() -> list[dict[str, Any]]:
        if inp.search_mode == "semantic":
            return []
        with autocommit_connection(pool) as conn:
            return lexical_leg(conn, **scope, query=inp.query, depth=LEG_DEPTH)

    lexical_future = run_concurrently(lexical)
    vector_rows = vector()
    lexical_rows = lexical_future.result()
    return SearchSavedOutput(hits=_fuse(inp, vector_rows, lexical_rows, shown))


def _fuse(
    inp: SearchSavedInput,
    vector_rows: list[dict[str, Any]],
    lexical_rows: list[dict[str, Any]],
    shown: int,
) -> list[SavedRow]:
    """The hits in fused order; a BM25 hit's excerpt is centred on the terms it matched."""
    vector_rows = [r for r in vector_rows if not is_sensitive(r["text"])]
    lexical_rows = [r for r in lexical_rows if not is_sensitive(r["content"])]
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for r in vector_rows:
        by_key.setdefault(
            (r["conversation_id"], r["message_id"]), {**r, "excerpt": r["text"][:shown]}
        )
    for r in lexical_rows:
        excerpt = centred_excerpt(r["content"], r["terms"], shown)
        by_key[(r["conversation_id"], r["message_id"])] = {**r, "excerpt": excerpt}
    # One ranking place a message (two agents' copies saved by an earlier build: the best).
    vec = list(dict.fromkeys((r["conversation_id"], r["message_id"]) for r in vector_rows))
    lex = list(dict.fromkeys((r["conversation_id"], r["message_id"]) for r in lexical_rows))
    if inp.search_mode == "semantic":
        legs = [(vec, 1.0)]
    elif inp.search_mode == "lexical":
        legs = [(lex, 1.0)]
    else:
        legs = [(vec, 1.0), (lex, inp.lexical_weight)]
    hits = []
    for key, score in rrf(legs)[: inp.top_k]:
        r = by_key[key]  # type: ignore[index]
        hits.append(
            SavedRow(
                conversation_id=r["conversation_id"],
                message_id=r["message_id"],
                role=r["role"],
                excerpt=r["excerpt"],
                score=score,
                saved_at=r["saved_at"],
                ts=r["ts"],
            )
        )
    return hits
