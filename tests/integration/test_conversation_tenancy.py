"""Tokens never cross orgs or namespaces, roles gate writes, bounded read scopes are refused."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.legacy_tokens import legacy_token
from tests.integration.test_conversation_support import NS, Tenant, snapshot, turn_rows


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


# A valid body for every conversation op (namespace and org are added by the caller).
BODIES = {
    "conversation.set_logging": {"enabled": True},
    "conversation.append": {"agent": "a1", "thread_id": "th-1", "role": "user", "content": "hi"},
    "conversation.create": {"agent": "a1", "thread_id": "th-1", "title": "T"},
    "conversation.get": {"agent": "", "thread_id": "th-1", "include_messages": True},
    "conversation.list": {"agent": "", "thread_id": "th-1"},
    "conversation.threads": {},
    "conversation.update": {"agent": "a1", "thread_id": "th-1", "title": "T2"},
    "conversation.search": {"agent": "*", "query": "hello"},
    "conversation.delete": {"agent": "", "thread_id": "th-1", "confirm_thread_id": "th-1"},
}
MIN_ROLE = {
    "conversation.set_logging": "admin",
    "conversation.append": "writer",
    "conversation.create": "writer",
    "conversation.get": "viewer",
    "conversation.list": "viewer",
    "conversation.threads": "viewer",
    "conversation.update": "writer",
    "conversation.search": "viewer",
    "conversation.delete": "admin",
}
ROLES = ("viewer", "writer", "admin", "org_admin")


@pytest.fixture
def seeded(t):
    """A thread with a thread row and two turns, so every op has something to act on."""
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="Original")
    t.append("th-1", "hello there")
    t.append("th-1", "hello back", role="assistant")
    return t


@pytest.mark.parametrize("op", list(BODIES))
def test_a_token_naming_another_org_is_refused(seeded, pool, org, op):
    """GIVEN an org_admin token of one org
    WHEN it calls a conversation op with org set to another org
    THEN the call answers 403 and nothing stored changes in either org.
    """
    other = f"org-{uuid.uuid4().hex[:10]}"
    before = snapshot(pool, org)
    status, body = seeded.post(op, org=other, **BODIES[op])
    assert status == 403, body
    assert body["error"]["code"] == "forbidden"
    assert snapshot(pool, org) == before
    assert all(rows == [] for rows in snapshot(pool, other).values())


@pytest.mark.parametrize("op", list(BODIES))
def test_a_namespace_bound_token_cannot_name_another_namespace(seeded, pool, org, op):
    """GIVEN an org_admin token bound to namespace "ns-bound"
    WHEN it calls a conversation op naming NS
    THEN the call answers 403 and nothing stored changes.
    """
    bound = seeded.token("org_admin", namespace="ns-bound")
    before = snapshot(pool, org)
    status, body = seeded.post(op, token=bound, namespace=NS, **BODIES[op])
    assert status == 403, body
    assert snapshot(pool, org) == before


def test_a_namespace_bound_token_fills_in_its_own_namespace(seeded, pool, org):
    """GIVEN tokens bound to namespace "ns-bound" (admin and writer)
    WHEN they turn logging on and append without naming a namespace
    THEN the turn lands in ns-bound, and reads through the bound token see only that namespace.
    """
    admin = seeded.token("admin", namespace="ns-bound")
    writer = seeded.token("writer", namespace="ns-bound")
    out = seeded.ok("conversation.set_logging", token=admin, namespace=None, enabled=True)
    assert out["namespace"] == "ns-bound"
    seeded.ok(
        "conversation.append",
        token=writer,
        namespace=None,
        agent="a1",
        thread_id="th-1",
        role="user",
        content="hello from the bound namespace",
    )

    rows = turn_rows(pool, org, "th-1")
    assert sorted(r["namespace"] for r in rows) == ["ns-bound", NS, NS]
    got = seeded.ok("conversation.list", token=writer, namespace=None, agent="", thread_id="th-1")
    assert [r["content"] for r in got["rows"]] == ["hello from the bound namespace"]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("op", list(BODIES))
def test_each_op_needs_its_role(seeded, pool, org, op, role):
    """GIVEN org-wide tokens of every role
    WHEN each calls each conversation op
    THEN a role below the op's (viewer reads, writer appends/creates/updates, admin sets
    logging and deletes) gets 403 and changes nothing; the others are served.
    """
    before = snapshot(pool, org)
    status, body = seeded.post(op, as_=role, **BODIES[op])
    if ROLES.index(role) < ROLES.index(MIN_ROLE[op]):
        assert status == 403, body
        assert snapshot(pool, org) == before
    else:
        assert status == 200, body


def test_a_viewer_cannot_append(seeded, pool, org):
    """GIVEN a viewer token of an org whose namespace records
    WHEN it appends a turn
    THEN the append answers 403 and no turn is stored.
    """
    before = turn_rows(pool, org)
    status, body = seeded.post(
        "conversation.append",
        as_="viewer",
        agent="a1",
        thread_id="th-2",
        role="user",
        content="let me in",
    )
    assert status == 403, body
    assert turn_rows(pool, org) == before


@pytest.mark.parametrize("scope", ["own_user", "own_session"])
@pytest.mark.parametrize("op", list(BODIES))
def test_bounded_read_scope_tokens_are_refused_on_every_conversation_op(
    seeded, pool, org, op, scope
):
    """GIVEN an org_admin token bounded to one user (own_user), or to own_session (minted by an
    earlier build; none is minted now)
    WHEN it calls any conversation op, even naming its own user
    THEN the call answers 403 (401 for own_session, which no longer answers) and nothing
    stored changes.
    """
    if scope == "own_user":
        token = seeded.token("org_admin", read_scope="own_user", read_user_id="u-1")
        refused = (403, "forbidden")
    else:
        token = legacy_token(pool, org=org, role="org_admin", read_scope="own_session")
        refused = (401, "unauthorized")
    before = snapshot(pool, org)
    extra = {"user_id": "u-1"} if op in ("conversation.append", "conversation.search") else {}
    status, body = seeded.post(op, token=token, **BODIES[op], **extra)
    assert (status, body["error"]["code"]) == refused, body
    assert snapshot(pool, org) == before


def test_rows_of_one_org_are_invisible_to_another_using_the_same_ids(api, deps, seeded):
    """GIVEN org X with a titled thread "th-1" in NS, and org Y using the same namespace and
    thread id with its own turn
    WHEN Y reads get, list, threads and search, by vector and by substring
    THEN Y sees only its own turn and title, and X's reads see only X's.
    """
    y = Tenant.open(api, deps, f"org-{uuid.uuid4().hex[:10]}")
    mine = y.append("th-1", "hello from org y")["msg_id"]

    got = y.ok("conversation.get", agent="", thread_id="th-1", include_messages=True)
    assert (got["title"], got["msg_count"], got["created_at"]) == ("", 1, None)
    assert [m["msg_id"] for m in got["messages"]] == [mine]
    assert [r["msg_id"] for r in y.ok("conversation.list", agent="", thread_id="th-1")["rows"]] == [
        mine
    ]
    (row,) = y.ok("conversation.threads")["threads"]
    assert (row["thread_id"], row["msg_count"], row["title"]) == ("th-1", 1, "")
    assert y.hit_ids("hello there back from org y") == [mine]
    assert y.hit_ids("hello there back from org y", namespace_scope="this") == [mine]
    y.deps.embedder.failing = True
    assert y.hit_ids("hello") == [mine]
    y.deps.embedder.failing = False

    x_got = seeded.ok("conversation.get", agent="", thread_id="th-1", include_messages=True)
    assert x_got["title"] == "Original" and x_got["msg_count"] == 2
    assert mine not in [m["msg_id"] for m in x_got["messages"]]
    assert mine not in seeded.hit_ids("hello from org y")
