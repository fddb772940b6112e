"""conversation.delete: admin only, confirmed, tombstones everything of the thread it owns."""

from __future__ import annotations

import pytest

from tests.integration.test_conversation_support import (
    Tenant,
    embedding_rows,
    snapshot,
    turn_rows,
)

TABLES = ("loom.conversations", "loom.conversation_threads", "loom.conversation_embeddings")


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


@pytest.fixture
def doomed(t):
    """A created thread with two embedded turns and a system turn, beside a thread that stays."""
    t.ok("conversation.create", agent="a1", thread_id="th-doomed", title="Doomed")
    turns = [
        t.append("th-doomed", "You are terse.", role="system")["msg_id"],
        t.append("th-doomed", "where is the lighthouse key kept")["msg_id"],
        t.append("th-doomed", "the lighthouse key is in the blue tin", role="assistant")["msg_id"],
    ]
    keep = t.append("th-keep", "the lighthouse is closed on mondays")["msg_id"]
    return turns, keep


def delete(t, thread_id="th-doomed", agent="", confirm=None, as_="admin"):
    return t.post(
        "conversation.delete",
        agent=agent,
        thread_id=thread_id,
        confirm_thread_id=thread_id if confirm is None else confirm,
        as_=as_,
    )


@pytest.mark.parametrize("role", ["viewer", "writer"])
def test_delete_needs_an_admin(t, pool, org, doomed, role):
    """GIVEN a thread with turns
    WHEN a viewer or a writer asks to delete it
    THEN it answers 403 and nothing changes.
    """
    before = snapshot(pool, org)
    status, body = delete(t, as_=role)
    assert status == 403, body
    assert snapshot(pool, org) == before


def test_a_confirm_thread_id_mismatch_is_a_400_and_deletes_nothing(t, pool, org, doomed):
    """GIVEN a thread with turns
    WHEN an admin deletes it with a confirm_thread_id naming another thread
    THEN it answers 400 and nothing changes.
    """
    before = snapshot(pool, org)
    status, body = delete(t, confirm="th-keep")
    assert status == 400, body
    assert body["error"]["code"] == "bad_request"
    assert snapshot(pool, org) == before


def test_delete_tombstones_the_threads_turns_row_and_embeddings(t, pool, org, doomed):
    """GIVEN a created thread with a system turn and two embedded turns
    WHEN an admin deletes it
    THEN every turn, the thread row and both embedding rows carry the answer's tombstone time,
    rows_affected counts them per table with their total, and the other thread is untouched.
    """
    turns, keep = doomed
    status, out = delete(t)
    assert status == 200, out

    assert out["thread_id"] == "th-doomed"
    assert out["rows_affected"] == {
        "loom.conversations": 3,
        "loom.conversation_threads": 1,
        "loom.conversation_embeddings": 2,
    }
    assert out["total"] == 6
    rows = turn_rows(pool, org, "th-doomed")
    assert sorted(r["msg_id"] for r in rows) == sorted(turns)
    stamps = {r["tombstoned_at"] for r in rows}
    stamps |= {r["tombstoned_at"] for r in embedding_rows(pool, org, "th-doomed")}
    with pool.connection() as conn:
        stamps |= {
            r[0]
            for r in conn.execute(
                "SELECT tombstoned_at FROM loom.conversation_threads WHERE org = %s", (org,)
            ).fetchall()
        }
    assert len(stamps) == 1 and None not in stamps
    assert stamps.pop().isoformat().replace("+00:00", "Z") == out["tombstoned_at"]
    assert [r["tombstoned_at"] for r in turn_rows(pool, org, "th-keep")] == [None]

    again = delete(t)[1]
    assert again["total"] == 0  # idempotent: nothing left to tombstone


def test_after_delete_no_read_shows_the_thread(t, embedder, doomed):
    """GIVEN a thread that was deleted
    WHEN get, list, threads and search (by vector and by substring) look for it
    THEN none shows anything of it: get answers not found (neither its thread row nor a live
    message is left), with no count, title, metadata, owner or times; the other thread is
    still found.
    """
    turns, keep = doomed
    assert delete(t)[0] == 200

    got = t.ok("conversation.get", agent="", thread_id="th-doomed", include_messages=True)
    assert (got["found"], got["msg_count"], got["messages"]) == (False, 0, [])
    assert (got["title"], got["metadata"], got["agent"]) == ("", {}, "")
    assert (got["created_at"], got["updated_at"], got["next_cursor"]) == (None, None, None)
    assert t.ok("conversation.list", agent="", thread_id="th-doomed")["rows"] == []
    assert [r["thread_id"] for r in t.ok("conversation.threads")["threads"]] == ["th-keep"]
    assert t.hit_ids("the lighthouse key") == [keep]
    embedder.failing = True
    assert t.hit_ids("lighthouse") == [keep]
    assert t.hit_ids("terse") == []


