"""memory.set_from_messages: request limits, turns stored as evidence first (a failed
extraction call included), memory.evidence and memory.recall, and the fail-closed extraction
call."""

from __future__ import annotations

import pytest

from chalicelib.providers.llm import LLMError
from tests.integration.test_memory_support import (
    HIGH_KEY_TURN,
    OPENAI_KEY,
    Mem,
    audit_rows,
    evidence_rows,
    fact,
    keys,
    live_setting,
    memory_rows,
    reply,
    scripted,
    turns,
)

ONE = turns(("user", "I moved to Lisbon last month, please bill me in EUR."))
PLAIN = "I also use the OpenAI API for my blog."


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def _msgs(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"turn {i}"} for i in range(n)]


LIMITS = (
    ("no messages", {"messages": []}),
    ("401 messages", {"messages": _msgs(401)}),
    ("21 last_messages", {"last_messages": _msgs(21)}),
    ("201 recalled_keys", {"recalled_keys": [f"user/k{i}" for i in range(201)]}),
    ("101 session_values", {"session_values": [f"value {i}" for i in range(101)]}),
    ("4,097-character instructions", {"extraction_instructions": "x" * 4097}),
    ("17 pipeline_steps", {"pipeline_steps": ["loom.llm_extract"] * 17}),
    ("a bad role", {"messages": [{"role": "robot", "content": "hi"}]}),
    ("a bad observation_date", {"observation_date": "last Tuesday"}),
    (
        "a record_schema without properties",
        {"record_schema": {"type": "object"}, "memory_key": "r/k"},
    ),
)


@pytest.mark.parametrize(("what", "body"), LIMITS, ids=[w for w, _ in LIMITS])
def test_a_request_over_a_limit_is_422_and_stores_nothing(m, deps, pool, what, body):
    """GIVEN a writer token and a model that would answer
    WHEN memory.set_from_messages goes over one of the spec's limits
    THEN it answers 422, calls no model, and stores no evidence and no memory.
    """
    llm = scripted(deps, reply(fact("user", "home city", "Lisbon")))
    body = {"messages": ONE, **body}

    status, data = m.post("memory.set_from_messages", **body)

    assert status == 422, (what, data)
    assert llm.prompts == []
    assert evidence_rows(pool, m.org) == [] and memory_rows(pool, m.org) == []


def test_the_limits_themselves_are_accepted(m, deps):
    """GIVEN a writer token
    WHEN a request sits exactly at every limit (400 messages, 20 last_messages, 200
    recalled_keys, 100 session_values, 4,096-character instructions, 16 steps)
    THEN it answers 200 and stores each of the 400 turns.
    """
    out = m.extract_ok(
        _msgs(400),
        last_messages=_msgs(20),
        recalled_keys=[f"user/k{i}" for i in range(200)],
        session_values=[f"value {i}" for i in range(100)],
        extraction_instructions="x" * 4096,
        pipeline_steps=["loom.fetch_namespace_categories"] * 16,
    )

    assert len(out["evidence_ids"]) == 400


def test_turns_are_stored_as_evidence_and_recalled_by_text_time_and_role(m, pool):
    """GIVEN the stock fake model, which extracts nothing
    WHEN a transcript with timestamps is sent
    THEN nothing is written as a fact, yet every turn is stored as evidence, and memory.recall
    finds them by text (case-blind), by time window and by role.
    """
    messages = [
        {
            "role": "user",
            "content": "We fly to Reykjavik in May.",
            "timestamp": "2024-01-10T09:00:00Z",
        },
        {
            "role": "assistant",
            "content": "Noted: Reykjavik trip.",
            "timestamp": "2024-01-10T09:00:05Z",
        },
        {
            "role": "user",
            "content": "Book the hotel near the harbour.",
            "timestamp": "2024-02-20T10:00:00Z",
        },
    ]

    out = m.extract_ok(messages, session_id="s1", user_id="u1")

    assert out["written"] == []
    assert len(out["evidence_ids"]) == 3
    assert [r["content"] for r in evidence_rows(pool, m.org)] == [x["content"] for x in messages]

    def recall(**kw):
        data = m.ok("memory.recall", as_="viewer", **kw)
        return [t["content"] for t in data["turns"]]

    assert recall(query="reykjavik") == [messages[1]["content"], messages[0]["content"]]
    assert recall(since="2024-02-01T00:00:00Z") == [messages[2]["content"]]
    assert recall(until="2024-02-01T00:00:00Z", role="user") == [messages[0]["content"]]
    assert recall(role="assistant") == [messages[1]["content"]]
    turn = m.ok("memory.recall", as_="viewer", query="harbour")["turns"][0]
    assert (turn["user_id"], turn["session_id"], turn["agent"]) == ("u1", "s1", "a1")


