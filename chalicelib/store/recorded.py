"""Which turns the transcript recorded, and the mark that keeps the others out of its reads.

A save of a message the transcript does not hold stores a copy of its own (`saved_only` on
loom.conversations): the saving user's saved-message ops serve it, and no transcript read does
(search, threads, get, list, the titler, compaction), whether or not the namespace records now.
The copy becomes a turn when the client appends the same message where the namespace records
(the append adopts it), or another agent's recorded copy of it stands beside it.

An embedding row is shared by every copy of its turn, so it carries the mark too: it is
`saved_only` while a live copy a save stored holds the turn and no recorded copy does. Search
filters on it, and a window or a context vector never reads such a row's text (turn_windows).
"""

from __future__ import annotations

from typing import Any

from psycopg import Connection, Cursor

from chalicelib.search.store_upkeep import MOVED_FROM

# A live copy of the turn of embedding row `e`, recorded (a turn) or there only for a save.
_COPY = (
    "SELECT 1 FROM loom.conversations c WHERE c.org = e.org AND c.namespace = e.namespace"
    " AND c.thread_id = e.thread_id AND c.msg_id = e.msg_id AND c.tombstoned_at IS NULL"
)
RECORDED_COPY = _COPY + " AND NOT c.saved_only"
_SAVED_COPY = _COPY + " AND c.saved_only"

# The embedding rows whose mark no longer matches their copies, flipped. A row with no live
# copy left (deleted, expired) keeps its mark. Only a saved row can index a saved-only copy
# (an unsave removes the copy), so the others are not read.
_SETTLE = (
    "WITH settled AS (UPDATE loom.conversation_embeddings e SET saved_only = NOT e.saved_only"
    " WHERE e.org = %(org)s AND e.namespace = %(ns)s AND e.thread_id = %(thread)s"
    " AND (%(ids)s::text[] IS NULL OR e.msg_id = ANY(%(ids)s))"
    " AND (%(model)s::text IS NULL OR e.model = %(model)s)"
    " AND e.tombstoned_at IS NULL AND (e.saved_only OR e.is_saved)"
    " AND CASE WHEN EXISTS (" + RECORDED_COPY + ") THEN e.saved_only"
    "  WHEN EXISTS (" + _SAVED_COPY + ") THEN NOT e.saved_only ELSE false END"
    " RETURNING e.ts)"
)


def _params(
    org: str, namespace: str, thread_id: str, msg_ids: list[str] | None, model: str | None
) -> dict[str, Any]:
    return {"org": org, "ns": namespace, "thread": thread_id, "ids": msg_ids, "model": model}


def settle_saved_only(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    msg_ids: list[str] | None = None,
) -> int:
    """Mark the thread's embedding rows (these turns', or all) as their live copies stand;
    returns the rows changed, whose windows the caller rewrites (it holds the thread's lease)."""
    row = conn.execute(
        _SETTLE + " SELECT count(*) FROM settled",
        _params(org, namespace, thread_id, msg_ids, None),
    ).fetchone()
    return int(row[0]) if row else 0


def send_settle_saved_only(
    conn: Connection, org: str, namespace: str, thread_id: str, model: str, msg_ids: list[str]
) -> Cursor:
    """`settle_saved_only` for these turns' rows of one model, inside a pipeline: where a row
    changed is noted (as a moved row is) for the window rewrite that follows to start there."""
    return conn.execute(
        _SETTLE + " SELECT set_config('" + MOVED_FROM + "', coalesce(least("
        "  nullif(current_setting('" + MOVED_FROM + "', true), '')::timestamptz,"
        "  (SELECT min(ts) FROM settled))::text, ''), true)",
        _params(org, namespace, thread_id, msg_ids, model),
    )
