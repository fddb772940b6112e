"""Erasure keeps an explicit table registry; the catalogue of the loom schema must agree with it,
so a table (or column) that holds a user's or a namespace's rows cannot be added unnoticed."""

from __future__ import annotations

import psycopg
import pytest

from chalicelib.store.erasure import ERASED, NOT_ERASED
from tests.integration.test_erasure_support import NOT_A_PARTITION


def uncovered(conn: psycopg.Connection) -> list[str]:
    """What the catalogue holds that the registry does not account for."""
    rows = conn.execute(
        "SELECT table_schema || '.' || table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'loom'"
        " AND (column_name LIKE '%%user%%' OR column_name = 'namespace')"
        " AND table_name IN (SELECT table_name FROM information_schema.tables"
        "  WHERE table_schema = 'loom' AND table_type IN ('BASE TABLE', 'PARTITIONED TABLE'))"
        " AND" + NOT_A_PARTITION
    ).fetchall()
    user_cols: dict[str, set[str]] = {}
    for table, column in rows:
        user_cols.setdefault(table, set())
        if column != "namespace":
            user_cols[table].add(column)
    problems = []
    declared = {t.name: t for t in ERASED}
    for table, cols in sorted(user_cols.items()):
        if table in NOT_ERASED:
            continue
        if table not in declared:
            problems.append(f"{table} ({', '.join(sorted(cols)) or 'namespace'}) is not covered")
        elif cols != set(declared[table].user_columns):
            problems.append(f"{table}: user columns {sorted(cols)} but erasure matches on"
                            f" {sorted(declared[table].user_columns)}")  # fmt: skip
    return problems


def test_every_table_with_a_user_or_namespace_column_is_erased_or_named_as_not(pool):
    """GIVEN the loom schema as migrated
    WHEN its tables with a user column (or a namespace column) are read from the catalogue
    THEN each is in the erasure registry, matched on exactly its user columns, or named in
    NOT_ERASED with the reason; and every registry table exists.
    """
    with pool.connection() as conn:
        assert uncovered(conn) == []
        existing = {
            f"loom.{r[0]}"
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'loom'"
            ).fetchall()
        }
    assert {t.name for t in ERASED} | set(NOT_ERASED) <= existing


@pytest.mark.parametrize(
    ("ddl", "named"),
    [
        ("CREATE TABLE loom.reading_receipts (org text, end_user_id text)", "receipts"),
        ("ALTER TABLE loom.memory_evidence ADD COLUMN speaker_user text", "speaker_user"),
        ("CREATE TABLE loom.scratch (org text, namespace text)", "scratch"),
    ],
)
def test_the_check_fails_for_a_table_or_column_erasure_does_not_cover(pool, ddl, named):
    """GIVEN a new table with a user column, a new user column on an erased table, or a new
    table of a namespace's rows
    WHEN the catalogue is compared with the registry (inside a transaction rolled back)
    THEN the comparison names it.
    """
    with pool.connection() as conn:
        try:
            conn.execute(ddl)
            problems = uncovered(conn)
        finally:
            conn.rollback()
    assert any(named in p for p in problems), problems
