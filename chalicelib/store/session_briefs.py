"""Session briefs and their revisions."""

from __future__ import annotations

from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from chalicelib.store.pool import lease_lock

_COLUMNS = (
    "brief_key, revision, project, repo, branch, head_sha, agent, sections, rendered, author,"
    " trigger, actor, source_sessions, events_total, source_chars, last_session_id,"
    " last_event_cursor, client_summary, updated_at, deleted_at"
)


def lock_brief(conn: Connection, org: str, namespace: str, key: str) -> dict[str, Any] | None:
    """The brief's row, locked until the transaction ends (a compare-and-set reads it here);
    concurrent first saves of one key queue on an advisory lock."""
    conn.execute(lease_lock("%s", 1), (f"{org}\x1f{namespace}\x1f{key}",))
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_COLUMNS} FROM loom.session_briefs"
            " WHERE org = %s AND namespace = %s AND brief_key = %s FOR UPDATE",
            (org, namespace, key),
        ).fetchone()


def read_brief(conn: Connection, org: str, namespace: str, key: str) -> dict[str, Any] | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_COLUMNS},"
            " (SELECT count(*) FROM loom.session_brief_revisions r WHERE r.org = b.org"
            "  AND r.namespace = b.namespace AND r.brief_key = b.brief_key) AS revisions"
            " FROM loom.session_briefs b WHERE org = %s AND namespace = %s AND brief_key = %s",
            (org, namespace, key),
        ).fetchone()


def write_brief(conn: Connection, org: str, namespace: str, b: dict[str, Any]) -> None:
    """Upsert the live brief and add its revision (the caller holds the row lock)."""
    conn.execute(
        "INSERT INTO loom.session_briefs (org, namespace, brief_key, revision, project, repo,"
        " branch, head_sha, agent, sections, rendered, author, trigger, actor, source_sessions,"
        " events_total, source_chars, last_session_id, last_event_cursor, client_summary,"
        " updated_at, deleted_at) VALUES (%(org)s, %(ns)s, %(brief_key)s, %(revision)s,"
        " %(project)s, %(repo)s, %(branch)s, %(head_sha)s, %(agent)s, %(sections)s, %(rendered)s,"
        " %(author)s, %(trigger)s, %(actor)s, %(source_sessions)s, %(events_total)s,"
        " %(source_chars)s, %(last_session_id)s, %(last_event_cursor)s, %(client_summary)s,"
        " clock_timestamp(), NULL)"
        " ON CONFLICT (org, namespace, brief_key) DO UPDATE SET revision = EXCLUDED.revision,"
        " project = EXCLUDED.project, repo = EXCLUDED.repo, branch = EXCLUDED.branch,"
        " head_sha = EXCLUDED.head_sha, agent = EXCLUDED.agent, sections = EXCLUDED.sections,"
        " rendered = EXCLUDED.rendered, author = EXCLUDED.author, trigger = EXCLUDED.trigger,"
        " actor = EXCLUDED.actor, source_sessions = EXCLUDED.source_sessions,"
        " events_total = EXCLUDED.events_total, source_chars = EXCLUDED.source_chars,"
        " last_session_id = EXCLUDED.last_session_id,"
        " last_event_cursor = EXCLUDED.last_event_cursor,"
        " client_summary = EXCLUDED.client_summary, updated_at = EXCLUDED.updated_at,"
        " deleted_at = NULL",
        {**b, "org": org, "ns": namespace, "sections": Jsonb(b["sections"])},
    )
    conn.execute(
        "INSERT INTO loom.session_brief_revisions (org, namespace, brief_key, revision, sections,"
        " rendered, author, trigger, actor, head_sha, session_id, event_cursor, events)"
        " VALUES (%(org)s, %(ns)s, %(brief_key)s, %(revision)s, %(sections)s, %(rendered)s,"
        " %(author)s, %(trigger)s, %(actor)s, %(head_sha)s, %(last_session_id)s,"
        " %(last_event_cursor)s, %(events)s)",
        {**b, "org": org, "ns": namespace, "sections": Jsonb(b["sections"])},
    )


def read_revision(
    conn: Connection, org: str, namespace: str, key: str, revision: int
) -> dict[str, Any] | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT revision, sections, rendered, author, trigger, actor, head_sha,"
            " created_at AS updated_at FROM loom.session_brief_revisions"
            " WHERE org = %s AND namespace = %s AND brief_key = %s AND revision = %s",
            (org, namespace, key, revision),
        ).fetchone()


def forget_brief(conn: Connection, org: str, namespace: str, key: str) -> int | None:
    """Delete a live brief: the row keeps only that it was deleted; its revisions go.
    Returns the revision it was at, or None when no live brief has the key."""
    row = conn.execute(
        "UPDATE loom.session_briefs SET deleted_at = clock_timestamp(), sections = '{}',"
        " rendered = '', client_summary = '', source_sessions = '{}'"
        " WHERE org = %s AND namespace = %s AND brief_key = %s AND deleted_at IS NULL"
        " RETURNING revision",
        (org, namespace, key),
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "DELETE FROM loom.session_brief_revisions WHERE org = %s AND namespace = %s"
        " AND brief_key = %s",
        (org, namespace, key),
    )
    return int(row[0])


def find_briefs(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    key_prefix: str | None,
    project: str,
    agent: str | None,
    from_session: str,
    limit: int,
) -> list[dict[str, Any]]:
    """Live briefs, newest first, filtered; `key_prefix` bounds a user's or session's view."""
    conds = [sql.SQL("org = %(org)s AND namespace = %(ns)s AND deleted_at IS NULL")]
    if key_prefix is not None:  # the prefix's own briefs: ~u~ is not also ~u~<session>~
        conds.append(
            sql.SQL(
                "starts_with(brief_key, %(prefix)s)"
                " AND strpos(substr(brief_key, char_length(%(prefix)s) + 1), '~') = 0"
            )
        )
    if project:
        conds.append(sql.SQL("project = %(project)s"))
    if agent is not None:
        conds.append(sql.SQL("agent = %(agent)s"))
    if from_session:
        conds.append(sql.SQL("source_sessions @> ARRAY[%(session)s]::text[]"))
    query = sql.SQL(
        "SELECT {cols} FROM loom.session_briefs WHERE {where}"
        " ORDER BY updated_at DESC, brief_key LIMIT %(limit)s"
    ).format(cols=sql.SQL(_COLUMNS), where=sql.SQL(" AND ").join(conds))
    params = {
        "org": org,
        "ns": namespace,
        "prefix": key_prefix,
        "project": project,
        "agent": agent,
        "session": from_session,
        "limit": limit,
    }
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
