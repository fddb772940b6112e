"""Fact quality's SQL: confidence and quality tags changed in place, reads by key recorded,
and the pages and vectors the classifier reads."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
from psycopg import Connection
from psycopg.rows import dict_row

# memory.get records a read at most this often per row: one write an hour, not one per read.
READ_MARK_EVERY = timedelta(hours=1)


def mark_read(
    conn: Connection, org: str, namespace: str, user_id: str, key: str, at: datetime
) -> None:
    """Record that the row was read by its key at `at`. A row a write holds is skipped, not
    waited for: a read never queues behind a write for its bookkeeping."""
    conn.execute(
        "UPDATE loom.memories m SET last_read_at = %s FROM (SELECT ctid FROM loom.memories"
        "  WHERE org = %s AND namespace = %s AND user_id = %s AND key = %s"
        "  AND retired_at IS NULL AND (last_read_at IS NULL OR last_read_at < %s)"
        "  FOR UPDATE SKIP LOCKED) r WHERE m.ctid = r.ctid",
        (at, org, namespace, user_id, key, at - READ_MARK_EVERY),
    )


def lock_quality(
    conn: Connection, org: str, namespace: str, idents: list[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The live rows of these (user_id, key) pairs, locked for a change of quality."""
    if not idents:
        return {}
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT m.user_id, m.key, m.confidence, m.confidence_before, m.tags"
            " FROM loom.memories m JOIN unnest(%s::text[], %s::text[]) AS i(u, k)"
            " ON m.user_id = i.u AND m.key = i.k"
            " WHERE m.org = %s AND m.namespace = %s AND m.retired_at IS NULL"
            " ORDER BY m.user_id, m.key FOR UPDATE OF m",
            ([u for u, _ in idents], [k for _, k in idents], org, namespace),
        ).fetchall()
    return {(r["user_id"], r["key"]): r for r in rows}


def set_quality(
    conn: Connection, org: str, namespace: str, user_id: str, key: str, *,
    confidence: float, confidence_before: float | None, tags: list[str],
) -> None:  # fmt: skip
    """Confidence and tags as a demote, label or restore leaves them; the value, its version
    and its history stay as they were."""
    conn.execute(
        "UPDATE loom.memories SET confidence = %s, confidence_before = %s, tags = %s"
        " WHERE org = %s AND namespace = %s AND user_id = %s AND key = %s"
        " AND retired_at IS NULL",
        (confidence, confidence_before, tags, org, namespace, user_id, key),
    )


def review_page(
    conn: Connection, org: str, namespace: str, after: tuple[str, str] | None, limit: int
) -> list[dict[str, Any]]:
    """Live facts after `after` (user_id, key), in that order: one page of a
    namespace's clean-up."""
    user, key = after if after is not None else ("", "")
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT user_id, key, value, tags, pinned, locked, confidence, last_read_at"
            " FROM loom.memories WHERE org = %s AND namespace = %s AND retired_at IS NULL"
            " AND kind = 'fact' AND (user_id, key) > (%s, %s)"
            " ORDER BY user_id, key LIMIT %s",
            (org, namespace, user, key, limit),
        ).fetchall()


def count_reviewable(conn: Connection, org: str, namespace: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM loom.memories WHERE org = %s AND namespace = %s"
        " AND retired_at IS NULL AND kind = 'fact'",
        (org, namespace),
    ).fetchone()
    return int(row[0]) if row else 0


def vectors_of(
    conn: Connection, org: str, namespace: str, model: str, idents: list[tuple[str, str]]
) -> dict[tuple[str, str], np.ndarray]:
    """The stored vectors of these (user_id, key) rows embedded by `model`."""
    if not idents:
        return {}
    rows = conn.execute(
        "SELECT m.user_id, m.key, m.embedding FROM loom.memories m"
        " JOIN unnest(%s::text[], %s::text[]) AS i(u, k) ON m.user_id = i.u AND m.key = i.k"
        " WHERE m.org = %s AND m.namespace = %s AND m.embed_model = %s AND m.dim > 0",
        ([u for u, _ in idents], [k for _, k in idents], org, namespace, model),
    ).fetchall()
    return {(r[0], r[1]): _array(r[2]) for r in rows if r[2] is not None}


def _array(value: Any) -> np.ndarray:
    """A stored vector as an array: a column of no fixed dimension reads back as a Vector."""
    return value.to_numpy() if hasattr(value, "to_numpy") else np.asarray(value)
