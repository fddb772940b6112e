"""Moving the turns stored before partitions into month partitions: one month a transaction,
newest first, so a stopped run keeps every month it moved and the next run goes on from there
(docs/decisions/0033-splitting-the-earlier-table.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from psycopg import Connection, errors, sql

BEFORE = "conversations_before_partitions"


@dataclass(frozen=True)
class Remaining:
    """What the table of earlier turns still spans: its upper bound and its oldest turn's
    month (None when it holds no turn)."""

    upper: datetime | None
    oldest_month: datetime | None

    @property
    def months(self) -> int:
        """Month partitions still to make from it (one for each month, empty ones too)."""
        if self.upper is None or self.oldest_month is None or self.oldest_month >= self.upper:
            return 0
        span = (self.upper.year - self.oldest_month.year) * 12
        return span + self.upper.month - self.oldest_month.month


def remaining(conn: Connection) -> Remaining:
    """Where the earlier table's bound stands, and its oldest turn's month (through its ts
    index); no bound when the table is not a partition (any more)."""
    # A table not attached (or gone) has no partition bound: partition_upper gives NULL.
    row = conn.execute(
        "SELECT loom.partition_upper(to_regclass('loom." + BEFORE + "')),"
        " (SELECT loom.month_start(min(ts)) FROM loom." + BEFORE + ")"
        " WHERE to_regclass('loom." + BEFORE + "') IS NOT NULL"
    ).fetchone()
    if row is None:
        return Remaining(None, None)
    upper, oldest = (None if v is None else v.astimezone(UTC) for v in row)
    return Remaining(upper, oldest)


def split_newest_month(
    conn: Connection, lock_timeout: str
) -> tuple[datetime, int] | Literal["busy"] | None:
    """Move the earlier table's newest month into a partition of its own, in one transaction:
    the earlier table is detached, that month's turns move to the new table, which is attached
    for the month, and the earlier table is attached again for what is before it. Readers
    and writers of every transcript wait for the transaction; it waits at most `lock_timeout`
    for them, then gives up ("busy") with nothing changed. Returns the month and the turns
    moved; None when no month is left to move."""
    spans = remaining(conn)
    if not spans.months or spans.upper is None:
        return None
    before = sql.Identifier("loom", BEFORE)
    try:
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(lock_timeout)))
            conn.execute(
                sql.SQL("ALTER TABLE loom.conversations DETACH PARTITION {}").format(before)
            )
            # Bounds are UTC month starts: the day before one is in the month before it.
            row = conn.execute(
                "SELECT loom.month_start(%s::timestamptz - interval '1 day')", (spans.upper,)
            ).fetchone()
            assert row is not None
            month: datetime = row[0].astimezone(UTC)
            part = sql.Identifier("loom", f"conversations_{month.year:04d}_{month.month:02d}")
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {} (LIKE loom.conversations INCLUDING DEFAULTS"
                    " INCLUDING CONSTRAINTS)"
                ).format(part)
            )
            moved = conn.execute(
                sql.SQL(
                    "WITH moved AS (DELETE FROM {before} WHERE ts >= %(month)s RETURNING *)"
                    " INSERT INTO {part} SELECT * FROM moved"
                ).format(before=before, part=part),
                {"month": month},
            ).rowcount
            attach = (
                "ALTER TABLE loom.conversations ATTACH PARTITION {} FOR VALUES FROM ({}) TO ({})"
            )
            conn.execute(sql.SQL(attach).format(part, sql.Literal(month), sql.Literal(spans.upper)))
            conn.execute(sql.SQL(attach).format(before, sql.SQL("MINVALUE"), sql.Literal(month)))
    except errors.LockNotAvailable:
        return "busy"
    return month, moved
