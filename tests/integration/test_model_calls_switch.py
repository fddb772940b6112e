"""The org's model-calls switch: who may flip it, and what each model caller does while it is
off: deferred replays wait held (no attempt spent) and run once it is back on."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from typing import Any

import pytest

from chalicelib import cli
from chalicelib.auth import local_caller, mint_token
from chalicelib.deps import Deps, set_deps
from chalicelib.hooks import Hooks
from chalicelib.ops.reextract import reextract_namespace
from chalicelib.providers.llm import LLMResult, ScriptedLLM
from chalicelib.providers.queue import FakeQueue
from chalicelib.registry import call
from chalicelib.workers.extraction_queue import drain_due, process_job
from chalicelib.workers.observe_extract import distil_sessions
from tests.conftest import Api, live_setting, make_settings
from tests.integration import test_observe_passes as obs
from tests.integration.test_compaction import build, compact
from tests.integration.test_conversation_support import snapshot
from tests.integration.test_extraction_policy import serving
from tests.integration.test_memory_support import NS, Mem, audit_rows, reply, scripted
from tests.integration.test_saved_support import SUMMARY, open_tenant
from tests.integration.test_session_support import POLICY, Briefs, brief_rows, ev
from tests.queue_worker import OneFactLLM

BODY = {"namespace": "q", "agent": "bot", "user_id": "u1"}


@pytest.fixture
def queue(deps):
    deps._queue = FakeQueue()
    return deps._queue


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


class CountingLLM(OneFactLLM):
    """One fact a request; counts the calls made for each word."""

    def __init__(self) -> None:
        super().__init__(0)
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def complete(self, system: str, user: str, **kw: Any) -> LLMResult:
        word = user.split("Conversation:\n", 1)[-1].splitlines()[0].split(": ", 1)[-1].split()[0]
        with self._lock:
            self.calls[word.lower()] += 1
        return super().complete(system, user, **kw)


def _switch(org: str, deps: Deps, enabled: bool) -> dict[str, Any]:
    return call("model_calls.set", {"org": org, "enabled": enabled}, local_caller(org), deps).body


def _defer(org: str, deps: Deps, word: str) -> str:
    body = {**BODY, "messages": [{"role": "user", "content": f"{word} is on my mind"}]}
    out = call("memory.set_from_messages", {**body, "defer": True}, local_caller(org), deps)
    return str(out.body["queue_id"])


def job_states(pool, ids: list[str]) -> dict[str, tuple[str, int, str]]:
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT queue_id, status, attempts, held_reason FROM loom.memory_extraction_queue"
            " WHERE queue_id = ANY(%s)",
            (ids,),
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def drain_until_settled(deps: Deps, pool, ids: list[str], passes: int = 50) -> None:
    """Drain until none of these jobs is due to run: the queue is shared by the whole test
    session, and other tests' due jobs (older, so first in a pass) can fill a pass's batch."""
    for _ in range(passes):
        drain_due(deps)
        if not any(s in ("pending", "running") for s, _, _ in job_states(pool, ids).values()):
            return
    raise AssertionError(f"jobs still due after {passes} passes: {job_states(pool, ids)}")


def test_only_an_org_admin_flips_or_reads_the_switch_and_each_flip_is_audited(m, pool):
    """GIVEN an org's tokens of every role
    WHEN a viewer, a writer and a namespace admin flip or read the switch, then the org admin
    switches it off and on
    THEN the first are refused (403) and the switch stays on; the org admin's two flips each
    leave an audit row under its principal, and reads are not audited.
    """
    for role in ("viewer", "writer", "admin"):
        assert m.admin("model_calls.set", as_=role, org=m.org, enabled=False)[0] == 403, role
        assert m.admin("model_calls.get", as_=role, org=m.org)[0] == 403, role
    status, got = m.admin("model_calls.get", org=m.org)
    assert (status, got["enabled"]) == (200, True)

    status, off = m.admin("model_calls.set", org=m.org, enabled=False)
    assert (status, off["enabled"], off["changed"]) == (200, False, True), off
    assert m.admin("model_calls.get", org=m.org)[1]["enabled"] is False
    assert m.admin("model_calls.set", org=m.org, enabled=True)[1]["changed"] is True

    rows = [r for r in audit_rows(pool, m.org) if r["op"].startswith("model_calls.")]
    assert [r["op"] for r in rows] == ["model_calls.set", "model_calls.set"]
    assert {r["principal"] for r in rows} == {f"token:org_admin-{m.org}"}


def test_an_org_admin_of_another_org_cannot_flip_this_orgs_switch(m, deps, pool):
    """GIVEN another org's org admin WHEN it switches this org's model calls off
    THEN it is refused (403) and this org's switch stays on."""
    other = mint_token(deps, org=f"{m.org}-other", role="org_admin", subject="other-admin")
    assert m.admin("model_calls.set", token=other, org=m.org, enabled=False)[0] == 403
    assert m.admin("model_calls.get", org=m.org)[1]["enabled"] is True


