"""Tombstoning turns (a thread deleted, turns compaction retired, a saved copy gone), and
passing each embedding row they held to another live copy holding it, or tombstoning it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import Connection

from chalicelib.search.store_upkeep import rewrite_thread_windows
from chalicelib.store.compaction_rows import summary_row
from chalicelib.store.pool import database_clock
from chalicelib.store.recorded import settle_saved_only
from chalicelib.store.thread_leases import take_thread_lease


def delete_thread(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str | None
) -> tuple[datetime, dict[str, int]]:
    """Tombstone a thread's turns (one agent's, or all), its thread row, and embeddings no
    live copy still holds; an embedding another agent's live copy holds passes to that copy."""
    take_thread_lease(conn, org, namespace, thread_id)
    now = database_clock(conn)
    scope = (org, namespace, thread_id)
    turns = conn.execute(
        "UPDATE loom.conversations SET tombstoned_at = %s WHERE org = %s AND namespace = %s"
        " AND thread_id = %s AND tombstoned_at IS NULL AND (%s::text IS NULL OR agent = %s)",
        (now, *scope, agent, agent),
    ).rowcount
    threads = conn.execute(
        "UPDATE loom.conversation_threads SET tombstoned_at = %s, updated_at = %s"
        " WHERE org = %s AND namespace = %s AND thread_id = %s AND tombstoned_at IS NULL",
        (now, now, *scope),
    ).rowcount
    embeddings = _settle_thread_embeddings(conn, now, scope)
    return now, {
        "loom.conversations": turns,
        "loom.conversation_threads": threads,
        "loom.conversation_embeddings": embeddings,
    }


@dataclass(frozen=True)
class Retired:
    at: datetime  # the tombstone time stamped on them
    keys: set[tuple[str, str]]  # the (agent, msg_id) turns this call retired


def retire_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, keys: list[tuple[str, str]]
) -> Retired:
    """Tombstone these (agent, msg_id) turns if still live and unsaved, then settle the
    thread's embeddings as a delete does; returns the turns retired (the caller holds the
    lease, and writes a summary only of turns it retired)."""
    now = database_clock(conn)
    retired = conn.execute(
        "UPDATE loom.conversations c SET tombstoned_at = %s"
        " FROM unnest(%s::text[], %s::text[]) AS k(agent, msg_id)"
        " WHERE c.org = %s AND c.namespace = %s AND c.thread_id = %s AND c.agent = k.agent"
        " AND c.msg_id = k.msg_id AND c.tombstoned_at IS NULL AND NOT c.is_saved"
        " RETURNING c.agent, c.msg_id",
        (now, [a for a, _ in keys], [m for _, m in keys], org, namespace, thread_id),
    ).fetchall()
    _settle_thread_embeddings(conn, now, (org, namespace, thread_id))
    return Retired(now, {(a, m) for a, m in retired})


# A live copy holds an embedding row when it is a turn search indexes (user, assistant, or a
# compaction summary) and its first 2,048 characters are the row's text. A row of exactly 240
# characters (an earlier build's cut, or a turn of that length) is held by a copy whose first
# 2,048 characters are those of the row's own agent's message (live or not); with no such
# message row left (the TTL removed it), by none. Another agent's copy holds it only with the
# whole text of the row's own agent's message, where that is still stored: the row was
# indexed once that text passed the guard, and a copy whose text goes on past the indexed
# part (with a secret, say) was never checked for it.
_ROW_AGENTS_COPY = (
    "SELECT 1 FROM loom.conversations o WHERE o.org = e.org AND o.namespace = e.namespace"
    " AND o.thread_id = e.thread_id AND o.msg_id = e.msg_id AND o.agent = e.agent"
)
HOLDS_EMBEDDING = (
    "h.org = e.org AND h.namespace = e.namespace AND h.thread_id = e.thread_id"
    " AND h.msg_id = e.msg_id AND h.tombstoned_at IS NULL"
    f" AND (h.role IN ('user', 'assistant') OR {summary_row('h')})"
    " AND CASE WHEN length(e.text) = 240 THEN EXISTS (SELECT 1 FROM loom.conversations o"
    "  WHERE o.org = e.org AND o.namespace = e.namespace AND o.thread_id = e.thread_id"
    "  AND o.msg_id = e.msg_id AND o.agent = e.agent"
    "  AND left(o.content, 2048) = left(h.content, 2048))"
    " ELSE left(h.content, 2048) = e.text END"
    # Another agent's copy holds it when its whole text is the row agent's (the text the guard
    # read before the row was written), or, that message gone (expired), is the indexed text
    # itself: text past it was never read, and may be a secret.
    " AND (h.agent = e.agent OR CASE WHEN EXISTS (" + _ROW_AGENTS_COPY + ")"
    "  THEN NOT EXISTS (" + _ROW_AGENTS_COPY + " AND o.content <> h.content)"
    "  ELSE h.content = e.text END)"
)


