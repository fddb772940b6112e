"""Reading a thread's recorded turns: counting them, and paging them within a byte budget."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row

TURN_COLUMNS = (
    "msg_id, thread_id, role, content, reasoning, agent, user_id, run_id, metadata, tokens, ts"
)


def agent_clause(agent: str | None, *, in_run: bool = False, alias: str = "c") -> sql.Composable:
    """The recorded copies (no copy a save alone stored is a turn: recorded.py) of one agent,
    or (agent None) every agent's with a turn two agents logged once, of the rows named
    `alias`; `in_run`: among the copies in the run `%(run)s` only (the one another run holds
    is not this run's)."""
    if agent is not None:  # the agent may hold "%"
        return sql.SQL("{c}.agent = %(agent)s AND NOT {c}.saved_only").format(
            c=sql.Identifier(alias)
        )
    return sql.SQL(
        "NOT {c}.saved_only AND NOT EXISTS (SELECT 1 FROM loom.conversations o"
        " WHERE o.org = {c}.org AND o.namespace = {c}.namespace AND o.thread_id = {c}.thread_id"
        " AND o.msg_id = {c}.msg_id AND o.tombstoned_at IS NULL AND NOT o.saved_only"
        " AND (o.ts, o.agent) < ({c}.ts, {c}.agent){run})"
    ).format(c=sql.Identifier(alias), run=sql.SQL(" AND o.run_id = %(run)s" if in_run else ""))


def count_live_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str | None
) -> int:
    query = sql.SQL(
        "SELECT count(*) FROM loom.conversations c WHERE c.org = %(org)s"
        " AND c.namespace = %(ns)s AND c.thread_id = %(thread)s AND c.tombstoned_at IS NULL"
        " AND {}"
    ).format(agent_clause(agent))
    params = {"org": org, "ns": namespace, "thread": thread_id, "agent": agent}
    row = conn.execute(query, params).fetchone()
    return int(row[0]) if row else 0


def page_turns(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    thread_id: str,
    agent: str | None,
    limit: int,
    max_bytes: int,
    offset: int = 0,
    descending: bool = False,
    after: tuple[datetime, str] | None = None,
    run_id: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Live turns of a thread, by (ts, msg_id); `after` is a keyset cursor (ascending only).
    Of the next `limit`, those whose text (content, reasoning, metadata) fits in `max_bytes`,
    the first always; and how many of the `limit` there were. Sizes are read from the rows'
    headers (octet_length does not fetch a toasted value): only the turns kept are fetched."""
    conds = [
        sql.SQL("c.org = %(org)s AND c.namespace = %(ns)s AND c.thread_id = %(thread)s"),
        sql.SQL("c.tombstoned_at IS NULL"),
        agent_clause(agent, in_run=run_id is not None),
    ]
    if run_id is not None:
        conds.append(sql.SQL("c.run_id = %(run)s"))
    if after is not None:
        conds.append(sql.SQL("(c.ts, c.msg_id) > (%(after_ts)s, %(after_id)s)"))
    query = sql.SQL(
        "WITH page AS ("
        " SELECT c.agent, c.msg_id, c.ts, octet_length(c.content) + octet_length(c.reasoning)"
        " + pg_column_size(c.metadata) AS bytes"
        " FROM loom.conversations c WHERE {where}"
        " ORDER BY c.ts {dir}, c.msg_id {dir} LIMIT %(limit)s OFFSET %(offset)s"
        "), placed AS ("
        " SELECT agent, msg_id, ts, count(*) OVER () AS held, sum(bytes) OVER"
        " (ORDER BY ts {dir}, msg_id {dir} ROWS UNBOUNDED PRECEDING) - bytes AS before"
        " FROM page"
        ")"
        " SELECT {cols}, p.held FROM placed p JOIN loom.conversations c"
        " ON c.org = %(org)s AND c.namespace = %(ns)s AND c.thread_id = %(thread)s"
        " AND c.agent = p.agent AND c.msg_id = p.msg_id"
        " WHERE p.before < %(max_bytes)s ORDER BY p.ts {dir}, p.msg_id {dir}"
    ).format(
        cols=sql.SQL(", ".join(f"c.{col.strip()}" for col in TURN_COLUMNS.split(","))),
        where=sql.SQL(" AND ").join(conds),
        dir=sql.SQL("DESC" if descending else "ASC"),
    )
    params = {
        "org": org,
        "ns": namespace,
        "thread": thread_id,
        "run": run_id,
        "agent": agent,
        "after_ts": after[0] if after else None,
        "after_id": after[1] if after else None,
        "limit": limit,
        "offset": offset,
        "max_bytes": max_bytes,
    }
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query, params).fetchall()
    held = int(rows[0]["held"]) if rows else 0
    for row in rows:
        del row["held"]
    return rows, held
