"""The guard sweep's place, and the indexed texts it reads and withdraws."""

from __future__ import annotations

from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row

from chalicelib.search.store_upkeep import rewrite_thread_windows
from chalicelib.store.thread_leases import take_thread_leases

# An embedding row's primary key, in order: where a sweep stands.
_KEY_COLUMNS = ("org", "namespace", "thread_id", "msg_id", "model")
_E_KEY = ", ".join(f"e.{k}" for k in _KEY_COLUMNS)
Position = list[str]


def position_of(row: dict[str, Any]) -> Position:
    """Where a sweep stands once it has read `row` (one of `indexed_after`'s)."""
    return [row[k] for k in _KEY_COLUMNS]


def sweep_position(conn: Connection, name: str, guard: str) -> tuple[Position | None, bool]:
    """Where the sweep of this guard stands (None: at the start) and whether it is done; a
    sweep of another guard starts over."""
    row = conn.execute(
        "INSERT INTO loom.guard_sweeps AS s (name, guard) VALUES (%s, %s)"
        " ON CONFLICT (name) DO UPDATE SET guard = EXCLUDED.guard,"
        " position = CASE WHEN s.guard = EXCLUDED.guard THEN s.position END,"
        " done = s.guard = EXCLUDED.guard AND s.done,"
        " updated_at = CASE WHEN s.guard = EXCLUDED.guard THEN s.updated_at ELSE now() END"
        " RETURNING position, done",
        (name, guard),
    ).fetchone()
    assert row is not None
    return row[0], bool(row[1])


def advance(conn: Connection, name: str, guard: str, position: Position | None, done: bool) -> None:
    conn.execute(
        "UPDATE loom.guard_sweeps SET position = %s, done = %s, updated_at = now()"
        " WHERE name = %s AND guard = %s",
        (position, done, name, guard),
    )


def indexed_after(conn: Connection, position: Position | None, limit: int) -> list[dict[str, Any]]:
    """Live embedding rows after `position` in primary-key order, with the text they index
    and, when the message it came from is longer (a turn past 2,048 characters), the whole
    message (`content`, else NULL): a high shape past the indexed part withdraws it too; and,
    for a row whose context vector was read after another row, that row's text
    (`read_after`, else NULL)."""
    after = "" if position is None else f" AND ({_E_KEY}) > (%s, %s, %s, %s, %s)"
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_E_KEY}, e.text,"
            " (SELECT c.content FROM loom.conversations c WHERE c.org = e.org"
            "  AND c.namespace = e.namespace AND c.thread_id = e.thread_id"
            "  AND c.msg_id = e.msg_id AND c.agent = e.agent AND c.tombstoned_at IS NULL"
            "  AND length(c.content) > length(e.text) LIMIT 1) AS content,"
            " e.context_of, (SELECT b.text FROM loom.conversation_embeddings b"
            "  WHERE b.org = e.org AND b.namespace = e.namespace AND b.thread_id = e.thread_id"
            "  AND b.msg_id = e.context_of AND b.model = e.model AND b.tombstoned_at IS NULL)"
            "  AS read_after"
            f" FROM loom.conversation_embeddings e WHERE e.tombstoned_at IS NULL{after}"
            f" ORDER BY {_E_KEY} LIMIT %s",
            (*(position or ()), limit),
        ).fetchall()


def _lease_threads(conn: Connection, rows: list[dict[str, Any]]) -> dict[str, set[tuple[str, str]]]:
    """Take the leases of these rows' threads, in one order; returns each org's threads."""
    by_org: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        by_org.setdefault(r["org"], set()).add((r["namespace"], r["thread_id"]))
    for org in sorted(by_org):
        take_thread_leases(conn, org, sorted(by_org[org]))
    return by_org


def withdraw_indexed(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """Tombstone these embedding rows, each if it still holds the text read, under their
    threads' leases (another copy's vector may have taken a row over meanwhile), and rewrite
    the windows and context vectors of their threads; returns the rows withdrawn."""
    by_org = _lease_threads(conn, rows)
    withdrawn = conn.execute(
        "UPDATE loom.conversation_embeddings e SET tombstoned_at = clock_timestamp()"
        " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
        "  AS r(org, namespace, thread_id, msg_id, model, text)"
        " WHERE (e.org, e.namespace, e.thread_id, e.msg_id, e.model)"
        "  = (r.org, r.namespace, r.thread_id, r.msg_id, r.model)"
        " AND e.text = r.text AND e.tombstoned_at IS NULL",
        [[r[k] for r in rows] for k in (*_KEY_COLUMNS, "text")],
    ).rowcount
    for org in sorted(by_org):
        for namespace, thread_id in sorted(by_org[org]):
            rewrite_thread_windows(conn, org, namespace, thread_id)
    return withdrawn


def drop_contexts(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """Give these rows their own vector as context, each if its context is still the one read
    after the row named (`context_of`), under their threads' leases; returns the rows changed."""
    _lease_threads(conn, rows)
    return conn.execute(
        "UPDATE loom.conversation_embeddings e SET context_embedding = e.embedding,"
        " context_of = NULL"
        " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
        "  AS r(org, namespace, thread_id, msg_id, model, context_of)"
        " WHERE (e.org, e.namespace, e.thread_id, e.msg_id, e.model)"
        "  = (r.org, r.namespace, r.thread_id, r.msg_id, r.model)"
        " AND e.context_of = r.context_of AND e.tombstoned_at IS NULL",
        [[r[k] for r in rows] for k in (*_KEY_COLUMNS, "context_of")],
    ).rowcount