# An embedding row passed to the live copy that holds it (HOLDS_EMBEDDING) takes that copy's
# agent, role, user, run and saved state: a flag its old holder's user set must not surface
# under another user; a copy its own user saved is preferred.
PASSED_TO_HOLDER = (
    "(agent, role, user_id, run_id, is_saved, saved_at) ="
    " (SELECT h.agent, h.role, h.user_id, h.run_id, h.is_saved, h.saved_at"
    "  FROM loom.conversations h"
    "  WHERE " + HOLDS_EMBEDDING + " ORDER BY h.is_saved DESC, h.ts, h.agent LIMIT 1)"
)


def _settle_thread_embeddings(
    conn: Connection, now: datetime, scope: tuple[str, str, str], msg_id: str | None = None
) -> int:
    """Pass rows whose own agent holds no live copy to another holder (with its agent, role,
    user, run and saved state), else tombstone them; a row flagged saved by a user whose saved
    copy is gone takes a holder's state too (the flag must not outlive the save). One turn's
    rows with `msg_id`, else the thread's.

    Returns the turns tombstoned (one per turn however many models hold it).
    """
    rows_of = "e.org = %s AND e.namespace = %s AND e.thread_id = %s AND e.tombstoned_at IS NULL"
    params: tuple[Any, ...] = scope
    if msg_id is not None:
        rows_of += " AND e.msg_id = %s"
        params = (*scope, msg_id)
    conn.execute(
        "UPDATE loom.conversation_embeddings e SET " + PASSED_TO_HOLDER + " WHERE " + rows_of + ""
        " AND (NOT EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS_EMBEDDING + ""
        "   AND h.agent = e.agent)"
        "  OR e.is_saved AND NOT EXISTS (SELECT 1 FROM loom.conversations s WHERE s.org = e.org"
        "   AND s.namespace = e.namespace AND s.thread_id = e.thread_id AND s.msg_id = e.msg_id"
        "   AND s.is_saved AND s.user_id = e.user_id AND s.tombstoned_at IS NULL))"
        " AND EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS_EMBEDDING + ")",
        params,
    )
    rows = conn.execute(
        "UPDATE loom.conversation_embeddings e SET tombstoned_at = %s WHERE " + rows_of + ""
        " AND NOT EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS_EMBEDDING + ")"
        " RETURNING e.msg_id",
        (now, *params),
    ).fetchall()
    # A row now held by a copy a save alone stored (its recorded copies gone) leaves search.
    marked = settle_saved_only(conn, *scope, None if msg_id is None else [msg_id])
    if rows or marked:  # the windows of the turns around them no longer read their text
        rewrite_thread_windows(conn, *scope)
    return len({r[0] for r in rows})


def settle_turn_embedding(
    conn: Connection, org: str, namespace: str, thread_id: str, msg_id: str
) -> None:
    """Once a copy of a turn is gone: its embedding row passes to another live copy holding
    it, else is tombstoned (the caller holds the thread's lease)."""
    _settle_thread_embeddings(
        conn, database_clock(conn), (org, namespace, thread_id), msg_id=msg_id
    )
