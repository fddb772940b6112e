"""What extraction drops before writing: echoes of what the session was served or carried,
activity narration, non-durable coding facts, verified non-durable facts and stored duplicates;
drops are counted in loom.memory_drops and summed by `loom drops`."""

from __future__ import annotations

import time
import uuid
from collections import deque
from dataclasses import dataclass

import pytest

from chalicelib import cli
from chalicelib.deps import set_deps
from chalicelib.providers.llm import LLMError, ScriptedLLM
from chalicelib.workers.observe_extract import distil_sessions
from tests.integration.test_memory_support import (
    NS,
    Mem,
    drop_rows,
    evidence_rows,
    fact,
    facts_of,
    keys,
    live_setting,
    memory_rows,
    reply,
    scripted,
    turns,
)

SAID = turns(("user", "Let me tell you a few things about me and the project."))
HOME = fact("user", "home city", "The user lives in Lisbon.")


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def _reasons(pool, org):
    return {(d["stage"], d["reason"]): d["count"] for d in drop_rows(pool, org)}


def test_a_fact_carrying_a_served_keys_subject_is_dropped_as_a_recall_echo(m, deps, pool):
    """GIVEN a session that was served the key atlas/deadline
    WHEN the extraction returns a fact about atlas and one about the user's city
    THEN the atlas fact is dropped (counted as recall_echo) and the city fact is written.
    """
    scripted(deps, reply(fact("atlas", "launch date", "Atlas launches on 2024-06-01."), HOME))

    out = m.extract_ok(SAID, recalled_keys=["atlas/deadline"])

    assert keys(out) == ["user/home_city"]
    assert _reasons(pool, m.org)[("loom.drop_recall_echoes", "recall_echo")] == 1


def test_a_generic_served_key_drops_only_facts_about_its_attribute(m, deps):
    """GIVEN a session that was served user/drink (a generic subject)
    WHEN the extraction returns two drink facts, a city fact and a pet fact about the user
    THEN only the drink facts are dropped.
    """
    scripted(
        deps,
        reply(
            fact("user", "drink", "The user drinks oat milk lattes."),
            fact("user", "favorite drink", "Flat whites are the user's favourite."),
            HOME,
            fact("user", "pet", "The user has a cat called Miso."),
        ),
    )

    out = m.extract_ok(SAID, recalled_keys=["user/drink"])

    assert sorted(keys(out)) == ["user/home_city", "user/pet"]


def test_a_fact_quoting_a_session_value_is_dropped_as_a_session_echo(m, deps, pool):
    """GIVEN a session whose Loom calls carried "The user prefers oat milk lattes"
    WHEN the extraction returns a fact quoting it (in other case and punctuation) and another
    THEN the quoting fact is dropped (counted as session_echo) and the other is written.
    """
    scripted(
        deps,
        reply(fact("user", "coffee", "the user PREFERS oat-milk lattes, every morning."), HOME),
    )

    out = m.extract_ok(SAID, session_values=["The user prefers oat milk lattes"])

    assert keys(out) == ["user/home_city"]
    assert _reasons(pool, m.org)[("loom.drop_session_echoes", "session_echo")] == 1


def test_activity_narration_is_dropped_unless_it_states_an_outcome(m, deps, pool):
    """GIVEN an extraction returning narration of tool activity, with and without an outcome
    WHEN the transcript is sent (not a coding capture)
    THEN "User read lines 1-1000 of X" is dropped (activity_narration) and the narration that
    says what it found is written.
    """
    scripted(
        deps,
        reply(
            fact("session", "reading", "User read lines 1-1000 of src/app.py."),
            fact(
                "cache",
                "bug",
                "User ran the test suite and found the cache key ignored the tenant.",
            ),
        ),
    )

    out = m.extract_ok(SAID)

    assert keys(out) == ["cache/bug"]
    assert _reasons(pool, m.org)[("loom.drop_activity_narration", "activity_narration")] == 1


CODING_FACTS = (
    fact("project", "test status", "The tests are passing right now."),
    fact("project", "ci", "The CI was green when 2.3 shipped."),
    fact("project", "next step", "I will refactor the parser next."),
    fact("project", "git", "Committed the fix and pushed it to main."),
    fact("project", "release 2.3", "Release 2.3 changed the default port to 8080."),
)


@pytest.mark.parametrize(
    "source", ["source:claude-code", "source:codex", "source:cursor", "source:observe"]
)
def test_a_coding_capture_drops_non_durable_facts(m, deps, pool, source):
    """GIVEN a coding capture (extra_tags carry a coding client's source tag, or the observe
    plane's replay tag)
    WHEN the extraction returns a status snapshot, a CI state, a first-person plan,
    housekeeping and what a release changed
    THEN only what the release changed is written, tagged with the source.
    """
    scripted(deps, reply(*CODING_FACTS))

    out = m.extract_ok(SAID, extra_tags=[source])

    assert keys(out) == ["project/release_2_3"]
    assert source in m.get("project/release_2_3")["memory"]["tags"]
    stage = {r for (s, r) in _reasons(pool, m.org) if s == "loom.drop_non_durable"}
    assert stage == {"status_snapshot", "first_person_plan", "housekeeping"}


