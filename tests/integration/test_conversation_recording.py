"""Recording is the owner's choice, and a turn is written once (conversation.append)."""

from __future__ import annotations

import pytest

from tests.integration.test_conversation_support import NS, Tenant, turn_rows


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org, logging_on=())


def test_a_namespace_with_no_row_does_not_record(t, pool, org):
    """GIVEN a namespace nobody ever configured (no loom.namespaces row)
    WHEN a writer appends a turn to it
    THEN the append is accepted with stored=false, reason="logging_disabled", and no row is kept.
    """
    with pool.connection() as conn:
        assert conn.execute("SELECT 1 FROM loom.namespaces WHERE org = %s", (org,)).fetchall() == []

    out = t.append("th-1", "hello there, is this recorded?")

    assert out["stored"] is False
    assert out["reason"] == "logging_disabled"
    assert out["msg_id"]
    assert turn_rows(pool, org) == []


def test_a_client_cannot_override_the_owners_choice(t, pool, org):
    """GIVEN a namespace with recording off
    WHEN a writer appends with extra fields asking to record anyway
    THEN the fields are only named in ignored_args, the answer is logging_disabled, and no row
    is kept.
    """
    status, out = t.post(
        "conversation.append",
        as_="writer",
        agent="a1",
        thread_id="th-1",
        role="user",
        content="please keep this",
        enabled=True,
        conversation_logging_enabled=True,
        force=True,
    )
    assert status == 200, out
    assert (out["stored"], out["reason"]) == (False, "logging_disabled")
    assert out["ignored_args"] == ["conversation_logging_enabled", "enabled", "force"]
    assert turn_rows(pool, org) == []


def test_set_logging_needs_an_admin(t, pool, org):
    """GIVEN a writer token and an admin token of the same org
    WHEN the writer asks conversation.set_logging(enabled=true)
    THEN it is refused with 403 and recording stays off; the admin's call turns it on.
    """
    status, body = t.post("conversation.set_logging", enabled=True, as_="writer")
    assert status == 403, body
    assert body["error"]["code"] == "forbidden"
    assert t.append("th-1", "first words")["reason"] == "logging_disabled"

    out = t.ok("conversation.set_logging", enabled=True, as_="admin")
    assert out == {"namespace": NS, "enabled": True, "ignored_args": []}
    assert t.append("th-1", "first words")["stored"] is True


def test_turning_logging_on_then_off_starts_then_stops_storing(t, pool, org):
    """GIVEN recording switched on by an admin
    WHEN a turn is appended, recording is switched off, and another turn is appended
    THEN the first is stored and readable, the second answers logging_disabled and leaves no row.
    """
    t.set_logging(NS, True)
    first = t.append("th-1", "kept while recording is on")
    assert (first["stored"], first["reason"]) == (True, "")

    assert t.set_logging(NS, False)["enabled"] is False
    second = t.append("th-1", "said after recording was switched off")
    assert (second["stored"], second["reason"]) == (False, "logging_disabled")

    rows = turn_rows(pool, org)
    assert [r["content"] for r in rows] == ["kept while recording is on"]
    listed = t.ok("conversation.list", agent="", thread_id="th-1", as_="viewer")["rows"]
    assert [r["content"] for r in listed] == ["kept while recording is on"]


def test_once_recording_is_off_a_turn_stored_or_deleted_before_answers_logging_disabled(
    t, pool, org
):
    """GIVEN turns appended while recording was on, one of them deleted since
    WHEN recording is switched off and the same turns are appended again
    THEN each answers stored=false, reason="logging_disabled" (not duplicate or deleted: the
    owner's choice answers first), and the rows stay as they were.
    """
    t.set_logging(NS, True)
    assert t.append("th-1", "kept", msg_id="m-1")["stored"] is True
    assert t.append("th-2", "deleted later", msg_id="m-2")["stored"] is True
    t.ok("conversation.delete", agent="", thread_id="th-2", confirm_thread_id="th-2", as_="admin")
    before = turn_rows(pool, org)

    t.set_logging(NS, False)
    kept = t.append("th-1", "kept", msg_id="m-1")
    deleted = t.append("th-2", "deleted later", msg_id="m-2")

    assert (kept["stored"], kept["reason"]) == (False, "logging_disabled")
    assert (deleted["stored"], deleted["reason"]) == (False, "logging_disabled")
    assert turn_rows(pool, org) == before


