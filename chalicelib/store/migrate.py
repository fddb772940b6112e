"""Numbered SQL migrations, applied in order under an advisory lock; safe to run twice."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_LOCK_KEY = 0x6C6F6F6D  # "loom": one migrator at a time across processes
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_files() -> list[tuple[int, Path]]:
    """Every migration file with its version, oldest first."""
    found = []
    for path in MIGRATIONS_DIR.iterdir():
        match = _NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def migrate(database_url: str) -> list[str]:
    """Apply pending migrations; returns the names applied (empty when up to date)."""
    applied: list[str] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute("CREATE SCHEMA IF NOT EXISTS loom")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS loom.schema_migrations ("
                " version int PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM loom.schema_migrations")}
            for version, path in migration_files():
                if version in done:
                    continue
                with conn.transaction():
                    conn.execute(path.read_text())
                    conn.execute(
                        "INSERT INTO loom.schema_migrations (version, name) VALUES (%s, %s)",
                        (version, path.name),
                    )
                applied.append(path.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied


def is_migrated(conn: psycopg.Connection) -> bool:
    """True when every migration file has been applied on this database."""
    latest = max((v for v, _ in migration_files()), default=0)
    row = conn.execute("SELECT coalesce(max(version), 0) FROM loom.schema_migrations").fetchone()
    return bool(row and row[0] >= latest)