def test_re_appending_a_deleted_turn_answers_deleted(t, pool, org, doomed):
    """GIVEN a deleted thread
    WHEN a client re-logs one of its turns (same derived msg_id) and one with its explicit msg_id
    THEN each append answers stored=false, reason="deleted", and no live row comes back.
    """
    turns, _ = doomed
    delete(t)
    out = t.append("th-doomed", "where is the lighthouse key kept")
    assert out["msg_id"] == turns[1]
    assert (out["stored"], out["reason"]) == (False, "deleted")
    assert t.ok("conversation.get", agent="", thread_id="th-doomed")["msg_count"] == 0
    assert all(r["tombstoned_at"] is not None for r in turn_rows(pool, org, "th-doomed"))


# ---- two agents, one turn ------------------------------------------------------------------


@pytest.fixture
def two_agents(t):
    """Agents A and B both log the same user turn; A also logs its own reply."""
    shared_a = t.append(
        "th-1", "the ferry to the island leaves at noon", agent="A", run_id="r-a", user_id="u-a"
    )
    shared_b = t.append(
        "th-1", "the ferry to the island leaves at noon", agent="B", run_id="r-b", user_id="u-b"
    )
    assert shared_a["msg_id"] == shared_b["msg_id"]
    own = t.append("th-1", "noted: ferry island noon", role="assistant", agent="A")
    return shared_a["msg_id"], own["msg_id"]


def test_one_agents_delete_leaves_the_other_agents_copy_and_passes_it_the_embedding(
    t, pool, org, two_agents
):
    """GIVEN a turn agents A and B both logged (one shared embedding row), and A's own reply
    WHEN A deletes the thread (agent="A")
    THEN B's copy stays live and readable, the shared embedding row stays live and now names
    B (agent, run, user), so search as B finds the turn and search as A does not; A's reply and
    its embedding are tombstoned.
    """
    shared, own = two_agents
    status, out = delete(t, thread_id="th-1", agent="A")
    assert status == 200, out
    assert out["rows_affected"]["loom.conversations"] == 2
    assert out["rows_affected"]["loom.conversation_embeddings"] == 1

    live = [(r["agent"], r["msg_id"]) for r in turn_rows(pool, org) if r["tombstoned_at"] is None]
    assert live == [("B", shared)]
    emb = {r["msg_id"]: r for r in embedding_rows(pool, org)}
    assert emb[shared]["tombstoned_at"] is None and emb[shared]["agent"] == "B"
    assert emb[own]["tombstoned_at"] is not None

    assert t.hit_ids("ferry island noon", agent="B") == [shared]
    assert t.hit_ids("ferry island noon", agent="A") == []
    (hit,) = t.search("ferry island noon", agent="*")["hits"]
    assert (hit["msg_id"], hit["agent"], hit["run_id"], hit["user_id"]) == (
        shared,
        "B",
        "r-b",
        "u-b",
    )
    got = t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True)
    assert [(m["msg_id"], m["agent"]) for m in got["messages"]] == [(shared, "B")]


def test_the_shared_embedding_goes_once_the_last_copy_is_deleted(t, pool, org, two_agents):
    """GIVEN A deleted its copies of a turn B also logged
    WHEN B deletes the thread too
    THEN the shared embedding row is tombstoned and no search finds the turn.
    """
    shared, _ = two_agents
    delete(t, thread_id="th-1", agent="A")
    status, out = delete(t, thread_id="th-1", agent="B")
    assert status == 200 and out["rows_affected"]["loom.conversation_embeddings"] == 1
    emb = {r["msg_id"]: r for r in embedding_rows(pool, org)}
    assert emb[shared]["tombstoned_at"] is not None
    assert t.hit_ids("ferry island noon") == []


# ---- rows of 240 characters ----------------------------------------------------------------


def _cut_to_240(pool, org, msg_id):
    """Make the embedding row what an earlier build wrote: the turn's first 240 characters."""
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversation_embeddings SET text = left(text, 240)"
            " WHERE org = %s AND msg_id = %s",
            (org, msg_id),
        )


LONG = "the ferry timetable for the winter season, " * 25  # about 1,100 characters


