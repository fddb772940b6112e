"""Erasure: the tables it reaches and the set-based statements that tombstone or purge a
subject's rows (the job rows that track it: erasure_jobs; the export: erasure_export).

Every table holding a row that belongs to a person or a namespace is named here, in ERASED or
in NOT_ERASED with the reason; a test compares both to the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from psycopg import Connection, sql

from chalicelib.names import personal_namespace
from chalicelib.search.store_upkeep import rewrite_thread_windows
from chalicelib.store.compaction_rows import summary_row
from chalicelib.store.learnings import settle_orphans
from chalicelib.store.recorded import settle_saved_only
from chalicelib.store.thread_leases import take_thread_leases
from chalicelib.store.turn_tombstones import HOLDS_EMBEDDING as HOLDS
from chalicelib.store.turn_tombstones import PASSED_TO_HOLDER as PASSED

Kind = Literal["user", "namespace_list"]


@dataclass(frozen=True)
class ErasedTable:
    name: str  # schema-qualified
    user_columns: tuple[str, ...]  # a row whose column equals the user belongs to that user
    tombstone: str | None  # the column an erasure stamps; None: its rows are removed at once
    key: tuple[str, ...]  # the primary key: export pages by it
    by_brief_key: bool = False  # a brief bounded to a user is keyed ~<user>~[<session>~]<key>
    exported: bool = True
    # Columns naming a user who does not own the row (a document's author): a user erasure
    # blanks them and keeps the row, and the export lists the row.
    names_user: tuple[str, ...] = ()
    # Whether removing rows here leaves learnings candidates without a supporter to settle.
    settles_candidates: bool = False

    @property
    def ident(self) -> sql.Composable:
        return sql.Identifier(*self.name.split("."))


CONVERSATIONS = ErasedTable(
    "loom.conversations",
    ("user_id",),
    "tombstoned_at",
    ("namespace", "thread_id", "agent", "msg_id"),
)
EMBEDDINGS = ErasedTable(
    "loom.conversation_embeddings",
    ("user_id",),
    "tombstoned_at",
    ("namespace", "thread_id", "msg_id", "model"),
    exported=False,  # the spec: erasure.export does not return embedding rows
)
THREADS = ErasedTable(
    "loom.conversation_threads", ("user_id",), "tombstoned_at", ("namespace", "thread_id")
)
# Tables the generic step erases, in order (the conversation plane is one step before them).
GENERIC = (
    ErasedTable("loom.memories", ("user_id",), "retired_at", ("namespace", "user_id", "key")),
    ErasedTable(
        "loom.memory_versions", ("user_id",), None, ("namespace", "user_id", "key", "version")
    ),
    ErasedTable(
        "loom.memory_evidence_links",
        ("user_id",),
        None,
        ("namespace", "user_id", "key", "version", "evidence_id"),
    ),
    ErasedTable("loom.memory_evidence", ("user_id",), None, ("id",)),
    ErasedTable("loom.memory_extraction_queue", ("user_id", "read_user_id"), None, ("queue_id",)),
    ErasedTable("loom.memory_drops", ("user_id",), None, ("id",)),
    ErasedTable("loom.observations", ("user_id",), None, ("id",)),
    ErasedTable(
        "loom.session_brief_revisions",
        (),
        None,
        ("namespace", "brief_key", "revision"),
        by_brief_key=True,
    ),
    ErasedTable(
        "loom.session_briefs", (), "deleted_at", ("namespace", "brief_key"), by_brief_key=True
    ),
    # What the model answered on reading the subject's words: a cache, removed, not exported.
    # Last, so a job part-way through when this was added still meets every step it counted.
    ErasedTable("loom.extraction_cache", ("user_id",), None, ("prompt_sha256",), exported=False),
    # What an extraction read beside its turns (earlier turns, session values): after the
    # cache, for the same reason.
    ErasedTable(
        "loom.memory_evidence_requests", ("user_id",), None, ("namespace", "user_id", "request_id")
    ),
    # Knowledge is the namespace's, not a user's: a namespace's erasure (or a user's personal
    # collection's) removes it, and a user's erasure blanks the author naming them. The chunks
    # hold the document's text again: removed before it, not exported twice.
    ErasedTable("loom.knowledge_chunks", (), None, ("namespace", "uri", "ordinal"), exported=False),
    ErasedTable("loom.knowledge_documents", (), None, ("namespace", "uri"), names_user=("author",)),
    # The users' quotes that support a bot's rule; a candidate left with none is settled after
    # (deleted when pending, its rule blanked when decided). The candidate holds the bot's
    # rule, no user's words: a namespace's erasure removes it, a user's blanks its reviewer.
    ErasedTable(
        "loom.learnings_supporters",
        ("user_id",),
        None,
        ("namespace", "candidate_id", "user_id", "session_id"),
        settles_candidates=True,
    ),
    ErasedTable(
        "loom.learnings_queue", (), None, ("namespace", "candidate_id"), names_user=("decided_by",)
    ),
)
ERASED = (CONVERSATIONS, EMBEDDINGS, THREADS, *GENERIC)

# Tables with a user or namespace column that erasure leaves alone, and why.
NOT_ERASED = {
    "loom.namespaces": "the namespace's registration and recording switch, not data held in it",
    "loom.tokens": "access grants (hashed); revoking one is the operator's separate decision",
    "loom.audit_log": "hash-only trail of calls, erasures included; it must outlive them",
    "loom.extraction_policies": "operator configuration; the spec keeps it past a namespace",
    "loom.memory_blacklist": "operator configuration",
    "loom.mcp_sessions": "an MCP client's connection state: its name and implicit run id",
    "loom.erasure_jobs": "the record that an erasure happened: its subject and counts",
}


@dataclass(frozen=True)
class Subject:
    org: str
    kind: Kind
    user_id: str | None = None
    namespaces: tuple[str, ...] | None = None  # None: every namespace of the org

    def params(self) -> dict[str, Any]:
        user = self.user_id or ""
        return {
            "org": self.org,
            "namespaces": list(self.namespaces) if self.namespaces is not None else None,
            "user": user,
            "personal": personal_namespace(user),  # the user's personal collection is all theirs
            "brief_prefix": f"~{user}~",
        }


def subject_match(
    table: ErasedTable, s: Subject, alias: str, *, named: bool = False
) -> sql.Composable:
    """The WHERE clause selecting the subject's rows of `table` (any state); with `named`, the
    rows that only name the user (in `names_user`) too."""
    a = sql.Identifier(alias)
    parts: list[sql.Composable] = [sql.SQL("{}.org = %(org)s").format(a)]
    if s.namespaces is not None:
        parts.append(sql.SQL("{}.namespace = ANY(%(namespaces)s)").format(a))
    if s.kind == "user":
        owner: list[sql.Composable] = [
            sql.SQL("{}.{} = %(user)s").format(a, sql.Identifier(col)) for col in table.user_columns
        ]
        if table.by_brief_key:  # the key's first ~ part is its user: ~a~b~k is user a's
            owner.append(
                sql.SQL(
                    "(starts_with({a}.brief_key, %(brief_prefix)s)"
                    " AND split_part({a}.brief_key, '~', 2) = %(user)s)"
                ).format(a=a)
            )
        owner.append(sql.SQL("{}.namespace = %(personal)s").format(a))
        if named:
            owner.extend(names_user(a, col) for col in table.names_user)
        parts.append(sql.SQL("({})").format(sql.SQL(" OR ").join(owner)))
    return sql.SQL(" AND ").join(parts)


def names_user(a: sql.Identifier, column: str) -> sql.Composable:
    """A column naming the user: the user id itself, or a principal of theirs (kind:<user>)."""
    return sql.SQL(
        "({a}.{c} = %(user)s OR (strpos({a}.{c}, ':') > 0"
        " AND substr({a}.{c}, strpos({a}.{c}, ':') + 1) = %(user)s))"
    ).format(a=a, c=sql.Identifier(column))


Counts = dict[str, int]


# ---- the conversation plane, a batch of threads at a time ---------------------------------

_BATCH = (
    "batch AS (SELECT b.namespace, b.thread_id"
    " FROM unnest(%(b_ns)s::text[], %(b_th)s::text[]) AS b(namespace, thread_id))"
)
# A live copy holds an embedding row when search indexes it (a user or assistant turn, or a
# compaction summary) and its first 2,048 characters are the row's text (as a delete settles).
_IN_BATCH = "{a}.org = %(org)s AND {a}.namespace = b.namespace AND {a}.thread_id = b.thread_id"


def _erased_turns(s: Subject) -> sql.Composable:
    """The subject's turns in the batch, and (recursively) the compaction summaries built from
    them: a summary holds their words. `own` is false for a summary."""
    return sql.SQL(
        "erased AS (SELECT c.namespace, c.thread_id, c.agent, c.msg_id, true AS own"
        " FROM loom.conversations c JOIN batch b ON " + _IN_BATCH.format(a="c") + " WHERE {subj}"
        " UNION SELECT c.namespace, c.thread_id, c.agent, c.msg_id, false"
        " FROM loom.conversations c JOIN erased d ON c.org = %(org)s"
        " AND c.namespace = d.namespace AND c.thread_id = d.thread_id"
        " WHERE " + summary_row("c") + " AND c.metadata->'compacted_from' ? d.msg_id)"
    ).format(subj=subject_match(CONVERSATIONS, s, "c"))


def next_threads(
    conn: Connection, s: Subject, after: tuple[str, str] | None, limit: int | None
) -> list[tuple[str, str]]:
    """The next threads (by namespace, thread_id) holding any row of the subject."""
    branches = []
    for table, alias in ((CONVERSATIONS, "c"), (EMBEDDINGS, "e"), (THREADS, "t")):
        a = sql.Identifier(alias)
        branches.append(
            sql.SQL(
                "SELECT {a}.namespace, {a}.thread_id FROM {t} {a} WHERE {subj}"
                " AND (%(after_ns)s::text IS NULL"
                "  OR ({a}.namespace, {a}.thread_id) > (%(after_ns)s, %(after_th)s))"
            ).format(a=a, t=table.ident, subj=subject_match(table, s, alias))
        )
    query = sql.SQL(
        "SELECT namespace, thread_id FROM ({}) s ORDER BY namespace, thread_id LIMIT %(limit)s"
    ).format(sql.SQL(" UNION ").join(branches))
    params = s.params() | {
        "after_ns": after[0] if after else None,
        "after_th": after[1] if after else None,
        "limit": limit,
    }
    return [(r[0], r[1]) for r in conn.execute(query, params).fetchall()]


def erase_threads(
    conn: Connection,
    s: Subject,
    threads: list[tuple[str, str]],
    *,
    purge: bool,
    now: datetime,
) -> tuple[Counts, Counts]:
    """Tombstone (and with `purge` remove) the subject's rows of these threads in the three
    conversation tables, under each thread's lease; returns (tombstoned, removed) counts."""
    params = s.params() | {
        "b_ns": [t[0] for t in threads],
        "b_th": [t[1] for t in threads],
        "now": now,
        # The spec: an expired turn's embedding row leaves disk only on a namespace_list purge.
        "expired_too": purge and s.kind == "namespace_list",
    }
    # The same leases appends, saves, compaction and deletes take.
    take_thread_leases(conn, s.org, threads)
    tombstoned = _tombstone_threads(conn, s, params)
    _clear_titler_titles(conn, params)
    removed = _purge_threads(conn, s, params) if purge else {}
    _scrub_windows(conn, s.org, threads, params)
    return tombstoned, removed


