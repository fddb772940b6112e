"""Settings an operator changes at run time, without a restart."""

from __future__ import annotations

from psycopg import Connection


def set_setting(conn: Connection, name: str, value: str) -> None:
    conn.execute(
        "INSERT INTO loom.settings (name, value) VALUES (%s, %s)"
        " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
        (name, value),
    )


def load_settings(conn: Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT name, value FROM loom.settings").fetchall())
