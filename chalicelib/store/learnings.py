"""The agent-learnings review queue: candidates (a bot's rules) and their supporters (the end
users' quotes). docs/decisions/0027-learnings-queue.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from psycopg import Connection
from psycopg.rows import dict_row

Filed = Literal["new", "supported", "already_supported", "decided", "already_promoted"]
LEARNING_SCHEME = "learning://"


@dataclass(frozen=True)
class Rule:
    """One statement of a bot's rule in one session, with the user's quotes."""

    org: str
    namespace: str
    candidate_id: str
    agent: str
    key: str
    text: str
    user_id: str
    session_id: str
    asked_quote: str  # the user turn before the assistant's
    rule_quote: str


def file_rule(
    conn: Connection, r: Rule, after_supporter: Callable[[], object] = lambda: None
) -> Filed:
    """File one statement of a rule, in one transaction: a decided candidate takes no new
    supporter; no new candidate goes under a key whose promoted rule the bot is served; else
    the supporter row is written first, then the candidate again at version 1 (kept as it is
    when it exists, so a restatement never changes its text nor undoes a decision)."""
    ident = {"org": r.org, "ns": r.namespace, "id": r.candidate_id}
    with conn.transaction():
        row = conn.execute(
            "SELECT status FROM loom.learnings_queue"
            " WHERE org = %(org)s AND namespace = %(ns)s AND candidate_id = %(id)s FOR UPDATE",
            ident,
        ).fetchone()
        if row is not None and row[0] != "pending":
            return "decided"
        if row is None and _promoted_under_key(conn, r):
            return "already_promoted"
        supported = conn.execute(
            "INSERT INTO loom.learnings_supporters"
            " (org, namespace, candidate_id, user_id, session_id, asked_quote, rule_quote)"
            " VALUES (%(org)s, %(ns)s, %(id)s, %(user)s, %(session)s, %(uq)s, %(rq)s)"
            " ON CONFLICT DO NOTHING RETURNING 1",
            ident
            | {"user": r.user_id, "session": r.session_id, "uq": r.asked_quote, "rq": r.rule_quote},
        ).fetchone()
        after_supporter()
        created = conn.execute(
            "INSERT INTO loom.learnings_queue (org, namespace, candidate_id, agent, key, text)"
            " VALUES (%(org)s, %(ns)s, %(id)s, %(agent)s, %(key)s, %(text)s)"
            " ON CONFLICT DO NOTHING RETURNING 1",
            ident | {"agent": r.agent, "key": r.key, "text": r.text},
        ).fetchone()
    if created is not None:
        return "new"
    return "supported" if supported is not None else "already_supported"


def _promoted_under_key(conn: Connection, r: Rule) -> bool:
    """Whether a rule of this bot under this key is served from knowledge: its
    learning://<candidate_id> document is there (a rejection after promotion leaves it)."""
    row = conn.execute(
        "SELECT 1 FROM loom.learnings_queue q JOIN loom.knowledge_documents d"
        " ON d.org = q.org AND d.namespace = q.namespace"
        " AND d.uri = %(scheme)s || q.candidate_id"
        " WHERE q.org = %(org)s AND q.namespace = %(ns)s AND q.agent = %(agent)s"
        " AND q.key = %(key)s LIMIT 1",
        {"org": r.org, "ns": r.namespace, "agent": r.agent, "key": r.key,
         "scheme": LEARNING_SCHEME},
    ).fetchone()  # fmt: skip
    return row is not None


# What learnings.list shows of a candidate, with its supporters left and the earliest one's
# quotes (the rationale).
_LISTED = (
    "SELECT q.candidate_id, q.agent, q.key, q.text, q.status, q.version, q.destination,"
    " q.decided_by, q.decided_at, q.note, q.created_at,"
    " (SELECT count(*) FROM loom.learnings_supporters s WHERE s.org = q.org"
    "  AND s.namespace = q.namespace AND s.candidate_id = q.candidate_id) AS support,"
    " e.asked_quote AS user_quote, e.rule_quote"
    " FROM loom.learnings_queue q LEFT JOIN LATERAL (SELECT s.asked_quote, s.rule_quote"
    "  FROM loom.learnings_supporters s WHERE s.org = q.org AND s.namespace = q.namespace"
    "  AND s.candidate_id = q.candidate_id"
    "  ORDER BY s.created_at, s.user_id, s.session_id LIMIT 1) e ON true"
)


