"""The warm tier: month partitions of loom.conversations past the warm bound move to a
tablespace on a cheaper volume, one partition at a time (docs/decisions/0031)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from psycopg import Connection, sql

TablespaceState = Literal["ok", "missing", "no_tablespaces"]


def tablespace_state(conn: Connection, name: str) -> TablespaceState:
    """Whether the database can hold the warm tier in `name`: Aurora PostgreSQL keeps storage
    in its own volume and has no tablespaces of the user's (its catalog has aurora_version)."""
    aurora = conn.execute("SELECT 1 FROM pg_proc WHERE proname = 'aurora_version'").fetchone()
    if aurora is not None:
        return "no_tablespaces"
    found = conn.execute("SELECT 1 FROM pg_tablespace WHERE spcname = %s", (name,)).fetchone()
    return "ok" if found is not None else "missing"


def next_to_warm(conn: Connection, cutoff: datetime, tablespace: str) -> str | None:
    """The oldest partition whose every moment is before `cutoff` and that is not in
    `tablespace` yet (the default partition never moves)."""
    row = conn.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace"
        " WHERE i.inhparent = 'loom.conversations'::regclass"
        " AND loom.partition_upper(c.oid) <= %s AND t.spcname IS DISTINCT FROM %s"
        " ORDER BY loom.partition_upper(c.oid) LIMIT 1",
        (cutoff, tablespace),
    ).fetchone()
    return str(row[0]) if row else None


def move_partition(conn: Connection, name: str, tablespace: str) -> None:
    """Move one partition and its indexes to `tablespace` (each rewritten, the partition locked
    while it moves; reads of other months go on)."""
    space = sql.Identifier(tablespace)
    indexes = conn.execute(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s::regclass",
        (f"loom.{name}",),
    ).fetchall()
    with conn.transaction():
        conn.execute(
            sql.SQL("ALTER TABLE {} SET TABLESPACE {}").format(sql.Identifier("loom", name), space)
        )
        for (index,) in indexes:
            schema, _, index_name = index.rpartition(".")
            ident = sql.Identifier(schema or "loom", index_name)
            conn.execute(sql.SQL("ALTER INDEX {} SET TABLESPACE {}").format(ident, space))
