"""The observe plane keeps users apart: two users recording under one session id crystallize,
and are distilled into memories, each on their own."""

from __future__ import annotations

import json
import uuid

import pytest

from chalicelib.auth import local_caller, mint_token
from chalicelib.providers.llm import LLMResult
from chalicelib.registry import call
from chalicelib.workers.erasure import run_erasure_jobs
from chalicelib.workers.observe_extract import distil_sessions
from tests.conftest import Api, live_setting

NS = "obs-users"
BODY = {"namespace": NS, "agent": "coder", "session_id": "shared", "tool": "bash"}
ALICE_OUTPUT = "alice-ledger-7731"
BOB_OUTPUT = "bob-pipeline-4402"


class MarkerLLM:
    """Answers one fact naming every known tool output its prompt carries."""

    answers = True

    def __init__(self) -> None:
        self.name = f"marker-{uuid.uuid4().hex[:8]}"

    def complete(
        self, system: str, user: str, *, json_output: bool = False, model: str | None = None
    ) -> LLMResult:
        seen = [m for m in (ALICE_OUTPUT, BOB_OUTPUT) if m in user]
        facts = [
            {
                "subject": "project",
                "attribute": "build outputs",
                "value": "The project build produced " + " and ".join(seen) + ".",
                "source_message_indices": [0],
            }
        ] if seen else []  # fmt: skip
        data = {"facts": facts}
        return LLMResult(json.dumps(data), data, 10, 5, self.name)


@pytest.fixture
def users(api, deps, org) -> dict[str, Api]:
    """A writer token pinned to each of alice and bob."""
    return {
        user: Api(api.client, mint_token(deps, org=org, role="writer",
                                         read_scope="own_user", read_user_id=user))
        for user in ("alice", "bob")
    }  # fmt: skip


def _observations(pool, org) -> dict[str, tuple[bool, bool]]:
    """Each user's observation: (crystallized, distilled)."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT user_id, crystallized_at IS NOT NULL, distilled_at IS NOT NULL"
            " FROM loom.observations WHERE org = %s",
            (org,),
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _distil_until_done(deps, pool, org) -> None:
    """Run worker passes (which read every org's sessions) until this org's are distilled."""
    for _ in range(20):
        distil_sessions(deps)
        if all(distilled for _, distilled in _observations(pool, org).values()):
            return
    raise AssertionError("the org's observations were never distilled")


def _memories(pool, org) -> dict[str, list[str]]:
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT user_id, value FROM loom.memories WHERE org = %s AND kind = 'fact'", (org,)
        ).fetchall()
    out: dict[str, list[str]] = {}
    for user_id, value in rows:
        out.setdefault(user_id, []).append(value)
    return out


def test_one_users_crystallize_leaves_another_users_observations_of_the_session_alone(
    users, pool, org
):
    """GIVEN alice and bob, each with a pinned token, recording under the same session id
    WHEN bob crystallizes the session
    THEN only bob's observation is marked; alice's waits for her own crystallize.
    """
    users["alice"].ok("observe.record", action="ran the ledger job", output=ALICE_OUTPUT, **BODY)
    users["bob"].ok("observe.record", action="ran the pipeline", output=BOB_OUTPUT, **BODY)

    bob = users["bob"].ok("observe.crystallize", **BODY)

    assert bob["observations"] == 1
    assert _observations(pool, org) == {"alice": (False, False), "bob": (True, False)}
    assert users["alice"].ok("observe.crystallize", **BODY)["observations"] == 1
    assert _observations(pool, org) == {"alice": (True, False), "bob": (True, False)}


def test_each_users_observations_are_distilled_under_that_user_only(users, deps, pool, org):
    """GIVEN alice and bob recording under the same session id, both crystallized
    WHEN the observe_extract worker distils the session
    THEN each user's memory holds only their own tool output, and bob's search never
    returns alice's.
    """
    deps._llm = MarkerLLM()
    users["alice"].ok("observe.record", action="ran the ledger job", output=ALICE_OUTPUT, **BODY)
    users["bob"].ok("observe.record", action="ran the pipeline", output=BOB_OUTPUT, **BODY)
    users["bob"].ok("observe.crystallize", **BODY)
    users["alice"].ok("observe.crystallize", **BODY)

    with live_setting(pool, observe_extract_enabled="true",
                      observe_extract_max_sessions_per_pass="50"):  # fmt: skip
        _distil_until_done(deps, pool, org)

    memories = _memories(pool, org)
    assert sorted(memories) == ["alice", "bob"]
    assert all(ALICE_OUTPUT in v and BOB_OUTPUT not in v for v in memories["alice"])
    assert all(BOB_OUTPUT in v and ALICE_OUTPUT not in v for v in memories["bob"])
    hits = users["bob"].ok("memory.search", namespace=NS, agent="coder", query="project build")
    assert hits["hits"] and all(ALICE_OUTPUT not in h["value"] for h in hits["hits"])


def _rows(pool, sql, *args):
    with pool.connection() as conn:
        return conn.execute(sql, args).fetchall()


def test_erasure_racing_observe_extract_does_not_bring_erased_data_back(deps, org, pool):
    """GIVEN alice's crystallized observations, read by an observe_extract pass, and an
    erasure of alice that runs and finishes just after the pass read them
    WHEN the pass writes what it distilled, and the erasure worker then runs
    THEN alice holds no live memory and no evidence: nothing the erasure erased comes back
    (the extraction_queue worker guards the same race with _erase_again)."""
    from chalicelib.workers import observe_extract

    deps._llm = MarkerLLM()
    caller = local_caller(org)
    body = {"namespace": "obs-race", "agent": "coder", "session_id": "s-race", "user_id": "alice"}
    call(
        "observe.record",
        {**body, "tool": "bash", "action": "ran the ledger job", "output": ALICE_OUTPUT},
        caller,
        deps,
    )
    call("observe.crystallize", body, caller, deps)

    erased: list[dict] = []

    def then_erase(org: str, session_id: str) -> None:
        if org == caller.org and not erased:
            req = {"namespace": "obs-race", "kind": "user", "user_id": "alice"}
            erased.append(call("erasure.request", req, caller, deps).body)

    deps.hooks.on("observe.read", then_erase)
    with live_setting(
        pool, observe_extract_enabled="true", observe_extract_max_sessions_per_pass="1000"
    ):
        observe_extract.distil_sessions(deps)
    assert erased and erased[0]["status"] == "done", erased
    run_erasure_jobs(deps)
    live = _rows(
        pool,
        "SELECT count(*) FROM loom.memories WHERE org = %s AND user_id = 'alice'"
        " AND retired_at IS NULL AND kind = 'fact'",
        org,
    )
    evidence = _rows(
        pool, "SELECT count(*) FROM loom.memory_evidence WHERE org = %s AND user_id = 'alice'", org
    )
    assert (live, evidence) == ([(0,)], [(0,)])