def list_candidates(
    conn: Connection, org: str, namespace: str, *, status: str | None, agent: str | None,
    limit: int, before: tuple[datetime, str] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """A page of the namespace's queue, newest first, filtered by status and agent."""
    conds = ["q.org = %(org)s", "q.namespace = %(ns)s"]
    params: dict[str, Any] = {"org": org, "ns": namespace, "limit": limit}
    if status is not None:
        conds.append("q.status = %(status)s")
        params["status"] = status
    if agent is not None:
        conds.append("q.agent = %(agent)s")
        params["agent"] = agent
    if before is not None:
        conds.append("(q.created_at, q.candidate_id) < (%(ts)s, %(id)s)")
        params.update(ts=before[0], id=before[1])
    query = (
        f"{_LISTED} WHERE {' AND '.join(conds)}"
        " ORDER BY q.created_at DESC, q.candidate_id DESC LIMIT %(limit)s"
    )
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


def lock_candidate(
    conn: Connection, org: str, namespace: str, candidate_id: str
) -> dict[str, Any] | None:
    """One candidate, locked for a review (call inside a transaction)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT candidate_id, agent, key, text, status, version FROM loom.learnings_queue"
            " WHERE org = %s AND namespace = %s AND candidate_id = %s FOR UPDATE",
            (org, namespace, candidate_id),
        ).fetchone()


def decide(
    conn: Connection, org: str, namespace: str, candidate_id: str, *, status: str,
    destination: str, decided_by: str, note: str,
) -> dict[str, Any]:  # fmt: skip
    """Record a review at a newer version; returns the candidate as decided."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "UPDATE loom.learnings_queue SET status = %s, destination = %s, decided_by = %s,"
            " decided_at = now(), note = %s, version = version + 1"
            " WHERE org = %s AND namespace = %s AND candidate_id = %s"
            " RETURNING candidate_id, agent, key, text, status, version, destination,"
            " decided_by, decided_at, note",
            (status, destination, decided_by, note, org, namespace, candidate_id),
        ).fetchone()
    assert row is not None  # locked by the caller
    return row


def settle_orphans(conn: Connection, org: str, namespaces: list[str] | None) -> int:
    """Candidates left with no supporter (their last one erased): a pending one is deleted, a
    decided one keeps its decision with the rule blanked. Returns how many were settled.

    The candidates are locked first, then checked again by statements that see what committed
    since: a filing that held one wrote its supporter, and the candidate stays."""
    params: dict[str, Any] = {"org": org, "namespaces": namespaces}
    orphan = (
        " NOT EXISTS (SELECT 1 FROM loom.learnings_supporters s WHERE s.org = q.org"
        " AND s.namespace = q.namespace AND s.candidate_id = q.candidate_id)"
    )
    locked = conn.execute(
        "SELECT namespace, candidate_id FROM loom.learnings_queue q WHERE org = %(org)s"
        " AND (%(namespaces)s::text[] IS NULL OR namespace = ANY(%(namespaces)s))"
        f" AND (status = 'pending' OR text <> '') AND {orphan} FOR UPDATE",
        params,
    ).fetchall()
    if not locked:
        return 0
    params.update(ns=[r[0] for r in locked], ids=[r[1] for r in locked])
    mine = (
        "org = %(org)s AND (namespace, candidate_id) IN"
        f" (SELECT * FROM unnest(%(ns)s::text[], %(ids)s::text[])) AND {orphan}"
    )
    deleted = conn.execute(
        f"DELETE FROM loom.learnings_queue q WHERE status = 'pending' AND {mine}", params
    ).rowcount
    blanked = conn.execute(
        f"UPDATE loom.learnings_queue q SET text = '' WHERE status <> 'pending' AND {mine}",
        params,
    ).rowcount
    return deleted + blanked
