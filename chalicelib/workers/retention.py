"""The transcript TTL: turns older than LOOM_RETENTION_CONVERSATIONS_DAYS are removed from disk.

The TTL covers loom.conversations only; embedding rows have none (the spec bounds it so). The
same pass removes extraction drops past 30 days and cached model answers past
LOOM_EXTRACTION_CACHE_TTL_DAYS.
"""

from __future__ import annotations

from collections.abc import Callable

from psycopg import Connection

from chalicelib.deps import Deps
from chalicelib.store.extraction_support import purge_expired_cache, purge_old_drops
from chalicelib.store.retention import purge_expired_turns

BATCH = 5000
MAX_BATCHES_PER_PASS = 200


def purge_expired_conversations(deps: Deps) -> dict[str, int]:
    """One pass: remove expired turns in batches; 0 days keeps everything forever."""
    days = deps.live().retention_conversations_days
    removed = _in_batches(deps, lambda conn: purge_expired_turns(conn, days, BATCH)) if days else 0
    ttl_days = deps.live().extraction_cache_ttl_days
    with deps.pool.connection() as conn:
        drops = purge_old_drops(conn)  # loom.memory_drops is kept 30 days
    return {
        "retention_days": days,
        "turns_removed": removed,
        "drops_removed": drops,
        "cache_removed": _in_batches(deps, lambda conn: purge_expired_cache(conn, ttl_days, BATCH)),
    }


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
