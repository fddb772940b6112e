"""The warm tier's settings against the database: refused at start where they cannot hold, and
the one partition a pass moves (docs/decisions/0031)."""

from __future__ import annotations

from datetime import datetime, timedelta

from chalicelib.deps import Deps
from chalicelib.errors import LoomError
from chalicelib.store import tiering as store


def tiering_refusal(deps: Deps) -> str | None:
    """Why LOOM_TIERING_WARM_TABLESPACE cannot be used on this database, if it cannot."""
    name = deps.settings.tiering_warm_tablespace
    if not name:
        return None
    with deps.pool.connection() as conn:
        state = store.tablespace_state(conn, name)
    if state == "no_tablespaces":
        return (
            f"LOOM_TIERING_WARM_TABLESPACE={name}: this database (Aurora PostgreSQL) has no"
            " tablespaces; Aurora tiers storage itself. Unset LOOM_TIERING_WARM_TABLESPACE"
            " (and LOOM_TIERING_CONVERSATIONS_WARM_DAYS) and start again"
        )
    if state == "missing":
        return (
            f"LOOM_TIERING_WARM_TABLESPACE={name}: no such tablespace; create it on the warm"
            f" volume first (CREATE TABLESPACE {name} LOCATION '/path/on/warm/volume') or unset"
            " the setting"
        )
    return None


def in_offpeak_hours(hours: str, now: datetime) -> bool:
    """Whether `now` (UTC) is within START-END (end excluded; wraps midnight when END is before
    START); an empty setting is every hour."""
    if not hours:
        return True
    start, end = (int(h) for h in hours.split("-"))
    hour = now.hour
    return start <= hour < end if start <= end else (hour >= start or hour < end)


def warm_one(deps: Deps) -> str | None:
    """Move the oldest partition past the warm bound to the warm tablespace, in off-peak hours;
    the partition moved, if any."""
    live = deps.live()
    name, days = deps.settings.tiering_warm_tablespace, live.tiering_conversations_warm_days
    now = deps.clock()
    if not name or not days or not in_offpeak_hours(live.tiering_offpeak_hours, now):
        return None
    refusal = tiering_refusal(deps)
    if refusal is not None:
        raise LoomError(refusal)
    with deps.pool.connection() as conn:
        partition = store.next_to_warm(conn, now - timedelta(days=days), name)
        if partition is not None:
            store.move_partition(conn, partition, name)
    return partition
