"""The observe plane and the memory plane's workers, invoked as their schedules would."""

from __future__ import annotations

from chalicelib.auth import local_caller, mint_token
from chalicelib.registry import call
from chalicelib.workers.memory_maintenance import entities_of
from tests.conftest import Api
from tests.queue_worker import OneFactLLM

BODY = {"namespace": "obs", "agent": "coder"}


def _invoke(client, name):
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    return client.lambda_.invoke(name, event).payload


def _live(pool, name, value):
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.settings (name, value) VALUES (%s, %s)"
            " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
            (name, value),
        )


def _unset(pool, name):
    with pool.connection() as conn:
        conn.execute("DELETE FROM loom.settings WHERE name = %s", (name,))


def _record(org, deps, session, action, **extra):
    body = {**BODY, "session_id": session, "tool": "bash", "action": action, **extra}
    return call("observe.record", body, local_caller(org), deps).body


def test_observations_are_recorded_verbatim_with_no_model_call(deps, org, pool):
    """GIVEN a model that would count its calls WHEN two observations are recorded and the
    session crystallized THEN both rows hold what was sent, the model was never called, and
    crystallize reports them."""
    llm = OneFactLLM(0)
    deps._llm = llm
    first = _record(org, deps, "s1", "ran pytest", input="pytest -q", output="3 failed")
    _record(org, deps, "s1", "edited cache.py", files=["src/cache.py"])
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT action, input, output, files FROM loom.observations WHERE org = %s ORDER BY id",
            (org,),
        ).fetchall()
    assert rows == [("ran pytest", "pytest -q", "3 failed", []),
                    ("edited cache.py", "", "", ["src/cache.py"])]  # fmt: skip
    assert first["observation_id"] > 0
    out = call("observe.crystallize", {**BODY, "session_id": "s1"}, local_caller(org), deps)
    assert out.body["observations"] == 2


def test_observe_extract_is_off_by_default_and_distils_crystallized_sessions_when_on(
    deps, org, pool, client
):
    """GIVEN a crystallized session WHEN the observe_extract schedule fires with the worker
    off THEN nothing is distilled; WHEN it is switched on THEN the session's observations go
    through extraction once (a coding capture) and are marked distilled."""
    deps._llm = OneFactLLM(0)
    _record(org, deps, "s2", "deploy finished for billing")
    call("observe.crystallize", {**BODY, "session_id": "s2"}, local_caller(org), deps)
    assert _invoke(client, "observe_extract")["distilled"] == 0
    _live(pool, "observe_extract_enabled", "true")
    try:
        assert _invoke(client, "observe_extract")["distilled"] >= 1
        again = _invoke(client, "observe_extract")
    finally:
        _unset(pool, "observe_extract_enabled")
    with pool.connection() as conn:
        distilled = conn.execute(
            "SELECT count(*) FROM loom.observations WHERE org = %s AND distilled_at IS NOT NULL",
            (org,),
        ).fetchone()[0]
        evidence = conn.execute(
            "SELECT role, content FROM loom.memory_evidence WHERE org = %s", (org,)
        ).fetchall()
    # The pass reads every org (other tests' sessions too): this org's session was distilled
    # once, and the second pass did not distil it again.
    assert "distilled" in again
    assert distilled == 1 and len(evidence) == 1
    assert evidence[0][0] == "tool" and "deploy finished" in evidence[0][1]


def test_an_observation_crystallized_while_the_worker_runs_waits_for_the_next_pass(deps, org, pool):
    """GIVEN a crystallized session, and a second observation of it recorded and crystallized
    just after the worker read the session
    WHEN the pass ends THEN only the observation it read is marked distilled; the next pass
    distils the other."""
    from chalicelib.workers import observe_extract

    deps._llm = OneFactLLM(0)
    _record(org, deps, "s-late", "first step done")
    call("observe.crystallize", {**BODY, "session_id": "s-late"}, local_caller(org), deps)
    late: list[dict] = []

    def one_more(org, session_id):
        if session_id == "s-late" and not late:
            late.append(_record(org, deps, "s-late", "second step done"))
            call("observe.crystallize", {**BODY, "session_id": "s-late"}, local_caller(org), deps)

    deps.hooks.on("observe.read", one_more)
    _live(pool, "observe_extract_enabled", "true")
    _live(pool, "observe_extract_max_sessions_per_pass", "1000")  # other tests' sessions too
    try:
        observe_extract.distil_sessions(deps)

        def states():
            with pool.connection() as conn:
                return conn.execute(
                    "SELECT action, distilled_at IS NOT NULL FROM loom.observations"
                    " WHERE org = %s ORDER BY id",
                    (org,),
                ).fetchall()

        assert states() == [("first step done", True), ("second step done", False)]
        observe_extract.distil_sessions(deps)
        assert states() == [("first step done", True), ("second step done", True)]
    finally:
        _unset(pool, "observe_extract_enabled")
        _unset(pool, "observe_extract_max_sessions_per_pass")


