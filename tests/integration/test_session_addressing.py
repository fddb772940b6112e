"""Session briefs, addressing: automatic keys, the key pattern, and bounded tokens' prefixes."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.auth import Caller
from chalicelib.errors import BadRequestError
from chalicelib.registry import call
from tests.integration.legacy_tokens import legacy_token
from tests.integration.test_session_support import NS, Briefs, brief_rows


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def stored_keys(pool, org) -> list[str]:
    return [r["brief_key"] for r in brief_rows(pool, org)]


def save_in_session(b: Briefs, brief_key: str, user_id: str, session_id: str, **body: Any):
    """A brief as an own_session token of an earlier build saved it (~<user>~<session>~<key>);
    such tokens now answer 401, but their briefs remain."""
    caller = Caller(org=b.org, role="writer", read_scope="own_session", principal="token:old")
    body = {"namespace": NS, "agent": "a1", "brief_key": brief_key, **body}
    return call(
        "session.brief_save", {**body, "user_id": user_id, "session_id": session_id}, caller, b.deps
    ).body


def test_an_empty_key_with_project_and_branch_becomes_auto_project_branch(b, pool):
    """GIVEN two saves from different sessions on project loom, branch feature/x, with no key
    WHEN each is saved
    THEN both revise the one brief auto/loom/feature/x (revision 1 then 2), found by that key.
    """
    first = b.save(project="loom", branch="feature/x", session_id="s1", sections={"goal": "G1"})
    second = b.save(project="loom", branch="feature/x", session_id="s2", sections={"goal": "G2"})

    assert first["brief_key"] == second["brief_key"] == "auto/loom/feature/x"
    assert (first["revision"], second["revision"]) == (1, 2)
    assert stored_keys(pool, b.org) == ["auto/loom/feature/x"]
    assert "Goal: G2" in b.get(brief_key="auto/loom/feature/x")["rendered"]


def test_an_empty_key_without_project_or_branch_becomes_session_id(b, pool):
    """GIVEN a save with no key, no project and no branch, from session s-42
    WHEN it is saved
    THEN the brief's key is session/s-42.
    """
    out = b.save(session_id="s-42", sections={"goal": "G"})

    assert out["brief_key"] == "session/s-42"
    assert stored_keys(pool, b.org) == ["session/s-42"]


@pytest.mark.parametrize(
    "key",
    [
        "-leading-dash",
        "has space",
        "semi;colon",
        "k" * 161,
        "tab\there",
        "é-accent",
        "/root",
        "plan\n",
        "~u1~plan\n",
    ],
)
def test_a_key_outside_the_pattern_is_refused_with_400(b, pool, key):
    """GIVEN a brief_key that does not match ^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,159}$
    WHEN it is saved, read or deleted
    THEN each answers 400 and nothing is stored.
    """
    for op in ("session.brief_save", "session.brief_get", "session.brief_delete"):
        status, data = b.post(op, brief_key=key, sections={"goal": "G"})
        assert status == 400, (op, status, data)
    assert stored_keys(pool, b.org) == []


def test_keys_inside_the_pattern_are_accepted(b):
    """GIVEN keys using every allowed punctuation mark, and one of exactly 160 characters
    WHEN they are saved
    THEN each is stored and read back under that key.
    """
    for key in ("a_b.c:d/e@f+g-h", "Z" + "9" * 159):
        assert b.save(brief_key=key, sections={"goal": "G"})["brief_key"] == key
        assert b.get(brief_key=key)["found"] is True


def test_an_own_user_token_stores_a_user_prefix_and_sees_the_bare_key(b, pool):
    """GIVEN a writer token bounded to user u1
    WHEN it saves brief 'notes', then gets and lists
    THEN the row is stored as ~u1~notes, and save, get and list all show it as 'notes'.
    """
    tok = b.token("writer", read_scope="own_user", read_user_id="u1")

    saved = b.save(token=tok, brief_key="notes", sections={"goal": "user goal"})
    got = b.get(token=tok, brief_key="notes")
    listed = b.list(token=tok)

    assert stored_keys(pool, b.org) == ["~u1~notes"]
    assert saved["brief_key"] == "notes"
    assert got["found"] is True and got["brief_key"] == "notes"
    assert [x["brief_key"] for x in listed["briefs"]] == ["notes"]
    assert listed["rendered"].startswith("notes ·")


def test_an_own_session_token_saves_no_brief(b, pool):
    """GIVEN a writer token bounded to one session: not minted (it would store no session, so
    each call would name its own), and one an earlier build minted
    WHEN the earlier one saves, gets and lists brief 'notes' as user u1 in session s1
    THEN each answers 401 and nothing is stored.
    """
    with pytest.raises(BadRequestError, match="own_session is not minted"):
        b.token("writer", read_scope="own_session")
    tok = legacy_token(pool, org=b.org, read_scope="own_session")
    ident = {"user_id": "u1", "session_id": "s1"}

    for op in ("session.brief_save", "session.brief_get", "session.brief_list"):
        status, data = b.post(op, token=tok, brief_key="notes", sections={"goal": "G"}, **ident)
        assert status == 401, (op, data)

    assert stored_keys(pool, b.org) == []


def test_a_namespace_wide_token_lists_the_prefixed_key_and_addresses_it(b, pool):
    """GIVEN a brief saved by a token bounded to user u1 under key 'notes'
    WHEN a namespace-wide token lists, gets and deletes it
    THEN it lists ~u1~notes, gets it by that key, and deleting it by that key removes it.
    """
    tok = b.token("writer", read_scope="own_user", read_user_id="u1")
    b.save(token=tok, brief_key="notes", sections={"goal": "private goal"})

    assert [x["brief_key"] for x in b.list()["briefs"]] == ["~u1~notes"]
    got = b.get(brief_key="~u1~notes")
    assert got["found"] is True and got["brief_key"] == "~u1~notes"
    assert "private goal" in got["rendered"]

    gone = b.delete(brief_key="~u1~notes")
    assert gone == {**gone, "deleted": True, "brief_key": "~u1~notes", "revision": 1}
    assert b.get(token=tok, brief_key="notes")["found"] is False
    assert b.list()["briefs"] == []


def test_a_user_token_does_not_see_its_sessions_briefs_under_a_key_it_cannot_send(b, pool):
    """GIVEN brief 'notes' saved by a token bounded to user u1's session s1 (an earlier build's
    own_session token), and brief 'plan' by a token bounded to user u1
    WHEN the user token lists, and gets the newest brief with no key
    THEN it sees 'plan' only: never the session's brief as 's1~notes', a key it cannot send."""
    save_in_session(b, "notes", "u1", "s1", sections={"goal": "N"})
    user = b.token("writer", read_scope="own_user", read_user_id="u1")
    b.save(token=user, brief_key="plan", sections={"goal": "P"})
    save_in_session(b, "notes", "u1", "s1", sections={"goal": "N2"})  # now the newest
    assert stored_keys(pool, b.org) == ["~u1~plan", "~u1~s1~notes"]
    assert [x["brief_key"] for x in b.list(token=user)["briefs"]] == ["plan"]
    assert b.get(token=user)["brief_key"] == "plan"


