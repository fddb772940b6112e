"""Tenant isolation, randomized: many orgs, namespaces, users and tokens; random writes, reads
and reaches into other tenants; after every step, no answer holds another tenant's (or, under
a token bounded to one user, another user's) marker."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

import pytest

from chalicelib.auth import hash_token, mint_token
from chalicelib.registry import registered
from chalicelib.store.tokens import insert_token

SEED = 14
STEPS = 220


@dataclass
class Tenant:
    org: str
    namespace: str
    marker: str
    writer: str = ""
    admin: str = ""
    users: dict[str, tuple[str, str]] = field(default_factory=dict)  # user -> (token, marker)


def _world(deps, run: str) -> list[Tenant]:
    """3 orgs x 2 namespaces; 2 users each with a token bounded to themselves."""
    tenants = []
    for o in range(3):
        for n in range(2):
            i = len(tenants)
            t = Tenant(org=f"iso-{run}-{o}", namespace=f"ns{n}", marker=f"TENANT{i:02d}X")
            t.writer = mint_token(deps, org=t.org, role="writer", namespace=t.namespace)
            t.admin = mint_token(deps, org=t.org, role="admin", namespace=t.namespace)
            for u in range(2):
                user = f"user{u}"
                token = mint_token(
                    deps,
                    org=t.org,
                    role="writer",
                    namespace=t.namespace,
                    read_scope="own_user",
                    read_user_id=user,
                )
                t.users[user] = (token, f"USER{i:02d}{u}Y")
            tenants.append(t)
    return tenants


def test_random_operations_never_show_one_tenant_another_tenants_data(api, deps):
    """GIVEN 6 tenants (3 orgs x 2 namespaces), each with namespace tokens and two user-bounded
    tokens WHEN 220 random steps write, read and search, and some name another tenant's org or
    namespace THEN every answer holds only its own tenant's markers (and, for a user-bounded
    token, only its own user's), and every reach into another tenant is refused with 403."""
    rng = random.Random(SEED)
    tenants = _world(deps, f"{rng.randrange(10**6):06d}")
    for t in tenants:
        api.ok("conversation.set_logging", token=t.admin, enabled=True)
    all_tenant_markers = {t.marker for t in tenants}
    all_user_markers = {m for t in tenants for _, m in t.users.values()}
    written = 0

    def check(answer: dict, t: Tenant, user: str | None, what: str) -> None:
        text = json.dumps(answer)
        foreign = {m for m in all_tenant_markers - {t.marker} if m in text}
        foreign |= {
            m
            for m in all_user_markers
            if m in text and (m not in {um for _, um in t.users.values()} or user is not None)
        }
        if user is not None:
            foreign.discard(t.users[user][1])
        assert not foreign, (what, t.org, t.namespace, user, foreign)

    for step in range(STEPS):
        t = rng.choice(tenants)
        user = rng.choice(sorted(t.users))
        utoken, umarker = t.users[user]
        word = rng.choice(["ledger", "invoice", "export", "billing"])
        kind = rng.randrange(12)
        if kind == 0:
            body = dict(
                agent="a", thread_id=f"t{rng.randrange(3)}", msg_id=f"m{step}",
                role="user", content=f"{t.marker} {umarker} {word} step {step}", user_id=user,
            )  # fmt: skip
            check(api.ok("conversation.append", token=t.writer, **body), t, None, "append")
            written += 1
        elif kind == 1:
            out = api.ok("conversation.search", token=t.writer, agent="*", query=f"{word} step")
            check(out, t, None, "search")
        elif kind == 2:
            out = api.ok("conversation.threads", token=t.writer, agent="*")
            check(out, t, None, "threads")
        elif kind == 3:
            out = api.ok("conversation.list", token=t.writer, agent="a", thread_id="t0")
            check(out, t, None, "list")
        elif kind == 4:
            body = dict(
                agent="a", conversation_id="c1", message_id=f"s{step}", role="user",
                content=f"{t.marker} {umarker} saved {word}",
            )  # fmt: skip
            check(api.ok("conversation.save_message", token=utoken, **body), t, user, "save")
            written += 1
        elif kind == 5:
            out = api.ok("conversation.search_saved_messages", token=utoken, agent="*", query=word)
            check(out, t, user, "search_saved")
            out = api.ok("conversation.list_saved_messages", token=utoken, agent="*")
            check(out, t, user, "list_saved")
        elif kind == 6:
            body = dict(agent="a", key=f"fact-{word}", value=f"{t.marker} {umarker} {word}")
            check(api.ok("memory.set", token=utoken, **body), t, user, "memory.set")
            written += 1
        elif kind == 7:
            out = api.ok("memory.search", token=utoken, agent="a", query=word)
            check(out, t, user, "memory.search")
            out = api.ok("memory.get", token=utoken, agent="a", key=f"fact-{word}")
            check(out, t, user, "memory.get")
        elif kind == 8:
            body = dict(
                agent="a", brief_key=f"b-{word}", sections={"goal": f"{t.marker} {umarker}"}
            )
            check(api.ok("session.brief_save", token=utoken, **body), t, user, "brief_save")
            written += 1
        elif kind == 9:
            out = api.ok("session.brief_list", token=utoken, agent="*")
            check(out, t, user, "brief_list")
            out = api.ok("session.brief_get", token=utoken, agent="a", brief_key=f"b-{word}")
            check(out, t, user, "brief_get")
        elif kind == 10:
            out = api.ok("session.brief_list", token=t.writer, agent="*")
            check(out, t, None, "brief_list (namespace)")
        else:
            other = rng.choice([o for o in tenants if o is not t])
            op, body = rng.choice(
                [
                    ("conversation.search", {"agent": "*", "query": word}),
                    ("conversation.list", {"agent": "a", "thread_id": "t0"}),
                    ("memory.search", {"agent": "a", "query": word}),
                    ("session.brief_list", {"agent": "*"}),
                ]
            )
            reach = {"namespace": other.namespace}
            if other.org != t.org or other.namespace == t.namespace:
                reach["org"] = other.org
            status, out = api.post(op, token=t.writer, **reach, **body)
            assert status == 403, (op, reach, status, out)
            assert set(out) == {"error"} and out["error"]["code"] == "forbidden"
            check(out, t, None, "reach")
    assert written > 40  # the walk wrote enough for the reads to have something to leak


