"""Monthly partitions of loom.conversations: the migration keeps every stored row, a key stays
unique across months, and the TTL drops whole expired months and deletes row by row only where
its bound cuts through (docs/decisions/0031-transcript-partitions.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from chalicelib.deps import Deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.providers.llm import FakeLLM
from chalicelib.store.migrate import migrate, migration_files
from chalicelib.store.pool import open_pool
from chalicelib.store.retention import ensure_partitions
from chalicelib.workers.retention import purge_expired_conversations
from tests.conftest import FakeClock, make_settings
from tests.integration.test_store_foundation import migrated_to

PARTITIONS = next(v for v, p in migration_files() if "transcript_partitions" in p.name)
LATEST = max(v for v, _ in migration_files())


def month_start(moment: datetime, months: int = 0) -> datetime:
    """The first moment (UTC) of the month `months` after the one `moment` is in."""
    index = moment.year * 12 + moment.month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


NOW = datetime.now(UTC)


def _turns(conn: psycopg.Connection, org: str, rows: list[tuple[str, datetime, bool]]) -> None:
    """Turns of one thread (msg_id, ts, saved), each with its embedding row."""
    for msg_id, ts, saved in rows:
        conn.execute(
            "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
            " content, ts, is_saved, saved_at, metadata, tokens)"
            " VALUES (%s, 'ns', 't', 'bot', %s, 'user', %s, %s, %s, %s, '{\"k\": 1}', 3)",
            (org, msg_id, f"turn {msg_id} about the harbour", ts, saved, ts if saved else None),
        )
        conn.execute(
            "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id, model,"
            " agent, role, text, ts, is_saved, saved_at)"
            " VALUES (%s, 'ns', 't', %s, 'fake', 'bot', 'user', %s, %s, %s, %s)",
            (org, msg_id, f"turn {msg_id}", ts, saved, ts if saved else None),
        )


def _snapshot(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT to_jsonb(c)::text FROM loom.conversations c"
        " ORDER BY org, namespace, thread_id, agent, msg_id"
    ).fetchall()
    return [r[0] for r in rows]


def _where(conn: psycopg.Connection, msg_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT tableoid::regclass::text FROM loom.conversations WHERE msg_id = %s", (msg_id,)
    ).fetchall()
    return [r[0] for r in rows]


def test_the_migration_keeps_every_stored_row_and_later_months_get_partitions(database_url):
    """GIVEN a database of the schema before partitions holding turns of 2024, of last year and
    of now (saved, tombstoned, with metadata)
    WHEN the partitioning migration runs
    THEN every row reads back byte for byte, loom.conversations is partitioned by month, the
    earlier table holds the rows stored before, and a turn of next month lands in its month's
    partition."""
    with migrated_to(database_url, PARTITIONS - 1) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            _turns(conn, "o1", [(f"a{i}", datetime(2024, 1 + i % 12, 3, tzinfo=UTC), i % 3 == 0)
                                for i in range(40)])  # fmt: skip
            _turns(conn, "o2", [(f"b{i}", NOW - timedelta(hours=i), False) for i in range(20)])
            conn.execute("UPDATE loom.conversations SET tombstoned_at = now() WHERE msg_id = 'a1'")
            before = _snapshot(conn)

        migrate(url)

        with psycopg.connect(url, autocommit=True) as conn:
            assert _snapshot(conn) == before and len(before) == 60
            kind = conn.execute(
                "SELECT relkind FROM pg_class WHERE oid = 'loom.conversations'::regclass"
            ).fetchone()
            assert kind == ("p",)
            assert set(_where(conn, "a0") + _where(conn, "b0")) == {
                "loom.conversations_before_partitions"
            }
            _turns(conn, "o3", [("c0", month_start(NOW, 1) + timedelta(days=2), False)])
            assert _where(conn, "c0") == [f"loom.conversations_{month_start(NOW, 1):%Y_%m}"]


@contextmanager
def _fresh_deps(database_url: str, **settings: Any) -> Iterator[tuple[Deps, FakeClock]]:
    """A database of its own at the latest schema, and Deps on it."""
    with migrated_to(database_url, LATEST) as url:
        pool = open_pool(url, max_size=2)
        clock = FakeClock()
        try:
            yield Deps(make_settings(**settings), pool=pool, embedder=FakeEmbedder(),
                       llm=FakeLLM(), clock=clock, monotonic=clock.monotonic), clock  # fmt: skip
        finally:
            pool.close()


def test_the_ttl_drops_whole_expired_months_and_cuts_row_by_row_only_the_last(database_url):
    """GIVEN turns now and in each of the next three months (a saved one in a month that will
    expire whole, whose copy by another agent lives in the last month), a 30-day TTL, and a
    clock 40 days into the third month ahead
    WHEN the retention worker runs
    THEN the earlier table and the next two months are dropped whole, in the third month only
    the turns before the cutoff are removed (row by row), every embedding row stays, and the
    saved turn's vector stays saved only while a live saved copy remains."""
    with _fresh_deps(database_url, retention_conversations_days=30) as (deps, clock):
        m1, m2, m3 = (month_start(NOW, k) for k in (1, 2, 3))
        cutoff = m3 + timedelta(days=10)
        with deps.pool.connection() as conn:
            _turns(conn, "o", [("now", NOW, False), ("m1", m1 + timedelta(days=1), True),
                               ("m2", m2 + timedelta(days=1), True),
                               ("m3-early", m3 + timedelta(days=2), False),
                               ("m3-late", cutoff + timedelta(days=2), False)])  # fmt: skip
            # m2 is saved also as another agent's copy in the third month, after the cutoff.
            conn.execute(
                "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
                " content, ts, is_saved, saved_at) VALUES ('o', 'ns', 't', 'bot-2', 'm2', 'user',"
                " 'turn m2', %s, true, %s)",
                (cutoff + timedelta(days=3), cutoff + timedelta(days=3)),
            )
        clock.now = m3 + timedelta(days=40)

        out = purge_expired_conversations(deps)

        assert (out["partitions_dropped"], out["turns_removed"]) == (3, 4)
        assert out["turns_removed_row_by_row"] == 1  # m3-early
        with deps.pool.connection() as conn:
            left = conn.execute(
                "SELECT msg_id, agent FROM loom.conversations ORDER BY msg_id, agent"
            ).fetchall()
            assert left == [("m2", "bot-2"), ("m3-late", "bot")]
            names = {
                r[0]
                for r in conn.execute(
                    "SELECT relname FROM pg_class WHERE relname LIKE 'conversations_%'"
                ).fetchall()
            }
            assert "conversations_before_partitions" not in names
            assert f"conversations_{m1:%Y_%m}" not in names and f"conversations_{m3:%Y_%m}" in names
            vectors = dict(
                conn.execute("SELECT msg_id, is_saved FROM loom.conversation_embeddings").fetchall()
            )
            assert vectors == {"now": False, "m1": False, "m2": True, "m3-early": False,
                               "m3-late": False}  # fmt: skip


