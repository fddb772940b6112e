"""Knowledge documents and their chunks: the write, the reads, and the two search legs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from psycopg import Connection, sql
from psycopg.rows import dict_row

_DOC = "namespace, uri, title, tags, author, version, created_at, updated_at"
# What a hit shows: the chunk, and its document's title and tags.
_HIT_COLS = sql.SQL("c.namespace, c.uri, c.ordinal, c.text, d.title, d.tags")
_HIT_FROM = sql.SQL(
    "FROM loom.knowledge_chunks c JOIN loom.knowledge_documents d"
    " ON d.org = c.org AND d.namespace = c.namespace AND d.uri = c.uri"
)


@dataclass(frozen=True)
class ChunkRow:
    ordinal: int
    text: str
    withheld: bool
    vector: np.ndarray | None


@dataclass(frozen=True)
class DocFilter:
    """Which documents a search reads: the org's namespaces, tags it must carry (all of them),
    a uri prefix, and the agent-tag rule's reader (None: not filtered by agent)."""

    org: str
    namespaces: tuple[str, ...]
    tags: tuple[str, ...] = ()
    uri_prefix: str = ""
    agent: str | None = None


def lock_document(conn: Connection, org: str, namespace: str, uri: str) -> dict[str, Any] | None:
    """The stored document at `uri`, its row locked for the write; the uri is locked first
    whether or not a row holds it, so two first publishes take turns."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 5))",
        (f"{org}\x1f{namespace}\x1f{uri}",),
    )
    return get_document(conn, org, namespace, uri, lock=True)


def get_document(
    conn: Connection, org: str, namespace: str, uri: str, *, lock: bool = False
) -> dict[str, Any] | None:
    query = (
        f"SELECT {_DOC}, text FROM loom.knowledge_documents"
        " WHERE org = %s AND namespace = %s AND uri = %s"
    )
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            query + (" FOR UPDATE" if lock else ""), (org, namespace, uri)
        ).fetchone()


def write_document(
    conn: Connection, org: str, namespace: str, uri: str, *, title: str, text: str,
    tags: list[str], author: str, version: int, model: str, chunks: list[ChunkRow],
) -> None:  # fmt: skip
    """Store the document at `version` with its chunks, the old chunks gone (in the caller's
    transaction, so a reader sees one version or the other)."""
    conn.execute(
        "INSERT INTO loom.knowledge_documents AS d (org, namespace, uri, title, text, tags,"
        " author, version) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (org, namespace, uri) DO UPDATE SET title = EXCLUDED.title,"
        " text = EXCLUDED.text, tags = EXCLUDED.tags, author = EXCLUDED.author,"
        " version = EXCLUDED.version, updated_at = now()",
        (org, namespace, uri, title, text, tags, author, version),
    )
    conn.execute(
        "DELETE FROM loom.knowledge_chunks WHERE org = %s AND namespace = %s AND uri = %s",
        (org, namespace, uri),
    )
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO loom.knowledge_chunks (org, namespace, uri, ordinal, text, withheld,"
            " embed_model, dim, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(org, namespace, uri, *_chunk_values(c, model)) for c in chunks],
        )


def _chunk_values(c: ChunkRow, model: str) -> tuple[Any, ...]:
    # dim -1: withheld, never embedded; 0: not embedded yet (the embedder was down).
    dim = -1 if c.withheld else (len(c.vector) if c.vector is not None else 0)
    return (c.ordinal, c.text, c.withheld, model if c.vector is not None else None, dim, c.vector)


def chunks_to_embed(
    conn: Connection, org: str, namespace: str, uri: str, model: str
) -> list[tuple[int, str]]:
    """(ordinal, text) of the document's chunks that hold no vector of `model` (not withheld)."""
    rows = conn.execute(
        "SELECT ordinal, text FROM loom.knowledge_chunks WHERE org = %s AND namespace = %s"
        " AND uri = %s AND NOT withheld AND embed_model IS DISTINCT FROM %s ORDER BY ordinal",
        (org, namespace, uri, model),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def set_chunk_vectors(
    conn: Connection, org: str, namespace: str, uri: str, model: str,
    vectors: list[tuple[int, np.ndarray]],
) -> None:  # fmt: skip
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE loom.knowledge_chunks SET embedding = %s, dim = %s, embed_model = %s"
            " WHERE org = %s AND namespace = %s AND uri = %s AND ordinal = %s AND NOT withheld",
            [(v, len(v), model, org, namespace, uri, o) for o, v in vectors],
        )


def delete_document(conn: Connection, org: str, namespace: str, uri: str) -> bool:
    """Remove the document (its chunks go with it); whether one existed."""
    return bool(
        conn.execute(
            "DELETE FROM loom.knowledge_documents WHERE org = %s AND namespace = %s AND uri = %s",
            (org, namespace, uri),
        ).rowcount
    )