class SecondRunMeanwhile(OneFactLLM):
    """While answering the first session call, a new observation of the session is recorded
    and crystallized and a second worker run distils what it may: every prompt is kept."""

    def __init__(self, org, deps):
        super().__init__(0)
        self.org, self.deps, self.prompts = org, deps, []

    def complete(self, system, user, *, json_output=False, model=None):
        self.prompts.append(user)
        if len(self.prompts) == 1:
            from chalicelib.workers import observe_extract

            _record(self.org, self.deps, "s-two", "zeta step done")
            call("observe.crystallize", {**BODY, "session_id": "s-two"},
                 local_caller(self.org), self.deps)  # fmt: skip
            observe_extract.distil_sessions(self.deps)
        return super().complete(system, user)


def test_a_second_run_never_distils_the_rows_another_run_claimed(deps, org, pool):
    """GIVEN a crystallized session a worker run has claimed and is distilling
    WHEN a new observation of it is crystallized and a second run starts meanwhile
    THEN the second run distils only the new observation: no observation reaches the model
    twice, and both end distilled."""
    from chalicelib.workers import observe_extract

    _record(org, deps, "s-two", "alpha step done")
    call("observe.crystallize", {**BODY, "session_id": "s-two"}, local_caller(org), deps)
    deps._llm = llm = SecondRunMeanwhile(org, deps)
    _live(pool, "observe_extract_enabled", "true")
    _live(pool, "observe_extract_max_sessions_per_pass", "1000")  # other tests' sessions too
    try:
        observe_extract.distil_sessions(deps)
    finally:
        _unset(pool, "observe_extract_enabled")
        _unset(pool, "observe_extract_max_sessions_per_pass")
    mine = [p for p in llm.prompts if "alpha step done" in p or "zeta step done" in p]
    assert sum("alpha step done" in p for p in mine) == 1, mine
    assert sum("zeta step done" in p for p in mine) == 1, mine
    with pool.connection() as conn:
        undistilled = conn.execute(
            "SELECT count(*) FROM loom.observations WHERE org = %s AND distilled_at IS NULL",
            (org,),
        ).fetchone()[0]
    assert undistilled == 0


def test_entity_extractor_fills_rows_written_without_entities(deps, org, pool, client):
    call("memory.set", {**BODY, "key": "team/lead", "value": "Maria Lopez leads @infra and"
         " owns src/billing/export.py."}, local_caller(org), deps)  # fmt: skip
    assert _invoke(client, "entity_extractor")["filled"] >= 1
    with pool.connection() as conn:
        entities = conn.execute(
            "SELECT entities FROM loom.memories WHERE org = %s AND key = 'team/lead'", (org,)
        ).fetchone()[0]
    assert entities == ["Maria Lopez", "@infra", "src/billing/export.py"]
    assert entities_of("The user likes tea.") == []


def test_embedding_worker_embeds_rows_left_without_a_vector(deps, org, pool, client, embedder):
    """GIVEN memories written while the embedder failed, one that reads as high and one whose
    first 2,048 characters (what the embedder is sent) read as high though the whole does not
    WHEN the embedding_worker schedule fires with the embedder back THEN the plain row gets a
    vector; the other two are withheld (dim -1, no backlog) and never reach the embedder."""
    digits = "4111 1111 1111 1111"
    cut = ("The user keeps notes on the garden. " * 57)[:2028] + " " + digits + " 1111 end."
    embedder.failing = True
    for key, value in (("user/drink", "The user drinks oolong tea."),
                       ("user/secret", "The user's password=hunter22 for the VPN."),
                       ("user/notes", cut)):  # fmt: skip
        call("memory.set", {**BODY, "key": key, "value": value}, local_caller(org), deps)
    embedder.failing = False
    _invoke(client, "embedding_worker")
    with pool.connection() as conn:
        dims = dict(
            conn.execute("SELECT key, dim FROM loom.memories WHERE org = %s", (org,)).fetchall()
        )
    assert dims == {"user/drink": embedder.dim, "user/secret": -1, "user/notes": -1}
    assert not any(digits in s for s in embedder.seen)


def test_an_observation_time_outside_years_1_to_9999_in_utc_is_refused(api, deps, org, pool):
    """GIVEN observation times inside years 1-9999 as written but outside them in UTC
    WHEN each is recorded over HTTP
    THEN each is refused (422) and nothing is stored; a time inside them in UTC is kept.
    """
    writer = Api(api.client, mint_token(deps, org=org, role="writer"))
    body = {**BODY, "session_id": "s-ts", "action": "ran pytest"}

    for ts in ("9999-12-31T23:59:59-15:00", "0001-01-01T00:00:00+15:00"):
        status, data = writer.post("observe.record", ts=ts, **body)
        assert status == 422, (ts, data)
    kept = writer.ok("observe.record", ts="2024-05-01T10:00:00+15:00", **body)

    with pool.connection() as conn:
        count = conn.execute(
            "SELECT count(*) FROM loom.observations WHERE org = %s", (org,)
        ).fetchone()[0]
    assert count == 1 and kept["ts"].startswith("2024-04-30T19:00:00")