@pytest.mark.parametrize(
    "value",
    [
        "Release 2.0 cleaned up the legacy auth module.",
        "Release 3.1 pushed the minimum Python version to 3.11.",
    ],
)
def test_a_coding_capture_keeps_a_release_change_named_with_a_chore_verb(m, deps, pool, value):
    """GIVEN a coding capture
    WHEN the extraction returns what a release changed, told with a verb a chore also uses
    ("pushed", "cleaned up")
    THEN it is written: the housekeeping rule matches someone doing a chore, not the verb.
    """
    scripted(deps, reply(fact("project", "release change", value)))

    out = m.extract_ok(SAID, extra_tags=["source:claude-code"])

    assert keys(out) == ["project/release_change"]


@pytest.mark.parametrize(
    "value",
    [
        "I pushed the branch to origin.",
        "The branch was rebased onto main.",
        "We just committed it.",
    ],
)
def test_a_coding_capture_drops_a_chore_told_in_any_person(m, deps, pool, value):
    """GIVEN a coding capture
    WHEN the extraction returns a chore told as what someone did, or what was done
    THEN it is dropped as housekeeping.
    """
    scripted(deps, reply(fact("project", "git", value)))

    out = m.extract_ok(SAID, extra_tags=["source:claude-code"])

    assert keys(out) == []
    assert _reasons(pool, m.org)[("loom.drop_non_durable", "housekeeping")] == 1


def test_a_fact_value_cut_to_10000_characters_is_counted_as_a_drop(m, deps, pool):
    """GIVEN an extraction answer whose fact value runs past 10,000 characters
    WHEN it is written
    THEN the value is stored cut to 10,000 characters and the cut is counted in
    loom.memory_drops (truncation).
    """
    long_value = "The user keeps this note: " + "lorem ipsum " * 1000
    scripted(deps, reply(fact("user", "note", long_value)))

    m.extract_ok(SAID)

    assert facts_of(pool, m.org)["user/note"] == long_value.strip()[:10_000]
    assert _reasons(pool, m.org)[("loom.llm_extract", "truncation")] == 1


def test_a_capture_that_is_not_coding_keeps_those_facts(m, deps):
    """GIVEN a transcript from a chat client (extra_tags without a coding source)
    WHEN the extraction returns the same status, plan and housekeeping facts
    THEN every one of them is written.
    """
    scripted(deps, reply(*CODING_FACTS))

    out = m.extract_ok(SAID, extra_tags=["source:webchat"])

    assert len(out["written"]) == len(CODING_FACTS)


def test_a_coding_fact_stated_twice_in_one_batch_is_dropped_as_a_repeat(m, deps, pool):
    """GIVEN a coding capture whose extraction states one durable fact twice, under two keys,
    in different case and spacing
    WHEN it is extracted
    THEN the first is written and the second dropped, counted as in_batch_repeat."""
    scripted(
        deps,
        reply(
            fact("project", "port", "Release 2.3 changed the default port to 8080."),
            fact("service", "port", "release 2.3  changed the default PORT to 8080."),
        ),
    )
    out = m.extract_ok(SAID, extra_tags=["source:claude-code"])
    assert keys(out) == ["project/port"]
    assert _reasons(pool, m.org)[("loom.drop_non_durable", "in_batch_repeat")] == 1


DURABLE = (
    fact("project", "release 2.3", "Release 2.3 changed the default port to 8080."),
    fact("project", "config", "The service reads its config from /etc/atlas.toml."),
    fact("project", "pagination", "The API uses cursor pagination."),
)


@pytest.fixture
def verifiers(pool, org):
    """Two verifier models (named per test, so no cached verdict answers for them)."""
    names = [f"verify-a-{org}", f"verify-b-{org}"]
    with live_setting(pool, memory_extract_verify_models=",".join(names)):
        yield names


@dataclass
class SlowVerifiers(ScriptedLLM):
    """Answers as scripted, each call to one of the `slow` models two seconds late."""

    slow: frozenset[str] = frozenset()

    def complete(self, system, user, *, json_output=False, model=None):
        if model in self.slow:
            time.sleep(2.0)
        return super().complete(system, user, json_output=json_output, model=model)


