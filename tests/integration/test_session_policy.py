"""Session briefs under an operator's extraction policy: the builder never runs."""

from __future__ import annotations

import pytest

from chalicelib.providers.llm import FakeLLM
from tests.integration.test_session_support import (
    POLICY,
    Briefs,
    brief_rows,
    ev,
    failing,
    live_setting,
    revision_rows,
    scripted,
    sections_json,
)

EVENTS = [
    ev("user", "Rotate the API keys"),
    ev("edit", "changed the vault client", files=["ops/vault.py"]),
    ev("assistant", "Keys rotated in staging"),
]


@pytest.fixture
def b(api, deps, org):
    deps._policy_lookup = lambda org, ns: POLICY
    return Briefs.open(api, deps, org)


def test_events_alone_with_no_model_are_not_revised(b, deps, pool):
    """GIVEN an operator policy in force and no model (the stock fake LLM)
    WHEN events alone are saved
    THEN it answers changed false, reason not-revised, and nothing is written.
    """
    deps._llm = FakeLLM()

    out = b.save(brief_key="k", events=EVENTS)

    assert out["changed"] is False and out["reason"] == "not-revised"
    assert out["author"] != "deterministic" and out["revision"] == 0
    assert brief_rows(pool, b.org) == []


def test_events_alone_with_use_llm_false_are_not_revised(b, deps, pool):
    """GIVEN an operator policy, a working model, and a brief at revision 1
    WHEN events alone are saved with use_llm false
    THEN the model is not called, the answer is not-revised with the stored revision, and the
    brief is unchanged.
    """
    first = b.save(brief_key="k", sections={"goal": "agent goal"})
    llm = scripted(sections_json(goal="model goal"))
    deps._llm = llm

    out = b.save(brief_key="k", events=EVENTS, use_llm=False)

    assert (out["changed"], out["reason"], out["revision"]) == (False, "not-revised", 1)
    assert out["rendered"] == first["rendered"]
    assert llm.prompts == []
    assert len(revision_rows(pool, b.org, "k")) == 1


def test_events_alone_with_the_brief_llm_switched_off_are_not_revised(b, deps, pool):
    """GIVEN an operator policy, a working model, and session_brief_llm set live to false
    WHEN events alone are saved
    THEN it answers not-revised and writes nothing.
    """
    deps._llm = scripted(sections_json(goal="model goal"))

    with live_setting(pool, session_brief_llm="false"):
        out = b.save(brief_key="k", events=EVENTS)

    assert out["reason"] == "not-revised" and brief_rows(pool, b.org) == []


def test_events_alone_whose_every_model_call_failed_are_refused_with_503(b, deps, pool):
    """GIVEN an operator policy and a model whose every window fails (error, non-JSON, bad
    sections)
    WHEN events alone are saved
    THEN the save is refused with 503 and nothing is written, so the client sends again; the
    same events sent again to a working model are then revised (author llm).
    """
    llm = scripted(failing(), "no json here", '{"decisions": "not a list"}')
    deps._llm = llm
    events = [ev("user", f"step {i} " + "y" * 480) for i in range(6)]

    with live_setting(pool, session_brief_window_chars="1000"):
        status, data = b.post("session.brief_save", brief_key="k", events=events)
        assert status == 503, data
        assert len(llm.prompts) == 3
        assert brief_rows(pool, b.org) == []

        llm.replies.extend([sections_json(goal="rotated")] * 3)
        out = b.save(brief_key="k", events=events)
    assert out["author"] == "llm" and out["changed"] is True


def test_a_working_model_revises_under_a_policy(b, deps):
    """GIVEN an operator policy and a working model
    WHEN events alone are saved
    THEN the model writes the brief (author llm).
    """
    deps._llm = scripted(sections_json(goal="Rotate the API keys", status="staging done"))

    out = b.save(brief_key="k", events=EVENTS)

    assert out["changed"] is True and out["author"] == "llm"
    assert b.get(brief_key="k")["author"] == "llm"


def test_a_partly_failing_model_keeps_its_good_windows_under_a_policy(b, deps, pool):
    """GIVEN an operator policy and a model whose first window fails and second answers
    WHEN events alone are saved
    THEN the brief is written by the model (author llm), one window failed.
    """
    deps._llm = scripted(failing(), sections_json(goal="second window goal"))
    events = [ev("user", f"step {i} " + "y" * 480) for i in range(4)]

    with live_setting(pool, session_brief_window_chars="1000"):
        out = b.save(brief_key="k", events=events)

    assert out["author"] == "llm" and out["stats"]["windows_failed"] == 1
    assert "second window goal" in out["rendered"]


