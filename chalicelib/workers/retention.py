"""The transcript TTL: turns older than LOOM_RETENTION_CONVERSATIONS_DAYS are removed from disk,
a month partition at a time where the whole month has expired (docs/decisions/0031). Each pass
also makes the month partitions ahead.

The TTL covers loom.conversations only; embedding rows have none (the spec bounds it so). The
same pass removes extraction drops past 30 days and cached model answers past
LOOM_EXTRACTION_CACHE_TTL_DAYS.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

from psycopg import Connection

from chalicelib.deps import Deps
from chalicelib.services.tiering import warm_one
from chalicelib.store.extraction_support import purge_expired_cache, purge_old_drops
from chalicelib.store.retention import (
    drop_partition,
    ensure_partitions,
    partitions,
    purge_expired_turns,
)

BATCH = 5000
MAX_BATCHES_PER_PASS = 200
PARTITIONS_AHEAD = 3  # months past the current one


def purge_expired_conversations(deps: Deps) -> dict[str, int]:
    """One pass: make the month partitions ahead; then, with a TTL, drop the partitions whose
    every turn has expired and remove expired turns row by row in the others (0 days keeps
    everything forever)."""
    days = deps.live().retention_conversations_days
    with deps.pool.connection() as conn:
        made = ensure_partitions(conn, PARTITIONS_AHEAD)
    dropped = dropped_turns = removed = 0
    if days:
        cutoff = deps.clock() - timedelta(days=days)
        with deps.pool.connection() as conn:
            whole, cut = partitions(conn, cutoff)
        for name in whole:
            with deps.pool.connection() as conn:
                gone = drop_partition(conn, name)
            if gone is not None:
                dropped, dropped_turns = dropped + 1, dropped_turns + gone
        for name in cut:
            removed += _in_batches(deps, partial(_purge, cutoff=cutoff, partition=name))
    warmed = warm_one(deps)  # one partition a pass, in off-peak hours
    ttl_days = deps.live().extraction_cache_ttl_days
    with deps.pool.connection() as conn:
        drops = purge_old_drops(conn)  # loom.memory_drops is kept 30 days
    return {
        "retention_days": days,
        "partitions_made": made,
        "partitions_dropped": dropped,
        "turns_removed": dropped_turns + removed,
        "turns_removed_row_by_row": removed,
        "partitions_warmed": int(warmed is not None),
        "drops_removed": drops,
        "cache_removed": _in_batches(deps, lambda conn: purge_expired_cache(conn, ttl_days, BATCH)),
    }


def _purge(conn: Connection, *, cutoff: datetime, partition: str) -> int:
    return purge_expired_turns(conn, cutoff, BATCH, partition)


def _in_batches(deps: Deps, purge: Callable[[Connection], int]) -> int:
    """Rows removed by `purge` (up to BATCH a call, each its own transaction) until a batch
    comes back short or the pass has run MAX_BATCHES_PER_PASS."""
    removed = 0
    for _ in range(MAX_BATCHES_PER_PASS):
        with deps.pool.connection() as conn:
            n = purge(conn)
        removed += n
        if n < BATCH:
            break
    return removed
