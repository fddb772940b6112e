"""Erasure's reach: a namespace-bound token sees the jobs of its namespace only, and a user
subject holds that user's briefs and no other user's."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.auth import Caller
from chalicelib.registry import call
from tests.integration.test_conversation_support import NS, Tenant
from tests.integration.test_erasure_support import NS2

ALICE = "alice"
# An id that reads as alice's session s1 inside a brief key: ~alice~s1~<key>.
LOOKALIKE = "alice~s1"
BRIEFS = ("loom.session_briefs", "loom.session_brief_revisions")


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org, logging_on=(NS, NS2))


def _job(t: Tenant, **body: Any) -> str:
    return t.ok("erasure.request", defer=True, **body)["job_id"]


def _status(t: Tenant, job_id: str, token: str) -> dict[str, Any]:
    return t.ok("erasure.status", token=token, job_id=job_id, namespace=None)


def test_a_namespace_bound_token_reads_only_the_jobs_of_its_namespace(t):
    """GIVEN erasure jobs of NS, of NS2 and of a user in the whole org, and an org_admin token
    bound to NS2
    WHEN that token reads each job by its id
    THEN it finds its namespace's job only; the others answer as unknown jobs, while an
    org-wide token finds them all.
    """
    theirs = _job(t, kind="namespace_list", namespaces=[NS])
    whole_org = _job(t, kind="user", user_id="u-ann", namespace=None)
    own = _job(t, kind="user", user_id="u-ann", namespace=NS2)
    bound = t.token("org_admin", namespace=NS2)

    assert _status(t, own, bound)["job"]["namespaces"] == [NS2]
    for job_id in (theirs, whole_org):
        unknown = _status(t, job_id, bound)
        assert unknown["found"] is False and unknown["job"] is None, unknown
        assert _status(t, job_id, t.tokens["org_admin"])["found"] is True


def _save_brief(t: Tenant, token: str, goal: str, **ident: str) -> None:
    t.ok("session.brief_save", agent="a1", brief_key="plan", sections={"goal": goal},
         token=token, **ident)  # fmt: skip


def _brief_keys(pool: Any, org: str) -> dict[str, list[tuple[str, Any]]]:
    """Each brief table's (key, tombstone or revision) rows of the org."""
    with pool.connection() as conn:
        return {
            "loom.session_briefs": conn.execute(
                "SELECT brief_key, deleted_at FROM loom.session_briefs WHERE org = %s"
                " ORDER BY brief_key",
                (org,),
            ).fetchall(),
            "loom.session_brief_revisions": conn.execute(
                "SELECT brief_key, revision FROM loom.session_brief_revisions WHERE org = %s"
                " ORDER BY brief_key, revision",
                (org,),
            ).fetchall(),
        }


def test_a_user_id_holding_a_tilde_never_reaches_another_users_briefs(t, pool):
    """GIVEN alice's briefs of her own and of her session s1 (~alice~plan, ~alice~s1~plan)
    WHEN the user "alice~s1" is exported, erased and purged
    THEN the export holds no brief, and alice's briefs and revisions are all still live;
    alice's own export holds both.
    """
    _save_brief(t, t.token("writer", read_scope="own_user", read_user_id=ALICE), "own goal")
    # Saved as an earlier build's own_session token saved it: such tokens now answer 401.
    in_session = Caller(org=t.org, role="writer", read_scope="own_session", principal="token:s")
    body = {
        "namespace": NS,
        "agent": "a1",
        "brief_key": "plan",
        "sections": {"goal": "session goal"},
    }
    call("session.brief_save", {**body, "user_id": ALICE, "session_id": "s1"}, in_session, t.deps)
    before = _brief_keys(pool, t.org)
    assert [k for k, _ in before["loom.session_briefs"]] == ["~alice~plan", "~alice~s1~plan"]

    doc = t.ok("erasure.export", kind="user", user_id=LOOKALIKE, namespace=None)
    assert all(not doc["tables"][table] for table in BRIEFS), doc["tables"]
    t.ok("erasure.request", kind="user", user_id=LOOKALIKE, namespace=None)
    t.ok("erasure.request", kind="user", user_id=LOOKALIKE, purge=True, namespace=None)
    assert _brief_keys(pool, t.org) == before

    mine = t.ok("erasure.export", kind="user", user_id=ALICE, namespace=None)["tables"]
    assert sorted(r["brief_key"] for r in mine["loom.session_briefs"]) == [
        "~alice~plan",
        "~alice~s1~plan",
    ]