def test_sections_with_events_are_written_when_no_model_can_revise(b, deps, pool):
    """GIVEN an operator policy and no model, and a brief at revision 1
    WHEN a save carries the agent's sections and events
    THEN the sections are written over the brief (author model), taking nothing from events.
    """
    deps._llm = FakeLLM()
    b.save(brief_key="k", sections={"goal": "old", "decisions": ["d1"]})

    out = b.save(brief_key="k", sections={"status": "agent status"}, events=EVENTS)

    assert out["changed"] is True and out["author"] == "model"
    got = b.get(brief_key="k", include_sections=True)
    assert got["sections"]["status"] == "agent status"
    assert got["sections"]["goal"] == "old" and got["sections"]["decisions"] == ["d1"]
    assert "ops/vault.py" not in got["rendered"] and "Keys rotated" not in got["rendered"]


def test_sections_with_events_are_written_when_every_model_call_fails(b, deps):
    """GIVEN an operator policy and a model whose every call fails
    WHEN a save carries the agent's sections and events
    THEN the model was asked, and the sections are written (author model) rather than refused
    with 503, taking nothing from the events.
    """
    llm = scripted(failing(), failing())
    deps._llm = llm

    out = b.save(brief_key="k", sections={"goal": "agent goal"}, events=EVENTS)

    assert out["changed"] is True and out["author"] == "model"
    assert len(llm.prompts) == 1 and out["stats"]["windows_failed"] == 1
    assert "ops/vault.py" not in out["rendered"] and "Keys rotated" not in out["rendered"]
    assert b.get(brief_key="k")["events_total"] == 0


def test_a_working_model_revises_the_events_before_the_sections_under_a_policy(b, deps):
    """GIVEN an operator policy and a working model
    WHEN a save carries the agent's sections (a status) and events
    THEN the model revises the events under the policy, and the agent's status is written over
    its revision: the model's goal and decision stay, the status is the agent's (author model).
    """
    llm = scripted(
        sections_json(goal="Rotate the API keys", status="staging done", decisions=["vault"])
    )
    deps._llm = llm

    out = b.save(brief_key="k", sections={"status": "agent status"}, events=EVENTS)

    assert len(llm.prompts) == 1 and POLICY in llm.prompts[0][0]
    assert out["changed"] is True and out["author"] == "model"
    got = b.get(brief_key="k", include_sections=True)
    assert got["sections"]["goal"] == "Rotate the API keys"
    assert got["sections"]["decisions"] == ["vault"]
    assert got["sections"]["status"] == "agent status"
    assert got["events_total"] == len(EVENTS)


def test_the_builder_never_runs_under_a_policy(b, deps, pool):
    """GIVEN an operator policy
    WHEN events are saved with no model, with use_llm false, with failing and with working models
    THEN no stored revision was ever written by the deterministic builder.
    """
    for llm, extra in (
        (FakeLLM(), {}),
        (scripted(sections_json(goal="g")), {"use_llm": False}),
        (scripted(failing()), {}),
        (scripted(sections_json(goal="g")), {}),
    ):
        deps._llm = llm
        status, data = b.post("session.brief_save", brief_key="k", events=EVENTS, **extra)
        assert status in (200, 503), data
        assert data.get("author") != "deterministic"

    assert [r["author"] for r in revision_rows(pool, b.org)] == ["llm"]


def test_no_client_summary_is_taken_from_events_under_a_policy(b, deps):
    """GIVEN an operator policy in force
    WHEN saves carry a summary event, one with the agent's sections and one revised by a model
    THEN brief_get(full=true) appends no client summary to either brief.
    """
    summary = "CLIENT SUMMARY: the customer's card ending 4242 was refunded."
    b.save(brief_key="with-sections", sections={"goal": "G"}, events=[ev("summary", summary)])
    deps._llm = scripted(sections_json(goal="G"))
    b.save(brief_key="with-model", events=[ev("summary", summary)])

    for key in ("with-model", "with-sections"):
        got = b.get(brief_key=key, full=True)
        assert got["found"] is True
        assert "CLIENT SUMMARY" not in got["rendered"], key
