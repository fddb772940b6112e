"""The connection pool: every pooled connection knows the vector type."""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool


def _configure(conn: psycopg.Connection) -> None:
    conn.autocommit = True
    register_vector(conn)
    conn.autocommit = False


def open_pool(database_url: str, *, max_size: int = 8) -> ConnectionPool:
    """Open a pool; `with pool.connection() as conn:` is one transaction, committed on exit."""
    return ConnectionPool(
        database_url,
        min_size=1,
        max_size=max_size,
        configure=_configure,
        kwargs={"prepare_threshold": None},  # safe behind RDS Proxy and transaction poolers
        open=True,
        name="loom",
    )
