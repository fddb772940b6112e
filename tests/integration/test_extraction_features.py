"""Extraction features: the observation date, context turns, speakers and validity times, size
segments, the coverage sweep, the response cache, verbatim chunks and the digest, and rules the
assistant states about itself."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from tests.integration.test_memory_support import (
    NS,
    NS2,
    Mem,
    audit_rows,
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

SAID = turns(("user", "I moved to Lisbon last month."), ("assistant", "Noted."))
HOME = fact("user", "home city", "The user lives in Lisbon.")
AGENT_BLOCK = "rules the assistant states about its own behaviour"


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def test_a_callers_observation_date_anchors_the_prompt_and_the_row(m, deps, pool):
    """GIVEN a transcript from 2023-05-08
    WHEN it is sent with observation_date 2023-05-08
    THEN observation_date_source is caller, the extraction prompt carries that date, and the
    written row holds it.
    """
    llm = scripted(deps, reply(HOME))

    out = m.extract_ok(SAID, observation_date="2023-05-08")

    assert out["observation_date_source"] == "caller"
    assert "Observation date: 2023-05-08" in llm.prompts[0][1]
    (row,) = [r for r in memory_rows(pool, m.org) if r["kind"] == "fact"]
    assert str(row["observation_date"]) == "2023-05-08"


def test_without_an_observation_date_the_request_times_utc_date_is_used(m, deps, clock):
    """GIVEN a server whose clock reads 22:30 on 1 March at UTC-5 (already 2 March in UTC)
    WHEN a transcript is sent without observation_date
    THEN observation_date_source is request_time and the prompt carries 2024-03-02.
    """
    local = timezone(timedelta(hours=-5))
    clock.now = datetime(2024, 3, 1, 22, 30, tzinfo=local)
    llm = scripted(deps, reply(HOME))

    out = m.extract_ok(SAID)

    assert out["observation_date_source"] == "request_time"
    assert "Observation date: 2024-03-02" in llm.prompts[0][1]


def test_without_an_observation_date_todays_utc_date_is_in_the_prompt(m, deps):
    """GIVEN the server's real clock
    WHEN a transcript is sent without observation_date
    THEN the prompt carries today's UTC date.
    """
    llm = scripted(deps, reply(HOME))
    before = datetime.now(UTC).date()

    out = m.extract_ok(SAID)

    days = {before.isoformat(), datetime.now(UTC).date().isoformat()}
    assert out["observation_date_source"] == "request_time"
    assert any(f"Observation date: {d}" in llm.prompts[0][1] for d in days)


def test_last_messages_are_shown_for_context_and_not_extracted_or_stored(m, deps, pool):
    """GIVEN earlier turns sent as last_messages beside the new messages
    WHEN the transcript is extracted
    THEN the prompt shows the earlier turns apart from the conversation, and only the new
    messages are stored as evidence and kept as chunks.
    """
    earlier = turns(("user", "Earlier I said my sister lives in Oslo."))
    llm = scripted(deps, reply(HOME))

    out = m.extract_ok(SAID, last_messages=earlier)

    context, conversation = llm.prompts[0][1].split("Conversation:")
    assert earlier[0]["content"] in context and earlier[0]["content"] not in conversation
    assert SAID[0]["content"] in conversation
    assert len(out["evidence_ids"]) == len(SAID)
    assert "Oslo" not in str(memory_rows(pool, m.org))
    assert m.ok("memory.recall", as_="viewer", query="Oslo")["turns"] == []


def test_a_turns_speaker_and_timestamp_reach_the_prompt(m, deps):
    """GIVEN a turn with a speaker name and a timestamp
    WHEN it is extracted
    THEN its line in the prompt names the speaker and carries the time.
    """
    messages = [
        {
            "role": "user",
            "name": "Caroline",
            "content": "I adopted a dog.",
            "timestamp": "2023-05-08T13:56:00Z",
        }
    ]
    llm = scripted(deps, reply(HOME))

    m.extract_ok(messages)

    line = next(ln for ln in llm.prompts[0][1].splitlines() if "I adopted a dog." in ln)
    assert "Caroline" in line and "2023-05-08" in line


def _valid_at(pool, org, key):
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT valid_at FROM loom.memories WHERE org = %s AND key = %s", (org, key)
        ).fetchone()
    return row[0]


def test_valid_at_is_the_fallback_validity_time_of_unanchored_facts(m, deps, pool):
    """GIVEN turns without timestamps and a request valid_at
    WHEN a fact is extracted from them
    THEN the written row is valid from the request's valid_at.
    """
    scripted(deps, reply(HOME))

    m.extract_ok(SAID, valid_at="2022-11-01T00:00:00Z")

    assert _valid_at(pool, m.org, "user/home_city") == datetime(2022, 11, 1, tzinfo=UTC)


def test_a_cited_turns_timestamp_anchors_the_fact(m, deps, pool):
    """GIVEN a turn with a timestamp, and a request valid_at as the fallback
    WHEN a fact citing that turn is extracted
    THEN the written row is valid from the turn's timestamp, not the fallback.
    """
    messages = [
        {"role": "user", "content": "I moved to Lisbon.", "timestamp": "2023-05-08T13:56:00Z"}
    ]
    scripted(deps, reply(HOME))

    m.extract_ok(messages, valid_at="2022-11-01T00:00:00Z")

    assert _valid_at(pool, m.org, "user/home_city") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


LONG = [
    {"role": "user", "content": f"Chapter {i}: " + f"story{i} " * 55} for i in range(6)
]  # about 400 characters a turn


def test_a_long_transcript_is_cut_into_size_segments_one_call_each(m, deps, pool):
    """GIVEN memory_extract_size_segment_chars set live to 1000 and six turns of ~400 characters
    WHEN the transcript is sent
    THEN it is cut into several segments (segmenter size), one model call each, every turn
    in exactly one call, and each segment's fact is written.
    """
    llm = scripted(
        deps,
        *[
            reply(fact("story", f"part {i}", f"Story part {i} was told.", indices=[i]))
            for i in range(6)
        ],
    )

    with live_setting(pool, memory_extract_size_segment_chars="1000"):
        out = m.extract_ok(LONG)

    assert out["segmenter"] == "size" and out["segments"] > 1
    assert len(llm.prompts) == out["segments"]
    for turn in LONG:
        assert sum(turn["content"] in user for _, user in llm.prompts) == 1
    assert len(out["written"]) == out["segments"]


def test_a_transcript_under_the_segment_size_is_one_call(m, deps):
    """GIVEN the default segment size
    WHEN the same six turns are sent
    THEN one call reads them whole (segments 1, segmenter whole).
    """
    llm = scripted(deps, reply(HOME))

    out = m.extract_ok(LONG)

    assert (out["segments"], out["segmenter"], len(llm.prompts)) == (1, "whole", 1)


SWEPT = turns(
    ("user", "I moved to Lisbon last month."),
    ("assistant", "Noted."),
    ("user", "Also, my daughter starts school in September."),
    ("assistant", "Got it."),
    ("user", "And I am allergic to peanuts."),
)


def test_the_coverage_sweep_reads_the_uncited_user_turns_once_more(m, deps, pool):
    """GIVEN the coverage sweep set live to on, and a first reply citing only the first turn
    WHEN a transcript of three user turns is sent
    THEN one more call reads the two uncited user turns (and neither the cited one nor the
    assistant's), and the facts of both calls are written.
    """
    llm = scripted(
        deps,
        reply(fact("user", "home city", "The user lives in Lisbon.", indices=[0])),
        reply(fact("user", "allergy", "The user is allergic to peanuts.", indices=[4])),
    )

    with live_setting(pool, memory_extract_coverage_sweep_enabled="true"):
        out = m.extract_ok(SWEPT)

    assert len(llm.prompts) == 2
    sweep = llm.prompts[1][1].split("Conversation:")[1]
    assert SWEPT[2]["content"] in sweep and SWEPT[4]["content"] in sweep
    assert SWEPT[0]["content"] not in sweep and "Noted." not in sweep
    assert sorted(keys(out)) == ["user/allergy", "user/home_city"]


def test_without_the_coverage_sweep_one_call_is_made(m, deps):
    """GIVEN the coverage sweep off (the default)
    WHEN the same transcript is sent with a reply citing only the first turn
    THEN one call is made.
    """
    llm = scripted(deps, reply(fact("user", "home city", "The user lives in Lisbon.", indices=[0])))

    m.extract_ok(SWEPT)

    assert len(llm.prompts) == 1


def test_the_same_prompt_twice_is_answered_from_the_response_cache(m, deps, pool):
    """GIVEN a transcript extracted once for a user in a namespace, and the fact it wrote
    deleted (so the prompt names no memory it did not name the first time)
    WHEN the same transcript is extracted again for them there (the same prompt)
    THEN no new model call is made: the second answers one response-cache hit whose prompt
    tokens equal the first call's tokens_in, no tokens of its own and nothing cached by the
    provider, and writes the cached answer's fact.
    """
    llm = scripted(deps, reply(HOME))

    first = m.extract_ok(SAID, user_id="u1")
    m.ok("memory.delete", key="user/home_city", user_id="u1")
    second = m.extract_ok(SAID, user_id="u1")

    assert len(llm.prompts) == 1
    assert first["tokens_in"] > 0 and first["response_cache_hits"] == 0
    assert (second["response_cache_hits"], second["response_cache_tokens_in"]) == (
        1,
        first["tokens_in"],
    )
    assert (second["tokens_in"], second["tokens_out"], second["cached_tokens_in"]) == (0, 0, 0)
    assert facts_of(pool, m.org, NS) == {"user/home_city": "The user lives in Lisbon."}


@pytest.mark.parametrize("other", [{"namespace": NS2}, {"user_id": "u2"}])
def test_another_namespace_or_user_sending_the_same_prompt_asks_the_model_again(
    m, deps, pool, other
):
    """GIVEN a transcript extracted once for user u1 in a namespace (its answer cached)
    WHEN the same transcript is extracted into another namespace, or for another user
    THEN the model is asked again: the second answers with tokens_in of its own and no
    cached_tokens_in (a hit would tell them u1 sent that text), and the cached answer is kept
    under the namespace and user whose words it read.
    """
    llm = scripted(deps, reply(HOME), reply(HOME))

    first = m.extract_ok(SAID, user_id="u1")
    second = m.extract_ok(SAID, **{"user_id": "u1", **other})

    assert len(llm.prompts) == 2 and llm.prompts[0] == llm.prompts[1]
    assert second["tokens_in"] == first["tokens_in"] and second["cached_tokens_in"] == 0
    with pool.connection() as conn:
        cached = conn.execute(
            "SELECT namespace, user_id FROM loom.extraction_cache WHERE org = %s ORDER BY 1, 2",
            (m.org,),
        ).fetchall()
    assert cached == sorted({(NS, "u1"), (other.get("namespace", NS), other.get("user_id", "u1"))})


def test_another_org_sending_the_same_prompt_is_never_answered_from_the_cache(m, api, deps, pool):
    """GIVEN a transcript extracted once in one org (its answer cached)
    WHEN another org extracts the same transcript into a namespace of the same name
    THEN the model is asked again: the second org answers with tokens_in of its own and no
    cached_tokens_in, so nothing tells it the first org sent that text.
    """
    llm = scripted(deps, reply(HOME), reply(HOME))
    other = Mem.open(api, deps, m.org + "-b")

    first = m.extract_ok(SAID)
    second = other.extract_ok(SAID)

    assert len(llm.prompts) == 2 and llm.prompts[0] == llm.prompts[1]
    assert first["tokens_in"] > 0 and first["cached_tokens_in"] == 0
    assert second["tokens_in"] == first["tokens_in"] and second["cached_tokens_in"] == 0
    assert facts_of(pool, other.org, NS) == {"user/home_city": "The user lives in Lisbon."}


def test_verbatim_chunks_are_capped_and_a_digest_row_is_written(m, deps, pool):
    """GIVEN chunks of about 200 characters, at most 2 a call (live settings), and a reply with
    a session digest
    WHEN five turns of ~150 characters are sent in session s1
    THEN two chunk: rows are written (embedded), the three left out are counted as a chunk_cap
    drop, and a digest:s1 row holds the digest.
    """
    messages = [{"role": "user", "content": f"Turn {i} " + "lorem " * 23 + "end"} for i in range(5)]
    scripted(deps, reply(HOME, digest="The user talked about moving to Lisbon."))

    with live_setting(pool, memory_chunk_chars="200", memory_chunks_max_per_call="2"):
        m.extract_ok(messages, session_id="s1")

    rows = memory_rows(pool, m.org)
    chunks = [r for r in rows if r["kind"] == "chunk"]
    assert len(chunks) == 2
    assert all(r["key"].startswith("chunk:") and not r["unembedded"] for r in chunks)
    assert any(messages[0]["content"] in r["value"] for r in chunks)
    caps = [d for d in drop_rows(pool, m.org) if d["reason"] == "chunk_cap"]
    assert [d["count"] for d in caps] == [3]
    digests = [(r["key"], r["value"]) for r in rows if r["kind"] == "digest"]
    assert digests == [("digest:s1", "The user talked about moving to Lisbon.")]


def test_a_long_turn_sent_twice_is_one_chunk_and_the_request_answers(m, deps, pool):
    """GIVEN chunks capped at 2 a call, and a transcript that repeats one long turn (the same
    pasted build log twice, each a chunk of its own) before a short turn
    WHEN it is extracted
    THEN it answers 200 with the fact created; the repeated turn is one chunk row and the short
    turn the other (no chunk_cap drop); both copies of the turn are stored as evidence.
    """
    big = ("Here is the build log I pasted: " + "lorem ipsum dolor sit amet " * 70).strip()
    messages = turns(("user", big), ("user", big), ("user", "That is all for today."))
    scripted(deps, reply(fact("user", "build", "The user's build uses lorem.", indices=[0])))

    with live_setting(pool, memory_chunks_max_per_call="2"):
        out = m.extract_ok(messages)

    assert keys(out) == ["user/build"] and out["pipeline_errors"] == []
    chunks = sorted(r["value"] for r in memory_rows(pool, m.org) if r["kind"] == "chunk")
    assert chunks == sorted(["user: " + big, "user: That is all for today."])
    assert [d for d in drop_rows(pool, m.org) if d["reason"] == "chunk_cap"] == []
    assert [r["content"] for r in evidence_rows(pool, m.org)] == [m["content"] for m in messages]


def test_a_chunk_or_digest_that_reads_as_high_is_stored_but_never_embedded(m, deps, pool):
    """GIVEN one transcript carrying a password assignment (its digest too) and one that does not
    WHEN both are extracted
    THEN the high chunk and digest are stored without an embedding and never found by search;
    memory.get on the chunk: key serves it with a memory.sensitive_read audit row; the plain
    chunk and digest are embedded.
    """
    high = turns(("user", "The staging admin password=hunter22 until Friday."))
    plain = turns(("user", "The staging server moves to Frankfurt on Friday."))
    scripted(
        deps,
        reply(digest="Shared staging password=hunter22."),
        reply(digest="Staging server moves to Frankfurt."),
    )

    m.extract_ok(high, session_id="s-high")
    m.extract_ok(plain, session_id="s-plain")

    rows = {r["value"]: r for r in memory_rows(pool, m.org)}
    high_chunk = rows["user: " + high[0]["content"]]
    assert high_chunk["unembedded"] is True
    assert rows["Shared staging password=hunter22."]["unembedded"] is True
    assert rows["user: " + plain[0]["content"]]["unembedded"] is False
    assert rows["Staging server moves to Frankfurt."]["unembedded"] is False
    for mode in ("hybrid", "semantic", "lexical"):
        found = m.search("staging password hunter22 Friday", search_mode=mode)
        assert "hunter22" not in str(found), mode
    got = m.get(high_chunk["key"])
    assert got["memory"]["value"] == high_chunk["value"]
    assert len(audit_rows(pool, m.org, "memory.sensitive_read")) == 1


def test_a_deferred_request_names_agent_learnings_too_while_the_setting_is_off(m, deps):
    """GIVEN memory_extract_agent_learnings off (the default)
    WHEN a deferred request sends agent_learnings true
    THEN the answer (deferred) names it in ignored_args, as an inline one does."""
    body = {"namespace": NS, "agent": "bot", "messages": SAID, "agent_learnings": True,
            "defer": True}  # fmt: skip
    status, data, _ = m.api.raw(
        "memory.set_from_messages", json.dumps(body), token=m.tokens["writer"]
    )
    assert status == 200 and data["deferred"] is True, data
    assert "agent_learnings" in data["ignored_args"]


def test_a_record_key_is_bounded_as_every_memory_key_is(m, deps):
    """GIVEN a typed record asked for under a key holding a space
    WHEN the request is sent THEN it answers 422 and nothing is written (a key memory.get
    could never read back)."""
    body = {"namespace": NS, "agent": "bot", "messages": SAID, "memory_key": "rec a",
            "record_schema": {"properties": {"a": {"type": "string"}}}}  # fmt: skip
    status, data, _ = m.api.raw(
        "memory.set_from_messages", json.dumps(body), token=m.tokens["writer"]
    )
    assert status == 422, data


def test_agent_learnings_true_while_the_setting_is_off_is_ignored_and_named(m, deps):
    """GIVEN memory_extract_agent_learnings off (the default)
    WHEN a request sends agent_learnings true
    THEN it is named in ignored_args and the X-Loom-Ignored-Args header, and the extraction
    prompt carries no agent-rules block.
    """
    llm = scripted(deps, reply(HOME))
    body = {"namespace": NS, "agent": "bot", "messages": SAID, "agent_learnings": True}

    status, data, headers = m.api.raw(
        "memory.set_from_messages", json.dumps(body), token=m.tokens["writer"]
    )

    assert status == 200, data
    assert "agent_learnings" in data["ignored_args"]
    header = next(v for k, v in headers.items() if k.lower() == "x-loom-ignored-args")
    assert "agent_learnings" in header.split(",")
    assert AGENT_BLOCK not in llm.prompts[0][0]


def test_the_setting_turns_agent_learnings_on_and_a_request_can_turn_it_off(m, deps, pool):
    """GIVEN memory_extract_agent_learnings set live to on
    WHEN one request leaves agent_learnings unset and another sends false
    THEN the first extraction prompt carries the agent-rules block, the second does not, and
    neither names agent_learnings in ignored_args.
    """
    llm = scripted(deps, reply(HOME), reply(HOME))

    with live_setting(pool, memory_extract_agent_learnings="true"):
        on = m.extract_ok(SAID)
        off = m.extract_ok(turns(("user", "I moved to Lisbon.")), agent_learnings=False)

    assert AGENT_BLOCK in llm.prompts[0][0]
    assert AGENT_BLOCK not in llm.prompts[1][0]
    assert "agent_learnings" not in on["ignored_args"] + off["ignored_args"]


def test_coding_captures_never_use_agent_learnings(m, deps, pool):
    """GIVEN memory_extract_agent_learnings set live to on
    WHEN a coding capture (extra_tags source:claude-code) is extracted
    THEN the extraction prompt carries no agent-rules block.
    """
    llm = scripted(deps, reply(HOME))

    with live_setting(pool, memory_extract_agent_learnings="true"):
        m.extract_ok(SAID, extra_tags=["source:claude-code"])

    assert AGENT_BLOCK not in llm.prompts[0][0]


@pytest.mark.parametrize("setting", ["true", "false"])
def test_a_rule_about_the_agent_is_never_written_as_a_memory(m, deps, pool, setting):
    """GIVEN a reply holding a rule the assistant states about itself (about agent) and a fact
    about the user, with the agent learnings setting on or off
    WHEN it is extracted
    THEN only the user's fact is written; no row holds the rule.
    """
    messages = turns(
        ("user", "Can you refund my $900 order?"),
        ("assistant", "I escalate any refund over $500 to a human."),
    )
    rule = fact(
        "assistant",
        "refund escalation",
        "Refunds over $500 go to a human.",
        indices=[1],
        about="agent",
    )
    order = fact("user", "order value", "The user's order was $900.", indices=[0])
    scripted(deps, reply(rule, order))

    with live_setting(pool, memory_extract_agent_learnings=setting):
        out = m.extract_ok(messages)

    assert keys(out) == ["user/order_value"]
    assert facts_of(pool, m.org) == {"user/order_value": "The user's order was $900."}