def test_memory_evidence_serves_a_facts_source_turn_with_its_span(m, deps):
    """GIVEN an extraction whose fact cites the second turn with a supporting span
    WHEN memory.evidence is asked for the fact's key
    THEN it returns that turn (role, content, session) and the span, at the row's version.
    """
    messages = turns(
        ("assistant", "Hi! How can I help?"),
        ("user", "I moved to Lisbon last month, please bill me in EUR."),
    )
    scripted(
        deps,
        reply(
            fact(
                "user",
                "billing currency",
                "The user is billed in EUR.",
                indices=[1],
                span="please bill me in EUR",
            )
        ),
    )

    out = m.extract_ok(messages, session_id="s7")
    ev = m.ok("memory.evidence", as_="viewer", key="user/billing_currency")

    assert keys(out) == ["user/billing_currency"]
    (turn,) = ev["turns"]
    assert (turn["role"], turn["content"]) == ("user", messages[1]["content"])
    assert (turn["span"], turn["version"], turn["session_id"]) == ("please bill me in EUR", 1, "s7")
    assert turn["evidence_id"] == out["evidence_ids"][1]

    # Deleted, the memory has no evidence to serve: memory.get finds none either.
    assert m.ok("memory.delete", key="user/billing_currency")["deleted"] is True
    assert m.ok("memory.evidence", as_="viewer", key="user/billing_currency")["turns"] == []


FAILURES = (
    ("the model raises", LLMError("model call failed: upstream 500")),
    ("the client breaks", RuntimeError("connection reset")),
    ("prose instead of JSON", "Sure! The user lives in Lisbon."),
    ("JSON that is not an object", '["Lisbon"]'),
)


@pytest.mark.parametrize(("what", "answer"), FAILURES, ids=[w for w, _ in FAILURES])
def test_a_failed_extraction_call_is_502_writes_no_memory_and_keeps_the_turns(
    m, deps, pool, what, answer
):
    """GIVEN a model whose extraction call fails or answers something that is not a JSON object
    WHEN a transcript is sent
    THEN it answers 502 EXTRACTION_FAILED and writes no fact, chunk or digest, yet the turn was
    stored first: it is an evidence row, and memory.recall finds it.
    """
    scripted(deps, answer)

    status, data = m.extract(ONE, session_id="s-failed")

    assert status == 502, data
    assert data["error"]["code"] == "EXTRACTION_FAILED"
    assert memory_rows(pool, m.org) == []
    assert [(r["session_id"], r["content"]) for r in evidence_rows(pool, m.org)] == [
        ("s-failed", ONE[0]["content"])
    ]
    found = m.ok("memory.recall", as_="viewer", query="Lisbon")["turns"]
    assert [(t["session_id"], t["content"]) for t in found] == [("s-failed", ONE[0]["content"])]


def test_a_failure_in_a_later_segment_writes_nothing_from_the_earlier_ones(m, deps, pool):
    """GIVEN a transcript long enough to be cut into segments, and a model that answers the
    first segment with a fact and fails on the second
    WHEN the transcript is sent
    THEN it answers 502 EXTRACTION_FAILED and the first segment's fact is not written.
    """
    messages = [{"role": "user", "content": f"Paragraph {i}: " + "words " * 80} for i in range(6)]
    scripted(deps, reply(fact("user", "hobby", "The user writes long paragraphs.")), LLMError("x"))

    with live_setting(pool, memory_extract_size_segment_chars="1000"):
        status, data = m.extract(messages)

    assert status == 502 and data["error"]["code"] == "EXTRACTION_FAILED", data
    assert memory_rows(pool, m.org) == []


def test_two_users_sending_one_request_id_each_keep_their_own_turns(m, deps):
    """GIVEN tokens pinned to users u1 and u2, and an extraction by each with the same
    request_id (u1's turn names a secret project, u2's says it likes tea)
    WHEN u2 asks memory.evidence for its fact and memory.recall for "tea"
    THEN u2 gets its own turn both ways and never u1's sentence."""
    u1 = m.token("writer", read_scope="own_user", read_user_id="u1")
    u2 = m.token("writer", read_scope="own_user", read_user_id="u2")
    secret = turns(("user", "My secret project is Bluebird."))
    tea = turns(("user", "I like tea."))
    scripted(deps, reply(fact("user", "project", "The project is Bluebird.", indices=[0])))
    m.extract_ok(secret, token=u1, request_id="r1")
    scripted(deps, reply(fact("user", "drink", "The user likes tea.", indices=[0])))
    m.extract_ok(tea, token=u2, request_id="r1")

    evidence = m.ok("memory.evidence", token=u2, key="user/drink")["turns"]
    assert [t["content"] for t in evidence] == ["I like tea."]
    recalled = m.ok("memory.recall", token=u2, query="tea")
    assert "I like tea." in str(recalled) and "Bluebird" not in str(recalled)


