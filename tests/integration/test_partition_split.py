"""`loom partitions split`: the turns stored before partitions move into month partitions, a
month a transaction, newest first; a stopped or refused run keeps what it moved and changes
nothing else, and the next run goes on (docs/decisions/0033-splitting-the-earlier-table.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from chalicelib import cli
from chalicelib.deps import Deps, set_deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.services.partition_split import split_earlier_turns
from chalicelib.store.migrate import migrate
from chalicelib.store.pool import open_pool
from chalicelib.workers.retention import purge_expired_conversations
from tests.conftest import FakeClock, make_settings
from tests.integration.test_store_foundation import migrated_to
from tests.integration.test_transcript_partitions import (
    NOW,
    PARTITIONS,
    _snapshot,
    _turns,
    _where,
    month_start,
)

BEFORE = "loom.conversations_before_partitions"
# Turns of the fourteen months up to the current one, three a month (the second saved, the
# third tombstoned), and none in the month before the current one: it is moved all the same.
MONTHS = [month_start(NOW, -k) for k in range(14) if k != 1]


@contextmanager
def earlier_turns(database_url: str) -> Iterator[str]:
    """A database filled by the schema before partitions, then migrated to the latest."""
    with migrated_to(database_url, PARTITIONS - 1) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            for i, m in enumerate(MONTHS):
                rows = [(f"m{i}-{j}", m + timedelta(days=j, hours=1), j == 1) for j in range(3)]
                _turns(conn, "o", rows)
            conn.execute(
                "UPDATE loom.conversations SET tombstoned_at = now() WHERE msg_id LIKE '%-2'"
            )
        migrate(url)
        yield url


def _rows_in(conn: psycopg.Connection, table: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
    return int(row[0]) if row else 0


@contextmanager
def _deps(url: str, clock: FakeClock | None = None, **settings: object) -> Iterator[Deps]:
    pool = open_pool(url, max_size=2)
    clock = clock or FakeClock()
    try:
        yield Deps(make_settings(**settings), pool=pool, embedder=FakeEmbedder(), clock=clock,
                   monotonic=clock.monotonic)  # fmt: skip
    finally:
        pool.close()


@pytest.fixture
def loom(monkeypatch, deps):
    """`loom ARGS...` against a database: its exit code."""

    def run(url: str, *args: str) -> int:
        monkeypatch.setenv("LOOM_DATABASE_URL", url)
        monkeypatch.setenv("LOOM_EMBEDDER", "fake")
        try:
            return cli.main(list(args))
        finally:
            set_deps(deps)  # the CLI swaps the process-wide Deps, and closes its own

    return run


def test_each_month_moves_to_its_own_partition_and_no_row_changes(database_url, loom, capsys):
    """GIVEN an install partitioned by the migration, its fourteen months of turns (saved,
    tombstoned, with metadata, one month empty) in the table of earlier turns
    WHEN `loom partitions split --months 2` runs, then `loom partitions split`, then again
    THEN the first run moves the two newest months and says each on stderr, the second goes on
    with the other twelve, the third moves nothing; every row reads back byte for byte after
    each run, each turn is in its month's partition, and the earlier table is empty."""
    with earlier_turns(database_url) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            before = _snapshot(conn)
            assert len(before) == 39 and _rows_in(conn, BEFORE) == 39

        assert loom(url, "partitions", "split", "--months", "2") == 0
        out = capsys.readouterr()
        assert f"{MONTHS[0]:%Y-%m}: 3 turns moved (1 of 14 months)" in out.err
        assert f"{month_start(NOW, -1):%Y-%m}: 0 turns moved (2 of 14 months)" in out.err
        assert "2 month(s) moved (3 turns); 12 month(s) left" in out.out
        with psycopg.connect(url, autocommit=True) as conn:
            assert _snapshot(conn) == before
            assert _where(conn, "m0-0") == [f"loom.conversations_{MONTHS[0]:%Y_%m}"]
            assert _where(conn, "m1-0") == [BEFORE]

        assert loom(url, "partitions", "split") == 0
        assert "12 month(s) moved (36 turns); 0 month(s) left" in capsys.readouterr().out
        assert loom(url, "partitions", "split") == 0
        assert "0 month(s) moved (0 turns); 0 month(s) left" in capsys.readouterr().out
        with psycopg.connect(url, autocommit=True) as conn:
            assert _snapshot(conn) == before
            assert _rows_in(conn, BEFORE) == 0
            for i, m in enumerate(MONTHS):
                assert _where(conn, f"m{i}-1") == [f"loom.conversations_{m:%Y_%m}"]
            # A turn written later for a moved month lands in that month's partition; one from
            # before every month, in the earlier table.
            _turns(conn, "o2", [("late", MONTHS[5] + timedelta(days=9), False),
                                ("ancient", datetime(2001, 1, 1, tzinfo=UTC), False)])  # fmt: skip
            assert _where(conn, "late") == [f"loom.conversations_{MONTHS[5]:%Y_%m}"]
            assert _where(conn, "ancient") == [BEFORE]


