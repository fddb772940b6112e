"""conversation.save_message and unsave_message: stored whatever the switch says, flagged in
place, owned by the transcript row, retry-safe, and withdrawn without a trace in search."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from chalicelib.auth import local_caller
from chalicelib.registry import call
from tests.integration.test_saved_support import (
    NS,
    OFF_NS,
    execute,
    hit_ids,
    list_saved,
    namespaces,
    open_tenant,
    save,
    saved_status,
    search_saved,
    transcript,
    unsave,
    vectors,
)

HIGH = "my db password=hunter22 do not share"


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


# ---- the recording switch ------------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["ns-never-set", OFF_NS])
def test_a_save_is_stored_without_recording_and_never_turns_recording_on(t, pool, org, namespace):
    """GIVEN a namespace that does not record (no row at all, or the switch set off)
    WHEN a user saves a new message there
    THEN the save answers indexed with no reason, the message is stored flagged saved with a
    flagged vector, loom.namespaces is unchanged and a later append still answers
    logging_disabled.
    """
    before = namespaces(pool, org)
    out = save(t, "c1", "m1", "the quarterly ledger closes on friday", namespace=namespace)
    assert (out["indexed"], out["reason"]) == (True, "")

    (row,) = transcript(pool, org, "m1")
    assert row["namespace"] == namespace and row["is_saved"] and row["saved_at"] is not None
    assert row["content"] == "the quarterly ledger closes on friday"
    (vec,) = vectors(pool, org, "m1")
    assert vec["is_saved"] and vec["has_vector"] and vec["tombstoned_at"] is None
    assert namespaces(pool, org) == before

    appended = t.append("c1", "a turn the owner never chose to record", namespace=namespace)
    assert (appended["stored"], appended["reason"]) == (False, "logging_disabled")
    assert [r["msg_id"] for r in transcript(pool, org)] == ["m1"]


def test_a_recorded_turn_is_flagged_in_place_keeping_its_run_and_content(t, pool, org):
    """GIVEN a user turn appended (with a run_id) while the namespace records
    WHEN a user saves it, sending different content
    THEN the one transcript row and its embedding row carry is_saved and the same saved_at,
    while content, run_id and the vector's text stay as recorded.
    """
    msg = t.append("c1", "we picked the blue lighthouse plan", msg_id="m1", run_id="run-7")
    assert msg["stored"]
    before = vectors(pool, org, "m1")[0]
    assert not before["is_saved"]

    out = save(t, "c1", "m1", "something else entirely")
    assert (out["indexed"], out["reason"]) == (True, "")

    (row,) = transcript(pool, org, "m1")
    assert row["is_saved"] and row["saved_at"] is not None
    assert row["content"] == "we picked the blue lighthouse plan"
    assert row["run_id"] == "run-7" and row["user_id"] == "u1"
    (vec,) = vectors(pool, org, "m1")
    assert vec["is_saved"] and vec["saved_at"] == row["saved_at"]
    assert vec["run_id"] == "run-7" and vec["text"] == "we picked the blue lighthouse plan"
    assert vec["has_vector"] and vec["tombstoned_at"] is None
    assert hit_ids(search_saved(t, "blue lighthouse plan")) == ["m1"]
    assert hit_ids(search_saved(t, "something else entirely", search_mode="lexical")) == []


# ---- ownership, deletion, role, sensitivity ------------------------------------------------


def test_a_message_stored_under_another_user_is_an_owner_mismatch(t, pool, org):
    """GIVEN a turn appended with user_id u2
    WHEN u1 saves it
    THEN the save answers indexed false, reason owner_mismatch, and the row is not flagged.
    """
    t.append("c1", "u2 talks about the harbour", msg_id="m1", user_id="u2")
    out = save(t, "c1", "m1", user="u1")
    assert (out["indexed"], out["reason"]) == (False, "owner_mismatch")
    (row,) = transcript(pool, org, "m1")
    assert (row["user_id"], row["is_saved"]) == ("u2", False)
    assert not vectors(pool, org, "m1")[0]["is_saved"]


def test_another_agents_unowned_copy_of_a_users_turn_is_an_owner_mismatch(t, pool, org):
    """GIVEN turn m1 appended by agent A for user u2, then by agent B with other words and no
    user (the copies share one vector row, which holds u2's words)
    WHEN u1 saves B's copy
    THEN the save answers owner_mismatch: the vector row stays u2's and unflagged, B's copy
    unclaimed, and u1's saved search shows none of u2's words."""
    t.append("c1", "u2 notes the harbour gate code", msg_id="m1", agent="A", user_id="u2")
    t.append("c1", "b logs other words for this id", msg_id="m1", agent="B")
    out = save(t, "c1", "m1", "b logs other words for this id", agent="B", user="u1")
    assert (out["indexed"], out["reason"]) == (False, "owner_mismatch")
    (vector,) = vectors(pool, org, "m1")
    assert (vector["user_id"], vector["is_saved"]) == ("u2", False)
    assert {r["agent"]: r["user_id"] for r in transcript(pool, org, "m1")} == {"A": "u2", "B": "-"}
    assert search_saved(t, "harbour gate code", user="u1") == []


def test_saving_a_copy_the_shared_vector_row_does_not_hold_embeds_its_own_words(t, pool, org):
    """GIVEN turn m1 appended by agents A and B with other words, neither for a user (the shared
    vector row holds A's)
    WHEN u1 saves B's copy
    THEN B's words are embedded into the row (u1's, saved): u1's saved search finds the message
    by B's words and shows them, not A's."""
    t.append("c1", "a speaks of the lighthouse keeper", msg_id="m1", agent="A")
    t.append("c1", "b speaks of the ferry timetable", msg_id="m1", agent="B")
    out = save(t, "c1", "m1", "b speaks of the ferry timetable", agent="B", user="u1")
    assert (out["indexed"], out["reason"]) == (True, "")
    (vector,) = vectors(pool, org, "m1")
    assert (vector["user_id"], vector["is_saved"]) == ("u1", True)
    assert vector["text"] == "b speaks of the ferry timetable"
    found = search_saved(t, "ferry timetable", user="u1")
    assert hit_ids(found) == ["m1"]
    assert "lighthouse" not in found[0]["excerpt"]


def test_the_first_of_two_users_claims_an_unowned_message(t, pool, org):
    """GIVEN a turn appended with no user
    WHEN u1 saves it and then u2 saves it
    THEN u1's save is indexed and the row becomes u1's; u2 is answered owner_mismatch and the
    row stays u1's, saved; u2's saved search does not see it.
    """
    t.append("c1", "the harbour opens at dawn", msg_id="m1")
    assert transcript(pool, org, "m1")[0]["user_id"] == "-"
    first = save(t, "c1", "m1", user="u1")
    second = save(t, "c1", "m1", user="u2")
    assert (first["indexed"], first["reason"]) == (True, "")
    assert (second["indexed"], second["reason"]) == (False, "owner_mismatch")
    (row,) = transcript(pool, org, "m1")
    assert (row["user_id"], row["is_saved"]) == ("u1", True)
    assert vectors(pool, org, "m1")[0]["user_id"] == "u1"
    assert hit_ids(search_saved(t, "harbour dawn", user="u2")) == []
    assert hit_ids(search_saved(t, "harbour dawn", user="u1")) == ["m1"]


@pytest.mark.parametrize("mode", ["semantic", "lexical", "hybrid"])
def test_the_first_user_claims_a_message_two_agents_logged(t, pool, org, mode):
    """GIVEN one message that agents a1 and a2 both logged, with no user
    WHEN u1 saves it through a1, then u2 through a2
    THEN u2 is answered owner_mismatch (the message is saved for u1, whichever agent's copy
    u2 names): u1's saved search finds it in every mode, u2's in none, and the shared vector
    row stays u1's.
    """
    text = "the quarterly ledger reconciliation checklist for kestrel"
    t.append("th", text, msg_id="m", agent="a1")
    t.append("th", text, msg_id="m", agent="a2")
    assert save(t, "th", "m", text, user="u1", agent="a1")["reason"] == ""
    second = save(t, "th", "m", text, user="u2", agent="a2")
    assert (second["indexed"], second["reason"]) == (False, "owner_mismatch")
    query = "ledger reconciliation kestrel"
    assert hit_ids(search_saved(t, query, user="u1", search_mode=mode)) == ["m"]
    assert hit_ids(search_saved(t, query, user="u2", search_mode=mode)) == []
    assert saved_status(t, "th", ["m"], user="u2") == []
    assert vectors(pool, org, "m")[0]["user_id"] == "u1"


def test_a_tombstoned_message_answers_deleted(t, pool, org):
    """GIVEN a recorded turn whose thread was deleted
    WHEN a user saves it
    THEN the save answers indexed false, reason deleted, and nothing is revived.
    """
    t.append("c1", "the harbour opens at dawn", msg_id="m1")
    t.ok("conversation.delete", agent="", thread_id="c1", confirm_thread_id="c1", as_="admin")
    out = save(t, "c1", "m1")
    assert (out["indexed"], out["reason"]) == (False, "deleted")
    assert all(r["tombstoned_at"] is not None for r in transcript(pool, org, "m1"))
    assert all(r["tombstoned_at"] is not None for r in vectors(pool, org, "m1"))
    assert hit_ids(search_saved(t, "harbour dawn")) == []


@pytest.mark.parametrize("role", ["system", "tool"])
def test_a_stored_system_or_tool_turn_answers_unsupported_role(t, pool, org, role):
    """GIVEN a recorded system or tool turn
    WHEN a user saves its message id (as a user message)
    THEN the save answers indexed false, reason unsupported_role, and no vector is written.
    """
    t.append("c1", "you are a terse harbour assistant", msg_id="m1", role=role)
    out = save(t, "c1", "m1", role="user")
    assert (out["indexed"], out["reason"]) == (False, "unsupported_role")
    assert not transcript(pool, org, "m1")[0]["is_saved"]
    assert vectors(pool, org, "m1") == []


def test_a_message_that_reads_as_high_is_refused_and_a_new_one_not_stored(t, pool, org, embedder):
    """GIVEN a recorded turn that holds a password assignment
    WHEN a user saves it, and saves a new message holding one
    THEN both answer indexed false, reason high_sensitivity; the recorded turn is not flagged,
    the new one is not stored, and neither text reaches the embedder.
    """
    t.append("c1", HIGH, msg_id="m1")
    embedder.seen.clear()
    old = save(t, "c1", "m1", "harmless text")
    new = save(t, "c1", "m2", "remember: password=hunter22", namespace=OFF_NS)
    assert (old["indexed"], old["reason"]) == (False, "high_sensitivity")
    assert (new["indexed"], new["reason"]) == (False, "high_sensitivity")
    assert not transcript(pool, org, "m1")[0]["is_saved"]
    assert transcript(pool, org, "m2") == [] and vectors(pool, org, "m2") == []
    assert not any("hunter22" in s for s in embedder.seen)


def test_a_message_whose_embedded_cut_reads_as_high_is_refused(t, pool, org, embedder):
    """GIVEN a new message whose whole text holds five groups of four digits (no card number)
    and whose first 2,048 characters, the part embedded, end with four of them
    WHEN a user saves it
    THEN it answers indexed false, reason high_sensitivity, it is not stored and the digits
    never reach the embedder."""
    digits = "4111 1111 1111 1111"
    pad = ("notes from the planning meeting about the launch. " * 41)[:2028] + " "
    text = pad + digits + " 1111 and the rest"
    out = save(t, "c1", "m-cut", text, namespace=OFF_NS)
    assert (out["indexed"], out["reason"]) == (False, "high_sensitivity")
    assert transcript(pool, org, "m-cut") == [] and vectors(pool, org, "m-cut") == []
    assert not any(digits in s for s in embedder.seen)


def test_the_checks_also_apply_to_a_message_already_saved(t, pool, org):
    """GIVEN messages u1 has already saved
    WHEN u2 saves one, u1 saves one whose stored text now reads as high or whose stored role
    is system (as an earlier build left them), and u1 saves one in a thread since deleted
    THEN the answers are owner_mismatch, high_sensitivity, unsupported_role and deleted, never
    duplicate.
    """
    for m in ("m1", "m2", "m3"):
        assert save(t, "c1", m, f"plain note {m}")["indexed"]
    assert save(t, "c2", "m4", "plain note m4")["indexed"]
    execute(
        pool,
        "UPDATE loom.conversations SET content = %s WHERE org = %s AND msg_id = 'm2'",
        (HIGH, org),
    )
    execute(
        pool,
        "UPDATE loom.conversations SET role = 'system' WHERE org = %s AND msg_id = 'm3'",
        (org,),
    )
    t.ok("conversation.delete", agent="", thread_id="c2", confirm_thread_id="c2", as_="admin")

    answers = {
        "m1-by-u2": save(t, "c1", "m1", user="u2"),
        "m2": save(t, "c1", "m2"),
        "m3": save(t, "c1", "m3"),
        "m4": save(t, "c2", "m4"),
    }
    assert {k: (a["indexed"], a["reason"]) for k, a in answers.items()} == {
        "m1-by-u2": (False, "owner_mismatch"),
        "m2": (False, "high_sensitivity"),
        "m3": (False, "unsupported_role"),
        "m4": (False, "deleted"),
    }
    assert save(t, "c1", "m1")["reason"] == "duplicate"


# ---- retry-safety --------------------------------------------------------------------------


def test_saving_twice_answers_duplicate_and_keeps_one_row(t, pool, org, embedder):
    """GIVEN a message u1 saved
    WHEN u1 saves it again
    THEN the second save answers indexed true, reason duplicate, without embedding again;
    there is still one transcript row and one embedding row.
    """
    first = save(t, "c1", "m1", "the harbour opens at dawn", namespace=OFF_NS)
    embedded = len(embedder.seen)
    again = save(t, "c1", "m1", "the harbour opens at dawn", namespace=OFF_NS)
    assert (first["indexed"], first["reason"]) == (True, "")
    assert (again["indexed"], again["reason"]) == (True, "duplicate")
    assert len(embedder.seen) == embedded
    assert len(transcript(pool, org, "m1")) == 1 and len(vectors(pool, org, "m1")) == 1


def test_concurrent_saves_of_a_new_message_store_one_row(deps, pool, org):
    """GIVEN a message no row holds yet
    WHEN eight threads save it at once
    THEN every call answers indexed true, and exactly one transcript row and one flagged
    embedding row hold it.
    """
    caller = local_caller(org)
    body = {
        "org": org,
        "namespace": OFF_NS,
        "agent": "a1",
        "conversation_id": "c1",
        "message_id": "m1",
        "role": "user",
        "content": "saved from eight tabs at once",
        "user_id": "u1",
    }
    for _ in range(3):  # a few races, each on a fresh message
        with ThreadPoolExecutor(max_workers=8) as pool_:
            answers = list(
                pool_.map(
                    lambda _, b=body: call("conversation.save_message", b, caller, deps).body,
                    range(8),
                )
            )
        assert all(a["indexed"] for a in answers), answers
        assert {a["reason"] for a in answers} <= {"", "duplicate"}
        rows = transcript(pool, org, body["message_id"])
        assert len(rows) == 1 and rows[0]["is_saved"]
        (vec,) = vectors(pool, org, body["message_id"])
        assert vec["is_saved"] and vec["has_vector"]
        body = {**body, "message_id": body["message_id"] + "x"}


def test_a_failed_embed_stores_the_message_saved_and_a_retry_indexes_it(t, pool, org, embedder):
    """GIVEN an embedder that fails
    WHEN a user saves a new message, then saves it again once the embedder answers
    THEN the first save answers indexed false, reason embed_failed, with the message stored
    saved (listed, its embedding row holding the error); the second is indexed and the
    embedding row gains a vector the saved search ranks.
    """
    embedder.failing = True
    out = save(t, "c1", "m1", "the harbour opens at dawn", namespace=OFF_NS)
    assert (out["indexed"], out["reason"]) == (False, "embed_failed")
    (row,) = transcript(pool, org, "m1")
    assert row["is_saved"] and row["tombstoned_at"] is None
    (vec,) = vectors(pool, org, "m1")
    assert vec["error"] and not vec["has_vector"] and vec["is_saved"]
    listed = t.ok("conversation.list_saved_messages", agent="*", user_id="u1", namespace=OFF_NS)
    assert [r["message_id"] for r in listed["rows"]] == ["m1"]

    embedder.failing = False
    again = save(t, "c1", "m1", "the harbour opens at dawn", namespace=OFF_NS)
    assert (again["indexed"], again["reason"]) == (True, "")
    (vec,) = vectors(pool, org, "m1")
    assert vec["has_vector"] and vec["error"] is None and vec["is_saved"]
    assert hit_ids(search_saved(t, "harbour dawn", namespace=OFF_NS, search_mode="semantic")) == [
        "m1"
    ]


def test_a_save_repairs_a_missing_or_unflagged_embedding_row(t, pool, org):
    """GIVEN a saved message whose embedding row was lost, and one whose embedding row lost its
    flag (as an interrupted write leaves them)
    WHEN the user saves each again
    THEN each save answers indexed with no reason (not duplicate) and the embedding row is
    back, live, flagged and holding a vector.
    """
    save(t, "c1", "m1", "the harbour opens at dawn")
    save(t, "c1", "m2", "the lighthouse closes at dusk")
    execute(
        pool, "DELETE FROM loom.conversation_embeddings WHERE org = %s AND msg_id = 'm1'", (org,)
    )
    execute(
        pool,
        "UPDATE loom.conversation_embeddings SET is_saved = false, saved_at = NULL"
        " WHERE org = %s AND msg_id = 'm2'",
        (org,),
    )
    assert hit_ids(search_saved(t, "harbour dawn", search_mode="semantic")) == []

    for m in ("m1", "m2"):
        out = save(t, "c1", m)
        assert (out["indexed"], out["reason"]) == (True, ""), m
        (vec,) = vectors(pool, org, m)
        assert vec["is_saved"] and vec["has_vector"] and vec["tombstoned_at"] is None, m
        assert vec["saved_at"] == transcript(pool, org, m)[0]["saved_at"]
    assert hit_ids(search_saved(t, "harbour dawn", search_mode="semantic"))[0] == "m1"


# ---- unsave --------------------------------------------------------------------------------


def test_unsave_in_a_recording_namespace_clears_the_flag_and_keeps_the_turn(t, pool, org):
    """GIVEN a recorded turn u1 saved
    WHEN u1 unsaves it
    THEN found true, removed false; the turn is still served by conversation.get, neither row
    is flagged, the embedding row stays live, and the saved search no longer finds it.
    """
    t.append("c1", "the harbour opens at dawn", msg_id="m1")
    save(t, "c1", "m1")
    out = unsave(t, "c1", "m1")
    assert (out["found"], out["removed"]) == (True, False)
    got = t.ok("conversation.get", agent="", thread_id="c1", include_messages=True)
    assert [m["msg_id"] for m in got["messages"]] == ["m1"]
    (row,) = transcript(pool, org, "m1")
    assert not row["is_saved"] and row["saved_at"] is None and row["tombstoned_at"] is None
    (vec,) = vectors(pool, org, "m1")
    assert not vec["is_saved"] and vec["tombstoned_at"] is None
    assert search_saved(t, "harbour dawn") == []
    assert t.hit_ids("harbour opens at dawn") == ["m1"]  # still a recorded turn


def test_unsave_in_a_non_recording_namespace_removes_the_turn(t, pool, org):
    """GIVEN a message u1 saved where the namespace does not record
    WHEN u1 unsaves it
    THEN found and removed are true, no transcript row is left, and the embedding row keeps a
    tombstone.
    """
    save(t, "c1", "m1", "the harbour opens at dawn", namespace=OFF_NS)
    out = unsave(t, "c1", "m1", namespace=OFF_NS)
    assert (out["found"], out["removed"]) == (True, True)
    assert transcript(pool, org, "m1") == []
    (vec,) = vectors(pool, org, "m1")
    assert vec["tombstoned_at"] is not None and not vec["is_saved"]
    assert search_saved(t, "harbour dawn", namespace=OFF_NS) == []


def test_an_append_of_a_saved_message_where_recording_is_off_is_not_stored(t, pool, org):
    """GIVEN a message u1 saved where the namespace does not record
    WHEN the client appends the same turn there
    THEN it answers stored false, logging_disabled (the transcript does not hold it), and an
    unsave still removes it.
    """
    save(t, "c1", "m1", "the harbour opens at dawn", namespace=OFF_NS)
    out = t.append("c1", "the harbour opens at dawn", msg_id="m1", namespace=OFF_NS)
    assert (out["stored"], out["reason"]) == (False, "logging_disabled")
    assert unsave(t, "c1", "m1", namespace=OFF_NS)["removed"] is True
    assert transcript(pool, org, "m1") == []


def test_unsave_keeps_a_recorded_turn_after_recording_is_switched_off(t, pool, org):
    """GIVEN a turn recorded while the namespace recorded, saved by u1, then recording switched
    off
    WHEN u1 unsaves it
    THEN found true, removed false: the turn stays in the transcript (the owner chose to record
    it; it did not exist only because of the save) with its embedding row live, unflagged.
    """
    t.append("c1", "the harbour opens at dawn", msg_id="m1")
    save(t, "c1", "m1")
    t.set_logging(NS, False)
    out = unsave(t, "c1", "m1")
    assert (out["found"], out["removed"]) == (True, False)
    (row,) = transcript(pool, org, "m1")
    assert not row["is_saved"] and row["tombstoned_at"] is None
    (vec,) = vectors(pool, org, "m1")
    assert not vec["is_saved"] and vec["tombstoned_at"] is None


def test_unsave_of_a_message_never_saved_or_saved_by_another_user_is_not_found(t, pool, org):
    """GIVEN a recorded turn nobody saved and a message u2 saved
    WHEN u1 unsaves each (and an id nothing holds)
    THEN each answers found false, removed false, and u2's message stays saved.
    """
    t.append("c1", "nobody saved this one", msg_id="m1")
    save(t, "c1", "m2", "u2 keeps this", user="u2", namespace=OFF_NS)
    for ns, m in ((NS, "m1"), (OFF_NS, "m2"), (NS, "nothing")):
        out = unsave(t, "c1", m, namespace=ns)
        assert (out["found"], out["removed"]) == (False, False), m
    (row,) = transcript(pool, org, "m2")
    assert row["is_saved"] and row["user_id"] == "u2"
    assert hit_ids(search_saved(t, "u2 keeps this", user="u2", namespace=OFF_NS)) == ["m2"]


@pytest.mark.parametrize("namespace", [NS, OFF_NS])
def test_unsave_is_idempotent_and_saving_again_restores(t, pool, org, namespace):
    """GIVEN a saved message (recording on or off)
    WHEN the user unsaves it twice, then saves it again
    THEN the second unsave answers found false, and the new save is indexed and found by the
    saved search once more, with one live flagged transcript row and embedding row.
    """
    if namespace == NS:
        t.append("c1", "the harbour opens at dawn", msg_id="m1")
    save(t, "c1", "m1", "the harbour opens at dawn", namespace=namespace)
    assert unsave(t, "c1", "m1", namespace=namespace)["found"] is True
    second = unsave(t, "c1", "m1", namespace=namespace)
    assert (second["found"], second["removed"]) == (False, False)

    out = save(t, "c1", "m1", "the harbour opens at dawn", namespace=namespace)
    assert (out["indexed"], out["reason"]) == (True, "")
    assert hit_ids(search_saved(t, "harbour dawn", namespace=namespace)) == ["m1"]
    live = [r for r in transcript(pool, org, "m1") if r["tombstoned_at"] is None]
    assert len(live) == 1 and live[0]["is_saved"]
    (vec,) = vectors(pool, org, "m1")
    assert vec["is_saved"] and vec["tombstoned_at"] is None and vec["has_vector"]


def test_a_saved_message_keeps_its_save_time_across_a_repair(t, pool, org):
    """GIVEN a message saved, whose embedding row then lost its flag
    WHEN the user saves it again a moment later
    THEN saved_at stays the time of the first save.
    """
    save(t, "c1", "m1", "the harbour opens at dawn")
    first = transcript(pool, org, "m1")[0]["saved_at"]
    execute(pool, "UPDATE loom.conversation_embeddings SET is_saved = false WHERE org = %s", (org,))
    time.sleep(0.05)
    assert save(t, "c1", "m1")["indexed"]
    assert transcript(pool, org, "m1")[0]["saved_at"] == first


def test_a_message_two_agents_logged_is_saved_once_for_its_user(t, pool, org):
    """GIVEN a turn m1 logged by agents a1 and a2 with the same text, and another message m2
    WHEN u1 saves m1 through a1, then through a2, and saves m2
    THEN the second save answers duplicate and one copy alone is flagged; the list holds m1
    once, and a lexical search for m1's words ranks it first, once."""
    for agent in ("a1", "a2"):
        t.append("c1", "the lighthouse keeper rows out at dawn", msg_id="m1", agent=agent)
    assert save(t, "c1", "m1", agent="a1")["reason"] == ""
    assert save(t, "c1", "m1", agent="a2")["reason"] == "duplicate"
    save(t, "c2", "m2", "the keeper of the lighthouse logbook")
    flagged = [r for r in transcript(pool, org, "m1") if r["is_saved"]]
    assert len(flagged) == 1
    assert [r["message_id"] for r in list_saved(t)["rows"]].count("m1") == 1
    assert hit_ids(search_saved(t, "lighthouse keeper rows dawn", search_mode="lexical"))[:2] == [
        "m1", "m2"]  # fmt: skip


def test_unsave_removing_a_saved_only_copy_leaves_another_agents_copy_indexed(t, pool, org):
    """GIVEN m1 saved by u1 through a1 while the namespace did not record, then logged by a2
    (recording on) with m2 after it, and recording off again
    WHEN u1 unsaves m1 (a1's copy existed only because of the save: it is removed)
    THEN a2's copy keeps the embedding row, live, and a2's search still finds m1."""
    t.set_logging(NS, False)
    save(t, "c1", "m1", "the quarry barge leaves at dawn", agent="a1")
    t.set_logging(NS, True)
    t.append("c1", "the quarry barge leaves at dawn", msg_id="m1", agent="a2")
    t.append("c1", "and the kiln fires at noon", msg_id="m2", agent="a2", role="assistant")
    t.set_logging(NS, False)
    assert unsave(t, "c1", "m1")["removed"] is True
    (vec,) = vectors(pool, org, "m1")
    assert vec["tombstoned_at"] is None and not vec["is_saved"]
    assert "m1" in t.hit_ids("quarry barge dawn", agent="a2", search_mode="lexical")


def test_a_saved_only_copy_the_client_then_appends_stays_after_unsave(t, pool, org):
    """GIVEN m1 saved by u1 where the transcript did not hold it, then appended by the client
    (answered duplicate) while the namespace records, and recording switched off
    WHEN u1 unsaves m1
    THEN the turn stays (removed false): the owner recorded it."""
    save(t, "c1", "m1", "the quarry barge leaves at dawn", agent="a1")
    assert t.append("c1", "the quarry barge leaves at dawn", msg_id="m1")["reason"] == "duplicate"
    t.set_logging(NS, False)
    assert unsave(t, "c1", "m1")["removed"] is False
    assert [r["tombstoned_at"] for r in transcript(pool, org, "m1")] == [None]


def test_a_saved_flag_goes_with_the_saved_copy_when_it_is_deleted(t, pool, org):
    """GIVEN m1 logged by a1 and a2 (one shared embedding row, a1's), saved by u1 through a2
    WHEN a2's copies are deleted
    THEN the row is no longer flagged saved: u1's saved search does not find m1 (which u1
    could neither list nor withdraw any more), and a1's copy keeps the row, live."""
    text = "the quarry barge leaves at dawn"
    t.append("c1", text, msg_id="m1", agent="a1")
    t.append("c1", text, msg_id="m1", agent="a2")
    save(t, "c1", "m1", text, agent="a2")
    t.ok("conversation.delete", agent="a2", thread_id="c1", confirm_thread_id="c1", as_="admin")
    (vec,) = vectors(pool, org, "m1")
    assert vec["tombstoned_at"] is None and not vec["is_saved"]
    assert search_saved(t, "quarry barge dawn", search_mode="semantic") == []
