"""Bad input to the conversation ops is refused with a 4xx, never a 500, and changes nothing."""

from __future__ import annotations

import base64
import json

import pytest

from tests.integration.test_conversation_support import NS, Tenant, snapshot

VALID = {
    "conversation.set_logging": {"enabled": True},
    "conversation.append": {"agent": "a1", "thread_id": "th-1", "role": "user", "content": "hi"},
    "conversation.create": {"agent": "a1", "thread_id": "th-1", "title": "T"},
    "conversation.update": {"agent": "a1", "thread_id": "th-1", "title": "T2"},
    "conversation.get": {"agent": "", "thread_id": "th-1", "include_messages": True},
    "conversation.list": {"agent": "", "thread_id": "th-1"},
    "conversation.threads": {},
    "conversation.search": {"agent": "*", "query": "hello"},
    "conversation.delete": {"agent": "", "thread_id": "th-1", "confirm_thread_id": "th-1"},
}
DROP = object()  # marks a field removed from the valid body
BIG_METADATA = {"blob": "x" * (64 * 1024 + 1)}

BAD = [
    # conversation.append
    ("conversation.append", {"content": 123}),
    ("conversation.append", {"content": None}),
    ("conversation.append", {"content": ["hi"]}),
    ("conversation.append", {"thread_id": ["th-1"]}),
    ("conversation.append", {"thread_id": ""}),
    ("conversation.append", {"thread_id": "t" * 257}),
    ("conversation.append", {"msg_id": "m" * 257}),
    # Compaction alone writes summary- ids (a client's would be taken for a summary).
    ("conversation.append", {"msg_id": "summary-bob-note", "role": "system"}),
    ("conversation.append", {"msg_id": "summary-x"}),
    ("conversation.append", {"role": "robot"}),
    ("conversation.append", {"role": "USER"}),
    ("conversation.append", {"tokens": -1}),
    ("conversation.append", {"tokens": "many"}),
    ("conversation.append", {"tokens": 1.5}),
    ("conversation.append", {"tokens": 2**31}),
    ("conversation.append", {"metadata": [1, 2]}),
    ("conversation.append", {"metadata": "{}"}),
    ("conversation.append", {"metadata": BIG_METADATA}),
    ("conversation.append", {"user_id": 7}),
    ("conversation.append", {"agent": DROP}),
    ("conversation.append", {"thread_id": DROP}),
    ("conversation.append", {"role": DROP}),
    ("conversation.append", {"content": DROP}),
    ("conversation.append", {"namespace": "has space"}),
    # conversation.set_logging
    ("conversation.set_logging", {"enabled": DROP}),
    ("conversation.set_logging", {"enabled": "maybe"}),
    ("conversation.set_logging", {"enabled": None}),
    ("conversation.set_logging", {"enabled": [True]}),
    # conversation.create / update
    ("conversation.create", {"metadata": BIG_METADATA}),
    ("conversation.create", {"metadata": "not a dict"}),
    ("conversation.create", {"title": "t" * 1001}),
    ("conversation.create", {"thread_id": DROP}),
    ("conversation.update", {"metadata": BIG_METADATA}),
    ("conversation.update", {"metadata": [1]}),
    ("conversation.update", {"title": 5}),
    ("conversation.update", {"thread_id": DROP}),
    # reads
    ("conversation.get", {"include_messages": "sometimes"}),
    ("conversation.get", {"order": "sideways"}),
    ("conversation.get", {"offset": -1}),
    ("conversation.get", {"limit": "ten"}),
    ("conversation.get", {"thread_id": DROP}),
    ("conversation.list", {"limit": 0}),
    ("conversation.list", {"cursor": 5}),
    ("conversation.list", {"run_id": ["r-1"]}),
    ("conversation.threads", {"fields": [1]}),
    ("conversation.threads", {"window_days": "month"}),
    ("conversation.search", {"query": ""}),
    ("conversation.search", {"query": DROP}),
    ("conversation.search", {"top_k": 0}),
    ("conversation.search", {"top_k": 201}),
    ("conversation.search", {"role": "robot"}),
    ("conversation.search", {"namespace_scope": "everything"}),
    ("conversation.search", {"thread_id": 12}),
    # conversation.delete
    ("conversation.delete", {"confirm_thread_id": DROP}),
    ("conversation.delete", {"confirm_thread_id": 5}),
    ("conversation.delete", {"thread_id": DROP}),
]


