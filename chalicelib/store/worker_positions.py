"""Where a worker that reads rows once, in (ts, msg_id) order, stands."""

from __future__ import annotations

from datetime import datetime

from psycopg import Connection


def position(conn: Connection, name: str) -> tuple[datetime, str] | None:
    row = conn.execute(
        "SELECT ts, msg_id FROM loom.worker_positions WHERE name = %s", (name,)
    ).fetchone()
    return None if row is None else (row[0], row[1])


def advance(conn: Connection, name: str, at: tuple[datetime, str]) -> None:
    conn.execute(
        "INSERT INTO loom.worker_positions (name, ts, msg_id) VALUES (%s, %s, %s)"
        " ON CONFLICT (name) DO UPDATE SET ts = EXCLUDED.ts, msg_id = EXCLUDED.msg_id,"
        " updated_at = now()",
        (name, at[0], at[1]),
    )
