"""The org's model-calls switch: a row for each org whose model calls are off."""

from __future__ import annotations

from psycopg import Connection

REASON = "model_calls_off"


def switch(conn: Connection, org: str, *, on: bool) -> bool:
    """Switch the org's model calls on or off; whether that changed anything."""
    if on:
        sql = "DELETE FROM loom.model_calls_off WHERE org = %s"
    else:
        sql = "INSERT INTO loom.model_calls_off (org) VALUES (%s) ON CONFLICT DO NOTHING"
    return bool(conn.execute(sql, (org,)).rowcount)


def orgs_off(conn: Connection) -> frozenset[str]:
    """Every org whose model calls are off: what each server holds and refreshes."""
    return frozenset(r[0] for r in conn.execute("SELECT org FROM loom.model_calls_off"))