def _tombstone_threads(conn: Connection, s: Subject, params: dict[str, Any]) -> Counts:
    """Tombstone the subject's turns of the batch (and the summaries built from them), the
    embedding rows no other live copy holds, and its thread rows (the caller holds the
    leases)."""
    subj_e = subject_match(EMBEDDINGS, s, "e")
    subj_t = subject_match(THREADS, s, "t")
    tombstoned: Counts = {}
    tombstoned[CONVERSATIONS.name] = _run(
        conn,
        sql.SQL(
            "WITH RECURSIVE " + _BATCH + ", {erased}"
            " UPDATE loom.conversations c SET tombstoned_at = %(now)s FROM erased d"
            " WHERE c.org = %(org)s AND c.namespace = d.namespace AND c.thread_id = d.thread_id"
            " AND c.agent = d.agent AND c.msg_id = d.msg_id AND c.tombstoned_at IS NULL"
        ).format(erased=_erased_turns(s)),
        params,
    )
    # A subject's embedding row another user's live copy still holds passes to that copy.
    _run(
        conn,
        sql.SQL(
            "WITH " + _BATCH + " UPDATE loom.conversation_embeddings e SET " + PASSED + ""
            " FROM batch b WHERE " + _IN_BATCH.format(a="e") + " AND e.tombstoned_at IS NULL"
            " AND {subj} AND EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS + ")"
        ).format(subj=subj_e),
        params,
    )
    tombstoned[EMBEDDINGS.name] = _run(
        conn,
        sql.SQL(
            "WITH " + _BATCH + " UPDATE loom.conversation_embeddings e SET tombstoned_at = %(now)s"
            " FROM batch b WHERE " + _IN_BATCH.format(a="e") + " AND e.tombstoned_at IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS + ")"
            " AND ({subj} OR EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = e.org"
            "  AND c.namespace = e.namespace AND c.thread_id = e.thread_id"
            "  AND c.msg_id = e.msg_id AND c.tombstoned_at = %(now)s))"
        ).format(subj=subj_e),
        params,
    )
    tombstoned[THREADS.name] = _run(
        conn,
        sql.SQL(
            "WITH " + _BATCH + " UPDATE loom.conversation_threads t"
            " SET tombstoned_at = %(now)s, updated_at = %(now)s FROM batch b"
            " WHERE " + _IN_BATCH.format(a="t") + " AND t.tombstoned_at IS NULL AND {subj}"
        ).format(subj=subj_t),
        params,
    )
    return tombstoned


