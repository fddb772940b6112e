"""The connection pool: every pooled connection knows the vector type."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool


def _configure(conn: psycopg.Connection) -> None:
    conn.autocommit = True
    register_vector(conn)
    # A filtered HNSW scan keeps scanning until LIMIT rows pass the filter (pgvector 0.8).
    conn.execute("SET hnsw.iterative_scan = relaxed_order")
    conn.execute("SET hnsw.ef_search = 100")  # recall first; raised for a top_k over 100
    # Tenants differ by orders of magnitude: plan each execution for its own parameters
    # rather than reuse one generic plan (a small tenant's plan scans a big one's rows).
    conn.execute("SET plan_cache_mode = force_custom_plan")
    conn.autocommit = False


@contextmanager
def read_connection(pool: ConnectionPool) -> Iterator[psycopg.Connection]:
    """A pooled connection for reads: autocommit, so no COMMIT round trip."""
    with pool.connection() as conn:
        conn.autocommit = True
        try:
            yield conn
        finally:
            conn.autocommit = False


def open_pool(database_url: str, *, max_size: int = 8, prepare: bool = True) -> ConnectionPool:
    """Open a pool; `with pool.connection() as conn:` is one transaction, committed on exit.

    `prepare=False` turns server-side prepared statements off, as RDS Proxy and transaction
    poolers need (LOOM_DATABASE_PREPARE=false).
    """
    return ConnectionPool(
        database_url,
        min_size=1,
        max_size=max_size,
        configure=_configure,
        kwargs={"prepare_threshold": 5 if prepare else None},
        open=True,
        name="loom",
    )
