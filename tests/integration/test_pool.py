"""The connection pool hands out a connection without a round trip when it was used a moment
ago, and replaces one whose server dropped it while it sat in the pool."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from chalicelib.auth import mint_token
from chalicelib.store.pool import open_pool
from chalicelib.store.thread_leases import take_thread_lease
from tests.conftest import Api


@pytest.fixture
def checks() -> list[int]:
    """The round-trip checks the pools of these tests make."""
    return []


def _counted_pool(database_url: str, checks: list[int], **kw) -> ConnectionPool:
    """A pool of one connection whose round-trip checks are noted in `checks`."""

    def counted(conn) -> None:
        checks.append(1)
        ConnectionPool.check_connection(conn)

    return open_pool(database_url, max_size=1, round_trip=counted, **kw)


@pytest.fixture
def one_connection(database_url: str, checks: list[int]):
    small = _counted_pool(database_url, checks)
    yield small
    small.close()


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


def test_a_connection_idle_past_the_bound_is_checked(database_url, checks):
    """GIVEN a connection returned to the pool longer ago than its idle bound (none here)
    WHEN it is taken again
    THEN it is checked with a round trip first."""
    eager = _counted_pool(database_url, checks, check_after_idle_seconds=0.0)
    try:
        _backend_pid(eager)
        checks.clear()
        time.sleep(0.01)
        _backend_pid(eager)
    finally:
        eager.close()
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


def _hold_lease(database_url: str, org: str, namespace: str, thread: str) -> psycopg.Connection:
    """A transaction that took a thread's lease and stalled (a stuck worker, a psql left open)."""
    stuck = psycopg.connect(database_url)
    take_thread_lease(stuck, org, namespace, thread)  # the transaction stays open
    return stuck


@pytest.mark.parametrize("op", ["conversation.append", "conversation.save_message"])
def test_a_write_behind_a_stalled_thread_lease_answers_503_in_bounded_time(
    api, deps, org, database_url, op
):
    """GIVEN a transaction holding a thread's lease, stalled
    WHEN a turn is appended to, or a message saved in, that thread
    THEN the call answers 503 in the contract's shape within the lock timeout (5 s), not
    after the lease is let go."""
    api.token = mint_token(deps, org=org, role="org_admin")
    api.ok("conversation.set_logging", namespace="ns", enabled=True)
    body = {
        "conversation.append": {"thread_id": "t", "msg_id": "m1"},
        "conversation.save_message": {"conversation_id": "t", "message_id": "m1", "user_id": "u"},
    }[op]
    stuck = _hold_lease(database_url, org, "ns", "t")
    answer: list[tuple[int, dict]] = []
    call = threading.Thread(
        target=lambda: answer.append(
            api.post(op, namespace="ns", agent="a", role="user", content="hi", **body)
        ),
        daemon=True,
    )
    call.start()
    call.join(timeout=10)  # the lock timeout is 5 s
    stuck.close()  # let a call still waiting go, so the test leaves nothing behind
    call.join(timeout=30)
    assert answer, "no answer within 10 s"
    status, out = answer[0]
    assert status == 503 and out["error"]["code"] == "unavailable", (status, out)


def test_a_stalled_thread_lease_leaves_the_pool_to_other_tenants(api, deps, org, database_url):
    """GIVEN a stalled transaction holding one thread's lease, and as many appends to that
    thread as the pool has connections
    WHEN another tenant calls an op
    THEN it is served: the waiting appends give their connections back at the lock timeout."""
    api.token = mint_token(deps, org=org, role="org_admin")
    api.ok("conversation.set_logging", namespace="ns", enabled=True)
    other = Api(api.client, mint_token(deps, org=org + "-other", role="org_admin"))
    stuck = _hold_lease(database_url, org, "ns", "t")
    body = {"namespace": "ns", "agent": "a", "thread_id": "t", "role": "user"}
    waiting = [
        threading.Thread(
            target=api.post,
            args=("conversation.append",),
            kwargs={**body, "msg_id": f"m{i}", "content": f"turn {i}"},
            daemon=True,
        )
        for i in range(deps.pool.max_size)
    ]
    try:
        for w in waiting:
            w.start()
        time.sleep(1.0)
        status, out = other.post("conversation.threads", namespace="ns")
    finally:
        stuck.close()
        for w in waiting:
            w.join(timeout=30)
    assert status == 200, (status, out)


def test_an_append_behind_an_index_build_waits_for_it_and_is_indexed(api, deps, org, database_url):
    """GIVEN a transaction holding the embedding table in SHARE mode for longer than the lease
    wait (as an index build does)
    WHEN a turn is appended
    THEN the append waits for it, answers 200 and its vector is written: only the wait for a
    lease is bounded."""
    api.token = mint_token(deps, org=org, role="org_admin")
    api.ok("conversation.set_logging", namespace="ns", enabled=True)
    body = {"namespace": "ns", "agent": "a", "thread_id": "t", "role": "user"}
    api.ok("conversation.append", **body, msg_id="warm", content="warm up the index")
    building = psycopg.connect(database_url)
    building.execute("LOCK TABLE loom.conversation_embeddings IN SHARE MODE")
    done = threading.Timer(deps.settings.database_lock_timeout_seconds + 1.5, building.close)
    done.start()
    try:
        status, out = api.post(
            "conversation.append", **body, msg_id="m1", content="the zanzibar ledger move"
        )
    finally:
        done.join()
    assert status == 200 and out["stored"] is True, (status, out)
    with deps.pool.connection() as conn:
        row = conn.execute(
            "SELECT embedding IS NOT NULL FROM loom.conversation_embeddings"
            " WHERE org = %s AND msg_id = 'm1'",
            (org,),
        ).fetchone()
    assert row == (True,)


def test_a_pooled_scan_starts_at_the_first_row_while_another_scan_is_half_way(
    one_connection, database_url
):
    """GIVEN a table larger than a quarter of the server's buffers (where PostgreSQL lets a
    sequential scan join one already running), and a scan of it half way through
    WHEN a pooled connection reads the first row a sequential scan meets (as a search's sample
    of the windows holding a word reads the first it meets)
    THEN it reads the table's first row, every time, not the row the other scan has reached."""
    with psycopg.connect(database_url, autocommit=True) as other:
        buffers = other.execute(
            "SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchone()[0]
        rows = int(buffers / 4 / 120 * 1.5)  # about 120 bytes a row: half again the size
        other.execute("DROP TABLE IF EXISTS public.scan_start")
        other.execute(
            "CREATE TABLE public.scan_start AS"
            " SELECT g AS id, repeat('x', 80) AS pad FROM generate_series(1, %s) g",
            (rows,),
        )
        try:
            with other.transaction():
                other.execute("DECLARE half NO SCROLL CURSOR FOR SELECT id FROM public.scan_start")
                other.execute(f"MOVE {rows // 2} FROM half")
                with one_connection.connection() as conn:
                    first = conn.execute("SELECT id FROM public.scan_start LIMIT 1").fetchone()[0]
        finally:
            other.execute("DROP TABLE public.scan_start")
    assert first == 1