def _clear_titler_titles(conn: Connection, params: dict[str, Any]) -> None:
    # A title the titler wrote may quote the subject's turns (every thread of the batch holds
    # some, live, tombstoned or expired with only an embedding row left): it titles the
    # thread again, a deleted thread's title is cleared all the same.
    conn.execute(
        "WITH " + _BATCH + " UPDATE loom.conversation_threads t SET title = '',"
        " title_by_titler = false,"
        " metadata = t.metadata - 'title_refused', title_claimed_until = NULL FROM batch b"
        " WHERE " + _IN_BATCH.format(a="t") + ""
        " AND (t.title_by_titler AND t.title <> '' OR t.metadata ? 'title_refused')",
        params,
    )


def _scrub_windows(
    conn: Connection, org: str, threads: list[tuple[str, str]], params: dict[str, Any]
) -> None:
    """No window or context vector keeps erased text: the live rows' are rewritten, the
    tombstoned rows' cleared."""
    for namespace, thread_id in threads:
        # A row left held by a copy a save alone stored (its recorded copies erased) leaves
        # transcript search, and the windows read past it.
        settle_saved_only(conn, org, namespace, thread_id)
        rewrite_thread_windows(conn, org, namespace, thread_id)
    # A tombstoned row's window and context vector are read by nothing, but may hold the
    # subject's words: they go too (a row brought back is given both afresh).
    conn.execute(
        "WITH " + _BATCH + " UPDATE loom.conversation_embeddings e SET window_tsv = NULL,"
        " window_len = 0, context_embedding = e.embedding, context_of = NULL FROM batch b"
        " WHERE " + _IN_BATCH.format(a="e") + " AND e.tombstoned_at IS NOT NULL"
        " AND (e.window_tsv IS NOT NULL OR e.context_of IS NOT NULL)",
        params,
    )