def test_a_retry_under_the_same_request_id_links_the_turns_the_failed_call_stored(m, deps, pool):
    """GIVEN a model that fails twice, then answers a fact citing the turn
    WHEN the same transcript is sent three times under one request_id (a client retrying after
    each 502)
    THEN the first two answer 502 and the turn is stored once, by the first; the third reuses
    it: memory.recall finds it once, and memory.evidence serves it as the fact's source."""
    scripted(
        deps,
        LLMError("upstream 500"),
        LLMError("upstream 500"),
        reply(fact("user", "home city", "The user lives in Lisbon.", indices=[0])),
    )

    assert [m.extract(ONE, request_id="r-9")[0] for _ in range(2)] == [502, 502]
    (stored,) = evidence_rows(pool, m.org)
    out = m.extract_ok(ONE, request_id="r-9")

    assert evidence_rows(pool, m.org) == [stored]
    found = m.ok("memory.recall", as_="viewer", query="Lisbon")["turns"]
    assert [t["content"] for t in found] == [ONE[0]["content"]]
    ev = m.ok("memory.evidence", as_="viewer", key="user/home_city")["turns"]
    assert [(t["evidence_id"], t["content"]) for t in ev] == [
        (out["evidence_ids"][0], ONE[0]["content"])
    ]


def test_a_failed_typed_record_extraction_is_502_and_keeps_the_turn(m, deps, pool):
    """GIVEN a model whose extraction call fails
    WHEN a typed record is asked for
    THEN it answers 502 EXTRACTION_FAILED and writes no record, and the turn is stored: it is
    an evidence row and memory.recall finds it."""
    scripted(deps, LLMError("upstream 500"))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}

    status, data = m.extract(ONE, record_schema=schema, memory_key="profile/home")

    assert status == 502 and data["error"]["code"] == "EXTRACTION_FAILED", data
    assert memory_rows(pool, m.org) == []
    assert [r["content"] for r in evidence_rows(pool, m.org)] == [ONE[0]["content"]]
    found = m.ok("memory.recall", as_="viewer", query="Lisbon")["turns"]
    assert [t["content"] for t in found] == [ONE[0]["content"]]


def test_recall_never_serves_a_turn_that_reads_as_high(m, deps, pool):
    """GIVEN a transcript whose first turn pastes an API key and whose second is plain
    WHEN memory.recall is asked by the key's words, by its prefix, with no query, and by a word
    both turns hold
    THEN no answer holds the key: only the plain turn is a hit, and no memory.sensitive_read
    audit row is written."""
    scripted(deps, reply())
    m.extract_ok(turns(("user", HIGH_KEY_TURN), ("user", PLAIN)))

    def recall(query):
        return [t["content"] for t in m.ok("memory.recall", as_="viewer", query=query)["turns"]]

    assert recall("API key") == []
    assert recall("sk-proj") == []
    assert recall("") == [PLAIN]
    assert recall("OpenAI") == [PLAIN]
    assert audit_rows(pool, m.org, "memory.sensitive_read") == []


def test_recall_reads_past_turns_that_read_as_high_to_fill_its_limit(m, deps):
    """GIVEN two plain turns, then 250 newer turns that each read as high
    WHEN memory.recall asks for the newest 2, then 5, turns
    THEN it answers the two plain turns, newest first, both times."""
    plain = [
        {"role": "user", "content": f"Plain note {i}.", "timestamp": f"2024-01-0{i + 1}T00:00:00Z"}
        for i in range(2)
    ]
    high = [
        {
            "role": "user",
            "content": f"Note {i}: the staging password=hunter{i}x22.",
            "timestamp": f"2024-02-01T{i // 60:02d}:{i % 60:02d}:00Z",
        }
        for i in range(250)
    ]
    scripted(deps, reply())
    m.extract_ok(plain + high)

    for limit in (2, 5):
        found = m.ok("memory.recall", as_="viewer", query="", limit=limit)["turns"]
        assert [t["content"] for t in found] == ["Plain note 1.", "Plain note 0."], limit