def test_a_user_token_deletes_its_own_brief_not_the_namespaces_of_the_same_name(b, pool):
    """GIVEN a namespace-wide brief 'notes' and user u1's own brief 'notes'
    WHEN a token bounded to u1 deletes 'notes'
    THEN u1's brief is deleted and the namespace-wide one stays live."""
    b.save(brief_key="notes", sections={"goal": "everyone's"})
    user = b.token("writer", read_scope="own_user", read_user_id="u1")
    b.save(token=user, brief_key="notes", sections={"goal": "mine"})
    assert b.delete(token=user, brief_key="notes")["deleted"] is True
    live = {r["brief_key"]: r["deleted_at"] is None for r in brief_rows(pool, b.org)}
    assert live == {"notes": True, "~u1~notes": False}


@pytest.mark.parametrize("scope", ["own_user", "own_session"])
def test_a_bounded_token_cannot_send_a_tilde_key(b, pool, scope):
    """GIVEN a token bounded to one user (or to one session, as an earlier build minted)
    WHEN it saves, gets or deletes a key holding '~' (another user's brief among them)
    THEN each answers 400 (401 for the session-bounded one, which no longer answers) and
    nothing is stored.
    """
    if scope == "own_user":
        tok, refused = b.token("writer", read_scope=scope, read_user_id="u1"), 400
    else:
        tok, refused = legacy_token(pool, org=b.org, read_scope=scope), 401
    ident = {"user_id": "u1", "session_id": "s1"}
    for key in ("~u2~notes", "a~b"):
        for op in ("session.brief_save", "session.brief_get", "session.brief_delete"):
            status, data = b.post(op, token=tok, brief_key=key, sections={"goal": "G"}, **ident)
            assert status == refused, (op, key, status, data)
    assert stored_keys(pool, b.org) == []


