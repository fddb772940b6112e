"""Typed records: record_schema + memory_key extract one record, validated and retried."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_memory_support import (
    Mem,
    evidence_rows,
    memory_rows,
    scripted,
    turns,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "city": {"type": "string"},
    },
    "required": ["name"],
}
SAID = turns(("user", "I'm Ana, thirty years old, living in Porto."))
GOOD = {"name": "Ana", "age": 30, "city": "Porto"}


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def _record_rows(pool, org):
    return [r for r in memory_rows(pool, org) if r["kind"] in ("fact", "record")]


def test_a_typed_record_is_one_row_at_memory_key_holding_the_json(m, deps, pool):
    """GIVEN a record schema and a model answering a valid record
    WHEN a transcript is sent with record_schema and memory_key
    THEN one row is written at memory_key (created), holding the record as JSON, and nothing
    else is written as a fact.
    """
    llm = scripted(deps, json.dumps(GOOD))

    out = m.extract_ok(SAID, record_schema=SCHEMA, memory_key="profile/contact")

    assert [(w["key"], w["conflict_verdict"]) for w in out["written"]] == [
        ("profile/contact", "created")
    ]
    (row,) = _record_rows(pool, m.org)
    assert (row["key"], row["kind"]) == ("profile/contact", "record")
    assert json.loads(row["value"]) == GOOD
    assert out["stubbed_fields"] == []
    assert len(llm.prompts) == 1 and '"age"' in llm.prompts[0][0]


def test_an_invalid_record_is_asked_again_with_its_problems(m, deps, pool):
    """GIVEN a model whose first record misses a required field and has a wrongly typed one
    WHEN the record is extracted
    THEN the model is asked again, the second prompt names both problems, and the corrected
    record is written with no stubbed field.
    """
    llm = scripted(
        deps, json.dumps({"name": None, "age": "thirty", "city": "Porto"}), json.dumps(GOOD)
    )

    out = m.extract_ok(SAID, record_schema=SCHEMA, memory_key="profile/contact")

    assert len(llm.prompts) == 2
    retry = llm.prompts[1][1]
    assert "name" in retry and "required" in retry and "age" in retry and "integer" in retry
    assert "name" not in llm.prompts[0][1].split("Conversation:")[0]
    (row,) = _record_rows(pool, m.org)
    assert json.loads(row["value"]) == GOOD
    assert out["stubbed_fields"] == []


def test_fields_still_invalid_after_the_retries_are_written_null_and_named(m, deps, pool):
    """GIVEN a model that keeps answering a wrongly typed age
    WHEN the record is extracted
    THEN after the retries the record is written with age null and the valid fields kept, and
    stubbed_fields names age.
    """
    bad = json.dumps({"name": "Ana", "age": "thirty", "city": "Porto"})
    llm = scripted(deps, *[bad] * 6)

    out = m.extract_ok(SAID, record_schema=SCHEMA, memory_key="profile/contact")

    assert len(llm.prompts) > 1
    assert out["stubbed_fields"] == ["age"]
    (row,) = _record_rows(pool, m.org)
    assert json.loads(row["value"]) == {"name": "Ana", "age": None, "city": "Porto"}


def test_record_schema_without_memory_key_is_refused(m, deps, pool):
    """GIVEN a record schema
    WHEN it is sent without memory_key
    THEN it answers 400, calls no model and stores nothing.
    """
    llm = scripted(deps, json.dumps(GOOD))

    status, data = m.extract(SAID, record_schema=SCHEMA)

    assert status == 400, data
    assert llm.prompts == []
    assert memory_rows(pool, m.org) == [] and evidence_rows(pool, m.org) == []


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"age": {"type": 5}}},
        {"properties": {"age": {"type": "integer"}}, "required": 5},
        {"properties": {"age": {"type": "integer"}}, "required": [["age"]]},
    ],
    ids=["type-not-a-name", "required-not-a-list", "required-not-names"],
)
def test_a_malformed_record_schema_is_refused_not_a_500(m, deps, pool, schema):
    """GIVEN a record schema whose type or required list is not of the JSON-schema shape
    WHEN a record is extracted with it, and the model answers a value for the field
    THEN the request is refused as bad input (400 or 422), never a 500.
    """
    scripted(deps, json.dumps({"age": 30}), json.dumps({"age": 30}), json.dumps({"age": 30}))

    status, data = m.extract(SAID, record_schema=schema, memory_key="profile/age")

    assert status in (400, 422), data