def test_while_off_a_replay_is_held_spends_no_attempt_and_the_worker_runs_other_orgs_work(
    deps, org, queue, pool
):
    """GIVEN a deferred request in an org switched off, and one in another org
    WHEN the worker drains the queue, then the org is switched back on and it drains again
    THEN the first is held with reason model_calls_off, no attempt spent and no model call,
    while the other org's runs; switched on, the held one goes back to pending and runs.
    """
    other = f"{org}-b"
    held, runs = _defer(org, deps, "alpha"), _defer(other, deps, "bravo")
    deps._llm = llm = CountingLLM()
    assert _switch(org, deps, False)["enabled"] is False

    drain_until_settled(deps, pool, [held, runs])

    assert job_states(pool, [held, runs]) == {
        held: ("held", 0, "model_calls_off"),
        runs: ("done", 0, ""),
    }
    assert llm.calls["bravo"] == 1 and llm.calls["alpha"] == 0
    drain_due(deps)  # a held job is not claimed again
    assert job_states(pool, [held])[held] == ("held", 0, "model_calls_off")

    out = _switch(org, deps, True)

    assert out["released"] == 1 and job_states(pool, [held])[held] == ("pending", 0, "")
    assert (held, 0) in queue.sent
    drain_until_settled(deps, pool, [held])
    assert job_states(pool, [held])[held] == ("done", 0, "")
    assert (llm.calls["bravo"], llm.calls["alpha"]) == (1, 1)


def test_a_job_held_by_a_server_that_read_the_switch_late_is_released_by_the_worker(
    deps, org, queue, pool
):
    """GIVEN a server that still reads an org's switch off (its refresh not yet due) after
    another server switched it back on
    WHEN that server holds a deferred request, and the worker then drains the queue
    THEN the worker releases the held job (the switch is on in the table) and it runs."""
    qid = _defer(org, deps, "charlie")
    deps._llm = CountingLLM()
    _switch(org, deps, False)
    late = Deps(
        make_settings(model_calls_policy_refresh_seconds=3600),
        pool=pool,
        embedder=deps.embedder,
        llm=deps.llm,
        queue=queue,
    )
    assert late.model_calls_off(org) is True
    _switch(org, deps, True)  # on another server: `late` reads it within the refresh bound

    assert process_job(late, qid) == "held"
    assert job_states(pool, [qid])[qid] == ("held", 0, "model_calls_off")

    drain_until_settled(deps, pool, [qid])  # its first pass releases it

    assert job_states(pool, [qid])[qid] == ("done", 0, "")


def test_retry_mine_answers_model_calls_off_while_off_and_requeues_once_on(
    api, deps, org, queue, pool
):
    """GIVEN an agent's failed batch WHEN it asks for a retry with the org switched off, then
    on THEN the first answer lists it in model_calls_off and leaves it failed; the second
    requeues it."""
    agent = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-s"))
    msg = [{"role": "user", "content": "hi"}]
    qid = agent.ok("memory.set_from_messages", messages=msg, defer=True, **BODY)["queue_id"]
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET status = 'failed' WHERE queue_id = %s",
            (qid,),
        )
    _switch(org, deps, False)

    out = agent.ok("memory.extraction_retry_mine", namespace="q", agent="bot", queue_ids=[qid])

    assert (out["model_calls_off"], out["requeued"], out["left_alone"]) == ([qid], [], [])
    assert job_states(pool, [qid])[qid][0] == "failed"

    _switch(org, deps, True)
    out = agent.ok("memory.extraction_retry_mine", namespace="q", agent="bot", queue_ids=[qid])
    assert (out["model_calls_off"], out["requeued"]) == ([], [qid])


