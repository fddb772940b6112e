"""Session briefs, revising from events: the model per window, failed windows, the builder."""

from __future__ import annotations

import pytest

from chalicelib.providers.llm import FakeLLM, OpenAILLM
from tests.integration.test_session_support import (
    Briefs,
    RecordingLLM,
    ev,
    failing,
    live_setting,
    revision_rows,
    scripted,
    sections_json,
)
from tests.openai_stub import OpenAIStub


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def numbered_events(n: int, width: int = 480) -> list[dict]:
    """n user events of about `width` characters each, each naming its own number."""
    return [ev("user", f"EVT{i:03d} " + "x" * (width - 7)) for i in range(n)]


def prompt_events(prompt: str) -> list[str]:
    return sorted({w[:6] for w in prompt.split() if w.startswith("EVT")})


RECORDED = [
    ev("user", "Move invoices to the new ledger"),
    ev("read", "read the exporter", files=["billing/export.py"]),
    ev("edit", "patched the ledger writer", files=["billing/ledger.py"]),
    ev("command", "pytest tests/billing -q"),
    ev("error", "KeyError: 'ledger_id' in export_job"),
    ev("search", "grep ledger_id"),
    ev("tool", "ran the linter", tool="ruff"),
    ev("note", "see https://example.com/runbooks/ledger for the cutover"),
    ev("assistant", "Ledger writer patched; export job still failing on ledger_id"),
]


def test_the_model_revises_the_brief_and_author_is_llm(b, deps):
    """GIVEN a model that answers a JSON sections object
    WHEN a save carries events only
    THEN the model is called once with the events, and the brief is its answer, author llm.
    """
    llm = scripted(
        sections_json(
            goal="Move invoices to the new ledger",
            status="Export job failing on ledger_id",
            decisions=["Keep the old ledger read-only during cutover"],
            dead_ends=["Backfilling ledger_id in SQL: too slow"],
            next_steps=["Fix export_job's ledger_id lookup"],
        )
    )
    deps._llm = llm

    out = b.save(brief_key="k", events=RECORDED)

    assert out["changed"] is True and out["author"] == "llm"
    assert len(llm.prompts) == 1 and "KeyError: 'ledger_id'" in llm.prompts[0][1]
    assert out["stats"]["windows"] == 1 and out["stats"]["windows_failed"] == 0
    assert out["stats"]["events"] == len(RECORDED)
    for text in ("Keep the old ledger read-only", "Backfilling ledger_id", "Fix export_job"):
        assert text in out["rendered"]
    got = b.get(brief_key="k", include_sections=True)
    assert got["author"] == "llm"
    assert got["sections"]["decisions"] == ["Keep the old ledger read-only during cutover"]


def test_the_model_is_called_once_per_window_up_to_the_max_windows(b, deps, pool):
    """GIVEN session_brief_window_chars 1000 and ten events of about 490 characters (2 a window)
    WHEN saved with max windows 10, then with max windows 3
    THEN the model is called 5 times (each window's events in one prompt), then only 3 times.
    """
    events = numbered_events(10)
    llm = scripted(*[sections_json(status=f"window {i}") for i in range(8)])
    deps._llm = llm

    with live_setting(pool, session_brief_window_chars="1000", session_brief_max_windows="10"):
        out = b.save(brief_key="k", events=events, session_id="s1")
    assert len(llm.prompts) == 5 and out["stats"]["windows"] == 5
    seen = [prompt_events(user) for _, user in llm.prompts]
    assert seen == [[f"EVT{i:03d}", f"EVT{i + 1:03d}"] for i in range(0, 10, 2)]
    assert "Status: window 4" in out["rendered"]

    with live_setting(pool, session_brief_window_chars="1000", session_brief_max_windows="3"):
        out = b.save(brief_key="k", events=events, session_id="s2")
    assert len(llm.prompts) == 8
    assert out["stats"]["windows"] == 3 and out["stats"]["windows_failed"] == 0
    assert out["author"] == "llm"