def test_verify_durable_drops_what_every_verifier_calls_non_durable(m, deps, pool, verifiers):
    """GIVEN a coding capture and two verifier models that disagree on one fact each
    WHEN the extraction returns three facts
    THEN one more call per verifier is made, and only the fact both call non-durable is dropped.
    """
    llm = scripted(deps, reply(*DURABLE), '{"non_durable": [0, 1]}', '{"non_durable": [1, 2]}')

    out = m.extract_ok(SAID, extra_tags=["source:claude-code"])

    assert len(llm.prompts) == 3
    assert all(f["value"] in llm.prompts[1][1] for f in DURABLE)
    assert sorted(keys(out)) == ["project/pagination", "project/release_2_3"]
    assert _reasons(pool, m.org)[("loom.verify_durable", "non_durable")] == 1


def test_verify_durable_runs_for_coding_captures_only(m, deps, verifiers):
    """GIVEN verifier models configured
    WHEN a transcript that is not a coding capture is extracted
    THEN no verifier is asked and every fact is written.
    """
    llm = scripted(
        deps, reply(*DURABLE), '{"non_durable": [0, 1, 2]}', '{"non_durable": [0, 1, 2]}'
    )

    out = m.extract_ok(SAID)

    assert len(llm.prompts) == 1
    assert len(out["written"]) == 3


def test_verify_durable_fails_open(m, deps, verifiers):
    """GIVEN a coding capture and a verifier whose call fails
    WHEN the extraction returns three facts
    THEN loom.verify_durable is named in pipeline_errors and every fact is written.
    """
    scripted(deps, reply(*DURABLE), LLMError("verifier down"), '{"non_durable": [0, 1, 2]}')

    out = m.extract_ok(SAID, extra_tags=["source:codex"])

    assert any(e.startswith("loom.verify_durable") for e in out["pipeline_errors"]), out
    assert len(out["written"]) == 3


def test_a_verifier_slower_than_its_timeout_keeps_every_fact(m, deps, pool, verifiers):
    """GIVEN a coding capture, LOOM_MEMORY_EXTRACT_VERIFY_TIMEOUT_S at 0.2 s and verifiers that
    take two seconds (and would call every fact non-durable)
    WHEN the extraction returns three facts
    THEN the request is not held for the verifier: every fact is written and the timeout is
    named in pipeline_errors."""
    replies = [reply(*DURABLE), '{"non_durable": [0, 1, 2]}', '{"non_durable": [0, 1, 2]}']
    deps._llm = SlowVerifiers(
        replies=deque(replies), name=f"scripted-{uuid.uuid4().hex[:8]}", slow=frozenset(verifiers)
    )
    started = time.monotonic()
    with live_setting(pool, memory_extract_verify_timeout_s="0.2"):
        out = m.extract_ok(SAID, extra_tags=["source:claude-code"])
    assert time.monotonic() - started < 1.5
    assert len(out["written"]) == 3
    assert any("verify_durable:timeout" in e for e in out["pipeline_errors"]), out


def test_a_malformed_fact_is_counted_as_a_parse_drop_and_the_rest_written(m, deps, pool):
    """GIVEN a reply whose facts include one without a subject and one without a value
    WHEN it is extracted
    THEN the well-formed fact is written and the two malformed ones are counted as parse drops.
    """
    no_subject = {"attribute": "drink", "value": "tea"}
    no_value = {"subject": "user", "attribute": "drink", "value": "  "}
    scripted(deps, reply(no_subject, no_value, HOME))

    out = m.extract_ok(SAID)

    assert keys(out) == ["user/home_city"]
    assert _reasons(pool, m.org)[("loom.llm_extract", "parse")] == 2


def test_hash_dedup_drops_a_stored_content_and_a_repeat_in_the_batch(m, deps, pool):
    """GIVEN a stored memory "The user drinks black coffee."
    WHEN the extraction restates it under another key (other case, spacing, no period) and
    states one new fact twice under two keys
    THEN the restatement is dropped, the new fact is written once, and the drops are counted.
    """
    m.set("user/coffee", "The user drinks black coffee.")
    scripted(
        deps,
        reply(
            fact("user", "morning drink", "the user drinks  BLACK coffee"),
            fact("user", "home city", "The user lives in Lisbon."),
            fact("user", "city", "The user lives in Lisbon."),
        ),
    )

    out = m.extract_ok(SAID)

    assert keys(out) == ["user/home_city"]
    assert set(facts_of(pool, m.org)) == {"user/coffee", "user/home_city"}
    assert _reasons(pool, m.org)[("loom.hash_dedup", "duplicate")] == 2


@pytest.fixture
def cli_env(monkeypatch, database_url, org, deps):
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    monkeypatch.setenv("LOOM_ORG", org)
    yield
    set_deps(deps)  # the CLI swaps the process-wide Deps


