"""Saved messages: flags on transcript rows and their embedding rows, claimed under the lease."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from psycopg import Connection
from psycopg.rows import dict_row

from chalicelib.search.store_upkeep import note_moving_rows, rewrite_windows_from
from chalicelib.store.turn_writes import NewTurn

# The tsvector of a row's whole text (its first 500,000 characters when the whole would pass
# a tsvector's 1 MB: loom.saved_tsvector) and its length in tokens, for the BM25 leg.
_LEXICON = (
    "(SELECT v, (SELECT coalesce(sum(array_length(u.positions, 1)), 0) FROM unnest(v) u)"
    " FROM (SELECT loom.saved_tsvector(content) AS v) s)"
)


def find_copy(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    msg_id: str,
    agent: str,
    model: str,
    user: str,
) -> dict[str, Any] | None:
    """The message's transcript row and its embedding row: a live copy first, then one this
    user saved already (another agent's copy of the message is not saved twice), then the
    caller agent's; `saved_elsewhere` when another user saved another live copy (the copies
    share one vector row: a message is saved for one user, whichever agent's copy is named).
    `has_vector` only when the live vector row was embedded from this copy's text, the start
    of it (another agent's copy may hold other words under the same id); `vector_owner` is that
    row's user."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT c.agent, c.role, c.content, c.user_id, c.is_saved, c.saved_at, c.ts,"
            " c.tombstoned_at IS NOT NULL AS deleted,"
            " e.msg_id IS NOT NULL AND e.tombstoned_at IS NULL AND e.embedding IS NOT NULL"
            "   AND starts_with(c.content, e.text) AS has_vector,"
            " CASE WHEN e.tombstoned_at IS NULL THEN e.user_id END AS vector_owner,"
            " coalesce(e.is_saved AND e.tombstoned_at IS NULL, false) AS vector_flagged,"
            " EXISTS (" + _SAVED_ELSEWHERE + ") AS saved_elsewhere"
            " FROM loom.conversations c LEFT JOIN loom.conversation_embeddings e"
            " ON e.org = c.org AND e.namespace = c.namespace AND e.thread_id = c.thread_id"
            " AND e.msg_id = c.msg_id AND e.model = %(model)s"
            " WHERE c.org = %(org)s AND c.namespace = %(ns)s AND c.thread_id = %(thread)s"
            " AND c.msg_id = %(msg_id)s"
            " ORDER BY c.tombstoned_at IS NOT NULL, (c.is_saved AND c.user_id = %(user)s) DESC,"
            " c.agent = %(agent)s DESC, c.ts LIMIT 1",
            {
                "model": model,
                "org": org,
                "ns": namespace,
                "thread": thread_id,
                "msg_id": msg_id,
                "user": user,
                "agent": agent,
            },
        ).fetchone()


# A live copy of the message (any agent's) that a user other than %(user)s saved.
_SAVED_ELSEWHERE = (
    "SELECT 1 FROM loom.conversations o WHERE o.org = %(org)s AND o.namespace = %(ns)s"
    " AND o.thread_id = %(thread)s AND o.msg_id = %(msg_id)s AND o.tombstoned_at IS NULL"
    " AND o.is_saved AND o.user_id NOT IN ('-', %(user)s)"
)


def insert_saved_turn(conn: Connection, turn: NewTurn) -> None:
    """A message the transcript does not hold, there only because it is saved (no transcript
    read serves it, whether or not the namespace records: recorded.py); its key is the
    deduplication token, checked under the thread's lease, so two concurrent saves store one
    row."""
    conn.execute(
        "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role, content,"
        " user_id, ts, is_saved, saved_at, saved_only) SELECT %(org)s, %(ns)s, %(thread)s,"
        " %(agent)s, %(msg)s, %(role)s, %(content)s, %(user)s, clock_timestamp(), true,"
        " clock_timestamp(), true"
        " WHERE NOT EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = %(org)s"
        "  AND c.namespace = %(ns)s AND c.thread_id = %(thread)s AND c.agent = %(agent)s"
        "  AND c.msg_id = %(msg)s)",
        {
            "org": turn.org,
            "ns": turn.namespace,
            "thread": turn.thread_id,
            "agent": turn.agent,
            "msg": turn.msg_id,
            "role": turn.role,
            "content": turn.content,
            "user": turn.user_id,
        },
    )


def claim_saved(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    agent: str,
    msg_id: str,
    user: str,
    *,
    shared_ok: bool = True,
) -> dict[str, Any] | None:
    """Flag the row saved for `user` if nobody else owns it (and nobody else saved another
    copy of the message), in the mutation itself; a shared row ("-") only when `shared_ok`."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "UPDATE loom.conversations SET user_id = %(user)s, is_saved = true,"
            " saved_at = CASE WHEN is_saved THEN coalesce(saved_at, clock_timestamp())"
            "   ELSE clock_timestamp() END,"
            " (saved_tsv, saved_len) = " + _LEXICON + ""
            " WHERE org = %(org)s AND namespace = %(ns)s AND thread_id = %(thread)s"
            " AND agent = %(agent)s AND msg_id = %(msg_id)s AND tombstoned_at IS NULL"
            " AND (user_id = %(user)s OR (%(shared_ok)s AND user_id = '-'))"
            " AND role IN ('user', 'assistant')"
            " AND NOT EXISTS (" + _SAVED_ELSEWHERE + ")"
            " RETURNING role, run_id, ts, saved_at",
            {
                "user": user,
                "org": org,
                "ns": namespace,
                "thread": thread_id,
                "agent": agent,
                "msg_id": msg_id,
                "shared_ok": shared_ok,
            },
        ).fetchone()


def flag_embedding(
    conn: Connection,
    turn: NewTurn,
    *,
    model: str,
    text: str,
    ts: datetime,
    saved_at: datetime,
    vector: np.ndarray | None,
    error: str | None,
    fresh: bool,
) -> None:
    """Write (when `fresh`) or flag the message's embedding row, owned by the saving user (the
    caller holds the thread's lease). A fresh write takes over any row of the message, moving it
    to `ts`: the windows are rewritten from where it stood when earlier. It is `saved_only`
    (out of transcript search) unless a recorded copy of the message is live."""
    if fresh:
        note_moving_rows(
            conn,
            turn.org,
            turn.namespace,
            turn.thread_id,
            model,
            [(turn.msg_id, ts, text)],
            vectorless_only=False,
        )
        conn.execute(
            "INSERT INTO loom.conversation_embeddings AS e (org, namespace, thread_id, msg_id,"
            " model, agent, role, user_id, run_id, text, dim, embedding, error, ts, is_saved,"
            " saved_at, saved_only) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " %s, true, %s, NOT EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = %s"
            "  AND c.namespace = %s AND c.thread_id = %s AND c.msg_id = %s"
            "  AND c.tombstoned_at IS NULL AND NOT c.saved_only))"
            " ON CONFLICT (org, namespace, thread_id, msg_id, model) DO UPDATE SET"
            " agent = EXCLUDED.agent, role = EXCLUDED.role, user_id = EXCLUDED.user_id,"
            " run_id = EXCLUDED.run_id, text = EXCLUDED.text, dim = EXCLUDED.dim,"
            " embedding = EXCLUDED.embedding, error = EXCLUDED.error, ts = EXCLUDED.ts,"
            " is_saved = true, saved_at = EXCLUDED.saved_at, saved_only = EXCLUDED.saved_only,"
            " tombstoned_at = NULL,"
            # A row revived with this text has no context vector read after its turn before
            # yet: its own vector stands for it (a kept one would be of an earlier text).
            " context_embedding = EXCLUDED.embedding, context_of = NULL,"
            " created_at = now()",
            (
                turn.org,
                turn.namespace,
                turn.thread_id,
                turn.msg_id,
                model,
                turn.agent,
                turn.role,
                turn.user_id,
                turn.run_id,
                text,
                0 if vector is None else len(vector),
                vector,
                error,
                ts,
                saved_at,
                turn.org,
                turn.namespace,
                turn.thread_id,
                turn.msg_id,
            ),
        )
        rewrite_windows_from(conn, turn.org, turn.namespace, turn.thread_id, model, ts, turn.msg_id)
    else:
        conn.execute(
            "UPDATE loom.conversation_embeddings SET is_saved = true, saved_at = %s, user_id = %s"
            " WHERE org = %s AND namespace = %s AND thread_id = %s AND msg_id = %s AND model = %s",
            (saved_at, turn.user_id, turn.org, turn.namespace, turn.thread_id, turn.msg_id, model),
        )


def unflag_saved(
    conn: Connection, org: str, namespace: str, thread_id: str, msg_id: str, user: str
) -> tuple[str, bool] | None:
    """Clear this user's saved flag on the transcript row: the copy's agent and whether the row
    exists only because it was saved (no transcript turn: the unsave removes it); None when the
    user had not saved it."""
    row = conn.execute(
        "UPDATE loom.conversations SET is_saved = false, saved_at = NULL, saved_tsv = NULL,"
        " saved_len = NULL WHERE org = %s AND namespace = %s AND thread_id = %s AND msg_id = %s"
        " AND user_id = %s AND is_saved AND tombstoned_at IS NULL RETURNING agent, saved_only",
        (org, namespace, thread_id, msg_id, user),
    ).fetchone()
    return (row[0], row[1]) if row else None


def withdraw_embedding(
    conn: Connection, org: str, namespace: str, thread_id: str, msg_id: str
) -> None:
    """Clear the embedding row's saved flag (the caller holds the thread's lease)."""
    conn.execute(
        "UPDATE loom.conversation_embeddings SET is_saved = false, saved_at = NULL"
        " WHERE org = %s AND namespace = %s AND thread_id = %s AND msg_id = %s",
        (org, namespace, thread_id, msg_id),
    )


def remove_turn(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str, msg_id: str
) -> None:
    """The lightweight delete of a turn that existed only because it was saved."""
    conn.execute(
        "DELETE FROM loom.conversations WHERE org = %s AND namespace = %s AND thread_id = %s"
        " AND agent = %s AND msg_id = %s",
        (org, namespace, thread_id, agent, msg_id),
    )


def list_saved(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    user: str,
    thread_id: str | None,
    before: tuple[datetime, str, str] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """A user's saved messages, most recently saved first (keyset on save time, thread, id)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT thread_id AS conversation_id, msg_id AS message_id, role, content,"
            " saved_at, coalesce(saved_at, ts) AS ts FROM loom.conversations"
            " WHERE org = %(org)s AND namespace = %(ns)s AND user_id = %(user)s AND is_saved"
            " AND tombstoned_at IS NULL"
            " AND (%(thread)s::text IS NULL OR thread_id = %(thread)s)"
            " AND (%(b_ts)s::timestamptz IS NULL"
            "   OR (coalesce(saved_at, ts), thread_id, msg_id) < (%(b_ts)s, %(b_th)s, %(b_id)s))"
            " ORDER BY coalesce(saved_at, ts) DESC, thread_id DESC, msg_id DESC LIMIT %(limit)s",
            {
                "org": org,
                "ns": namespace,
                "user": user,
                "thread": thread_id,
                "b_ts": before[0] if before else None,
                "b_th": before[1] if before else None,
                "b_id": before[2] if before else None,
                "limit": limit,
            },
        ).fetchall()


def saved_among(
    conn: Connection, org: str, namespace: str, user: str, thread_id: str, msg_ids: list[str]
) -> set[str]:
    rows = conn.execute(
        "SELECT msg_id FROM loom.conversations WHERE org = %s AND namespace = %s"
        " AND thread_id = %s AND user_id = %s AND is_saved AND tombstoned_at IS NULL"
        " AND msg_id = ANY(%s)",
        (org, namespace, thread_id, user, msg_ids),
    ).fetchall()
    return {r[0] for r in rows}
