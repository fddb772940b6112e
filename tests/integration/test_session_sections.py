"""Session briefs, sections the agent wrote: replace, accumulate, caps and the size bound."""

from __future__ import annotations

import pytest

from chalicelib.providers.llm import FakeLLM
from tests.integration.test_session_support import Briefs, ev, failing, scripted, sections_json

LISTS = (
    "decisions",
    "dead_ends",
    "done",
    "open_questions",
    "next_steps",
    "key_files",
    "constraints",
    "pointers",
)


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def sections_of(b: Briefs, key: str = "k") -> dict:
    return b.get(brief_key=key, include_sections=True)["sections"]


def test_sections_from_the_agent_are_written_with_author_model(b):
    """GIVEN sections the calling agent wrote
    WHEN saved with trigger model
    THEN the brief is those sections, author model, and the rendered text shows each.
    """
    out = b.save(
        brief_key="k",
        trigger="model",
        sections={"goal": "Ship briefs", "status": "Tests written", "next_steps": ["Review"]},
    )

    assert out["changed"] is True and out["author"] == "model" and out["reason"] == ""
    assert "Goal: Ship briefs" in out["rendered"] and "Status: Tests written" in out["rendered"]
    assert "- Review" in out["rendered"]
    got = b.get(brief_key="k")
    assert got["author"] == "model" and got["trigger"] == "model"


def test_state_sections_are_replaced_and_unfilled_ones_kept(b):
    """GIVEN a brief with goal, status, next steps, key files and constraints
    WHEN a second save sends a new goal and new next steps only
    THEN goal and next steps are the new ones (old next steps gone); status, key files and
    constraints are kept as stored.
    """
    b.save(
        brief_key="k",
        sections={
            "goal": "old goal",
            "status": "old status",
            "next_steps": ["old step a", "old step b"],
            "key_files": ["a.py"],
            "constraints": ["no downtime"],
        },
    )

    b.save(brief_key="k", sections={"goal": "new goal", "next_steps": ["new step"]})

    s = sections_of(b)
    assert s["goal"] == "new goal" and s["next_steps"] == ["new step"]
    assert s["status"] == "old status"
    assert s["key_files"] == ["a.py"] and s["constraints"] == ["no downtime"]
    rendered = b.get(brief_key="k")["rendered"]
    assert "old step" not in rendered and "old goal" not in rendered


def test_decisions_dead_ends_and_done_accumulate_across_saves(b):
    """GIVEN a brief with one decision, dead end and done item
    WHEN two more saves each send one new item of each
    THEN all three of each are kept, oldest first.
    """
    for i in (1, 2, 3):
        b.save(
            brief_key="k",
            sections={"decisions": [f"dec {i}"], "dead_ends": [f"dead {i}"], "done": [f"done {i}"]},
        )

    s = sections_of(b)
    assert s["decisions"] == ["dec 1", "dec 2", "dec 3"]
    assert s["dead_ends"] == ["dead 1", "dead 2", "dead 3"]
    assert s["done"] == ["done 1", "done 2", "done 3"]


def test_list_caps_keep_the_newest_items(b):
    """GIVEN 15 decisions, 10 dead ends and 10 next steps saved, then 10 more decisions and
    5 more dead ends
    WHEN the brief is read
    THEN it keeps the newest 20 decisions, 12 dead ends and 8 next steps.
    """
    b.save(
        brief_key="k",
        sections={
            "decisions": [f"dec {i:02d}" for i in range(15)],
            "dead_ends": [f"dead {i:02d}" for i in range(10)],
            "next_steps": [f"step {i:02d}" for i in range(10)],
        },
    )
    b.save(
        brief_key="k",
        sections={
            "decisions": [f"dec {i:02d}" for i in range(15, 25)],
            "dead_ends": [f"dead {i:02d}" for i in range(10, 15)],
        },
    )

    s = sections_of(b)
    assert s["decisions"] == [f"dec {i:02d}" for i in range(5, 25)]
    assert s["dead_ends"] == [f"dead {i:02d}" for i in range(3, 15)]
    assert s["next_steps"] == [f"step {i:02d}" for i in range(2, 10)]
    rendered = b.get(brief_key="k")["rendered"]
    assert "dec 04" not in rendered and "dead 02" not in rendered and "step 01" not in rendered


def test_every_list_keeps_a_cap_in_one_save(b):
    """GIVEN one save sending 40 short items in every list
    WHEN the brief is read
    THEN no list holds more than 20 items, and each list's last item is the newest one sent.
    """
    b.save(
        brief_key="k",
        sections={name: [f"{name} {i:02d}" for i in range(40)] for name in LISTS},
    )

    s = sections_of(b)
    for name in LISTS:
        assert 1 <= len(s[name]) <= 20, name
        assert s[name][-1] == f"{name} 39", name
    assert len(s["decisions"]) == 20 and len(s["dead_ends"]) == 12 and len(s["next_steps"]) == 8