def test_loom_drops_sums_the_namespaces_drops_by_stage_and_reason(m, deps, pool, cli_env, capsys):
    """GIVEN two extractions in a namespace that each drop a recall echo, one also a narration
    WHEN `loom drops --namespace NS` runs, and for a namespace with no drops
    THEN it prints one line per stage and reason with the summed count (2 recall echoes, 1
    narration) and no tokens spent on them (the model's answers parsed); the other namespace
    has none.
    """
    echo = fact("atlas", "launch date", "Atlas launches in June.")
    narration = fact("session", "reading", "User read lines 1-1000 of README.md.")
    scripted(deps, reply(echo, HOME), reply(echo, narration))
    m.extract_ok(SAID, recalled_keys=["atlas/deadline"])
    m.extract_ok(turns(("user", "More about atlas.")), recalled_keys=["atlas/deadline"])
    assert sum(d["count"] for d in drop_rows(pool, m.org) if d["reason"] == "recall_echo") == 2

    assert cli.main(["drops", "--namespace", NS]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ["loom.drop_recall_echoes", "recall_echo", "2", "0", "0"] in [ln.split() for ln in lines]
    assert ["loom.drop_activity_narration", "activity_narration", "1", "0", "0"] in [
        ln.split() for ln in lines
    ]

    assert cli.main(["drops", "--namespace", "ns-quiet", "--hours", "1"]) == 0
    assert "no drops" in capsys.readouterr().out


AGENT_BLOCK = "rules the assistant states about its own behaviour"


def test_an_observe_plane_replay_is_a_coding_capture(m, deps, pool):
    """GIVEN a session's tool observations recorded and crystallized, and agent learnings and
    the observe_extract worker switched on
    WHEN the worker replays the session and the extraction returns a status snapshot, a CI
    state, a first-person plan, housekeeping and what a release changed
    THEN, as for any coding capture, only what the release changed is written, the drops are
    counted under loom.drop_non_durable, and the extraction prompt carries no agent-rules
    block."""
    action = f"ran pytest in {m.org}"
    m.ok("observe.record", session_id="s-obs", tool="bash", action=action, output="3 passed")
    m.ok("observe.crystallize", session_id="s-obs")
    # The pass reads every org's crystallized sessions: every call gets the same answer.
    llm = ScriptedLLM(replies=deque([reply(*CODING_FACTS)] * 50), name=f"s-{uuid.uuid4().hex}")
    deps._llm = llm

    with live_setting(
        pool,
        observe_extract_enabled="true",
        observe_extract_max_sessions_per_pass="1000",
        memory_extract_agent_learnings="true",
    ):
        distil_sessions(deps)

    assert facts_of(pool, m.org) == {
        "project/release_2_3": "Release 2.3 changed the default port to 8080."
    }
    stage = {r for (s, r) in _reasons(pool, m.org) if s == "loom.drop_non_durable"}
    assert stage == {"status_snapshot", "first_person_plan", "housekeeping"}
    (prompt,) = [p for p in llm.prompts if action in p[1]]
    assert AGENT_BLOCK not in prompt[0]


def test_model_text_the_database_cannot_hold_is_dropped_and_the_rest_written(m, deps, pool):
    """GIVEN an extraction answer carrying U+0000 or a lone surrogate in a fact's value, in a
    fact's span, in a forget request and in the digest, beside a clean fact
    WHEN it is extracted
    THEN it answers 200: the clean fact and the fact with the bad span are written (that span
    blank), the bad value's fact, the bad forget request and the bad digest are left out, each
    counted as a loom.llm_extract parse drop; nothing is named in pipeline_errors."""
    m.set("user/drink", "The user drinks tea.")
    scripted(
        deps,
        reply(
            fact("user", "city", "The user lives in Lisbon.", span="Lis\u0000bon"),
            fact("user", "pet", "The user's cat is Mi\u0000so."),
            fact("user", "car", "The user drives a \ud800 Fiat."),
            fact("user", "job", "The user is a nurse."),
            forget=[{"subject": "user", "attribute": "drink", "text": "te\u0000a"}],
            digest="The user talked about Lis\u0000bon.",
        ),
    )

    out = m.extract_ok(SAID, session_id="s-nul")

    assert sorted(keys(out)) == ["user/city", "user/job"]
    assert out["pipeline_errors"] == [] and out["forgotten_keys"] == []
    ev = m.ok("memory.evidence", as_="viewer", key="user/city")["turns"]
    assert [(t["content"], t["span"]) for t in ev] == [(SAID[0]["content"], "")]
    assert facts_of(pool, m.org)["user/drink"] == "The user drinks tea."
    assert not [r for r in memory_rows(pool, m.org) if r["kind"] == "digest"]
    parse = [d for d in drop_rows(pool, m.org) if d["stage"] == "loom.llm_extract"]
    assert {d["reason"] for d in parse} == {"parse"}
    assert sum(d["count"] for d in parse) == 5  # two facts, a span, a forget and a digest
    assert len(evidence_rows(pool, m.org)) == 1
