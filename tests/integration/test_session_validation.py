"""Session briefs, bad input: refused with a 4xx, never a 500, and nothing is stored."""

from __future__ import annotations

import pytest

from tests.integration.test_session_support import Briefs, brief_rows, ev

SAVE_BAD = [
    {"events": [ev("banana", "not a kind")]},
    {"events": [ev("USER", "kinds are lower case")]},
    {"events": [{"text": "no kind"}]},
    {"events": "user: hello"},
    {"events": [["user", "hello"]]},
    {"events": [ev("edit", "x", files="a.py")]},
    {"events": [ev("user", 42)]},
    {"events": [ev("user", "x" * 20_001)]},
    {"events": [ev("user", "hi", ts="yesterday-ish")]},
    {"sections": "goal: ship it"},
    {"sections": {"goal": ["ship", "it"]}},
    {"sections": {"decisions": "not a list"}},
    {"sections": {"next_steps": [1, 2]}},
    {"sections": {"decisions": ["d" * 601]}},
    {"sections": {"goal": "g" * 2001}},
    {"trigger": "auto", "sections": {"goal": "g"}},
    {"trigger": None, "sections": {"goal": "g"}},
    {"if_revision": "one", "sections": {"goal": "g"}},
    {"if_revision": -1, "sections": {"goal": "g"}},
    {"if_revision": 1.5, "sections": {"goal": "g"}},
    {"use_llm": [True], "sections": {"goal": "g"}},
    {"use_llm": "perhaps", "sections": {"goal": "g"}},
    {"brief_key": 7, "sections": {"goal": "g"}},
    {"brief_key": "k" * 401, "sections": {"goal": "g"}},
    {"project": {"name": "loom"}, "sections": {"goal": "g"}},
    {"event_cursor": 12, "sections": {"goal": "g"}},
    {"head_sha": "f" * 101, "sections": {"goal": "g"}},
    {"session_id": ["s1"], "sections": {"goal": "g"}},
    {"agent": None, "sections": {"goal": "g"}},
    {"sections": {"goal": "nul \x00 inside"}},
]


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


@pytest.mark.parametrize("bad", SAVE_BAD, ids=[str(i) for i in range(len(SAVE_BAD))])
def test_a_save_with_wrong_types_or_values_is_422(b, pool, bad):
    """GIVEN a save body with one field of the wrong kind, type or size
    WHEN it is saved
    THEN it is refused with 422 and nothing is stored.
    """
    body = {"brief_key": "k", **bad}

    status, data = b.post("session.brief_save", **body)

    assert status == 422, (bad, status, data)
    assert data["error"]["code"] == "validation_error"
    assert brief_rows(pool, b.org) == []


def test_4001_events_are_refused_and_4000_accepted(b, pool):
    """GIVEN 4,001 events, then 4,000
    WHEN each is saved (no model: the builder writes)
    THEN 4,001 is refused with 422 and stores nothing; 4,000 is stored.
    """
    events = [ev("tool", f"t{i}") for i in range(4001)]

    status, data = b.post("session.brief_save", brief_key="k", events=events)
    assert status == 422, data
    assert brief_rows(pool, b.org) == []

    out = b.save(brief_key="k", events=events[:4000], use_llm=False)
    assert out["changed"] is True and out["stats"]["events"] == 4000
    assert b.get(brief_key="k")["events_total"] == 4000


def test_a_path_or_link_longer_than_an_item_is_left_out_of_the_built_brief(b):
    """GIVEN an edit event with a 701-character path beside a short one, and a note holding a
    700-character signed link beside a short link (all within the event bounds)
    WHEN it is saved with no model (the deterministic builder writes)
    THEN it is stored; the long path and link, which no brief item can hold, are left out.
    """
    long_path = "src/" + "a" * 694 + ".py"
    long_url = "https://example.com/get?sig=" + "x" * 700
    events = [
        ev("edit", "edited the modules", files=[long_path, "src/app.py"]),
        ev("note", f"the artefact is at {long_url} and the docs at https://example.com/d"),
    ]

    out = b.save(brief_key="k", events=events, use_llm=False)

    assert out["changed"] is True
    sections = b.get(brief_key="k", include_sections=True)["sections"]
    assert sections["key_files"] == ["src/app.py"]
    assert sections["pointers"] == ["https://example.com/d"]


def test_each_of_the_ten_event_kinds_is_accepted(b):
    """GIVEN one event of each of the ten kinds
    WHEN they are saved
    THEN the save is stored with 10 events.
    """
    kinds = [
        "user", "assistant", "edit", "command", "error",
        "read", "search", "tool", "note", "summary",
    ]  # fmt: skip
    out = b.save(brief_key="k", events=[ev(k, f"{k} happened") for k in kinds])
    assert out["changed"] is True and out["stats"]["events"] == 10


GET_BAD = [
    ("session.brief_get", {"revision": -1}),
    ("session.brief_get", {"revision": "latest"}),
    ("session.brief_get", {"include_sections": [1]}),
    ("session.brief_get", {"full": {"yes": True}}),
    ("session.brief_get", {"brief_key": ["k"]}),
    ("session.brief_get", {"from_session": 5}),
    ("session.brief_list", {"limit": "ten"}),
    ("session.brief_list", {"mine_only": "maybe"}),
    ("session.brief_list", {"project": ["p"]}),
    ("session.brief_delete", {"brief_key": ""}),
    ("session.brief_delete", {"brief_key": None}),
    ("session.brief_delete", {}),
]


@pytest.mark.parametrize(
    ("op", "bad"), GET_BAD, ids=[f"{o}-{i}" for i, (o, _) in enumerate(GET_BAD)]
)
def test_reads_and_deletes_with_wrong_types_are_422(b, op, bad):
    """GIVEN a get, list or delete body with a field of the wrong type or value
    WHEN it is sent
    THEN it is refused with 422, never a 500.
    """
    b.save(brief_key="k", sections={"goal": "g"})

    status, data = b.post(op, **bad)

    assert status == 422, (op, bad, status, data)
    assert b.get(brief_key="k")["found"] is True


@pytest.mark.parametrize(
    "body",
    ["[1, 2]", "not json", '{"sections": {"goal": "g"}, "events": [{"kind": "user"', "null"],
)
def test_a_body_that_is_not_a_json_object_is_a_4xx(b, pool, body):
    """GIVEN a save body that is not a JSON object
    WHEN it is posted
    THEN it is refused with a 4xx (never a 500) and nothing is stored.
    """
    status, data, _ = b.api.raw("session.brief_save", body, token=b.tokens["writer"])

    assert 400 <= status < 500, (status, data)
    assert brief_rows(pool, b.org) == []


def test_a_save_with_nothing_to_address_it_is_400(b, pool):
    """GIVEN a save with no brief_key, project, branch or session_id
    WHEN it is saved
    THEN it is refused with 400 and nothing is stored.
    """
    status, data = b.post("session.brief_save", sections={"goal": "g"})

    assert status == 400, data
    assert brief_rows(pool, b.org) == []
