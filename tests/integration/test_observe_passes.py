"""The observe_extract worker's passes: a long session is distilled in parts, a session whose
distillation fails waits while others go first, and two passes at once distil a session once.

The worker reads every org's sessions: each test asserts on its own org's rows and calls."""

from __future__ import annotations

import json
import threading
import uuid

from chalicelib.auth import local_caller
from chalicelib.providers.llm import LLMError, LLMResult
from chalicelib.registry import call
from chalicelib.store import observations as store
from chalicelib.workers.observe_extract import MAX_TURNS, distil_sessions
from tests.conftest import live_setting

NS = "obs-passes"


class CountingLLM:
    """Answers no fact; records each prompt's session marker and message count, and fails
    (as a provider refusing the content would) for prompts holding "poison"."""

    answers = True

    def __init__(self, org: str) -> None:
        self.name = f"counting-{uuid.uuid4().hex[:8]}"
        self.org = org
        self.calls: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def complete(self, system, user, *, json_output=False, model=None) -> LLMResult:
        marks = sorted({w for w in user.split() if w.startswith(self.org[-6:] + "-")})
        with self._lock:
            self.calls.append((marks[0] if marks else "", user.count("step ")))
        if any("poison" in m for m in marks):
            raise LLMError("the provider refused the content")
        data: dict = {"facts": []}
        return LLMResult(json.dumps(data), data, 10, 5, self.name)

    def calls_for(self, mark: str) -> list[int]:
        return [n for m, n in self.calls if m == mark]


def _session(deps, org: str, mark: str, n: int) -> None:
    """Record n observations of session `mark` (each naming it) and crystallize them."""
    body = {"namespace": NS, "agent": "coder", "session_id": mark, "tool": "bash"}
    caller = local_caller(org)
    with deps.pool.connection() as conn:
        for i in range(n):
            store.record(conn, org=org, namespace=NS, agent="coder", user_id="-",
                         session_id=mark, tool="bash", action=f"step {i} {mark}",
                         input_text="", output_text="", files=[], ts=None)  # fmt: skip
    call("observe.crystallize", body, caller, deps)


def _distilled(pool, org: str, mark: str) -> tuple[int, int]:
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE distilled_at IS NOT NULL), count(*)"
            " FROM loom.observations WHERE org = %s AND session_id = %s",
            (org, mark),
        ).fetchone()
    return row[0], row[1]


def test_a_session_longer_than_a_call_is_distilled_in_parts_and_all_of_it_read(deps, org, pool):
    """GIVEN a crystallized session of 450 observations (a call carries at most 400)
    WHEN the worker distils it
    THEN it makes two calls, of 400 and 50 observations, oldest first, and marks all 450
    distilled: none is marked without having been sent."""
    deps._llm = llm = CountingLLM(org)
    mark = f"{org[-6:]}-long"
    _session(deps, org, mark, MAX_TURNS + 50)
    with live_setting(pool, observe_extract_enabled="true"):
        for _ in range(10):
            distil_sessions(deps)
            if _distilled(pool, org, mark)[0] == MAX_TURNS + 50:
                break
    assert llm.calls_for(mark) == [MAX_TURNS, 50]
    assert _distilled(pool, org, mark) == (MAX_TURNS + 50, MAX_TURNS + 50)


def test_sessions_that_keep_failing_wait_while_the_others_are_distilled(deps, org, pool):
    """GIVEN five sessions whose distillation fails (the provider refuses them), crystallized
    first, and a good one, with five sessions a pass
    WHEN the worker runs until the good one is distilled
    THEN it is, and each failing session was tried once: after its failure it waits instead
    of taking a slot of every pass."""
    deps._llm = llm = CountingLLM(org)
    poison = [f"{org[-6:]}-poison{i}" for i in range(5)]
    good = f"{org[-6:]}-good"
    for mark in poison:
        _session(deps, org, mark, 2)
    _session(deps, org, good, 2)
    with live_setting(pool, observe_extract_enabled="true",
                      observe_extract_max_sessions_per_pass="5"):  # fmt: skip
        for _ in range(12):
            distil_sessions(deps)
            if _distilled(pool, org, good)[0] == 2:
                break
    assert _distilled(pool, org, good) == (2, 2)
    assert [len(llm.calls_for(m)) for m in poison] == [1] * 5
    with pool.connection() as conn:  # leave nothing held for the next test's passes
        conn.execute("UPDATE loom.observations SET distilled_at = now() WHERE org = %s", (org,))


def test_two_passes_at_once_claim_a_session_once(deps, org, pool):
    """GIVEN a crystallized session whose rows another transaction holds locked while two
    worker passes start (each read it as unclaimed)
    WHEN the lock is released
    THEN one pass claims it; the other finds it claimed and leaves it."""
    deps._llm = CountingLLM(org)
    mark = f"{org[-6:]}-race"
    with pool.connection() as conn:  # other tests' sessions left ready take no slot here
        conn.execute(
            "UPDATE loom.observations SET distilled_at = now()"
            " WHERE crystallized_at IS NOT NULL AND distilled_at IS NULL"
        )
    _session(deps, org, mark, 3)
    claims: list[list[str]] = []

    def recorded(rows):
        claims.append([r["session_id"] for r in rows if r["org"] == org])

    deps.hooks.on("observe.claimed", recorded)
    with live_setting(pool, observe_extract_enabled="true"):
        holder = deps.pool.getconn()
        try:
            holder.execute(
                "SELECT id FROM loom.observations WHERE org = %s AND session_id = %s FOR UPDATE",
                (org, mark),
            )
            passes = [threading.Thread(target=distil_sessions, args=(deps,)) for _ in range(2)]
            for p in passes:
                p.start()
            threading.Event().wait(0.5)  # both passes are waiting on the rows now
            holder.commit()
            for p in passes:
                p.join(30)
        finally:
            deps.pool.putconn(holder)
    assert sorted(len(set(c)) for c in claims) == [0, 1], claims
    assert _distilled(pool, org, mark) == (3, 3)