def _purge_threads(conn: Connection, s: Subject, params: dict[str, Any]) -> Counts:
    """Remove the rows the tombstoning step left tombstoned (the caller holds the leases)."""
    subj_e = subject_match(EMBEDDINGS, s, "e")
    removed: Counts = {}
    removed[EMBEDDINGS.name] = _run(
        conn,
        sql.SQL(
            "WITH RECURSIVE " + _BATCH + ", {erased}"
            " DELETE FROM loom.conversation_embeddings e USING batch b"
            " WHERE " + _IN_BATCH.format(a="e") + " AND e.tombstoned_at IS NOT NULL"
            " AND ({subj} OR EXISTS (SELECT 1 FROM erased d WHERE NOT d.own"
            "  AND d.namespace = e.namespace AND d.thread_id = e.thread_id"
            "  AND d.msg_id = e.msg_id))"
            " AND (%(expired_too)s OR EXISTS (SELECT 1 FROM loom.conversations c"
            "  WHERE c.org = e.org AND c.namespace = e.namespace AND c.thread_id = e.thread_id"
            "  AND c.msg_id = e.msg_id))"
        ).format(erased=_erased_turns(s), subj=subj_e),
        params,
    )
    removed[CONVERSATIONS.name] = _run(
        conn,
        sql.SQL(
            "WITH RECURSIVE " + _BATCH + ", {erased}"
            " DELETE FROM loom.conversations c USING erased d WHERE c.org = %(org)s"
            " AND c.namespace = d.namespace AND c.thread_id = d.thread_id"
            " AND c.agent = d.agent AND c.msg_id = d.msg_id"
        ).format(erased=_erased_turns(s)),
        params,
    )
    removed[THREADS.name] = _run(
        conn,
        sql.SQL(
            "WITH " + _BATCH + " DELETE FROM loom.conversation_threads t USING batch b"
            " WHERE " + _IN_BATCH.format(a="t") + " AND {subj}"
        ).format(subj=subject_match(THREADS, s, "t")),
        params,
    )
    return removed