def test_a_turn_of_a_month_without_a_partition_waits_in_the_default_one_then_moves(
    database_url,
):
    """GIVEN a turn five months ahead, past the partitions made
    THEN it is stored (in the default partition)
    WHEN the partitions are made six months ahead
    THEN it is in its month's partition, and nothing else moved."""
    with _fresh_deps(database_url) as (deps, _):
        far = month_start(NOW, 5) + timedelta(days=3)
        with deps.pool.connection() as conn:
            _turns(conn, "o", [("far", far, False), ("now", NOW, False)])
            assert _where(conn, "far") == ["loom.conversations_default"]
            before = _snapshot(conn)
            assert ensure_partitions(conn, 6) == 3
            assert _where(conn, "far") == [f"loom.conversations_{far:%Y_%m}"]
            assert _snapshot(conn) == before


def test_a_key_stays_unique_across_months(api, deps, org, pool):
    """GIVEN a turn appended, then moved to next month (its ts rewritten)
    WHEN the same message id is appended again
    THEN no second copy is stored: the key is checked in every month."""
    from chalicelib.auth import mint_token
    from tests.conftest import Api

    a = Api(api.client, mint_token(deps, org=org, role="admin"))
    a.ok("conversation.set_logging", namespace="ns", enabled=True)
    turn = {"namespace": "ns", "agent": "bot", "thread_id": "t", "msg_id": "m", "role": "user"}
    a.ok("conversation.append", content="first", **turn)
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversations SET ts = %s WHERE org = %s AND msg_id = 'm'",
            (month_start(NOW, 1) + timedelta(days=1), org),
        )
    again = a.ok("conversation.append", content="first", **turn)

    assert again["reason"] == "duplicate"
    with pool.connection() as conn:
        count = conn.execute(
            "SELECT count(*) FROM loom.conversations WHERE org = %s AND msg_id = 'm'", (org,)
        ).fetchone()
    assert count == (1,)