@pytest.fixture
def t(api, deps, org):
    tenant = Tenant.open(api, deps, org)
    tenant.ok("conversation.create", agent="a1", thread_id="th-1", title="Original")
    tenant.append("th-1", "hello there", agent="a1")
    return tenant


def _body(op: str, change: dict) -> dict:
    body = {"namespace": NS, **VALID[op]}
    for key, value in change.items():
        if value is DROP:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def _label(case) -> str:
    op, change = case
    parts = [f"{k}=<missing>" if v is DROP else f"{k}={str(v)[:12]}" for k, v in change.items()]
    return f"{op.split('.')[1]}:{','.join(parts)}"


@pytest.mark.parametrize(("op", "change"), BAD, ids=[_label(c) for c in BAD])
def test_bad_input_is_a_422_and_changes_nothing(t, pool, org, op, change):
    """GIVEN a namespace with a titled thread and a turn
    WHEN a conversation op gets a field of the wrong type, out of bounds, not in its enum,
    oversized (metadata over 64 KiB) or missing
    THEN it answers 422 with a JSON error naming the problem, and nothing stored changes.
    """
    before = snapshot(pool, org)
    status, body = t.api.raw(op, json.dumps(_body(op, change)), token=t.tokens["org_admin"])[:2]
    assert status == 422, (op, change, status, body)
    assert body["error"]["code"] == "validation_error"
    assert body["error"]["message"]
    assert snapshot(pool, org) == before


def test_metadata_just_under_64_kib_is_accepted(t):
    """GIVEN metadata whose JSON is just under 64 KiB
    WHEN it is appended with a turn
    THEN the append is stored (the bound is the size, not the presence, of metadata).
    """
    metadata = {"blob": "x" * (64 * 1024 - 100)}
    out = t.append("th-1", "with a big attachment", metadata=metadata)
    assert out["stored"] is True


def test_nul_characters_are_refused_not_500(t, pool, org, embedder):
    """GIVEN a namespace with a thread
    WHEN ops get text holding a NUL character (content, metadata, thread id, title, agent, a
    cursor naming one)
    THEN each answers 400 or 422, never 500, and nothing stored changes.
    """
    cursor = base64.urlsafe_b64encode(json.dumps(["2024-01-01T00:00:00+00:00", "m\x00"]).encode())
    cases = [
        ("conversation.append", {"content": "a\x00b"}),
        ("conversation.append", {"metadata": {"k": "a\x00b"}}),
        ("conversation.append", {"thread_id": "th\x00"}),
        ("conversation.create", {"title": "a\x00b"}),
        ("conversation.get", {"thread_id": "th\x00"}),
        ("conversation.list", {"cursor": cursor.decode()}),
        ("conversation.threads", {"agent": "a\x00"}),
        ("conversation.search", {"agent": "a\x00"}),
    ]
    before = snapshot(pool, org)
    statuses = {}
    for op, change in cases:
        status, _ = t.post(op, **_body(op, change))
        statuses[_label((op, change))] = status
    assert all(s in (400, 422) for s in statuses.values()), statuses
    assert snapshot(pool, org) == before