def test_a_month_whose_lock_is_not_had_in_time_moves_nothing_and_the_next_run_goes_on(
    database_url, loom, capsys
):
    """GIVEN a long read holding the transcript
    WHEN the split runs with a 200 ms lock timeout (and the command with a bad one)
    THEN it gives up on the first month (busy; the command exits 1 saying to run it again),
    nothing moved and no row changed; a lock timeout that is no time exits 2; once the read
    ends, the next run moves every month."""
    with earlier_turns(database_url) as url, _deps(url) as deps:
        said: list[str] = []
        with psycopg.connect(url) as reader:
            reader.execute("SELECT count(*) FROM loom.conversations").fetchone()  # holds it
            with psycopg.connect(url, autocommit=True) as conn:
                before = _snapshot(conn)
            run = split_earlier_turns(deps, months=None, lock_timeout="200ms", say=said.append)
            assert (run.months, run.busy, run.left, said) == (0, True, 14, [])
            assert loom(url, "partitions", "split", "--lock-timeout", "200ms") == 1
            out = capsys.readouterr()
            assert "Run `loom partitions split` again" in out.err
            assert "0 month(s) moved (0 turns); 14 month(s) left" in out.out
            assert loom(url, "partitions", "split", "--lock-timeout", "soon") == 2
            assert "give a time such as 500ms" in capsys.readouterr().err
            with psycopg.connect(url, autocommit=True) as conn:
                assert _snapshot(conn) == before and _rows_in(conn, BEFORE) == 39
        run = split_earlier_turns(deps, months=None, lock_timeout="200ms", say=said.append)
        assert (run.months, run.turns, run.busy, run.left, len(said)) == (14, 39, False, 0, 14)


def test_months_moved_out_of_the_earlier_table_expire_whole(database_url):
    """GIVEN the earlier turns split into months, and a 200-day TTL
    WHEN the retention worker runs
    THEN the months wholly past the TTL are dropped as partitions, and only the month the bound
    cuts through is deleted row by row."""
    clock = FakeClock()
    clock.now = NOW
    with (
        earlier_turns(database_url) as url,
        _deps(url, clock, retention_conversations_days=200) as deps,
    ):
        split_earlier_turns(deps, months=None, lock_timeout="5s", say=lambda _: None)
        cutoff = NOW - timedelta(days=200)
        with deps.pool.connection() as conn:
            expired = conn.execute(
                "SELECT count(*) FROM loom.conversations WHERE ts < %s", (cutoff,)
            ).fetchone()
        whole = [m for m in MONTHS if month_start(m, 1) <= cutoff]

        out = purge_expired_conversations(deps)

        # The whole months, and the earlier table (empty, and wholly before them).
        assert out["partitions_dropped"] == len(whole) + 1
        assert out["turns_removed"] == (expired[0] if expired else 0)
        assert out["turns_removed_row_by_row"] == out["turns_removed"] - 3 * len(whole)