def list_documents(
    conn: Connection, org: str, namespace: str, *, tags: list[str], uri_prefix: str,
    before: tuple[datetime, str] | None, limit: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """Documents newest first (updated_at, then uri), after the cursor `before`."""
    conds = ["org = %(org)s", "namespace = %(ns)s", "tags @> %(tags)s::text[]"]
    conds.append("starts_with(uri, %(prefix)s)")
    if before is not None:
        conds.append("(updated_at, uri) < (%(ts)s, %(uri)s)")
    params = {"org": org, "ns": namespace, "tags": tags, "prefix": uri_prefix, "limit": limit}
    if before is not None:
        params.update(ts=before[0], uri=before[1])
    query = (
        "SELECT uri, title, tags, version, updated_at, length(text) AS chars"
        f" FROM loom.knowledge_documents WHERE {' AND '.join(conds)}"
        " ORDER BY updated_at DESC, uri DESC LIMIT %(limit)s"
    )
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


# ---- search --------------------------------------------------------------------------------


def _where(f: DocFilter) -> tuple[sql.Composable, dict[str, Any]]:
    """The filter's WHERE clause over chunk c and document d, and its parameters."""
    conds = [
        "c.org = %(org)s AND c.namespace = ANY(%(namespaces)s) AND NOT c.withheld",
        "d.tags @> %(tags)s::text[] AND starts_with(d.uri, %(prefix)s)",
    ]
    params: dict[str, Any] = {"org": f.org, "namespaces": list(f.namespaces)}
    params.update(tags=list(f.tags), prefix=f.uri_prefix)
    if f.agent is not None:
        conds.append(served_to_agent("d"))
        params.update(agent=f.agent, agent_tag=f"agent:{f.agent}")
    return sql.SQL(" AND ".join(conds)), params


def served_to_agent(alias: str) -> str:
    """The agent-tag rule for reader %(agent)s (its tag %(agent_tag)s): a document tagged for a
    bot goes to that bot; '*' reads every bot's; '-' none tagged for a named bot; a document
    with no agent: tag goes to every read."""
    return (
        f"(%(agent)s = '*' OR %(agent_tag)s = ANY({alias}.tags)"
        f" OR NOT EXISTS (SELECT 1 FROM unnest({alias}.tags) t WHERE starts_with(t, 'agent:')))"
    )


def vector_leg(
    conn: Connection, f: DocFilter, *, model: str, query_vec: np.ndarray, depth: int
) -> list[dict[str, Any]]:
    """Chunks by cosine similarity (an exact scan of the filtered scope), most similar first."""
    dim = len(query_vec)
    where, params = _where(f)
    distance = sql.SQL("(c.embedding::vector({dim}) <=> %(q)s::vector({dim}))").format(
        dim=sql.Literal(dim)
    )
    query = sql.SQL(
        "SELECT {hit_cols}, 1 - {distance} AS score {hit_from}"
        " WHERE {where} AND c.embed_model = %(model)s AND c.dim = {dim}"
        # `+ 0` keeps the planner on the scope's rows: an exact scan, as memories are ranked.
        " ORDER BY {distance} + 0, c.uri, c.ordinal LIMIT %(depth)s"
    ).format(
        hit_cols=_HIT_COLS,
        hit_from=_HIT_FROM,
        distance=distance,
        where=where,
        dim=sql.Literal(dim),
    )
    params.update(model=model, q=query_vec, depth=depth)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


def lexical_leg(conn: Connection, f: DocFilter, *, query: str, depth: int) -> list[dict[str, Any]]:
    """Chunks holding any of the query's words, by ts_rank_cd over the whole chunk."""
    where, params = _where(f)
    q = sql.SQL(
        "WITH tq AS (SELECT to_tsquery('english', string_agg(quote_literal(t), ' | ')) AS q"
        "  FROM unnest(tsvector_to_array(to_tsvector('english', %(query)s))) t)"
        " SELECT {hit_cols}, ts_rank_cd(c.search_tsv, tq.q) AS score {hit_from}, tq"
        " WHERE {where} AND c.search_tsv @@ tq.q"
        " ORDER BY score DESC, c.uri, c.ordinal LIMIT %(depth)s"
    ).format(
        hit_cols=_HIT_COLS,
        hit_from=_HIT_FROM,
        where=where,
    )
    params.update(query=query, depth=depth)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(q, params).fetchall()


def served_documents(
    conn: Connection, org: str, namespace: str, agent: str, *, uris: list[str] | None = None,
    max_chars: int | None = None, limit: int = 50, with_text: bool = False,
) -> list[dict[str, Any]]:  # fmt: skip
    """The documents served to reader `agent` by the agent-tag rule, newest first: only those
    at `uris` when named, of at most `max_chars` when bounded, and none holding a withheld
    chunk (a whole document is never served around one)."""
    conds = ["d.org = %(org)s", "d.namespace = %(ns)s", served_to_agent("d")]
    conds.append(
        "NOT EXISTS (SELECT 1 FROM loom.knowledge_chunks c WHERE c.org = d.org"
        " AND c.namespace = d.namespace AND c.uri = d.uri AND c.withheld)"
    )
    params: dict[str, Any] = {"org": org, "ns": namespace, "agent": agent, "limit": limit}
    params["agent_tag"] = f"agent:{agent}"
    if uris is not None:
        conds.append("d.uri = ANY(%(uris)s)")
        params["uris"] = uris
    if max_chars is not None:
        conds.append("length(d.text) <= %(max_chars)s")
        params["max_chars"] = max_chars
    text = ", d.text" if with_text else ""
    query = (
        "SELECT d.uri, d.title, d.tags, d.version, d.updated_at, length(d.text) AS chars" + text
        + f" FROM loom.knowledge_documents d WHERE {' AND '.join(conds)}"
        " ORDER BY d.updated_at DESC, d.uri DESC LIMIT %(limit)s"
    )  # fmt: skip
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