def _run(conn: Connection, query: sql.Composed, params: dict[str, Any]) -> int:
    return conn.execute(query, params).rowcount


# ---- every other table, a batch of rows at a time ------------------------------------------


def erase_table(
    conn: Connection,
    table: ErasedTable,
    s: Subject,
    *,
    purge: bool,
    now: datetime,
    limit: int | None,
) -> dict[Literal["tombstoned", "removed"], int]:
    """Tombstone up to `limit` of the subject's live rows (a table with a tombstone column,
    without `purge`), else remove up to `limit` of its rows; returns how many of each. A user's
    name in a row that is not theirs (`names_user`) is blanked, counted as tombstoned: the
    row stays, the name it held is gone."""
    params = s.params() | {"now": now, "limit": limit}
    subj = subject_match(table, s, "x")
    done: dict[Literal["tombstoned", "removed"], int] = {}
    if table.names_user and s.kind == "user":
        done["tombstoned"] = _blank_names(conn, table, s, params)
    if table.tombstone is not None and not purge:
        col = sql.Identifier(table.tombstone)
        query = sql.SQL(
            "UPDATE {t} SET {col} = %(now)s WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM {t} x"
            " WHERE {subj} AND x.{col} IS NULL LIMIT %(limit)s))"
        ).format(t=table.ident, col=col, subj=subj)
        done["tombstoned"] = done.get("tombstoned", 0) + _run(conn, query, params)
        return done
    query = sql.SQL(
        "DELETE FROM {t} WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM {t} x WHERE {subj}"
        " LIMIT %(limit)s))"
    ).format(t=table.ident, subj=subj)
    done["removed"] = _run(conn, query, params)
    if table.settles_candidates and done["removed"]:
        namespaces = list(s.namespaces) if s.namespaces is not None else None
        settle_orphans(conn, s.org, namespaces)
    return done


def _blank_names(conn: Connection, table: ErasedTable, s: Subject, params: dict[str, Any]) -> int:
    """Blank up to `limit` of the columns naming the user in rows the user does not own."""
    a = sql.Identifier("x")
    total = 0
    for col in table.names_user:
        query = sql.SQL(
            "UPDATE {t} SET {c} = '' WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM {t} x"
            " WHERE x.org = %(org)s AND {ns} AND {named} AND NOT ({subj}) LIMIT %(limit)s))"
        ).format(
            t=table.ident,
            c=sql.Identifier(col),
            ns=sql.SQL("x.namespace = ANY(%(namespaces)s)" if s.namespaces is not None else "true"),
            named=names_user(a, col),
            subj=subject_match(table, s, "x"),
        )
        total += _run(conn, query, params)
    return total


def count_rows(conn: Connection, s: Subject, cap: int) -> int:
    """How many rows the subject holds across the erased tables, counted up to `cap` + 1."""
    parts = [
        sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t} x WHERE {subj} LIMIT %(cap)s) q").format(
            t=t.ident, subj=subject_match(t, s, "x")
        )
        for t in ERASED
    ]
    query = sql.SQL("SELECT sum(n) FROM ({}) AS c(n)").format(sql.SQL(" UNION ALL ").join(parts))
    row = conn.execute(query, s.params() | {"cap": cap + 1}).fetchone()
    return min(int(row[0] or 0) if row else 0, cap + 1)