def test_each_writer_of_a_turn_finds_its_key_in_another_month(api, deps, org, pool):
    """GIVEN a turn whose row lies in next month's partition
    WHEN the append's insert, a save's insert and a compaction summary's write meet its key
    (each under the thread's lease, the check that keeps a key unique without ts in the
    primary key)
    THEN none stores a second copy; the summary write revises the row where it lies."""
    from chalicelib.store.compaction_rows import insert_summary
    from chalicelib.store.saved_messages import insert_saved_turn
    from chalicelib.store.thread_leases import take_thread_lease
    from chalicelib.store.turn_writes import NewTurn, insert_turns

    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.namespaces (org, namespace, conversation_logging_enabled)"
            " VALUES (%s, 'ns', true)",
            (org,),
        )
    turn = NewTurn(org=org, namespace="ns", thread_id="t", agent="bot", msg_id="m",
                   role="system", content="a summary")  # fmt: skip
    with pool.connection() as conn:
        conn.autocommit = True
        assert list(insert_turns(conn, [turn]) or {}) == ["m"]
        later = month_start(NOW, 1) + timedelta(days=1)
        conn.execute("UPDATE loom.conversations SET ts = %s WHERE org = %s", (later, org))
        assert insert_turns(conn, [turn]) == {}
    with pool.connection() as conn:
        take_thread_lease(conn, org, "ns", "t")
        insert_saved_turn(conn, turn)
        assert insert_summary(conn, NewTurn(**{**turn.__dict__, "content": "revised"}), later,
                              NOW)  # fmt: skip
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT content, tableoid::regclass::text FROM loom.conversations WHERE org = %s",
            (org,),
        ).fetchall()
    assert rows == [("revised", f"loom.conversations_{later:%Y_%m}")]


@contextmanager
def _tablespace(database_url: str) -> Iterator[str]:
    """A tablespace of its own in a fresh directory owned by the server's OS user."""
    import os
    import shutil
    import tempfile
    import uuid

    name = f"warm_{uuid.uuid4().hex[:8]}"
    where = tempfile.mkdtemp(prefix="loom-warm-")
    with psycopg.connect(database_url, autocommit=True) as admin:
        data_dir = admin.execute("SELECT current_setting('data_directory')").fetchone()[0]
        owner = os.stat(data_dir)
        os.chown(where, owner.st_uid, owner.st_gid)
        admin.execute(f"CREATE TABLESPACE {name} LOCATION '{where}'")
    try:
        yield name
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f"DROP TABLESPACE IF EXISTS {name}")
        shutil.rmtree(where, ignore_errors=True)


def _spaces(conn: psycopg.Connection) -> dict[str, str]:
    """Each partition's (and its indexes') tablespace, pg_default when none is set."""
    rows = conn.execute(
        "SELECT c.relname, coalesce(t.spcname, 'pg_default') FROM pg_class c"
        " LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'loom' AND c.relname LIKE 'conversations%%' AND c.relkind IN ('r', 'i')"
    ).fetchall()
    return dict(rows)


