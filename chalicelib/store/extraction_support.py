"""Drops (kept 30 days) and the extraction response cache (kept LOOM_EXTRACTION_CACHE_TTL_DAYS)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row

DROPS_KEPT_DAYS = 30


@dataclass(frozen=True)
class Drop:
    """What a step took out of a run. A model answer that did not parse is a drop too, and
    names the tokens that call cost."""

    stage: str
    reason: str
    count: int
    detail: str
    tokens_in: int = 0
    tokens_out: int = 0


def record_drops(
    conn: Connection,
    org: str,
    namespace: str,
    drops: Sequence[Drop],
    user_id: str = "-",
) -> None:
    """One row a drop; a detail may quote the user's words, so the row names the user (erasure
    reaches it)."""
    if not drops:
        return
    conn.execute(
        "INSERT INTO loom.memory_drops (org, namespace, user_id, stage, reason, count, detail,"
        " tokens_in, tokens_out)"
        " SELECT %s, %s, %s, d.stage, d.reason, d.count, d.detail, d.tokens_in, d.tokens_out"
        " FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[], %s::int[], %s::int[])"
        " AS d(stage, reason, count, detail, tokens_in, tokens_out)",
        (
            org,
            namespace,
            user_id,
            [d.stage for d in drops],
            [d.reason for d in drops],
            [d.count for d in drops],
            [d.detail[:500] for d in drops],
            [d.tokens_in for d in drops],
            [d.tokens_out for d in drops],
        ),
    )


def sum_drops(conn: Connection, org: str, namespace: str, hours: int) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT stage, reason, sum(count)::int AS count, sum(tokens_in)::int AS tokens_in,"
            " sum(tokens_out)::int AS tokens_out FROM loom.memory_drops"
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


def cached_response(
    conn: Connection, prompt_sha256: str, ttl_days: int
) -> tuple[str, int, int] | None:
    """A cached answer younger than `ttl_days` (an older one waits for the pruning pass)."""
    row = conn.execute(
        "SELECT response, tokens_in, tokens_out FROM loom.extraction_cache"
        " WHERE prompt_sha256 = %s AND created_at >= now() - make_interval(days => %s)",
        (prompt_sha256, ttl_days),
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def cache_response(
    conn: Connection,
    subject: tuple[str, str, str],
    prompt_sha256: str,
    response: str,
    tokens_in: int,
    tokens_out: int,
    ttl_days: int,
) -> None:
    """Cache a model's answer under the (org, namespace, user) whose words it read; an expired
    answer the pruning pass has not removed yet is replaced."""
    conn.execute(
        "INSERT INTO loom.extraction_cache (org, namespace, user_id, prompt_sha256, response,"
        " tokens_in, tokens_out) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (prompt_sha256) DO UPDATE SET response = EXCLUDED.response,"
        " tokens_in = EXCLUDED.tokens_in, tokens_out = EXCLUDED.tokens_out, created_at = now()"
        " WHERE loom.extraction_cache.created_at < now() - make_interval(days => %s)",
        (*subject, prompt_sha256, response, tokens_in, tokens_out, ttl_days),
    )


def purge_expired_cache(conn: Connection, ttl_days: int, limit: int) -> int:
    """Remove up to `limit` cached answers older than `ttl_days`; how many went."""
    return conn.execute(
        "DELETE FROM loom.extraction_cache WHERE prompt_sha256 IN (SELECT prompt_sha256"
        " FROM loom.extraction_cache WHERE created_at < now() - make_interval(days => %s)"
        " LIMIT %s)",
        (ttl_days, limit),
    ).rowcount