def test_a_240_character_row_passes_to_a_copy_whose_text_matches_its_agents_turn(t, pool, org):
    """GIVEN a long turn agents A and B both logged, whose embedding row (A's) holds only the
    first 240 characters (an earlier build's cut)
    WHEN A deletes its copies
    THEN the row stays live and passes to B: B's copy matches A's turn, if not the row's text."""
    a = t.append("th-240", LONG, agent="A")
    assert t.append("th-240", LONG, agent="B")["msg_id"] == a["msg_id"]
    _cut_to_240(pool, org, a["msg_id"])
    assert delete(t, thread_id="th-240", agent="A")[0] == 200
    (row,) = embedding_rows(pool, org, "th-240")
    assert (len(row["text"]), row["agent"], row["tombstoned_at"]) == (240, "B", None)


def test_a_240_character_row_whose_agents_turn_expired_is_tombstoned(t, pool, org):
    """GIVEN a turn of exactly 240 characters that agents A and B both logged, whose row is
    A's, and A's message row removed by the retention TTL
    WHEN C deletes its copies of the thread (a delete settles every row of the thread)
    THEN the row is tombstoned: no message row is left to check B's copy against."""
    text = ("x" * 239) + "."
    a = t.append("th-240", text, agent="A")
    t.append("th-240", text, agent="B")
    t.append("th-240", "a turn of agent c", agent="C")
    with pool.connection() as conn:
        conn.execute(
            "DELETE FROM loom.conversations WHERE org = %s AND agent = 'A' AND msg_id = %s",
            (org, a["msg_id"]),
        )
    assert delete(t, thread_id="th-240", agent="C")[0] == 200
    rows = {r["msg_id"]: r for r in embedding_rows(pool, org, "th-240")}
    assert len(rows[a["msg_id"]]["text"]) == 240
    assert rows[a["msg_id"]]["tombstoned_at"] is not None


def test_a_copy_whose_text_goes_on_to_a_secret_never_takes_the_row_over(t, pool, org):
    """GIVEN m1 logged by a1 (2,048 plain characters, then more plain words) and by a2 (the
    same 2,048 characters, then a password assignment): one embedding row, a1's
    WHEN a1's copies are deleted
    THEN the row is not passed to a2's copy (whose whole text reads as high and was never
    checked when the row was indexed): it is tombstoned, and a2's search finds nothing."""
    base = ("the harbour lantern meadow " * 100)[:2048]
    t.append("th", base + " and more plain words", msg_id="m1", agent="a1")
    t.append("th", base + " password=hunter2secret", msg_id="m1", agent="a2")
    t.ok("conversation.delete", agent="a1", thread_id="th", confirm_thread_id="th", as_="admin")
    (row,) = [r for r in embedding_rows(pool, org, "th") if r["msg_id"] == "m1"]
    assert row["tombstoned_at"] is not None
    assert t.search("harbour lantern meadow", agent="a2", search_mode="lexical")["hits"] == []


@pytest.mark.parametrize("tail", [" password=hunter2secret", " and more plain words"])
def test_an_expired_turns_row_passes_only_to_a_copy_of_the_indexed_text_itself(t, pool, org, tail):
    """GIVEN m1 logged by a1 (2,048 plain characters, then more words: one embedding row,
    a1's) and by a2 (the same 2,048 characters, then more text), and a1's message expired
    WHEN a thread delete by a third agent settles the row
    THEN it is tombstoned, not passed to a2's copy: with a1's message gone, the text past
    2,048 characters was never read by the guard (here a password, or plain words alike);
    a2's search finds nothing. A copy whose whole text is the indexed text takes it over.
    """
    base = ("the harbour lantern meadow " * 100)[:2048]
    t.append("th", base + " and more plain words", msg_id="m1", agent="a1")
    t.append("th", base + tail, msg_id="m1", agent="a2")
    t.append("th", base, msg_id="m2", agent="a1")
    t.append("th", base, msg_id="m2", agent="a3")
    t.append("th", "a turn of agent c", agent="c")
    with pool.connection() as conn:  # what the retention TTL does to a1's expired messages
        conn.execute("DELETE FROM loom.conversations WHERE org = %s AND agent = 'a1'", (org,))
    t.ok("conversation.delete", agent="c", thread_id="th", confirm_thread_id="th", as_="admin")
    rows = {r["msg_id"]: r for r in embedding_rows(pool, org, "th")}
    assert rows["m1"]["tombstoned_at"] is not None
    assert (rows["m2"]["tombstoned_at"], rows["m2"]["agent"]) == (None, "a3")
    assert t.hit_ids("harbour lantern meadow", agent="a2") == []
