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


_TRANSIENT_SQLSTATE_CLASSES = ("08", "40", "53", "57")


@contextmanager
def read_connection(pool: ConnectionPool) -> Iterator[psycopg.Connection]:
    """A pooled connection for reads: autocommit, so no COMMIT round trip."""
    with pool.connection() as conn:
        conn.autocommit = True
        try:
            yield conn
        finally:
            conn.autocommit = False


def database_unavailable(exc: BaseException) -> bool:
    """True for a failure of the database itself (gone, restarting, no free connection in time,
    a transaction it rolled back): the caller may retry, so it answers 503, not 500."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    # No SQLSTATE: the client lost the connection or the pool timed out. Otherwise only the
    # transient classes: connection (08), rollback (40), resources (53), operator (57).
    return exc.sqlstate is None or exc.sqlstate[:2] in _TRANSIENT_SQLSTATE_CLASSES


def open_pool(
    database_url: str, *, max_size: int = 8, prepare: bool = True, timeout: float = 10.0
) -> ConnectionPool:
    """Open a pool; `with pool.connection() as conn:` is one transaction, committed on exit.

    `prepare=False` turns server-side prepared statements off, as RDS Proxy and transaction
    poolers need (LOOM_DATABASE_PREPARE=false). A connection is checked as it is handed out, so
    one left broken by a database restart is replaced instead of failing a request; a request
    waits at most `timeout` seconds for a connection.
    """
    return ConnectionPool(
        database_url,
        min_size=1,
        max_size=max_size,
        configure=_configure,
        check=ConnectionPool.check_connection,
        kwargs={"prepare_threshold": 5 if prepare else None, "connect_timeout": 5},
        timeout=timeout,
        open=True,
        name="loom",
    )