def test_the_switch_flipped_off_and_on_under_a_running_queue_loses_and_repeats_nothing(
    deps, org, queue, pool
):
    """GIVEN 200 deferred requests and two workers draining the queue
    WHEN the org's model calls are switched off while they run, held jobs are seen, and the
    switch goes back on
    THEN every job ends done with no attempt spent and its fact created (a job run twice
    would record `unchanged`), each request's model call was made once, jobs were held
    meanwhile, and no call was made while off but those already past the check (one a worker).
    """
    words = [f"w{i:03d}" for i in range(200)]
    ids = [_defer(org, deps, w) for w in words]
    deps._llm = llm = CountingLLM()
    stop = threading.Event()
    seen_held: set[str] = set()

    def made() -> int:
        return sum(n for w, n in llm.calls.items() if w in words)

    def worker() -> None:
        while not stop.is_set():
            drain_due(deps)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        while made() < 20:
            time.sleep(0.01)
        _switch(org, deps, False)
        made_when_off = made()
        deadline = time.monotonic() + 60
        while len(seen_held) < 20 and time.monotonic() < deadline:
            jobs = job_states(pool, ids)
            seen_held |= {q for q, (status, _, _) in jobs.items() if status == "held"}
            assert all(attempts == 0 for _, attempts, _ in jobs.values())
            time.sleep(0.01)
        made_while_off = made() - made_when_off
        _switch(org, deps, True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if {s for s, _, _ in job_states(pool, ids).values()} == {"done"}:
                break
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()

    jobs = job_states(pool, ids)
    assert {s for s, _, _ in jobs.values()} == {"done"}
    assert all(attempts == 0 for _, attempts, _ in jobs.values())
    assert len(seen_held) >= 20 and made_while_off <= len(threads)
    mine = {w: n for w, n in llm.calls.items() if w in words}  # the queue holds other tests' too
    assert mine == {w: 1 for w in words}
    assert set(_verdicts(pool, ids).values()) == {("created",)}


def _verdicts(pool, ids: list[str]) -> dict[str, tuple[str, ...]]:
    """Each job's recorded verdicts: what its last recorded run wrote."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT queue_id, result FROM loom.memory_extraction_queue WHERE queue_id = ANY(%s)",
            (ids,),
        ).fetchall()
    return {r[0]: tuple(w["conflict_verdict"] for w in r[1]["written"]) for r in rows}


@pytest.fixture
def cli_env(monkeypatch, database_url, deps, org):
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    monkeypatch.setenv("LOOM_AUTH", "tokens")
    yield
    set_deps(deps)  # the CLI swaps the process-wide Deps


def test_loom_model_calls_switches_the_org_off_and_on_audited(cli_env, org, pool, capsys):
    """GIVEN an org WHEN `loom model-calls off --org ORG`, `status`, then `on` run
    THEN each prints the org's state, the switch reads off then on, and the two flips are
    audited."""
    assert cli.main(["model-calls", "off", "--org", org]) == 0
    assert cli.main(["model-calls", "status", "--org", org]) == 0
    assert cli.main(["model-calls", "on", "--org", org]) == 0

    out = capsys.readouterr().out.splitlines()
    assert out == [f"model calls of {org}: {s}" for s in ("off", "off", "on")]
    assert [r["op"] for r in audit_rows(pool, org)] == ["model_calls.set", "model_calls.set"]


class SwitchingLLM:
    """Answers brief sections; its first call switches the org's model calls off."""

    name = "switching"
    answers = True

    def __init__(self, org: str, deps: Deps):
        self.org, self.deps = org, deps
        self.prompts: list[str] = []

    def complete(self, system: str, user: str, **kw: Any) -> LLMResult:
        if not self.prompts:
            _switch(self.org, self.deps, False)
        self.prompts.append(user)
        data = {"goal": f"goal {len(self.prompts)}"}
        return LLMResult(json.dumps(data), data, 10, 5, self.name)


BRIEF_EVENTS = [ev("user", f"step {i} " + "y" * 480) for i in range(6)]


@pytest.fixture
def briefs(api, deps, org):
    deps._policy_lookup = lambda org, ns: POLICY
    return Briefs.open(api, deps, org)


def test_a_brief_of_events_alone_switched_off_before_its_first_window_is_not_revised(
    briefs, deps, org, pool
):
    """GIVEN an operator policy, a working model, and the org's model calls switched off
    WHEN events alone are saved
    THEN the model is not called and the save answers changed false, reason not-revised,
    writing nothing."""
    deps._llm = llm = SwitchingLLM(org, deps)
    _switch(org, deps, False)

    out = briefs.save(brief_key="k", events=BRIEF_EVENTS)

    assert (out["changed"], out["reason"], out["revision"]) == (False, "not-revised", 0)
    assert llm.prompts == [] and brief_rows(pool, org) == []


def test_a_brief_switched_off_after_its_first_window_keeps_it_and_revises_no_more(
    briefs, deps, org, pool
):
    """GIVEN an operator policy and events that make three windows
    WHEN the org's model calls are switched off during the first window's call
    THEN that window's revision is written (author llm) and no other window is asked."""
    deps._llm = llm = SwitchingLLM(org, deps)

    with live_setting(pool, session_brief_window_chars="1000"):
        out = briefs.save(brief_key="k", events=BRIEF_EVENTS)

    assert (out["changed"], out["author"]) == (True, "llm")
    assert "goal 1" in out["rendered"] and len(llm.prompts) == 1


def test_ask_while_off_answers_its_passages_alone_with_the_reason(api, deps, org):
    """GIVEN a memory and a working model WHEN memory.ask synthesizes with the org's model
    calls switched off, then on THEN the first makes no call and answers the passages with
    answer_error naming model_calls_off; the second answers from the model."""
    m = Mem.open(api, deps, org)
    m.set("user/drink", "The user drinks oat milk.")
    deps._llm = llm = ScriptedLLM(replies=deque(["Oat milk [1]."]))
    _switch(org, deps, False)

    out = m.ok("memory.ask", as_="viewer", question="what does the user drink", synthesize=True)

    assert out["answer"] is None and "model_calls_off" in out["answer_error"]
    assert out["passages"] and llm.prompts == []
    _switch(org, deps, True)
    out = m.ok("memory.ask", as_="viewer", question="what does the user drink", synthesize=True)
    assert out["answer"] == "Oat milk [1]."


def test_inline_extraction_and_compaction_while_off_answer_503_and_call_no_model(
    api, deps, org, pool
):
    """GIVEN a working model and the org's model calls switched off
    WHEN a writer extracts inline and compacts a thread of 20 turns
    THEN each answers 503 with code model_calls_off, no model is called and the thread is
    unchanged; switched on, the same compaction runs."""
    t = open_tenant(api, deps, org)
    build(t, 20)
    deps._llm = llm = ScriptedLLM(replies=deque([SUMMARY]))
    m = Mem.open(api, deps, org)
    _switch(org, deps, False)
    before = snapshot(pool, org)

    status, body = m.extract([{"role": "user", "content": "I moved to Lisbon."}])
    assert (status, body.get("error", {}).get("code")) == (503, "model_calls_off"), body
    status, body = compact(t)
    assert (status, body.get("error", {}).get("code")) == (503, "model_calls_off"), body
    assert llm.prompts == [] and snapshot(pool, org) == before

    _switch(org, deps, True)
    assert compact(t)[1]["compacted"] is True


class SwitchRead:
    """The server's read of the switch from the store, failing while told to."""

    def __init__(self) -> None:
        self.failing = False

    def __call__(self) -> None:
        if self.failing:
            raise ConnectionError("loom.model_calls_off unreachable")


def _unread_server(pool, embedder, queue, read: SwitchRead) -> Deps:
    """A server that reads the switch on every call and refuses once it is unread at all."""
    hooks = Hooks()
    hooks.on("model_calls.read", read)
    settings = make_settings(
        model_calls_policy_refresh_seconds=0,
        model_calls_policy_max_stale_seconds=0,
        extraction_queue_delay_scale=0.001,
    )
    return Deps(settings, pool=pool, embedder=embedder, llm=CountingLLM(), queue=queue, hooks=hooks)


def test_with_the_switch_unread_past_the_stale_bound_inline_extraction_answers_503(
    api, deps, org, pool, embedder, queue
):
    """GIVEN a server whose reads of the switch start failing, with a stale bound of 0 s
    WHEN a writer extracts inline, then again once the switch is read
    THEN the first answers 503 naming the unread switch and makes no model call; the second
    answers 200 and makes its call."""
    m = Mem.open(api, deps, org)
    read = SwitchRead()
    server = _unread_server(pool, embedder, queue, read)
    llm = server.llm
    assert isinstance(llm, CountingLLM)

    with serving(server):
        read.failing = True
        status, body = m.extract([{"role": "user", "content": "lisbon is home now"}])
        assert (status, body["error"]["code"]) == (503, "unavailable"), body
        assert "model-calls switch" in body["error"]["message"]
        assert llm.calls == {}

        read.failing = False
        m.extract_ok([{"role": "user", "content": "porto is home now"}])
    assert llm.calls == {"porto": 1}


def test_with_the_switch_unread_the_worker_calls_no_model_and_spends_no_attempt(
    deps, org, pool, embedder, queue
):
    """GIVEN a deferred request and a worker whose reads of the switch fail past the bound
    WHEN it runs the job, then again once the switch is read
    THEN the first run makes no model call, spends no attempt and leaves the job pending with
    the reason as last error; the second runs it, one model call in all."""
    qid = _defer(org, deps, "delta")
    read = SwitchRead()
    worker = _unread_server(pool, embedder, queue, read)
    llm = worker.llm
    assert isinstance(llm, CountingLLM)
    read.failing = True

    assert process_job(worker, qid) == "retry"

    with pool.connection() as conn:
        error = conn.execute(
            "SELECT last_error FROM loom.memory_extraction_queue WHERE queue_id = %s", (qid,)
        ).fetchone()[0]
    assert job_states(pool, [qid])[qid] == ("pending", 0, "")
    assert "model-calls switch" in error and llm.calls == {}

    read.failing = False
    time.sleep(0.1)  # its retry waits 15 s scaled by 0.001
    assert process_job(worker, qid) == "done"
    assert job_states(pool, [qid])[qid] == ("done", 0, "") and llm.calls == {"delta": 1}


def test_while_off_the_observe_worker_distils_none_of_the_orgs_sessions_and_others_go_first(
    deps, org, pool
):
    """GIVEN two crystallized sessions of an org switched off, then one of another org, and
    one session a pass
    WHEN the observe worker runs its passes, then the org is switched back on
    THEN the other org's session is distilled while the off org's are neither sent to the
    model nor marked distilled, and take no pass's slot; switched on, each is distilled in
    one call."""
    other = f"{org}-b"
    deps._llm = llm = obs.CountingLLM(org)
    off = [f"{org[-6:]}-off{i}" for i in range(2)]
    runs = f"{org[-6:]}-runs"
    for mark in off:
        obs._session(deps, org, mark, 2)
    obs._session(deps, other, runs, 2)
    _switch(org, deps, False)

    with live_setting(
        pool, observe_extract_enabled="true", observe_extract_max_sessions_per_pass="1"
    ):
        for _ in range(20):
            distil_sessions(deps)
            if obs._distilled(pool, other, runs)[0] == 2:
                break
        assert obs._distilled(pool, other, runs) == (2, 2)
        assert [obs._distilled(pool, org, m) for m in off] == [(0, 2), (0, 2)]
        assert [llm.calls_for(m) for m in off] == [[], []]

        _switch(org, deps, True)
        for _ in range(20):
            distil_sessions(deps)
            if all(obs._distilled(pool, org, m)[0] == 2 for m in off):
                break
    assert [obs._distilled(pool, org, m) for m in off] == [(2, 2), (2, 2)]
    assert [llm.calls_for(m) for m in off] == [[2], [2]]


def test_with_the_switch_unread_the_observe_worker_distils_nothing(
    deps, org, pool, embedder, queue
):
    """GIVEN a crystallized session and an observe worker whose reads of the switch fail past
    the bound WHEN it runs a pass THEN the session waits: no model call, nothing marked
    distilled."""
    mark = f"{org[-6:]}-unread"
    obs._session(deps, org, mark, 2)
    read = SwitchRead()
    worker = _unread_server(pool, embedder, queue, read)
    worker._llm = llm = obs.CountingLLM(org)
    read.failing = True

    with live_setting(pool, observe_extract_enabled="true"):
        for _ in range(3):
            distil_sessions(worker)
        assert llm.calls_for(mark) == [] and obs._distilled(pool, org, mark) == (0, 2)
        read.failing = False
        for _ in range(20):
            distil_sessions(worker)
            if obs._distilled(pool, org, mark)[0] == 2:
                break
    assert llm.calls_for(mark) == [2]


def test_reextract_while_off_calls_no_model_and_names_each_request(api, deps, org):
    """GIVEN a namespace with an extracted transcript WHEN it is re-extracted with the org's
    model calls switched off THEN no model is called and the request is named failed with
    model_calls_off's reason; nothing is written."""
    m = Mem.open(api, deps, org)
    llm = scripted(deps, reply())
    m.extract_ok([{"role": "user", "content": "I moved to Lisbon."}])
    _switch(org, deps, False)

    done = reextract_namespace(deps, org, NS, "ns-again")

    assert len(llm.prompts) == 1  # the first extraction only
    assert done.requests == 1 and len(done.failed) == 1
    assert "switched off" in done.failed[0][1] and not done.verdicts