@pytest.mark.parametrize(
    "fragment",
    [
        '"metadata": {"k": NaN}',
        '"metadata": {"k": [Infinity]}',
        '"metadata": {"k": -Infinity}',
        '"metadata": {"k": 1e400}',
        '"metadata": {"k": "\\ud800"}',
        '"metadata": {"\\udfff": 1}',
        '"content": "half a pair \\ud83d"',
    ],
)
@pytest.mark.parametrize("op", [f"conversation.{op}" for op in ("append", "create", "update")])
def test_non_finite_numbers_and_lone_surrogates_are_refused_not_500(t, pool, org, op, fragment):
    """GIVEN a namespace with a thread
    WHEN append, create or update gets a body whose JSON holds NaN, an infinity (written or
    overflowing) or a lone UTF-16 surrogate, in metadata (a value or a key) or in text
    THEN each answers 422 validation_error naming what is wrong, and nothing stored changes.
    """
    t.append("th-1", "a turn already there")
    before = snapshot(pool, org)
    raw = json.dumps(_body(op, {}))[:-1] + ", " + fragment + "}"
    status, body = t.api.raw(op, raw, token=t.tokens["org_admin"])[:2]
    assert status == 422, (status, body)
    assert body["error"]["code"] == "validation_error"
    assert any(w in body["error"]["message"] for w in ("finite", "surrogate")), body
    assert snapshot(pool, org) == before


def test_deeply_nested_json_is_refused_not_500(t, pool, org):
    """GIVEN a namespace that records
    WHEN append gets metadata nested 2,000 arrays deep
    THEN it answers 400 or 422, never 500, and nothing stored changes.
    """
    before = snapshot(pool, org)
    nested = "[" * 2000 + "]" * 2000
    raw = json.dumps(_body("conversation.append", {}))[:-1] + f', "metadata": {{"k": {nested}}}}}'
    status, body = t.api.raw("conversation.append", raw, token=t.tokens["writer"])[:2]
    assert status in (400, 422), (status, body)
    assert snapshot(pool, org) == before


@pytest.mark.parametrize("op", ["conversation.append", "conversation.create"])
def test_metadata_nested_past_the_bound_is_refused_so_no_read_of_it_can_fail(t, pool, org, op):
    """GIVEN a namespace with a thread
    WHEN append or create gets metadata nested 260 levels deep (JSON parses it; an answer
    holding it could not be serialised back), or 64 levels (past the bound)
    THEN each answers 422 naming the bound and nothing stored changes; metadata nested 60
    levels is kept, and the thread still reads back whole.
    """
    t.append("th-1", "a turn already there")
    before = snapshot(pool, org)

    def nested(depth: int) -> dict:
        value: dict = {"leaf": 1}
        for _ in range(depth - 1):
            value = {"k": value}
        return value

    for depth in (260, 64):
        status, body = t.post(op, **_body(op, {"metadata": nested(depth)}))
        assert status == 422, (depth, status, body)
        assert "nest at most 64 levels" in body["error"]["message"], body
    assert snapshot(pool, org) == before

    status, _ = t.post(op, **_body(op, {"metadata": nested(60)}))
    assert status == 200
    status, got = t.post("conversation.get", **_body("conversation.get", {}))
    assert status == 200, got


def test_a_deferred_extraction_with_a_record_schema_nested_past_the_bound_is_refused(t, pool, org):
    """GIVEN a namespace
    WHEN memory.set_from_messages is deferred with a record_schema nested 260 levels deep
    THEN it answers 422, not 500, and queues nothing.
    """
    schema: dict = {"type": "string"}
    for _ in range(130):
        schema = {"type": "object", "properties": {"k": schema}}
    before = snapshot(pool, org)
    status, body = t.post(
        "memory.set_from_messages",
        messages=[{"role": "user", "content": "I live in Lisbon."}],
        record_schema=schema,
        defer=True,
        memory_key="profile",
        agent="a1",
        user_id="u1",
    )
    assert status == 422, (status, body)
    assert "nest at most 64 levels" in body["error"]["message"], body
    assert snapshot(pool, org) == before
