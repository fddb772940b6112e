"""The two legs of conversation.search_saved_messages over one user's saved messages."""

from __future__ import annotations

from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

BM25_K1 = 1.2
BM25_B = 0.75


def _scope(alias: str) -> sql.Composable:
    a = sql.Identifier(alias)
    return sql.SQL(
        "{a}.org = %(org)s AND {a}.namespace = %(ns)s AND {a}.user_id = %(user)s"
        " AND {a}.is_saved AND {a}.tombstoned_at IS NULL"
        " AND (%(thread)s::text IS NULL OR {a}.thread_id = %(thread)s)"
        " AND (%(role)s::text IS NULL OR {a}.role = %(role)s)"
    ).format(a=a)


def _params(org: str, namespace: str, user: str, thread_id: str | None, role: str | None) -> dict:
    return {"org": org, "ns": namespace, "user": user, "thread": thread_id, "role": role}


def vector_leg(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    user: str,
    thread_id: str | None,
    role: str | None,
    model: str,
    query_vec: np.ndarray,
    depth: int,
) -> list[dict[str, Any]]:
    """Saved messages by cosine similarity of their first 2,048 characters; an exact scan of
    one user's saved corpus."""
    dim = len(query_vec)
    query = sql.SQL(
        "SELECT e.thread_id AS conversation_id, e.msg_id AS message_id, e.role, e.text,"
        " e.saved_at, coalesce(e.saved_at, e.ts) AS ts,"
        " 1 - (e.embedding::vector({dim}) <=> %(q)s::vector({dim})) AS score"
        " FROM loom.conversation_embeddings e"
        " WHERE {scope} AND e.model = %(model)s AND e.dim = {dim} AND e.embedding IS NOT NULL"
        " ORDER BY (e.embedding::vector({dim}) <=> %(q)s::vector({dim})) + 0,"
        " e.thread_id, e.msg_id LIMIT %(depth)s"
    ).format(dim=sql.Literal(dim), scope=_scope("e"))
    params = _params(org, namespace, user, thread_id, role)
    params.update(q=query_vec, model=model, depth=depth)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


# BM25 over the whole text, with the corpus statistics (document count, mean length, each
# term's document frequency) computed per query over the user's saved messages.
_BM25 = sql.SQL(
    "WITH q AS (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('simple', %(query)s)))"
    "   AS term),"
    " tsq AS (SELECT to_tsquery('simple', string_agg(quote_literal(term), ' | ')) AS tq FROM q),"
    " scope AS (SELECT c.thread_id, c.agent, c.msg_id, c.saved_tsv, c.saved_len"
    "   FROM loom.conversations c WHERE {scope} AND c.saved_tsv IS NOT NULL),"
    " stats AS (SELECT count(*)::float8 AS n, greatest(avg(saved_len), 1)::float8 AS avgdl"
    "   FROM scope),"
    " matches AS (SELECT s.thread_id, s.agent, s.msg_id, s.saved_len, u.lexeme,"
    "   array_length(u.positions, 1)::float8 AS tf"
    "   FROM scope s CROSS JOIN LATERAL unnest(s.saved_tsv) u"
    "   WHERE s.saved_tsv @@ (SELECT tq FROM tsq) AND u.lexeme IN (SELECT term FROM q)),"
    " df AS (SELECT lexeme, count(*)::float8 AS df FROM matches GROUP BY lexeme),"
    " scored AS (SELECT m.thread_id, m.agent, m.msg_id,"
    "   sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf * ({k1} + 1)"
    "     / (m.tf + {k1} * (1 - {b} + {b} * m.saved_len / st.avgdl))) AS score,"
    "   array_agg(m.lexeme) AS terms"
    "   FROM matches m JOIN df USING (lexeme) CROSS JOIN stats st"
    "   GROUP BY m.thread_id, m.agent, m.msg_id)"
    " SELECT c.thread_id AS conversation_id, c.msg_id AS message_id, c.role, c.content,"
    " c.saved_at, coalesce(c.saved_at, c.ts) AS ts, sc.score, sc.terms"
    " FROM scored sc JOIN loom.conversations c ON c.org = %(org)s AND c.namespace = %(ns)s"
    " AND c.thread_id = sc.thread_id AND c.agent = sc.agent AND c.msg_id = sc.msg_id"
    " ORDER BY sc.score DESC, c.thread_id, c.msg_id LIMIT %(depth)s"
).format(scope=_scope("c"), k1=sql.Literal(BM25_K1), b=sql.Literal(BM25_B))


def lexical_leg(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    user: str,
    thread_id: str | None,
    role: str | None,
    query: str,
    depth: int,
) -> list[dict[str, Any]]:
    """Saved messages by BM25 over their whole text, with the terms each one matched."""
    params = _params(org, namespace, user, thread_id, role)
    params.update(query=query, depth=depth)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_BM25, params).fetchall()
