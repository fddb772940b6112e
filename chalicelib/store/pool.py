"""The connection pool: every pooled connection knows the vector type."""

from __future__ import annotations

import functools
import select
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool


def _configure(conn: psycopg.Connection, lock_timeout_ms: int) -> None:
    conn.autocommit = True
    register_vector(conn)
    # How long a wait for a lease (a thread's, a brief's) lasts before it gives up: the request
    # answers 503 and its connection goes back to the pool, instead of waiting without end
    # behind a stalled holder while the pool runs dry for every tenant (`lease_lock`).
    conn.execute(f"SET {LEASE_WAIT} = {int(lock_timeout_ms)}")
    # A filtered HNSW scan keeps scanning until LIMIT rows pass the filter (pgvector 0.8).
    conn.execute("SET hnsw.iterative_scan = relaxed_order")
    conn.execute("SET hnsw.ef_search = 100")  # recall first; raised for a top_k over 100
    # Tenants differ by orders of magnitude: plan each execution for its own parameters
    # rather than reuse one generic plan (a small tenant's plan scans a big one's rows).
    conn.execute("SET plan_cache_mode = force_custom_plan")
    # A scan of a large table otherwise starts where another one left off: a statement that
    # reads the first rows matching (a search's sample of a common word's windows) would read
    # other rows each time, and answer the same query otherwise.
    conn.execute("SET synchronize_seqscans = off")
    conn.autocommit = False


# When each pooled connection went back to the pool.
_returned_at: weakref.WeakKeyDictionary[psycopg.Connection, float] = weakref.WeakKeyDictionary()
CHECK_AFTER_IDLE_SECONDS = 5.0


def _returned(conn: psycopg.Connection) -> None:
    _returned_at[conn] = time.monotonic()


def _check(
    conn: psycopg.Connection,
    idle_seconds: float = CHECK_AFTER_IDLE_SECONDS,
    round_trip: Callable[[psycopg.Connection], None] = ConnectionPool.check_connection,
) -> None:
    """Check a connection with a round trip only when the server may have dropped it: it sat in
    the pool over `idle_seconds` (a frozen Lambda, a NAT timeout), or something arrived on its
    socket while it sat there (a server shutting down says so, then closes it). A connection
    used a moment ago with nothing waiting on it is handed out as it is."""
    if conn.broken or conn.closed:
        raise psycopg.OperationalError("the pooled connection is closed")
    returned = _returned_at.get(conn)
    idle_long = returned is None or time.monotonic() - returned > idle_seconds
    if idle_long or select.select([conn.fileno()], [], [], 0)[0]:
        round_trip(conn)


LEASE_WAIT = "loom.lease_wait_ms"  # a setting of the session, read by `lease_lock`


def lease_lock(key: str, salt: int) -> str:
    """A statement taking the transaction-level advisory lock on hashtextextended(key, salt),
    waiting at most the session's LEASE_WAIT (no bound outside the pool) for it; the bound
    holds for this wait only, never for the statements after it."""
    return (
        f"SELECT set_config('lock_timeout', coalesce(current_setting('{LEASE_WAIT}', true),"
        f" '0'), true), pg_advisory_xact_lock(hashtextextended({key}, {salt})),"
        " set_config('lock_timeout', '0', true)"
    )


_TRANSIENT_SQLSTATE_CLASSES = ("08", "40", "53", "57")
LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout passed: worth a retry


@contextmanager
def autocommit_connection(pool: ConnectionPool) -> Iterator[psycopg.Connection]:
    """A pooled connection in autocommit: each read is its own statement with no COMMIT round
    trip; writes go in a `pipelined_transaction` on it."""
    with pool.connection() as conn:
        conn.autocommit = True
        try:
            yield conn
        finally:
            conn.autocommit = False


@contextmanager
def pipelined_transaction(conn: psycopg.Connection) -> Iterator[None]:
    """One transaction whose BEGIN, statements and COMMIT reach the server in one round trip
    (`conn` from autocommit_connection). Read the cursors' results after the block: a fetch
    inside it would wait for the server there and then.

    Its statements are keyed by one thread, so their plans do not depend on the tenant's size:
    the server may reuse a prepared statement's generic plan instead of planning it again."""
    with conn.pipeline(), conn.transaction():
        conn.execute("SET LOCAL plan_cache_mode = auto")
        yield


def database_clock(conn: psycopg.Connection) -> datetime:
    """The database's time now (clock_timestamp: not the transaction's start)."""
    row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]


# SQLSTATE classes of a value the database cannot hold: data exceptions (a timestamp out of
# range, text it cannot parse as the column's type) and program limits (an index entry or a
# tsvector over its size).
_REFUSED_VALUE_SQLSTATE_CLASSES = ("22", "54")


def database_refused_value(exc: BaseException) -> str | None:
    """What the database said of a value it cannot hold, or None for any other failure."""
    if not isinstance(exc, psycopg.Error) or exc.sqlstate is None:
        return None
    if exc.sqlstate[:2] not in _REFUSED_VALUE_SQLSTATE_CLASSES:
        return None
    primary = exc.diag.message_primary or str(exc)
    return primary.splitlines()[0][:300]


def database_unavailable(exc: BaseException) -> bool:
    """True for a failure of the database itself (gone, restarting, no free connection in time,
    a transaction it rolled back): the caller may retry, so it answers 503, not 500."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    # No SQLSTATE: the client lost the connection or the pool timed out. Otherwise only the
    # transient classes: connection (08), rollback (40), resources (53), operator (57), and a
    # lock not granted in time.
    return (
        exc.sqlstate is None
        or exc.sqlstate[:2] in _TRANSIENT_SQLSTATE_CLASSES
        or exc.sqlstate == LOCK_NOT_AVAILABLE
    )


def open_pool(
    database_url: str,
    *,
    max_size: int = 8,
    prepare: bool = True,
    timeout: float = 10.0,
    lock_timeout: float = 5.0,
    check_after_idle_seconds: float = CHECK_AFTER_IDLE_SECONDS,
    round_trip: Callable[[psycopg.Connection], None] = ConnectionPool.check_connection,
) -> ConnectionPool:
    """Open a pool; `with pool.connection() as conn:` is one transaction, committed on exit.

    `prepare=False` turns server-side prepared statements off, as RDS Proxy and transaction
    poolers need (LOOM_DATABASE_PREPARE=false). A connection is checked as it is handed out, so
    one left broken by a database restart is replaced instead of failing a request (`_check`); a
    request waits at most `timeout` seconds for a connection, and a statement at most
    `lock_timeout` seconds for a lease another transaction holds. A connection idle over
    `check_after_idle_seconds` is checked with `round_trip` before it is handed out.
    """
    return ConnectionPool(
        database_url,
        min_size=1,
        max_size=max_size,
        configure=functools.partial(_configure, lock_timeout_ms=int(lock_timeout * 1000)),
        check=functools.partial(
            _check, idle_seconds=check_after_idle_seconds, round_trip=round_trip
        ),
        reset=_returned,
        kwargs={"prepare_threshold": 5 if prepare else None, "connect_timeout": 5},
        timeout=timeout,
        open=True,
        name="loom",
    )
