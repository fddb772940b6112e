"""Recording turns: dedupe, insert under the thread lease, embed each turn once (one model
call for the batch), store vectors.

conversation.append records one turn; `loom ingest-transcript` records a file's worth.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from chalicelib.deps import Deps
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.search.store_vectors import ensure_vector_index, vector_index_ready
from chalicelib.sensitivity import is_sensitive_embedded
from chalicelib.store import worker_positions
from chalicelib.store.pool import autocommit_connection, database_clock
from chalicelib.store.turn_vectors import TurnVector, turns_without_vectors, write_embeddings
from chalicelib.store.turn_writes import (
    UNRECORDED,
    NewTurn,
    adopt_saved_turns,
    append_state,
    existing_copies,
    insert_turns,
)

AppendReason = Literal["", "duplicate", "logging_disabled", "deleted"]


@dataclass(frozen=True)
class Recorded:
    msg_id: str
    ts: datetime
    stored: bool
    reason: AppendReason


def embeddable(turn: NewTurn) -> bool:
    """User and assistant turns are embedded, unless their text (or the part embedded) reads
    as high."""
    return turn.role in ("user", "assistant") and not is_sensitive_embedded(
        turn.content, EMBED_CHARS
    )


def record_turns(deps: Deps, turns: list[NewTurn]) -> list[Recorded]:
    """Record turns of one (org, namespace, thread, agent), in order; one answer per turn."""
    if not turns:
        return []
    first = turns[0]
    scope = (first.org, first.namespace, first.thread_id, first.agent)
    with autocommit_connection(deps.pool) as conn:  # one checkout until the embed
        recording, known = append_state(conn, *scope, [t.msg_id for t in turns])
        if recording is False:
            # The owner's choice answers first: a turn stored (or deleted) while the namespace
            # recorded is not reported as kept once it does not.
            now = deps.clock()
            return [Recorded(t.msg_id, now, False, "logging_disabled") for t in turns]
        states: dict[str, str] = dict(known)
        saved_only = [m for m, state in states.items() if state == "saved_only"]
        if saved_only and not adopt_saved_turns(conn, *scope, saved_only):
            # The transcript does not hold them: recording is off, whatever a user saved.
            states.update(dict.fromkeys(saved_only, UNRECORDED))
        fresh = list({t.msg_id: t for t in turns if t.msg_id not in states}.values())
        ts: dict[str, datetime] | None = {}
        if fresh:
            ts = insert_turns(conn, fresh)
            raced = [t.msg_id for t in fresh if ts and t.msg_id not in ts]
            if raced:
                states.update(existing_copies(conn, *scope, raced))
    to_embed = [t for t in fresh if embeddable(t)]
    now = deps.clock()
    if ts is None:  # recording was switched off since the read above
        return [Recorded(t.msg_id, now, False, "logging_disabled") for t in turns]
    to_embed = [t for t in to_embed if t.msg_id in ts]
    removed = _embed(deps, to_embed, ts) if to_embed else set()
    answers = []
    for t in turns:
        if t.msg_id in ts:
            stamp = ts.pop(t.msg_id)
            gone = t.msg_id in removed
            answers.append(Recorded(t.msg_id, stamp, not gone, "deleted" if gone else ""))
        else:
            answers.append(_existing(t.msg_id, states.get(t.msg_id, "live"), now))
    return answers


def _existing(msg_id: str, state: str, now: datetime) -> Recorded:
    """A copy already there: a duplicate, or a turn deleted since (never revived); or one only
    a save keeps, where the namespace does not record."""
    if state == "tombstoned":
        return Recorded(msg_id, now, False, "deleted")
    if state == UNRECORDED:
        return Recorded(msg_id, now, False, "logging_disabled")
    return Recorded(msg_id, now, True, "duplicate")


def context_text(before: str, text: str) -> str:
    """The text an earlier build embedded as a turn's context: the end of the turn before it,
    then the turn (the guard sweep still reads such vectors)."""
    return (before[-(EMBED_CHARS // 2) :] + "\n" + text)[:EMBED_CHARS]


def _embed(deps: Deps, turns: list[NewTurn], ts: dict[str, datetime]) -> set[str]:
    """Embed the turns in one model call (fail-open: an error is stored on each row), then
    store the vectors under the lease; each row's context vector is derived in the store from
    its own and the row before it. Returns msg_ids removed while the embedding ran, which get
    no late vector."""
    embedder = deps.embedder
    texts = [t.content[:EMBED_CHARS] for t in turns]
    try:
        vectors: list = list(embedder.embed_documents(texts))
        error = None
    except EmbedderError as exc:
        vectors, error = [None] * len(turns), str(exc)[:1000]
    items = [
        TurnVector(t, ts[t.msg_id], text, vec, error)
        for t, text, vec in zip(turns, texts, vectors, strict=True)
    ]
    if error is None and not vector_index_ready(len(vectors[0]), deps.vector_indexes):
        with deps.pool.connection() as conn:
            ensure_vector_index(conn, len(vectors[0]), deps.vector_indexes)
    written = write_embeddings(deps.pool, embedder.name, items)
    return {t.msg_id for t in turns} - written


# The repair of turns whose vector write never ran: how far back it starts, how fresh a turn it
# leaves to its append, how many it reads at a time.
REPAIR_HOURS = 6
REPAIR_SETTLE_SECONDS = 60
REPAIR_BATCH = 100
REPAIR_PAGES = 10
REPAIR_WORKER = "turn_vectors"


def index_unembedded_turns(
    deps: Deps, *, batch: int = REPAIR_BATCH, pages: int = REPAIR_PAGES
) -> int:
    """Embed, as their appends would have, the turns recorded whose vector write never ran
    (the database went away between an append's two transactions: the turn is durable, and a
    retry answers duplicate). Each turn is read once, a minute after it was recorded, from
    where the last pass stopped (at most REPAIR_HOURS back), `batch` at a time, up to `pages`
    reads; turns that read as high have no vector by design and are passed over. Returns the
    turns indexed."""
    indexed = 0
    with autocommit_connection(deps.pool) as conn:
        now = database_clock(conn)
        at = worker_positions.position(conn, REPAIR_WORKER)
    oldest = (now - timedelta(hours=REPAIR_HOURS), "")
    after = max(at, oldest) if at else oldest
    until = now - timedelta(seconds=REPAIR_SETTLE_SECONDS)
    for _ in range(pages):
        with autocommit_connection(deps.pool) as conn:
            rows = turns_without_vectors(
                conn, deps.embedder.name, after=after, until=until, limit=batch
            )
        for r in rows:
            turn = NewTurn(
                r["org"], r["namespace"], r["thread_id"], r["agent"], r["msg_id"], r["role"],
                r["content"],
            )  # fmt: skip
            if embeddable(turn):
                stamp = {turn.msg_id: r["ts"]}
                removed = _embed(deps, [turn], stamp)
                indexed += not removed
        # Read to `until` (a short page): the next pass starts there.
        after = (rows[-1]["ts"], rows[-1]["msg_id"]) if len(rows) == batch else (until, "")
        with autocommit_connection(deps.pool) as conn:
            worker_positions.advance(conn, REPAIR_WORKER, after)
        if len(rows) < batch:
            break
    return indexed
