"""The transcript's time to live: turns older than it are removed from disk, a whole month
partition at a time where every turn of the month has expired, else row by row."""

from __future__ import annotations

from datetime import datetime

from psycopg import Connection, errors, sql

# A partition is detached under a lock on loom.conversations: waiting longer than this behind
# a long read gives up until the next pass, rather than stall every write queued behind it.
DETACH_LOCK_TIMEOUT = "5s"

# Saved turns that leave the table take their vectors out of their user's saved search (the
# owner could no longer list or withdraw them) unless another live copy is saved; `gone` is
# the CTE of the rows going and `{kept}` what a remaining copy must be.
_UNFLAG = (
    " unflagged AS (UPDATE loom.conversation_embeddings e"
    "  SET is_saved = false, saved_at = NULL FROM gone g"
    "  WHERE g.is_saved AND e.is_saved AND e.org = g.org AND e.namespace = g.namespace"
    "  AND e.thread_id = g.thread_id AND e.msg_id = g.msg_id"
    "  AND NOT EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = e.org"
    "   AND c.namespace = e.namespace AND c.thread_id = e.thread_id AND c.msg_id = e.msg_id"
    "   AND c.is_saved AND c.tombstoned_at IS NULL AND {kept})"
    "  RETURNING 1)"
)


def ensure_partitions(conn: Connection, months_ahead: int) -> int:
    """Make the month partitions up to `months_ahead` past the current month (rows the default
    partition caught move into theirs); returns how many were made."""
    row = conn.execute("SELECT loom.ensure_conversation_partitions(%s)", (months_ahead,)).fetchone()
    return int(row[0]) if row else 0


def partitions(conn: Connection, cutoff: datetime) -> tuple[list[str], list[str]]:
    """The partitions of loom.conversations whose every moment is before `cutoff` (oldest
    first), and the others that may hold a turn before it: the month the cutoff cuts through,
    the table of the turns stored before partitions, the default partition."""
    rows = conn.execute(
        "WITH p AS (SELECT c.relname, loom.partition_lower(c.oid) AS lower,"
        "  loom.partition_upper(c.oid) AS upper"
        "  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        "  WHERE i.inhparent = 'loom.conversations'::regclass)"
        " SELECT relname, coalesce(upper <= %(cutoff)s, false),"
        " lower IS NULL OR lower < %(cutoff)s FROM p ORDER BY upper NULLS LAST",
        {"cutoff": cutoff},
    ).fetchall()
    whole = [name for name, expired, _ in rows if expired]
    cut = [name for name, expired, reaches in rows if not expired and reaches]
    return whole, cut


def drop_partition(conn: Connection, name: str) -> int | None:
    """Remove a partition whose every turn has expired, in one transaction: its saved turns'
    vectors leave their users' saved search first (as a row-by-row removal does). Returns the
    turns removed; None when the lock on loom.conversations was not had in time (the next
    pass tries again)."""
    part = sql.Identifier("loom", name)
    kept = sql.SQL("c.tableoid <> {}::regclass").format(sql.Literal(f"loom.{name}"))
    try:
        with conn.transaction():
            conn.execute(
                sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(DETACH_LOCK_TIMEOUT))
            )
            # The count reads the month's ts index (its rows are long all-visible by now), the
            # saved turns the index of saved turns: neither reads the month's rows.
            row = conn.execute(
                sql.SQL(
                    "SELECT (SELECT count(*) FROM {part}),"
                    " EXISTS (SELECT 1 FROM {part} WHERE is_saved)"
                ).format(part=part)
            ).fetchone()
            if row and row[1]:  # only saved turns can take a vector out of a saved search
                conn.execute(
                    sql.SQL(
                        "WITH gone AS (SELECT org, namespace, thread_id, msg_id, is_saved"
                        " FROM {part} WHERE is_saved),"
                        + _UNFLAG
                        + " SELECT count(*) FROM unflagged"
                    ).format(part=part, kept=kept)
                )
            conn.execute(sql.SQL("ALTER TABLE loom.conversations DETACH PARTITION {}").format(part))
            conn.execute(sql.SQL("DROP TABLE {}").format(part))
    except errors.LockNotAvailable:
        return None
    return int(row[0]) if row else 0


def purge_expired_turns(conn: Connection, cutoff: datetime, batch: int, partition: str) -> int:
    """Remove (from disk) up to `batch` turns of one partition from before `cutoff`; embedding
    rows stay, but one whose saved turn went leaves its user's saved search unless another
    live copy is saved."""
    part = sql.Identifier("loom", partition)
    kept = sql.SQL(
        "c.agent NOT IN (SELECT g2.agent FROM gone g2 WHERE g2.org = c.org"
        " AND g2.namespace = c.namespace AND g2.thread_id = c.thread_id AND g2.msg_id = c.msg_id)"
    )
    row = conn.execute(
        sql.SQL(
            "WITH gone AS (DELETE FROM {part} WHERE ctid = ANY(ARRAY("
            "  SELECT ctid FROM {part} WHERE ts < %s LIMIT %s))"
            "  RETURNING org, namespace, thread_id, agent, msg_id, is_saved),"
            + _UNFLAG
            + " SELECT count(*) FROM gone"
        ).format(part=part, kept=kept),
        (cutoff, batch),
    ).fetchone()
    return int(row[0]) if row else 0