def test_evidence_lists_a_turn_that_reads_as_high_with_its_text_blank(m, deps, pool):
    """GIVEN a fact cited from a turn that pastes an API key and from a plain turn, with a span
    that quotes the key
    WHEN memory.evidence is asked for the fact
    THEN both turns are listed; the key's turn has its text blank, the plain turn its text;
    the span is blank on both; no memory.sensitive_read audit row is written."""
    scripted(
        deps,
        reply(
            fact(
                "user",
                "openai account",
                "The user has an OpenAI account.",
                indices=[0, 1],
                span=f"API key is {OPENAI_KEY}",
            )
        ),
    )
    m.extract_ok(turns(("user", HIGH_KEY_TURN), ("user", PLAIN)))

    ev = m.ok("memory.evidence", as_="viewer", key="user/openai_account")["turns"]

    assert [(t["content"], t["span"]) for t in ev] == [("", ""), (PLAIN, "")]
    assert OPENAI_KEY not in str(ev)
    assert audit_rows(pool, m.org, "memory.sensitive_read") == []


def test_a_user_turn_that_reads_as_high_is_never_sent_to_the_embedder(m, deps, embedder):
    """GIVEN a transcript whose first user turn pastes an API key and whose second is plain
    WHEN it is extracted
    THEN the embedder never receives the key: the existing-memories query is made from the
    plain turn alone (and the chunk holding both turns is not embedded)."""
    scripted(deps, reply())

    m.extract_ok(turns(("user", HIGH_KEY_TURN), ("user", PLAIN)))

    assert PLAIN in embedder.seen
    assert not [t for t in embedder.seen if OPENAI_KEY in t]


def test_a_different_transcript_under_a_reused_request_id_keeps_its_own_turns(m, deps, pool):
    """GIVEN two writer tokens (two integrations) and an extraction by each for user u9 with
    the same request_id, each transcript its own
    WHEN the second asks memory.evidence for its fact and memory.recall for its words
    THEN both transcripts' turns are stored; each fact traces to its own turn, and the second
    turn is recalled."""
    a = m.token("writer", subject="integration-a")
    b = m.token("writer", subject="integration-b")
    scripted(deps, reply(fact("user", "city", "The user lives in Lisbon.")))
    first = m.extract_ok(turns(("user", "I live in Lisbon.")), token=a, request_id="req-1",
                         user_id="u9")  # fmt: skip
    scripted(deps, reply(fact("user", "pet", "The user has a cat named Miso.")))
    second = m.extract_ok(turns(("user", "My cat is called Miso.")), token=b, request_id="req-1",
                          user_id="u9")  # fmt: skip

    def evidence(key):
        turns_ = m.ok("memory.evidence", as_="viewer", key=key, user_id="u9")["turns"]
        return [t["content"] for t in turns_]

    assert sorted(r["content"] for r in evidence_rows(pool, m.org)) == [
        "I live in Lisbon.",
        "My cat is called Miso.",
    ]
    assert first["evidence_ids"] != second["evidence_ids"]
    assert evidence("user/pet") == ["My cat is called Miso."]
    assert evidence("user/city") == ["I live in Lisbon."]
    found = m.ok("memory.recall", as_="viewer", query="Miso", user_id="u9")["turns"]
    assert [t["content"] for t in found] == ["My cat is called Miso."]


def test_a_replay_of_the_same_request_reuses_its_stored_turns(m, deps, pool):
    """GIVEN an extraction sent with request_id r-7
    WHEN the same transcript is sent again under r-7 (a replay)
    THEN the replay gets the same evidence ids and no turn is stored twice."""
    scripted(deps, reply(), reply())
    first = m.extract_ok(ONE, request_id="r-7")
    again = m.extract_ok(ONE, request_id="r-7")

    assert again["evidence_ids"] == first["evidence_ids"]
    assert len(evidence_rows(pool, m.org)) == 1


def test_a_turn_whose_speakers_name_reads_as_high_is_no_recall_hit(m):
    """GIVEN a transcript turn whose speaker's name holds a password assignment, beside a
    plain one
    WHEN memory.recall looks for their words
    THEN only the plain turn comes back: a name is served with the turn."""
    messages = [
        {"role": "user", "name": "password=hunter2secret", "content": "hello from the pier"},
        {"role": "user", "name": "ann", "content": "hello from the harbour"},
    ]
    m.extract_ok(messages, session_id="s1", user_id="u1")
    turns = m.ok("memory.recall", as_="viewer", query="hello", user_id="u1")["turns"]
    assert [t["name"] for t in turns] == ["ann"]
