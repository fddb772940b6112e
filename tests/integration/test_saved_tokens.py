"""Tokens on the saved-message ops: a user-pinned token acts as its user only, "@me" names that
user's personal namespace, session-bounded tokens are refused, and every other conversation op
stays refused under a user-pinned token."""

from __future__ import annotations

import pytest

from tests.integration.legacy_tokens import legacy_token
from tests.integration.test_conversation_support import snapshot
from tests.integration.test_saved_support import NS, open_tenant, save, transcript

SAVED_OPS = {
    "conversation.save_message": {
        "agent": "a1",
        "conversation_id": "c1",
        "message_id": "m1",
        "role": "user",
        "content": "the harbour ferry leaves at noon",
    },
    "conversation.list_saved_messages": {"agent": "*"},
    "conversation.saved_status": {"agent": "*", "conversation_id": "c1", "message_ids": ["m1"]},
    "conversation.search_saved_messages": {"agent": "*", "query": "harbour ferry"},
    "conversation.unsave_message": {"agent": "a1", "conversation_id": "c1", "message_id": "m1"},
}
OTHER_OPS = {
    "conversation.append": {"agent": "a1", "thread_id": "c1", "role": "user", "content": "hi"},
    "conversation.get": {"agent": "", "thread_id": "c1", "include_messages": True},
    "conversation.list": {"agent": "", "thread_id": "c1"},
    "conversation.search": {"agent": "*", "query": "harbour"},
    "conversation.threads": {},
    "conversation.create": {"agent": "a1", "thread_id": "c9", "title": "T"},
    "conversation.update": {"agent": "a1", "thread_id": "c1", "title": "T2"},
    "conversation.delete": {"agent": "", "thread_id": "c1", "confirm_thread_id": "c1"},
    "conversation.compact": {"agent": "a1", "thread_id": "c1"},
    "conversation.set_logging": {"enabled": False},
}


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


def pinned(t, user="u1", role="writer"):
    return t.token(role, read_scope="own_user", read_user_id=user)


def test_a_pinned_token_works_on_all_five_ops_for_its_user(t, pool, org):
    """GIVEN a writer token pinned to u1 (own_user, read_user_id u1)
    WHEN it saves, lists, checks, searches and unsaves without naming user_id
    THEN every op answers for u1: the row is stored as u1's, listed, reported, found, and
    then withdrawn.
    """
    tok = pinned(t)
    saved = t.ok("conversation.save_message", token=tok, **SAVED_OPS["conversation.save_message"])
    assert (saved["indexed"], saved["reason"]) == (True, "")
    assert transcript(pool, org, "m1")[0]["user_id"] == "u1"

    listed = t.ok("conversation.list_saved_messages", token=tok, agent="*")
    assert [r["message_id"] for r in listed["rows"]] == ["m1"]
    status = t.ok("conversation.saved_status", token=tok, **SAVED_OPS["conversation.saved_status"])
    assert status["saved"] == ["m1"]
    hits = t.ok("conversation.search_saved_messages", token=tok, agent="*", query="harbour ferry")
    assert [h["message_id"] for h in hits["hits"]] == ["m1"]
    gone = t.ok(
        "conversation.unsave_message", token=tok, **SAVED_OPS["conversation.unsave_message"]
    )
    assert gone["found"] is True
    assert t.ok("conversation.list_saved_messages", token=tok, agent="*")["rows"] == []


def test_a_pinned_token_also_accepts_its_own_user_id(t):
    """GIVEN a token pinned to u1
    WHEN it saves naming user_id u1 explicitly
    THEN the save is served.
    """
    out = t.ok(
        "conversation.save_message",
        token=pinned(t),
        user_id="u1",
        **SAVED_OPS["conversation.save_message"],
    )
    assert out["indexed"]


@pytest.mark.parametrize("op", list(SAVED_OPS))
def test_a_pinned_token_naming_another_user_is_refused(t, pool, org, op):
    """GIVEN a token pinned to u1, and u2's saved message m1
    WHEN it calls a saved-message op with user_id u2
    THEN the call answers 403 and nothing stored changes.
    """
    save(t, "c1", "m1", "the harbour ferry leaves at noon", user="u2")
    before = snapshot(pool, org)
    status, body = t.post(op, token=pinned(t), user_id="u2", **SAVED_OPS[op])
    assert status == 403, body
    assert body["error"]["code"] == "forbidden"
    assert snapshot(pool, org) == before


