"""The turns extractions read (loom.memory_evidence), and which memories came from which."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb


def store_turns(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    user_id: str,
    agent: str,
    session_id: str,
    request_id: str,
    turns: list[tuple[int, str, str, str, datetime]],
) -> tuple[list[int], str]:
    """Store (idx, role, name, content, ts) turns; returns their evidence ids, in order, and
    the request id they are stored under.

    A request id names one request: a replay of it (by the same user, with the same turns)
    finds its turns already stored and gets their ids. Turns that differ from those stored
    under the id (another caller reusing it, or another transcript) are never linked to them:
    they are stored under the id suffixed with a hash of their own text."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (json.dumps([org, namespace, user_id, request_id]),),
    )
    said = [(t[0], t[1], t[2], t[3]) for t in turns]
    digest = hashlib.sha256(json.dumps(said).encode()).hexdigest()[:16]
    for _ in range(3):
        stored = _stored_turns(conn, org, namespace, user_id, request_id)
        if not stored:
            break
        if [s[1:] for s in stored] == said:
            return [s[0] for s in stored], request_id
        request_id = f"{request_id}#{digest}"
    else:
        request_id = f"{request_id}#{uuid.uuid4().hex}"
    rows = conn.execute(
        "INSERT INTO loom.memory_evidence (org, namespace, user_id, agent, session_id,"
        " request_id, idx, role, name, content, ts)"
        " SELECT %s, %s, %s, %s, %s, %s, t.idx, t.role, t.name, t.content, t.ts"
        " FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::timestamptz[])"
        " WITH ORDINALITY AS t(idx, role, name, content, ts, ord) ORDER BY t.ord"
        " RETURNING id",
        (
            org,
            namespace,
            user_id,
            agent,
            session_id,
            request_id,
            [t[0] for t in turns],
            [t[1] for t in turns],
            [t[2] for t in turns],
            [t[3] for t in turns],
            [t[4] for t in turns],
        ),
    ).fetchall()
    return [r[0] for r in rows], request_id


def store_context(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    user_id: str,
    request_id: str,
    context: dict[str, Any],
) -> None:
    """What the request read beside its turns (tags, observation date, earlier turns, ...),
    under the request id its turns are stored under; a replay of it keeps the first."""
    conn.execute(
        "INSERT INTO loom.memory_evidence_requests (org, namespace, user_id, request_id, context)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (org, namespace, user_id, request_id, Jsonb(context)),
    )


def _stored_turns(
    conn: Connection, org: str, namespace: str, user_id: str, request_id: str
) -> list[tuple[int, int, str, str, str]]:
    """(id, idx, role, name, content) of the turns stored under one request id, by idx."""
    rows = conn.execute(
        "SELECT id, idx, role, name, content FROM loom.memory_evidence"
        " WHERE org = %s AND namespace = %s AND user_id = %s AND request_id = %s ORDER BY idx",
        (org, namespace, user_id, request_id),
    ).fetchall()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def link(
    conn: Connection,
    org: str,
    namespace: str,
    user_id: str,
    links: list[tuple[str, int, int, str]],
) -> None:
    """(key, version, evidence_id, span) links from memories to their source turns."""
    if not links:
        return
    conn.execute(
        "INSERT INTO loom.memory_evidence_links (org, namespace, user_id, key, version,"
        " evidence_id, span) SELECT %s, %s, %s, l.key, l.version, l.eid, l.span"
        " FROM unnest(%s::text[], %s::int[], %s::bigint[], %s::text[])"
        " AS l(key, version, eid, span)"
        " ON CONFLICT DO NOTHING",
        (
            org,
            namespace,
            user_id,
            [x[0] for x in links],
            [x[1] for x in links],
            [x[2] for x in links],
            [x[3] for x in links],
        ),
    )


def evidence_for(
    conn: Connection, org: str, namespace: str, user_id: str, key: str
) -> list[dict[str, Any]]:
    """The source turns of a live memory's versions, newest version first, with the span;
    none for a memory deleted or forgotten (memory.get finds none either)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT l.version, l.span, e.id AS evidence_id, e.role, e.name, e.content, e.ts,"
            " e.session_id, e.request_id, e.idx FROM loom.memory_evidence_links l"
            " JOIN loom.memory_evidence e ON e.id = l.evidence_id AND e.user_id = l.user_id"
            " WHERE l.org = %s AND l.namespace = %s AND l.user_id = %s AND l.key = %s"
            " AND EXISTS (SELECT 1 FROM loom.memories m WHERE m.org = l.org"
            "  AND m.namespace = l.namespace AND m.user_id = l.user_id AND m.key = l.key"
            "  AND m.retired_at IS NULL)"
            " ORDER BY l.version DESC, e.idx",
            (org, namespace, user_id, key),
        ).fetchall()


def recall(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    users: list[str] | None,
    query: str,
    since: datetime | None,
    until: datetime | None,
    role: str | None,
    limit: int,
    before: tuple[datetime, int] | None = None,
) -> list[dict[str, Any]]:
    """Raw turns by text (case-blind substring), time window and role, newest first; with
    `before` (a turn's ts and evidence id), only the turns after it in that order."""
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT id AS evidence_id, user_id, agent, session_id, role, name, content, ts"
            " FROM loom.memory_evidence WHERE org = %(org)s AND namespace = %(ns)s"
            " AND (%(users)s::text[] IS NULL OR user_id = ANY(%(users)s))"
            " AND (%(q)s = '' OR content ILIKE %(pattern)s ESCAPE '\\')"
            " AND (%(since)s::timestamptz IS NULL OR ts >= %(since)s)"
            " AND (%(until)s::timestamptz IS NULL OR ts < %(until)s)"
            " AND (%(role)s::text IS NULL OR role = %(role)s)"
            " AND (%(before_ts)s::timestamptz IS NULL"
            " OR (ts, id) < (%(before_ts)s, %(before_id)s::bigint))"
            " ORDER BY ts DESC, id DESC LIMIT %(limit)s",
            {
                "org": org,
                "ns": namespace,
                "users": users,
                "q": query,
                "pattern": f"%{escaped}%",
                "since": since,
                "until": until,
                "role": role,
                "limit": limit,
                "before_ts": before[0] if before else None,
                "before_id": before[1] if before else None,
            },
        ).fetchall()


def requests_of(conn: Connection, org: str, namespace: str) -> list[dict[str, Any]]:
    """Every extraction request's turns in a namespace, with what it read beside them (`{}` for
    a request stored before that was kept), oldest request first."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT e.request_id, e.user_id, e.agent, e.session_id,"
            " json_agg(json_build_object('role', e.role, 'content', e.content, 'name', e.name,"
            " 'timestamp', e.ts) ORDER BY e.idx) AS messages,"
            " coalesce(r.context, '{}'::jsonb) AS context"
            " FROM loom.memory_evidence e LEFT JOIN loom.memory_evidence_requests r"
            " ON r.org = e.org AND r.namespace = e.namespace AND r.user_id = e.user_id"
            " AND r.request_id = e.request_id"
            " WHERE e.org = %s AND e.namespace = %s"
            " GROUP BY e.request_id, e.user_id, e.agent, e.session_id, r.context"
            " ORDER BY min(e.id)",
            (org, namespace),
        ).fetchall()