def test_two_users_briefs_under_the_same_key_never_see_each_other(b, pool):
    """GIVEN users u1 and u2, each with a user-bounded token, saving brief 'plan'
    WHEN each gets and lists
    THEN each sees only their own brief's text; the rows are ~u1~plan and ~u2~plan.
    """
    t1 = b.token("writer", read_scope="own_user", read_user_id="u1")
    t2 = b.token("writer", read_scope="own_user", read_user_id="u2")
    b.save(token=t1, brief_key="plan", sections={"goal": "alpha secret of u1"})
    b.save(token=t2, brief_key="plan", sections={"goal": "bravo secret of u2"})

    got1, got2 = b.get(token=t1, brief_key="plan"), b.get(token=t2, brief_key="plan")
    list1, list2 = b.list(token=t1), b.list(token=t2)

    assert stored_keys(pool, b.org) == ["~u1~plan", "~u2~plan"]
    assert "alpha secret of u1" in got1["rendered"] and "u2" not in got1["rendered"]
    assert "bravo secret of u2" in got2["rendered"] and "u1" not in got2["rendered"]
    assert [x["goal"] for x in list1["briefs"]] == ["alpha secret of u1"]
    assert [x["goal"] for x in list2["briefs"]] == ["bravo secret of u2"]
    assert "bravo" not in list1["rendered"] and "alpha" not in list2["rendered"]
    # the newest brief of the namespace, for each, is still their own
    assert "alpha" in b.get(token=t1)["rendered"]
    # a user-bounded token asking for another user's id is refused
    status, _ = b.post("session.brief_get", token=t1, user_id="u2", brief_key="plan")
    assert status == 403


def test_a_namespace_wide_writer_saving_a_users_brief_is_the_actor(b):
    """GIVEN a brief user u1 saved under 'notes'
    WHEN a namespace-wide writer revises ~u1~notes
    THEN u1 reads the revision, and its actor names the namespace-wide writer's subject.
    """
    tok = b.token("writer", read_scope="own_user", read_user_id="u1", subject="u1-laptop")
    b.save(token=tok, brief_key="notes", sections={"goal": "G"})
    assert b.get(token=tok, brief_key="notes")["actor"].endswith(":u1-laptop")

    b.save(brief_key="~u1~notes", sections={"status": "revised by the team bot"})

    got = b.get(token=tok, brief_key="notes")
    assert got["revision"] == 2 and "revised by the team bot" in got["rendered"]
    assert got["actor"] in ("human:writer-bot", "process:writer-bot")


def test_a_user_bounded_token_never_sees_its_prefix_in_the_rendered_brief(b):
    """GIVEN a token bounded to user u1 saving brief 'notes'
    WHEN it reads the save's and get's rendered text
    THEN the text names the brief as 'notes', never as ~u1~notes.
    """
    tok = b.token("writer", read_scope="own_user", read_user_id="u1")

    saved = b.save(token=tok, brief_key="notes", sections={"goal": "G"})
    got = b.get(token=tok, brief_key="notes")

    for text in (saved["rendered"], got["rendered"]):
        assert "notes" in text
        assert "~u1~" not in text
