"""Erasure in the conversation plane: embedding rows of turns the TTL expired, a turn two users'
agents both logged, compaction summaries and titler titles built from the erased turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from psycopg.types.json import Jsonb

from chalicelib.store.retention import partitions, purge_expired_turns
from tests.integration.test_conversation_support import NS, Tenant, embedding_rows, turn_rows

ANN, BOB = "u-ann", "u-bob"


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


def erase(t, **body):
    return t.ok("erasure.request", namespace=body.pop("namespace", None), **body)


def _expire(pool, org, msg_id):
    """Age one turn past a 30-day TTL and run the retention purge on it."""
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversations SET ts = now() - interval '40 days'"
            " WHERE org = %s AND msg_id = %s",
            (org, msg_id),
        )
        cutoff = datetime.now(UTC) - timedelta(days=30)
        whole, cut = partitions(conn, cutoff)  # removed row by row, wherever the month lies
        assert sum(purge_expired_turns(conn, cutoff, 1000, p) for p in whole + cut) >= 1


def _embedding(pool, org, msg_id):
    return [r for r in embedding_rows(pool, org) if r["msg_id"] == msg_id]


def test_an_expired_turns_embedding_row_is_tombstoned_and_removed_only_by_a_namespace_purge(
    t, pool, org
):
    """GIVEN a user's turn the retention TTL removed, its embedding row left behind
    WHEN the user is erased, then erased with purge, then the namespace_list is purged
    THEN the first tombstones the row, the second leaves it on disk (tombstoned), the third
    removes it; the export never holds it.
    """
    msg = t.append("th-1", "zanzibar keeps the spare key under the mat", user_id=ANN)["msg_id"]
    _expire(pool, org, msg)
    assert [r["tombstoned_at"] for r in _embedding(pool, org, msg)] == [None]

    erase(t, kind="user", user_id=ANN)
    (row,) = _embedding(pool, org, msg)
    assert row["tombstoned_at"] is not None
    assert t.hit_ids("zanzibar spare key mat") == []

    out = erase(t, kind="user", user_id=ANN, purge=True)
    assert out["removed"]["loom.conversation_embeddings"] == 0
    assert len(_embedding(pool, org, msg)) == 1

    doc = t.ok("erasure.export", kind="namespace_list", namespaces=[NS])
    assert "loom.conversation_embeddings" not in doc["tables"]
    out = erase(t, kind="namespace_list", namespaces=[NS], purge=True)
    assert out["removed"]["loom.conversation_embeddings"] == 1
    assert _embedding(pool, org, msg) == []


def test_a_turn_two_users_agents_both_logged_stays_searchable_for_the_other(t, pool, org):
    """GIVEN one turn (same msg_id and text) logged by agent a1 for one user and by agent a2
    for another, sharing one embedding row written for the first
    WHEN the first user is erased
    THEN their copy is tombstoned, the embedding row passes to the other user's live copy,
    and search still finds the turn for the other user.
    """
    text = "the tide tables for friday are pinned in the harbour office"
    t.append("th-1", text, msg_id="m-shared", user_id=ANN, agent="a1")
    t.append("th-1", text, msg_id="m-shared", user_id=BOB, agent="a2")
    (before,) = _embedding(pool, org, "m-shared")
    assert before["agent"] == "a1"

    erase(t, kind="user", user_id=ANN)

    states = {r["agent"]: r["tombstoned_at"] for r in turn_rows(pool, org)}
    assert states["a1"] is not None and states["a2"] is None
    (after,) = _embedding(pool, org, "m-shared")
    assert after["tombstoned_at"] is None and after["agent"] == "a2"
    hits = t.search("tide tables friday harbour")["hits"]
    assert [(h["msg_id"], h["user_id"]) for h in hits] == [("m-shared", BOB)]


def _summary(pool, org, msg_id, compacted_from, content):
    """A compaction summary as conversation.compact writes it, with its embedding row."""
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
            " content, metadata, ts) VALUES (%s, %s, 'th-1', 'a1', %s, 'system', %s, %s, now())",
            (org, NS, msg_id, content, Jsonb({"compacted_from": compacted_from})),
        )
        conn.execute(
            "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id, model,"
            " agent, role, text, ts) VALUES (%s, %s, 'th-1', %s, 'fake-bow', 'a1', 'system',"
            " %s, now())",
            (org, NS, msg_id, content),
        )


def test_summaries_built_from_the_users_turns_go_with_them(t, pool, org):
    """GIVEN a summary of one user's turns, a summary that folded that summary in, and a
    summary of the other user's turns only
    WHEN the first user is erased
    THEN both summaries holding their words (and their embedding rows) are tombstoned, and
    the other user's summary and turns are untouched.
    """
    a = t.append("th-1", "zanzibar wants the invoices in euros", user_id=ANN)["msg_id"]
    b = t.append("th-1", "bob wants the invoices weekly", user_id=BOB)["msg_id"]
    _summary(pool, org, "summary-a", [a], "summary: zanzibar wants euros")
    _summary(pool, org, "summary-aa", ["summary-a"], "summary of summaries: zanzibar, euros")
    _summary(pool, org, "summary-b", [b], "summary: bob wants weekly invoices")

    erase(t, kind="user", user_id=ANN)

    gone = {r["msg_id"] for r in turn_rows(pool, org) if r["tombstoned_at"] is not None}
    assert gone == {a, "summary-a", "summary-aa"}
    dead = {r["msg_id"] for r in embedding_rows(pool, org) if r["tombstoned_at"] is not None}
    assert dead == {a, "summary-a", "summary-aa"}

    erase(t, kind="user", user_id=ANN, purge=True)
    assert {r["msg_id"] for r in turn_rows(pool, org)} == {b, "summary-b"}
    assert {r["msg_id"] for r in embedding_rows(pool, org)} == {b, "summary-b"}


def test_a_title_the_titler_wrote_from_erased_turns_is_cleared(t, pool, org):
    """GIVEN a thread the titler titled, holding the user's turns, and one holding none of them
    WHEN the user is erased
    THEN the first thread's title is cleared (the titler titles it again from what is left)
    and the other keeps its title.
    """
    t.append("th-1", "zanzibar plans the lighthouse party", user_id=ANN)
    t.append("th-1", "bob brings the lanterns", user_id=BOB)
    t.append("th-2", "bob alone plans the regatta", user_id=BOB)
    with pool.connection() as conn:
        for thread, title in (("th-1", "Zanzibar's lighthouse party"), ("th-2", "Regatta")):
            conn.execute(
                "INSERT INTO loom.conversation_threads (org, namespace, thread_id, agent, title,"
                " origin, title_by_titler) VALUES (%s, %s, %s, 'a1', %s, 'titler', true)",
                (org, NS, thread, title),
            )
    erase(t, kind="user", user_id=ANN)
    titles = {
        th["thread_id"]: th["title"] for th in t.ok("conversation.threads", as_="viewer")["threads"]
    }
    assert titles == {"th-1": "", "th-2": "Regatta"}


def test_no_window_or_context_vector_of_another_users_turn_keeps_erased_words(t, pool, org):
    """GIVEN one thread where Ann's turn (with a word nobody else says) sits between two of
    Bob's, so Bob's turns hold it in their search windows and the later one's context vector
    was read after it
    WHEN Ann is erased
    THEN a lexical search for her word finds nothing (hybrid ranks as if BM25 found nothing),
    no live window holds its lexeme, and Bob's later turn's context vector falls back to its
    own vector.
    """
    t.append("th-1", "the ferry timetable changes next week", msg_id="m-1", user_id=BOB)
    t.append("th-1", "my cousin Xanthippe arrives on the ferry", msg_id="m-2", user_id=ANN)
    t.append("th-1", "then book two seats on the early boat", msg_id="m-3", user_id=BOB)
    assert "m-3" in t.hit_ids("Xanthippe", search_mode="lexical")
    with pool.connection() as conn:
        before = conn.execute(
            "SELECT context_of FROM loom.conversation_embeddings WHERE org = %s AND msg_id = 'm-3'",
            (org,),
        ).fetchone()
    assert before == ("m-2",)

    erase(t, kind="user", user_id=ANN)

    assert t.hit_ids("Xanthippe", search_mode="lexical") == []
    # Hybrid has no floor: Bob's turns still rank by vector, as if BM25 found nothing.
    hybrid = t.search("Xanthippe", search_mode="hybrid")["hits"]
    vectors_only = t.search("Xanthippe", search_mode="hybrid", lexical_weight=0)["hits"]
    assert [h["msg_id"] for h in hybrid] == [h["msg_id"] for h in vectors_only]
    assert {h["user_id"] for h in hybrid} <= {BOB}
    with pool.connection() as conn:
        holders = conn.execute(
            "SELECT msg_id FROM loom.conversation_embeddings WHERE org = %s"
            " AND tombstoned_at IS NULL AND window_tsv @@ 'xanthipp'::tsquery",
            (org,),
        ).fetchall()
        context = conn.execute(
            "SELECT context_of, context_embedding = embedding FROM loom.conversation_embeddings"
            " WHERE org = %s AND msg_id = 'm-3'",
            (org,),
        ).fetchone()
    assert holders == []
    assert context == (None, True)


def test_a_clients_system_turn_naming_an_erased_turn_is_not_erased(t, pool, org):
    """GIVEN Ann's turn, and Bob's own system turn whose metadata names it in compacted_from
    (a client's note, not a summary compaction wrote)
    WHEN Ann is erased with purge
    THEN Ann's turn is gone and Bob's stays: only a compaction summary goes with its turns
    (and a client cannot write under a summary's id: see test_conversation_validation)."""
    a = t.append("th-1", "zanzibar wants the invoices in euros", user_id=ANN, msg_id="m-ann")
    t.append("th-1", "bob's own note: weekly invoices", role="system", user_id=BOB,
             msg_id="note-bob", metadata={"compacted_from": [a["msg_id"]]}, agent="a2")  # fmt: skip
    erase(t, kind="user", user_id=ANN, purge=True)
    assert {r["msg_id"] for r in turn_rows(pool, org)} == {"note-bob"}


def _titler_title(pool, org, thread_id, title):
    """A title as the titler writes it."""
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.conversation_threads (org, namespace, thread_id, agent, title,"
            " origin, title_by_titler) VALUES (%s, %s, %s, 'a1', %s, 'titler', true)",
            (org, NS, thread_id, title),
        )


def _titles(pool, org):
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT thread_id, title FROM loom.conversation_threads WHERE org = %s", (org,)
        ).fetchall()
    return dict(rows)


def test_a_titler_title_of_a_deleted_or_expired_turns_thread_is_cleared(t, pool, org):
    """GIVEN two threads titled by the titler from Ann's words: one deleted before the
    erasure, one whose turn of Ann's the TTL expired (Bob's turn beside it live)
    WHEN Ann is erased with purge
    THEN neither title keeps her words."""
    t.append("th-del", "zanzibar plans the lighthouse party", user_id=ANN)
    _titler_title(pool, org, "th-del", "Zanzibar's lighthouse party")
    t.ok("conversation.delete", thread_id="th-del", confirm_thread_id="th-del", agent="*",
         as_="admin")  # fmt: skip
    a = t.append("th-exp", "zanzibar plans the harbour picnic", user_id=ANN)["msg_id"]
    t.append("th-exp", "bob brings the lanterns", user_id=BOB)
    _titler_title(pool, org, "th-exp", "Zanzibar's harbour picnic")
    _expire(pool, org, a)
    erase(t, kind="user", user_id=ANN, purge=True)
    assert not any("anzibar" in title for title in _titles(pool, org).values())


def test_a_tombstoned_neighbours_window_and_context_lose_the_erased_words(t, pool, org):
    """GIVEN Bob's turns around Ann's in one thread, Bob's copies deleted by his agent first
    (their windows and context vectors were built with Ann's turn)
    WHEN Ann is erased
    THEN no row of the thread, live or tombstoned, holds her word in its window or names her
    turn as its context."""
    t.append("th-1", "the ferry timetable changes next week", msg_id="m-1", user_id=BOB,
             agent="a2")  # fmt: skip
    t.append("th-1", "my cousin Xanthippe arrives on the ferry", msg_id="m-2", user_id=ANN,
             agent="a1")  # fmt: skip
    t.append("th-1", "then book two seats on the early boat", msg_id="m-3", user_id=BOB,
             agent="a2")  # fmt: skip
    t.ok("conversation.delete", thread_id="th-1", confirm_thread_id="th-1", agent="a2",
         as_="admin")  # fmt: skip
    erase(t, kind="user", user_id=ANN)
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT msg_id, coalesce(window_tsv @@ 'xanthipp'::tsquery, false), context_of"
            " FROM loom.conversation_embeddings WHERE org = %s ORDER BY msg_id",
            (org,),
        ).fetchall()
    assert rows and not any(holds or context == "m-2" for _, holds, context in rows), rows