def test_the_rendered_brief_stays_under_12000_characters_when_every_list_is_full(b):
    """GIVEN a save with a 2,000-character goal and status and every list full of
    600-character items, on a 160-character key
    WHEN the brief is saved and read
    THEN the rendered brief is under 12,000 characters, the goal is kept whole, and each list
    still holds its newest item.
    """
    key = "k" * 160
    sections = {"goal": "G" * 2000, "status": "S" * 2000}
    for name in LISTS:
        sections[name] = [f"{name}-{i:02d}-".ljust(600, "x") for i in range(25)]
    assert {len(i) for name in LISTS for i in sections[name]} == {600}

    out = b.save(brief_key=key, sections=sections)
    got = b.get(brief_key=key, include_sections=True)

    assert len(out["rendered"]) < 12_000 and len(got["rendered"]) < 12_000
    assert got["brief_chars"] == len(got["rendered"]) and out["stats"]["brief_chars"] < 12_000
    assert got["sections"]["goal"] == "G" * 2000
    for name in LISTS:
        assert got["sections"][name][-1].startswith(f"{name}-24-"), name

    # a second full save keeps the bound too
    again = b.save(brief_key=key, sections=sections)
    assert len(again["rendered"]) < 12_000


EVENTS = [
    ev("user", "goal from the user events"),
    ev("edit", "edited", files=["events/only.py"]),
    ev("error", "TracebackFromEvents"),
    ev("command", "make events-only"),
]
EVENT_TEXT = ("goal from the user events", "events/only.py", "TracebackFromEvents", "make")


def test_a_save_with_sections_and_events_revises_the_events_then_writes_the_sections(b, deps):
    """GIVEN a brief the agent wrote (a goal, a decision) and a working model
    WHEN a save carries the agent's sections (goal, next steps, a decision) and events
    THEN the model revises the brief from the events, and the agent's sections are written over
    its revision: the agent's goal and next steps, the model's status, every decision; the
    events count toward events_total, and author is model.
    """
    b.save(brief_key="k", sections={"goal": "old goal", "decisions": ["agent decision 1"]})
    llm = scripted(
        sections_json(
            goal="goal from the model",
            status="status from the model",
            decisions=["model decision"],
            next_steps=["model step"],
        )
    )
    deps._llm = llm

    out = b.save(
        brief_key="k",
        sections={
            "goal": "goal from the agent",
            "next_steps": ["agent step"],
            "decisions": ["agent decision 2"],
        },
        events=EVENTS,
    )

    assert len(llm.prompts) == 1 and "TracebackFromEvents" in llm.prompts[0][1]
    assert out["changed"] is True and out["author"] == "model"
    assert out["stats"]["windows"] == 1 and out["stats"]["windows_failed"] == 0
    got = b.get(brief_key="k", include_sections=True)
    s = got["sections"]
    assert s["goal"] == "goal from the agent" and s["next_steps"] == ["agent step"]
    assert s["status"] == "status from the model"
    assert s["decisions"] == ["agent decision 1", "model decision", "agent decision 2"]
    assert got["author"] == "model"
    assert got["events_total"] == len(EVENTS)
    assert got["source_chars"] == sum(len(e["text"]) for e in EVENTS)


def test_with_no_model_sections_and_events_take_nothing_from_the_events(b, deps):
    """GIVEN no model (the stock fake LLM)
    WHEN a save carries both the agent's sections and events
    THEN the sections are written over the brief as it was (author model): the deterministic
    builder does not run, no event text reaches the brief, and events_total stays 0.
    """
    deps._llm = FakeLLM()

    out = b.save(brief_key="k", sections={"goal": "goal from the agent"}, events=EVENTS)

    assert out["author"] == "model" and out["stats"]["windows"] == 0
    got = b.get(brief_key="k", include_sections=True)
    assert got["sections"]["goal"] == "goal from the agent"
    for text in EVENT_TEXT:
        assert text not in got["rendered"]
    assert got["events_total"] == 0 and got["source_chars"] == 0


def test_when_every_model_call_fails_sections_and_events_take_nothing_from_the_events(b, deps):
    """GIVEN a model whose every call fails
    WHEN a save carries both the agent's sections and events
    THEN the model was asked, and the sections are written over the brief as it was (author
    model), with nothing from the events: no builder output, events_total 0.
    """
    llm = scripted(failing())
    deps._llm = llm

    out = b.save(brief_key="k", sections={"goal": "goal from the agent"}, events=EVENTS)

    assert len(llm.prompts) == 1
    assert out["author"] == "model" and out["stats"]["windows_failed"] == 1
    got = b.get(brief_key="k", include_sections=True)
    assert got["sections"]["goal"] == "goal from the agent"
    for text in EVENT_TEXT:
        assert text not in got["rendered"]
    assert got["events_total"] == 0


def test_a_model_revision_appends_decisions_to_the_agents_brief(b, deps):
    """GIVEN a brief the agent wrote with one decision and a next step
    WHEN events are then revised by a model answering a new decision and no next steps
    THEN both decisions are kept, and the next step the model did not restate is kept.
    """
    b.save(brief_key="k", sections={"decisions": ["agent decision"], "next_steps": ["step"]})
    deps._llm = scripted(sections_json(decisions=["model decision"], status="moved on"))

    b.save(brief_key="k", events=[ev("assistant", "decided something")])

    s = sections_of(b)
    assert s["decisions"] == ["agent decision", "model decision"]
    assert s["status"] == "moved on" and s["next_steps"] == ["step"]