def test_at_me_resolves_to_the_users_personal_namespace(t, pool, org):
    """GIVEN end-user tokens pinned to u1 and to u2
    WHEN u1 saves with namespace "@me", and each lists and searches "@me"
    THEN the row lives in "@me:u1"; u1 sees it, u2 sees nothing of it, and naming "@me:u1"
    is refused to u2 (403).
    """
    u1, u2 = pinned(t, "u1"), pinned(t, "u2")
    body = {**SAVED_OPS["conversation.save_message"], "namespace": "@me"}
    assert t.ok("conversation.save_message", token=u1, **body)["indexed"]
    (row,) = transcript(pool, org, "m1")
    assert (row["namespace"], row["user_id"]) == ("@me:u1", "u1")

    def seen(tok, namespace):
        listed = t.ok(
            "conversation.list_saved_messages", token=tok, agent="*", namespace=namespace
        )["rows"]
        hits = t.ok(
            "conversation.search_saved_messages",
            token=tok,
            agent="*",
            query="harbour ferry",
            namespace=namespace,
        )["hits"]
        return [r["message_id"] for r in listed], [h["message_id"] for h in hits]

    assert seen(u1, "@me") == (["m1"], ["m1"])
    assert seen(u2, "@me") == ([], [])
    for op in ("conversation.list_saved_messages", "conversation.search_saved_messages"):
        status, _ = t.post(op, token=u2, agent="*", query="harbour", namespace="@me:u1")
        assert status == 403, op
    status = t.ok(
        "conversation.saved_status",
        token=u2,
        agent="*",
        namespace="@me",
        conversation_id="c1",
        message_ids=["m1"],
    )
    assert status["saved"] == []


@pytest.mark.parametrize("op", list(SAVED_OPS))
def test_an_own_session_token_is_refused(t, pool, org, op):
    """GIVEN an org_admin token bounded to own_session (minted by an earlier build; none is
    minted now)
    WHEN it calls a saved-message op (naming a user)
    THEN the call answers 401 and nothing stored changes.
    """
    tok = legacy_token(pool, org=org, role="org_admin", read_scope="own_session")
    before = snapshot(pool, org)
    status, body = t.post(op, token=tok, user_id="u1", **SAVED_OPS[op])
    assert status == 401, body
    assert snapshot(pool, org) == before


@pytest.mark.parametrize("op", list(OTHER_OPS))
def test_a_pinned_token_is_refused_on_every_other_conversation_op(t, pool, org, op):
    """GIVEN a recorded thread and an org_admin token pinned to u1
    WHEN it calls append, get, list, search, threads or any other transcript op
    THEN the call answers 403 and nothing stored changes.
    """
    t.append("c1", "the harbour ferry leaves at noon", user_id="u1")
    tok = pinned(t, role="org_admin")
    before = snapshot(pool, org)
    status, body = t.post(op, token=tok, namespace=NS, **OTHER_OPS[op])
    assert status == 403, (op, body)
    assert snapshot(pool, org) == before


@pytest.mark.parametrize("op", sorted(SAVED_OPS))
@pytest.mark.parametrize("user", ["-", "*"])
def test_an_unpinned_user_bounded_token_reaches_no_shared_row(t, pool, org, op, user):
    """GIVEN a message saved under no user ("-") and a writer token bounded to one user with
    none pinned (minted by an earlier build; none is minted now)
    WHEN a saved-message op names user_id "-" (the shared rows) or "*" (every user)
    THEN it answers 401 saying to mint one pinned to a user, and nothing stored changes."""
    save(t, "c1", "m1", "the harbour ferry leaves at noon", user="-")
    tok = legacy_token(pool, org=org, read_scope="own_user")
    before = snapshot(pool, org)
    status, body = t.post(op, token=tok, user_id=user, **SAVED_OPS[op])
    assert status == 401 and "--read-user-id" in body["error"]["message"], body
    assert snapshot(pool, org) == before


def test_a_pinned_token_cannot_read_a_shared_turn_by_saving_it(t, pool, org):
    """GIVEN a turn stored with no user (user_id "-") and a writer token pinned to u1, which
    transcript reads refuse
    WHEN the pinned token saves that turn, then lists and searches its saved messages
    THEN the save answers owner_mismatch and shows none of the text; the row stays shared and
    unsaved, and u1's saved messages hold nothing of it. An unpinned writer saving it for u1
    still claims it, as before.
    """
    t.append("c1", "the vault combination is kept in the blue ledger", msg_id="m1")
    tok = pinned(t)
    assert t.post("conversation.get", token=tok, agent="", thread_id="c1")[0] == 403

    out = save(t, "c1", "m1", "anything", token=tok)

    assert (out["indexed"], out["reason"]) == (False, "owner_mismatch")
    assert "ledger" not in str(out)
    (row,) = transcript(pool, org, "m1")
    assert (row["user_id"], row["is_saved"]) == ("-", False)
    listed = t.ok("conversation.list_saved_messages", token=tok, agent="*")
    assert listed["rows"] == []
    hits = t.ok("conversation.search_saved_messages", token=tok, agent="*", query="blue ledger")
    assert hits["hits"] == []
    claimed = save(t, "c1", "m1", user="u1")
    assert (claimed["indexed"], claimed["reason"]) == (True, "")


def test_a_pinned_token_still_saves_a_new_message_and_its_own_rows(t, pool, org):
    """GIVEN a token pinned to u1, a turn stored as u1's and a message not yet stored
    WHEN the token saves both
    THEN both are saved for u1: the rule refuses shared rows only.
    """
    t.append("c1", "u1 asked for the ferry timetable", msg_id="m1", user_id="u1")
    tok = pinned(t)

    own = save(t, "c1", "m1", "ignored", token=tok)
    new = save(t, "c2", "m9", "a fresh note about the harbour", token=tok)

    assert (own["reason"], new["reason"]) == ("", "")
    assert {
        r["message_id"]
        for r in t.ok("conversation.list_saved_messages", token=tok, agent="*")["rows"]
    } == {"m1", "m9"}