def test_logging_is_per_namespace(t, pool, org):
    """GIVEN recording on in one namespace of the org only
    WHEN the same turn is appended in that namespace and in a sibling namespace
    THEN only the namespace that records keeps it.
    """
    t.set_logging(NS, True)
    assert t.append("th-1", "same words")["stored"] is True
    assert t.append("th-1", "same words", namespace="ns-other")["reason"] == "logging_disabled"
    assert {r["namespace"] for r in turn_rows(pool, org)} == {NS}


# ---- idempotency ---------------------------------------------------------------------------


@pytest.fixture
def rec(t):
    t.set_logging(NS, True)
    return t


def test_same_thread_and_msg_id_twice_is_a_duplicate(rec, pool, org):
    """GIVEN a turn appended with msg_id "m-1"
    WHEN a turn with the same (thread, msg_id) is appended again, even with other text
    THEN the second answers stored=true, reason="duplicate", and the thread holds one row:
    the first text.
    """
    first = rec.append("th-1", "the original text", msg_id="m-1")
    again = rec.append("th-1", "a retry with other text", msg_id="m-1")

    assert (first["msg_id"], first["stored"], first["reason"]) == ("m-1", True, "")
    assert (again["msg_id"], again["stored"], again["reason"]) == ("m-1", True, "duplicate")
    rows = turn_rows(pool, org)
    assert [(r["msg_id"], r["content"]) for r in rows] == [("m-1", "the original text")]


def test_same_msg_id_in_another_thread_is_another_turn(rec, pool, org):
    """GIVEN a turn with msg_id "m-1" in thread A
    WHEN a turn with msg_id "m-1" is appended to thread B
    THEN it is written (reason ""), one row in each thread.
    """
    rec.append("th-a", "in thread a", msg_id="m-1")
    out = rec.append("th-b", "in thread b", msg_id="m-1")
    assert (out["stored"], out["reason"]) == (True, "")
    assert sorted(r["thread_id"] for r in turn_rows(pool, org)) == ["th-a", "th-b"]


def test_re_logging_a_turn_without_msg_id_is_a_duplicate(rec, pool, org):
    """GIVEN a turn appended without a msg_id (the server derives one)
    WHEN a client re-logs the same turn (same thread, role and content), again without msg_id
    THEN the second answers duplicate with the same derived msg_id; the transcript is not doubled.
    """
    first = rec.append("th-1", "Could you book the 9:40 train?", role="user")
    again = rec.append("th-1", "Could you book the 9:40 train?", role="user")

    assert first["msg_id"] and first["reason"] == ""
    assert again["msg_id"] == first["msg_id"]
    assert (again["stored"], again["reason"]) == (True, "duplicate")
    assert len(turn_rows(pool, org)) == 1


def test_same_content_in_another_thread_or_role_is_a_new_turn(rec, pool, org):
    """GIVEN a user turn "ok" appended without msg_id to thread A
    WHEN "ok" is appended as the assistant in thread A, and as the user in thread B
    THEN both are new turns with their own derived ids: three rows in all.
    """
    base = rec.append("th-a", "ok", role="user")
    other_role = rec.append("th-a", "ok", role="assistant")
    other_thread = rec.append("th-b", "ok", role="user")

    for out in (other_role, other_thread):
        assert (out["stored"], out["reason"]) == (True, "")
    assert len({base["msg_id"], other_role["msg_id"], other_thread["msg_id"]}) == 3
    rows = turn_rows(pool, org)
    assert sorted((r["thread_id"], r["role"]) for r in rows) == [
        ("th-a", "assistant"),
        ("th-a", "user"),
        ("th-b", "user"),
    ]


def test_get_logging_reads_the_switch_as_it_stands(t, api, deps, org):
    """GIVEN a namespace nobody configured, then one an admin switched on and off again
    WHEN a viewer reads conversation.get_logging
    THEN it answers false (fail closed), true once switched on, false once off; another org's
    switch for the same namespace name never shows.
    """
    read = {"namespace": NS, "as_": "viewer"}
    first = t.ok("conversation.get_logging", **read)
    assert (first["namespace"], first["enabled"]) == (NS, False)
    t.ok("conversation.set_logging", namespace=NS, enabled=True, as_="admin")
    assert t.ok("conversation.get_logging", **read)["enabled"] is True
    other = Tenant.open(api, deps, f"{org}-other", logging_on=())
    assert other.ok("conversation.get_logging", **read)["enabled"] is False
    t.ok("conversation.set_logging", namespace=NS, enabled=False, as_="admin")
    assert t.ok("conversation.get_logging", **read)["enabled"] is False