def test_months_past_the_warm_bound_move_to_the_warm_tablespace_one_a_pass_off_peak(
    database_url,
):
    """GIVEN a warm tablespace, a 30-day warm bound, off-peak hours 2-4 UTC, turns now and in
    each of the next two months, and a clock 40 days into the third month ahead
    WHEN the worker passes at 10:00, then three times at 03:00
    THEN nothing moves at 10:00; each pass at 03:00 moves the oldest partition past the bound
    with its indexes (the earlier table, then each month), the month the bound has not passed
    stays, and every turn reads back unchanged."""
    with _tablespace(database_url) as space, _fresh_deps(
        database_url, tiering_warm_tablespace=space, tiering_conversations_warm_days=30,
        tiering_offpeak_hours="2-4",
    ) as (deps, clock):  # fmt: skip
        m1, m2, m3 = (month_start(NOW, k) for k in (1, 2, 3))
        with deps.pool.connection() as conn:
            _turns(conn, "o", [("now", NOW, False), ("m1", m1 + timedelta(days=1), True),
                               ("m2", m2 + timedelta(days=1), False),
                               ("m3", m3 + timedelta(days=1), False)])  # fmt: skip
            before = _snapshot(conn)
        day = m3 + timedelta(days=40)
        clock.now = day.replace(hour=10)
        assert purge_expired_conversations(deps)["partitions_warmed"] == 0
        clock.now = day.replace(hour=3)
        for _ in range(3):
            assert purge_expired_conversations(deps)["partitions_warmed"] == 1
        assert purge_expired_conversations(deps)["partitions_warmed"] == 0

        with deps.pool.connection() as conn:
            spaces = _spaces(conn)
            assert _snapshot(conn) == before
        warm = {n for n, s in spaces.items() if s == space}
        for name in ("conversations_before_partitions", f"conversations_{m1:%Y_%m}",
                     f"conversations_{m2:%Y_%m}"):  # fmt: skip
            assert name in warm
            assert any(i.startswith(name[:40]) and i != name for i in warm), name  # its indexes
        assert spaces[f"conversations_{m3:%Y_%m}"] == "pg_default"
        assert spaces["conversations_default"] == "pg_default"


def test_a_database_without_tablespaces_refuses_the_warm_tablespace_at_start(database_url):
    """GIVEN a database whose catalog is Aurora PostgreSQL's (it has aurora_version()), and one
    without the named tablespace
    THEN the setting is refused with a message that says why and what to do, and a worker pass
    in off-peak hours refuses it too."""
    from chalicelib.errors import LoomError
    from chalicelib.services.tiering import tiering_refusal

    with _fresh_deps(database_url, tiering_warm_tablespace="warm",
                     tiering_conversations_warm_days=30) as (deps, _):  # fmt: skip
        missing = tiering_refusal(deps)
        assert missing is not None and "no such tablespace" in missing
        with deps.pool.connection() as conn:
            conn.execute("CREATE FUNCTION public.aurora_version() RETURNS text"
                         " LANGUAGE sql AS $$ SELECT '16.4.0' $$")  # fmt: skip
        refusal = tiering_refusal(deps)
        assert refusal is not None and "Aurora PostgreSQL) has no tablespaces" in refusal
        assert "Unset LOOM_TIERING_WARM_TABLESPACE" in refusal
        try:
            purge_expired_conversations(deps)
        except LoomError as exc:
            assert "Aurora" in exc.message
        else:
            raise AssertionError("the pass moved a partition to a tablespace Aurora has not")


def test_offpeak_hours_wrap_midnight():
    from chalicelib.services.tiering import in_offpeak_hours

    at = [datetime(2026, 1, 1, h, tzinfo=UTC) for h in range(24)]
    assert [h.hour for h in at if in_offpeak_hours("22-4", h)] == [0, 1, 2, 3, 22, 23]
    assert [h.hour for h in at if in_offpeak_hours("1-3", h)] == [1, 2]
    assert all(in_offpeak_hours("", h) for h in at)


def test_a_read_that_bounds_time_reads_only_the_months_it_names(pool):
    """GIVEN the month partitions ahead
    WHEN a read of loom.conversations bounds ts to next month
    THEN its plan scans next month's partition (and the default one) and no other month."""
    start, end = month_start(NOW, 1), month_start(NOW, 2)
    with pool.connection() as conn:
        ensure_partitions(conn, 3)
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT msg_id FROM loom.conversations WHERE org = 'o'"
                " AND ts >= %s AND ts < %s",
                (start, end),
            ).fetchall()
        )
    assert f"conversations_{start:%Y_%m}" in plan
    assert f"conversations_{end:%Y_%m}" not in plan
    assert "conversations_before_partitions" not in plan