def test_a_bigger_window_takes_more_events_per_call(b, deps, pool):
    """GIVEN the same ten events and session_brief_window_chars 2500 (5 events a window)
    WHEN saved
    THEN the model is called twice.
    """
    llm = scripted(sections_json(status="a"), sections_json(status="b"))
    deps._llm = llm

    with live_setting(pool, session_brief_window_chars="2500"):
        out = b.save(brief_key="k", events=numbered_events(10))

    assert len(llm.prompts) == 2 and out["stats"]["windows"] == 2


def test_a_failed_window_is_skipped_and_the_rest_are_revised(b, deps, pool):
    """GIVEN five windows whose 2nd call raises, 3rd answers non-JSON and 4th answers JSON that
    fails the sections model
    WHEN saved
    THEN windows_failed is 3, author llm, and the 1st and 5th windows' decisions are both kept.
    """
    llm = scripted(
        sections_json(decisions=["decision from window one"], status="one"),
        failing(),
        "I think the brief should say the export job is fixed.",
        '{"decisions": "not a list"}',
        sections_json(decisions=["decision from window five"], status="five"),
    )
    deps._llm = llm

    with live_setting(pool, session_brief_window_chars="1000", session_brief_max_windows="10"):
        out = b.save(brief_key="k", events=numbered_events(10))

    assert len(llm.prompts) == 5
    assert out["stats"]["windows"] == 5 and out["stats"]["windows_failed"] == 3
    assert out["author"] == "llm" and out["changed"] is True
    got = b.get(brief_key="k", include_sections=True)
    assert got["sections"]["decisions"] == ["decision from window one", "decision from window five"]
    assert got["sections"]["status"] == "five"
    assert "not a list" not in got["rendered"]


def test_every_window_failing_without_a_policy_falls_back_to_the_builder(b, deps, pool):
    """GIVEN a model whose every call fails (an error, non-JSON, a JSON array)
    WHEN events are saved with no operator policy
    THEN the deterministic builder writes the brief (author deterministic), from the events.
    """
    llm = scripted(failing(), "not json at all", "[1, 2, 3]")
    deps._llm = llm

    with live_setting(pool, session_brief_window_chars="1000"):
        out = b.save(brief_key="k", events=numbered_events(6))

    assert len(llm.prompts) == 3
    assert out["stats"]["windows"] == out["stats"]["windows_failed"] == 3
    assert out["changed"] is True and out["author"] == "deterministic"
    assert "Goal: EVT000" in out["rendered"]


def test_use_llm_false_forces_the_deterministic_builder(b, deps):
    """GIVEN a working model
    WHEN events are saved with use_llm false
    THEN the model is never called and author is deterministic.
    """
    llm = scripted(sections_json(goal="from the model"))
    deps._llm = llm

    out = b.save(brief_key="k", events=RECORDED, use_llm=False)

    assert llm.prompts == []
    assert out["author"] == "deterministic" and out["stats"]["windows"] == 0
    assert "from the model" not in out["rendered"]


def test_the_live_brief_llm_switch_off_uses_the_builder_unless_use_llm_is_true(b, deps, pool):
    """GIVEN session_brief_llm set live to false and a working model
    WHEN events are saved without use_llm, then with use_llm true
    THEN the first is deterministic with no model call; the second is written by the model.
    """
    llm = scripted(sections_json(goal="from the model"))
    deps._llm = llm

    with live_setting(pool, session_brief_llm="false"):
        off = b.save(brief_key="k1", events=RECORDED)
        forced = b.save(brief_key="k2", events=RECORDED, use_llm=True)

    assert off["author"] == "deterministic"
    assert forced["author"] == "llm" and "Goal: from the model" in forced["rendered"]
    assert len(llm.prompts) == 1