@pytest.mark.parametrize("token", [None, "loom_not-a-token"], ids=["missing", "unknown"])
def test_every_op_refuses_a_call_without_a_live_token_in_the_json_error_shape(api, token):
    """GIVEN auth by tokens WHEN any op is called with no token or an unknown one THEN it
    answers 401 with the JSON error shape and nothing else."""
    for name in sorted(registered()):
        status, out, _ = api.raw(name, b'{"org": "x", "namespace": "y"}', token=token)
        assert status == 401, (name, status, out)
        assert set(out) == {"error"} and out["error"]["code"] == "unauthorized", (name, out)


def test_a_token_pinned_to_no_one_user_is_refused(api, deps, pool, org):
    """GIVEN a shared memory row ("-") a namespace-wide writer wrote, and a token minted before
    pins naming no one user were refused, pinned to "-" (the shared rows)
    WHEN that token writes and deletes the shared row's key
    THEN each call answers 401 and the shared row is as the writer left it.
    """
    writer = mint_token(deps, org=org, role="writer", namespace="ns")
    body = {"namespace": "ns", "agent": "a", "key": "team/policy", "value": "Ship on Fridays."}
    assert api.post("memory.set", token=writer, **body)[0] == 200
    pinned = "loom_pinned-to-the-shared-rows"
    with pool.connection() as conn:
        insert_token(
            conn,
            token_hash=hash_token(pinned),
            org=org,
            role="writer",
            namespace="ns",
            read_scope="own_user",
            read_user_id="-",
            subject="old-pin",
        )
    key = {"namespace": "ns", "agent": "a", "key": "team/policy"}
    for op, sent in (("memory.set", {**key, "value": "Never ship."}), ("memory.delete", key)):
        status, out = api.post(op, token=pinned, **sent)[:2]
        assert status == 401 and out["error"]["code"] == "unauthorized", (op, out)
    got = api.post("memory.get", token=writer, namespace="ns", agent="a", key="team/policy")[1]
    assert got["memory"]["value"] == "Ship on Fridays."
