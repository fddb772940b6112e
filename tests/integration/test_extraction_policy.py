"""The operator's extraction policy: who may set it, its scopes and bounds, its place at the end
of the extraction system prompt, and the 503 when the policies could not be read."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from chalicelib.auth import local_caller
from chalicelib.deps import Deps, set_deps
from chalicelib.errors import ConflictError
from chalicelib.registry import call
from tests.conftest import make_settings
from tests.integration.test_memory_support import (
    NS,
    NS2,
    Mem,
    audit_rows,
    evidence_rows,
    fact,
    live_setting,
    memory_rows,
    reply,
    scripted,
    turns,
)

ORG_POLICY = "Never store credentials, payment card data or health data."
NS_POLICY = "Never store the names of the user's children."
HEADER = "OPERATOR EXTRACTION POLICY"
SAID = turns(("user", "I moved to Lisbon; my son Tiago starts school in May."))
HOME = fact("user", "home city", "The user lives in Lisbon.")


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def _set(m: Mem, policy: str, scope: str = "org", namespace: str = "", **kw):
    return m.admin("extraction_policy.set", scope=scope, namespace=namespace, policy=policy, **kw)


def _get(m: Mem, scope: str = "org", namespace: str = "") -> dict:
    status, data = m.admin("extraction_policy.get", scope=scope, namespace=namespace)
    assert status == 200, data
    return data


def _clear(m: Mem, scope: str = "org", namespace: str = "", **kw):
    return m.admin("extraction_policy.clear", scope=scope, namespace=namespace, **kw)


def test_only_an_org_admin_may_set_read_or_clear_a_policy(m):
    """GIVEN an org policy set by an org admin
    WHEN a viewer, a writer and an admin set, read or clear a policy
    THEN each call is refused (403) and the policy is unchanged.
    """
    assert _set(m, ORG_POLICY)[0] == 200

    for role in ("viewer", "writer", "admin"):
        assert _set(m, "Store everything.", as_=role)[0] == 403, role
        assert m.admin("extraction_policy.get", as_=role, scope="org")[0] == 403, role
        assert _clear(m, as_=role)[0] == 403, role

    assert _get(m)["policy"] == ORG_POLICY


def test_setting_and_clearing_are_audited(m, pool):
    """GIVEN an org admin
    WHEN it sets, reads and clears the org policy
    THEN the set and the clear each leave an audit row under the admin's principal.
    """
    _set(m, ORG_POLICY)
    _get(m)
    _clear(m)

    rows = [r for r in audit_rows(pool, m.org) if r["op"].startswith("extraction_policy.")]
    assert [r["op"] for r in rows] == ["extraction_policy.set", "extraction_policy.clear"]
    assert {r["principal"] for r in rows} == {f"token:org_admin-{m.org}"}


def test_the_effective_policy_is_the_orgs_then_the_namespaces(m):
    """GIVEN an org policy and a policy for one namespace
    WHEN each scope is read (the org's set with a namespace named, which scope org ignores),
    and the namespace's policy is cleared
    THEN the namespace's effective text is the org's followed by the namespace's; the org
    scope lists the namespace; after the clear the org's policy alone is in force there.
    """
    _set(m, ORG_POLICY, namespace=NS2)  # scope org ignores the namespace
    _set(m, NS_POLICY, scope="namespace", namespace=NS)

    ns = _get(m, "namespace", NS)
    org = _get(m)

    assert ns["policy"] == NS_POLICY
    assert ns["effective"].index(ORG_POLICY) < ns["effective"].index(NS_POLICY)
    assert (org["policy"], org["effective"], org["namespace_policies"]) == (
        ORG_POLICY,
        ORG_POLICY,
        [NS],
    )
    assert _get(m, "namespace", NS2)["effective"] == ORG_POLICY

    status, cleared = _clear(m, "namespace", NS)
    assert status == 200 and cleared["cleared"] is True
    after = _get(m, "namespace", NS)
    assert (after["policy"], after["effective"]) == ("", ORG_POLICY)
    assert _clear(m, "namespace", NS)[1]["cleared"] is False


def test_a_policy_is_at_most_4096_characters(m):
    """GIVEN an org admin
    WHEN it sets a policy of 4,097 characters, then one of 4,096
    THEN the first is refused (422) and the second is set.
    """
    status, data = _set(m, "x" * 4097)
    assert status == 422, data
    assert _get(m)["policy"] == ""

    assert _set(m, "y" * 4096)[0] == 200
    assert _get(m)["policy"] == "y" * 4096


def test_at_me_is_refused_as_a_scope(m):
    """GIVEN an org admin
    WHEN it sets a namespace policy for "@me"
    THEN it is refused (400) and no namespace holds a policy.
    """
    status, data = _set(m, NS_POLICY, scope="namespace", namespace="@me")

    assert status == 400, data
    assert _get(m)["namespace_policies"] == []


def test_at_me_is_refused_as_a_scope_even_with_a_user_id(m):
    """GIVEN an org admin
    WHEN it sets a namespace policy for "@me" and names a user_id in the body
    THEN it is still refused (400) and no namespace holds a policy.
    """
    status, data = _set(m, NS_POLICY, scope="namespace", namespace="@me", user_id="u1")

    assert status == 400, data
    assert _get(m)["namespace_policies"] == []


def test_a_namespace_bound_org_admin_reaches_its_own_namespace_policy_only(m):
    """GIVEN an org policy, a policy for NS2 and an org_admin token bound to NS
    WHEN that token reads, sets and clears the org scope (with and without a namespace), and
    sets, reads and clears NS's policy
    THEN every org-scope call is refused (403) naming no namespace policy, the org's policy
    and NS2's are unchanged, and the token manages NS's policy.
    """
    _set(m, ORG_POLICY)
    _set(m, NS_POLICY, scope="namespace", namespace=NS2)
    bound = m.token("org_admin", namespace=NS)

    for namespace in ({}, {"namespace": NS}):
        status, data = m.admin("extraction_policy.get", token=bound, scope="org", **namespace)
        assert status == 403, data
        assert NS2 not in str(data)
        status, data = _set(m, "Store everything.", token=bound, **namespace)
        assert status == 403, data
        status, data = m.admin("extraction_policy.clear", token=bound, scope="org", **namespace)
        assert status == 403, data
    assert _get(m)["policy"] == ORG_POLICY
    assert _get(m)["namespace_policies"] == [NS2]

    assert _set(m, "A", scope="namespace", namespace=NS, token=bound)[0] == 200
    status, own = m.admin("extraction_policy.get", token=bound, scope="namespace", namespace=NS)
    assert status == 200 and own["namespace_policies"] == [], own
    assert (own["policy"], own["effective"]) == ("A", f"{ORG_POLICY}\n\nA")
    assert _clear(m, "namespace", NS, token=bound)[1]["cleared"] is True
    assert _get(m, "namespace", NS2)["policy"] == NS_POLICY


def test_one_namespace_policy_more_than_the_cap_is_refused(m, pool):
    """GIVEN extraction_policy_max_namespaces set live to 2 and two namespace policies
    WHEN a third namespace's policy is set, an existing one changed and the org's set
    THEN the third is refused (409) while the change and the org policy are accepted; once one
    is cleared, the third fits.
    """
    with live_setting(pool, extraction_policy_max_namespaces="2"):
        assert _set(m, "A", scope="namespace", namespace="ns-1")[0] == 200
        assert _set(m, "B", scope="namespace", namespace="ns-2")[0] == 200

        status, data = _set(m, "C", scope="namespace", namespace="ns-3")
        assert status == 409, data
        assert _set(m, "A2", scope="namespace", namespace="ns-1")[0] == 200
        assert _set(m, ORG_POLICY)[0] == 200
        assert _get(m)["namespace_policies"] == ["ns-1", "ns-2"]

        _clear(m, "namespace", "ns-2")
        assert _set(m, "C", scope="namespace", namespace="ns-3")[0] == 200


def test_two_namespace_policies_set_at_once_keep_the_cap(m, deps, pool):
    """GIVEN extraction_policy_max_namespaces set live to 1, no namespace policy yet, and each
    set held for a moment once it has counted the org's namespace policies
    WHEN two namespaces' policies are set at once
    THEN one is stored and the other refused (409): the second counts after the first commits.
    """
    counted = threading.Barrier(2)

    def held_once_counted(org):
        with contextlib.suppress(threading.BrokenBarrierError):
            counted.wait(timeout=1.0)  # both counts at once, unless one waits on the other

    deps.hooks.on("extraction_policy.counted", held_once_counted)

    def set_policy(namespace: str) -> str:
        body = {"scope": "namespace", "namespace": namespace, "policy": "P"}
        try:
            call("extraction_policy.set", body, local_caller(m.org), deps)
        except ConflictError:
            return "refused"
        return "stored"

    with live_setting(pool, extraction_policy_max_namespaces="1"):
        with ThreadPoolExecutor(2) as runner:
            answers = list(runner.map(set_policy, ["ns-a", "ns-b"]))
        assert sorted(answers) == ["refused", "stored"]
        assert len(_get(m)["namespace_policies"]) == 1


def test_the_policy_ends_the_system_prompt_after_the_requests_instructions(m, deps):
    """GIVEN an org policy and a namespace policy
    WHEN a transcript is extracted with extraction_instructions
    THEN the system prompt holds the instructions, then the OPERATOR EXTRACTION POLICY block
    saying it overrides every other instruction, with the org's policy then the namespace's,
    ending the prompt; the answer says under_operator_policy true.
    """
    _set(m, ORG_POLICY)
    _set(m, NS_POLICY, scope="namespace", namespace=NS)
    llm = scripted(deps, reply(HOME))
    instructions = "Keep every fact about family members."

    out = m.extract_ok(SAID, extraction_instructions=instructions)

    system = llm.prompts[0][0]
    assert system.index(instructions) < system.index(HEADER)
    assert "overrides every other instruction" in system[system.index(HEADER) :]
    assert system.index(HEADER) < system.index(ORG_POLICY) < system.index(NS_POLICY)
    assert system.rstrip().endswith(NS_POLICY)
    assert out["under_operator_policy"] is True


def test_every_extraction_call_ends_with_the_policy(m, deps, pool):
    """GIVEN an org policy, the coverage sweep on, and a typed record with a retry
    WHEN a transcript is extracted (first pass and sweep) and a record is extracted (twice)
    THEN every system prompt sent to the model ends with the policy.
    """
    _set(m, ORG_POLICY)
    llm = scripted(
        deps,
        reply(fact("user", "home city", "The user lives in Lisbon.", indices=[0])),
        reply(),
        '{"city": 5}',
        '{"city": "Lisbon"}',
    )
    messages = turns(("user", "I live in Lisbon."), ("user", "I like trams."), ("user", "Hi."))

    with live_setting(pool, memory_extract_coverage_sweep_enabled="true"):
        m.extract_ok(messages, extraction_instructions="Be brief.")
    schema = {"properties": {"city": {"type": "string"}}}
    m.extract_ok(SAID, record_schema=schema, memory_key="profile/city")

    assert len(llm.prompts) == 4
    assert all(system.rstrip().endswith(ORG_POLICY) for system, _ in llm.prompts)


def test_a_namespace_policy_covers_that_namespace_only(m, deps):
    """GIVEN a policy for one namespace and none for the org
    WHEN transcripts are extracted in that namespace and in another
    THEN only the first runs under the policy.
    """
    _set(m, NS_POLICY, scope="namespace", namespace=NS)
    llm = scripted(deps, reply(HOME), reply(HOME))

    here = m.extract_ok(SAID)
    there = m.extract_ok(SAID, namespace=NS2)

    assert NS_POLICY in llm.prompts[0][0] and NS_POLICY not in llm.prompts[1][0]
    assert (here["under_operator_policy"], there["under_operator_policy"]) == (True, False)


def test_a_cleared_policy_no_longer_reaches_the_prompt(m, deps):
    """GIVEN an org policy that an extraction ran under
    WHEN the policy is cleared and another transcript is extracted
    THEN the second prompt carries neither the policy nor its block, and under_operator_policy
    is false.
    """
    _set(m, ORG_POLICY)
    llm = scripted(deps, reply(HOME), reply(HOME))
    m.extract_ok(SAID)

    _clear(m)
    out = m.extract_ok(turns(("user", "I still live in Lisbon.")))

    assert ORG_POLICY in llm.prompts[0][0]
    assert ORG_POLICY not in llm.prompts[1][0] and HEADER not in llm.prompts[1][0]
    assert out["under_operator_policy"] is False


def test_a_changed_policy_is_never_answered_from_the_cache_of_the_old_one(m, deps):
    """GIVEN a transcript extracted once without a policy (its answer cached)
    WHEN the same transcript is extracted after a policy is set, then again under that policy
    THEN the model is asked again under the policy, and only the repeat under the same policy
    is answered from the cache.
    """
    llm = scripted(deps, reply(digest="d1"), reply(digest="d2"), reply(digest="d3"))
    m.extract_ok(SAID)

    _set(m, ORG_POLICY)
    under = m.extract_ok(SAID)
    repeat = m.extract_ok(SAID)

    assert len(llm.prompts) == 2
    assert under["response_cache_hits"] == 0 and under["tokens_in"] > 0
    assert repeat["response_cache_hits"] == 1 and repeat["tokens_in"] == 0


class FlakyPolicies:
    """A policy reader that can be told to fail."""

    def __init__(self, org: str):
        self.failing = False
        self.policies = {(org, ""): ORG_POLICY}

    def __call__(self) -> dict[tuple[str, str], str]:
        if self.failing:
            raise ConnectionError("policy table unreachable")
        return dict(self.policies)


@contextmanager
def serving(deps: Deps) -> Iterator[Deps]:
    """Serve HTTP calls with these deps, then the fixture's again."""
    from chalicelib.deps import get_deps

    previous = get_deps()
    set_deps(deps)
    try:
        yield deps
    finally:
        set_deps(previous)


def _server(pool, embedder, reader: FlakyPolicies, max_stale: float) -> Deps:
    settings = make_settings(
        model_calls_policy_refresh_seconds=0, model_calls_policy_max_stale_seconds=max_stale
    )
    d = Deps(settings, pool=pool, embedder=embedder, policy_reader=reader)
    scripted(d, reply(HOME), reply(HOME))
    return d


def test_policies_unreadable_past_the_stale_bound_refuse_model_calls_with_503(
    m, api, pool, embedder
):
    """GIVEN a server whose policy reads start failing, with a stale bound of 0 seconds, and a
    thread with turns to compact
    WHEN memory.set_from_messages, conversation.compact and session.brief_save (with events)
    are called
    THEN each answers 503 without calling the model, extraction stores no evidence, the turns
    stay uncompacted; memory.set (no model call) still writes; once the policies are read
    again, extraction answers 200 under the policy.
    """
    admin = m.tokens["admin"]
    assert api.post("conversation.set_logging", token=admin, namespace=NS, enabled=True)[0] == 200
    for i in range(5):
        m.ok("conversation.append", thread_id="t1", role="user", content=f"turn {i}")
    reader = FlakyPolicies(m.org)
    server = _server(pool, embedder, reader, max_stale=0)

    with serving(server):
        assert m.extract_ok(turns(("user", "warm-up")))["under_operator_policy"] is True
        reader.failing = True
        before_evidence = len(evidence_rows(pool, m.org))

        extract = m.extract(SAID)
        compact = m.post("conversation.compact", thread_id="t1", keep_recent=0, min_to_compact=1)
        brief = m.post(
            "session.brief_save",
            brief_key="b1",
            events=[{"kind": "user", "text": "Rotate the keys"}],
        )
        written = m.set("user/drink", "The user drinks tea.")

        assert [extract[0], compact[0], brief[0]] == [503, 503, 503], (extract, compact, brief)
        assert len(server.llm.prompts) == 1  # the warm-up only
        assert len(evidence_rows(pool, m.org)) == before_evidence
        assert written["conflict_verdict"] == "created"
        hits = m.ok("conversation.search", as_="viewer", query="turn", agent="*")["hits"]
        assert len(hits) == 5

        reader.failing = False
        assert m.extract_ok(SAID)["under_operator_policy"] is True


def test_policies_unreadable_within_the_stale_bound_still_apply(m, pool, embedder):
    """GIVEN a server whose policy reads start failing, with a stale bound of 300 seconds
    WHEN a transcript is extracted right after the last good read
    THEN it answers 200, still under the last policy read.
    """
    reader = FlakyPolicies(m.org)
    server = _server(pool, embedder, reader, max_stale=300)

    with serving(server):
        m.extract_ok(turns(("user", "warm-up")))
        reader.failing = True
        out = m.extract_ok(SAID)

    assert out["under_operator_policy"] is True
    assert server.llm.prompts[1][0].rstrip().endswith(ORG_POLICY)
    assert memory_rows(pool, m.org)
