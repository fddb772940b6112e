"""The connection pool hands out a connection without a round trip when it was used a moment
ago, and replaces one whose server dropped it while it sat in the pool."""

from __future__ import annotations

import time

import pytest
from psycopg_pool import ConnectionPool

from chalicelib.store import pool as pool_module
from chalicelib.store.pool import open_pool


@pytest.fixture
def one_connection(database_url: str):
    small = open_pool(database_url, max_size=1)
    yield small
    small.close()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the round-trip checks the pool makes."""
    seen: list[int] = []
    real = ConnectionPool.check_connection

    def counted(conn) -> None:
        seen.append(1)
        real(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return seen


def _backend_pid(pool: ConnectionPool) -> int:
    with pool.connection() as conn:
        return conn.execute("SELECT pg_backend_pid()").fetchone()[0]


def test_a_connection_used_a_moment_ago_is_handed_out_without_a_check(one_connection, checks):
    """GIVEN a pool whose one connection was just used and returned
    WHEN it is taken again at once, several times
    THEN no round-trip check is made after the first hand-out."""
    _backend_pid(one_connection)
    checks.clear()
    for _ in range(5):
        _backend_pid(one_connection)
    assert checks == []


def test_a_connection_idle_past_the_bound_is_checked(one_connection, checks, monkeypatch):
    """GIVEN a connection returned to the pool longer ago than CHECK_AFTER_IDLE_SECONDS
    WHEN it is taken again
    THEN it is checked with a round trip first."""
    _backend_pid(one_connection)
    checks.clear()
    monkeypatch.setattr(pool_module, "CHECK_AFTER_IDLE_SECONDS", 0.0)
    time.sleep(0.01)
    _backend_pid(one_connection)
    assert checks == [1]


def test_a_connection_the_server_dropped_is_replaced_before_it_is_handed_out(
    one_connection, pool, checks
):
    """GIVEN the pool's one connection, used a moment ago, whose backend the server then
    terminates (as a restart or failover does)
    WHEN a request takes a connection at once
    THEN the dropped one is noticed on its socket and replaced: the request succeeds on a new
    backend."""
    before = _backend_pid(one_connection)
    with pool.connection() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (before,))
    time.sleep(0.2)  # the server's goodbye reaches the idle socket
    checks.clear()
    after = _backend_pid(one_connection)
    assert after != before
    assert checks, "the dropped connection was handed out unchecked"
