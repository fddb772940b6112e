"""Drops (kept 30 days) and the extraction response cache."""

from __future__ import annotations

from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row

DROPS_KEPT_DAYS = 30


def record_drops(
    conn: Connection,
    org: str,
    namespace: str,
    drops: list[tuple[str, str, int, str]],
    user_id: str = "-",
) -> None:
    """(stage, reason, count, detail) rows; a detail may quote the user's words, so the row
    names the user (erasure reaches it)."""
    if not drops:
        return
    conn.execute(
        "INSERT INTO loom.memory_drops (org, namespace, user_id, stage, reason, count, detail)"
        " SELECT %s, %s, %s, d.stage, d.reason, d.count, d.detail"
        " FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[]) AS d(stage, reason, count,"
        " detail)",
        (
            org,
            namespace,
            user_id,
            [d[0] for d in drops],
            [d[1] for d in drops],
            [d[2] for d in drops],
            [d[3][:500] for d in drops],
        ),
    )


def sum_drops(conn: Connection, org: str, namespace: str, hours: int) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT stage, reason, sum(count)::int AS count FROM loom.memory_drops"
            " WHERE org = %s AND namespace = %s"
            " AND created_at >= now() - make_interval(hours => %s)"
            " GROUP BY stage, reason ORDER BY 3 DESC, 1, 2",
            (org, namespace, hours),
        ).fetchall()


def purge_old_drops(conn: Connection) -> int:
    return conn.execute(
        "DELETE FROM loom.memory_drops WHERE created_at < now() - make_interval(days => %s)",
        (DROPS_KEPT_DAYS,),
    ).rowcount


def cached_response(conn: Connection, prompt_sha256: str) -> tuple[str, int, int] | None:
    row = conn.execute(
        "SELECT response, tokens_in, tokens_out FROM loom.extraction_cache"
        " WHERE prompt_sha256 = %s",
        (prompt_sha256,),
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def cache_response(
    conn: Connection,
    subject: tuple[str, str, str],
    prompt_sha256: str,
    response: str,
    tokens_in: int,
    tokens_out: int,
) -> None:
    """Cache a model's answer under the (org, namespace, user) whose words it read."""
    conn.execute(
        "INSERT INTO loom.extraction_cache (org, namespace, user_id, prompt_sha256, response,"
        " tokens_in, tokens_out) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (prompt_sha256) DO NOTHING",
        (*subject, prompt_sha256, response, tokens_in, tokens_out),
    )