def test_with_no_model_the_builder_writes_goal_status_files_errors_and_pointers(b, deps):
    """GIVEN the stock fake LLM (no model) and a recorded sequence of events
    WHEN the events are saved with use_llm true
    THEN author is deterministic, and the brief has the goal (first user turn), status (last
    assistant turn), key files, the error and pointers (command, URL), and no decisions or
    dead ends.
    """
    deps._llm = FakeLLM()

    out = b.save(brief_key="k", events=RECORDED, use_llm=True)
    got = b.get(brief_key="k", include_sections=True)

    assert out["author"] == got["author"] == "deterministic"
    s = got["sections"]
    assert s["goal"] == "Move invoices to the new ledger"
    assert s["status"] == "Ledger writer patched; export job still failing on ledger_id"
    assert set(s["key_files"]) == {"billing/export.py", "billing/ledger.py"}
    assert any("KeyError: 'ledger_id' in export_job" in q for q in s["open_questions"])
    assert "pytest tests/billing -q" in s["pointers"]
    assert "https://example.com/runbooks/ledger" in s["pointers"]
    assert s["decisions"] == [] and s["dead_ends"] == []
    rendered = got["rendered"]
    for text in ("Goal: Move invoices", "billing/ledger.py", "KeyError", "pytest tests/billing"):
        assert text in rendered
    assert "Decisions:" not in rendered and "Dead ends:" not in rendered


def test_the_live_brief_model_name_is_passed_to_the_deployment_llm(b, deps, pool):
    """GIVEN the deployment's LLM and session_brief_llm_model set live to 'brief-mini'
    WHEN events are saved, then saved again after the setting is removed
    THEN the first call asks for model 'brief-mini' (stats.model says so) as JSON; the second
    asks for no particular model and stats.model names the deployment's LLM.
    """
    llm = RecordingLLM()
    deps._llm = llm

    with live_setting(pool, session_brief_llm_model="brief-mini"):
        named = b.save(brief_key="k", events=RECORDED, session_id="s1")
    default = b.save(brief_key="k", events=RECORDED, session_id="s2")

    assert [c["model"] for c in llm.calls] == ["brief-mini", None]
    assert all(c["json_output"] for c in llm.calls)
    assert named["author"] == "llm" and named["stats"]["model"] == "brief-mini"
    assert default["stats"]["model"] == "deployment-llm"
    assert named["stats"]["tokens_in"] == 10 and named["stats"]["tokens_out"] == 5


def test_the_openai_client_revises_the_brief_through_a_compatible_server(b, deps, pool):
    """GIVEN the deployment's LLM is the openai client pointed at a local compatible server
    answering a JSON sections object
    WHEN events are saved
    THEN author is llm, the brief holds the server's answer, and the request the server got
    carries the events and asks for a JSON object (response_format json_object).
    """
    reply = sections_json(
        goal="Ship the ledger migration",
        decisions=["Cut over on Monday"],
        next_steps=["Announce the freeze"],
    )
    with OpenAIStub(chat_reply=lambda req: reply) as stub:
        deps._llm = OpenAILLM(model="m", base_url=stub.base_url, api_key="k")
        out = b.save(brief_key="k", events=RECORDED)

    chats = [body for path, body in stub.requests if path.endswith("/chat/completions")]
    assert len(chats) == 1
    assert chats[0]["response_format"] == {"type": "json_object"}
    assert chats[0]["model"] == "m"
    assert "KeyError: 'ledger_id'" in chats[0]["messages"][-1]["content"]
    assert "JSON" in chats[0]["messages"][0]["content"]
    assert out["author"] == "llm" and out["changed"] is True
    assert "Cut over on Monday" in out["rendered"] and "Announce the freeze" in out["rendered"]
    assert out["stats"]["tokens_in"] == 11 and out["stats"]["tokens_out"] == 7
    assert [r["author"] for r in revision_rows(pool, b.org, "k")] == ["llm"]


def test_a_compatible_server_failing_every_call_leaves_the_builder_to_write(b, deps):
    """GIVEN the openai client pointed at a server that answers 500 to every call
    WHEN events are saved with no operator policy
    THEN the save still succeeds, written by the deterministic builder.
    """
    with OpenAIStub() as stub:
        stub.fail_next = 100
        deps._llm = OpenAILLM(model="m", base_url=stub.base_url, api_key="k")
        out = b.save(brief_key="k", events=RECORDED)

    assert out["author"] == "deterministic" and out["stats"]["windows_failed"] == 1
