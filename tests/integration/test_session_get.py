"""Session briefs, brief_get: by key, by session, by project, full, sections and its fields."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.test_session_support import (
    Briefs,
    RecordingLLM,
    ev,
    live_setting,
    sections_json,
)


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def goal(b: Briefs, **kw) -> str:
    got = b.get(include_sections=True, **kw)
    assert got["found"] is True, got
    return got["sections"]["goal"]


def test_get_by_key_else_from_session_else_project(b):
    """GIVEN briefs A (project p1, session s1), B (project p2, session s2) and C (project p1,
    session s2), saved in that order
    WHEN get asks by key, by from_session and by project
    THEN the key wins over the rest; from_session s1 gives A and s2 gives C (its newest);
    project p1 gives C and p2 gives B; an unknown key, session or project finds nothing.
    """
    b.save(brief_key="A", project="p1", session_id="s1", sections={"goal": "goal A"})
    b.save(brief_key="B", project="p2", session_id="s2", sections={"goal": "goal B"})
    b.save(brief_key="C", project="p1", session_id="s2", sections={"goal": "goal C"})

    assert goal(b, brief_key="B", from_session="s1", project="p1") == "goal B"
    assert goal(b, from_session="s1") == "goal A"
    assert goal(b, from_session="s2") == "goal C"
    assert goal(b, from_session="s1", project="p2") == "goal A"
    assert goal(b, project="p1") == "goal C"
    assert goal(b, project="p2") == "goal B"
    for ask in ({"brief_key": "nope"}, {"from_session": "s9"}, {"project": "p9"}):
        got = b.get(**ask)
        assert got["found"] is False and got["rendered"] == "", ask


def test_from_session_finds_a_brief_the_session_only_contributed_to(b):
    """GIVEN brief X started by session s1 and revised later by s2, then brief Y saved by s3
    WHEN get asks from_session s1
    THEN it finds X (s1 contributed to it), not the newer Y.
    """
    b.save(brief_key="X", session_id="s1", sections={"goal": "goal X"})
    b.save(brief_key="X", session_id="s2", sections={"status": "later"})
    b.save(brief_key="Y", session_id="s3", sections={"goal": "goal Y"})

    assert goal(b, from_session="s1") == "goal X"


def test_a_revised_older_brief_becomes_the_projects_newest(b):
    """GIVEN briefs A then B of project p
    WHEN A is revised again
    THEN get by project p gives A.
    """
    b.save(brief_key="A", project="p", sections={"goal": "goal A"})
    b.save(brief_key="B", project="p", sections={"goal": "goal B"})
    assert goal(b, project="p") == "goal B"

    b.save(brief_key="A", project="p", sections={"status": "again"})

    assert goal(b, project="p") == "goal A"


def test_full_appends_the_clients_last_compaction_summary_verbatim(b):
    """GIVEN a brief saved from events holding two summary events (the client's compactions)
    WHEN get asks full=true, and again without full
    THEN full appends the last summary verbatim (newlines and all) below the brief text;
    without full the text is the brief alone.
    """
    last = "## Compaction summary\n\n- Ledger writer patched\n-   export job   still failing\n"
    b.save(
        brief_key="k",
        events=[
            ev("user", "Move invoices"),
            ev("summary", "an older compaction summary"),
            ev("assistant", "working"),
            ev("summary", last),
        ],
    )

    plain = b.get(brief_key="k")
    full = b.get(brief_key="k", full=True)

    assert last not in plain["rendered"]
    assert full["rendered"].startswith(plain["rendered"])
    assert full["rendered"].endswith(last)
    assert "an older compaction summary" not in full["rendered"]
    assert plain["brief_chars"] == full["brief_chars"] == len(plain["rendered"])


def test_the_summary_survives_a_later_save_without_one(b):
    """GIVEN a brief whose save carried a summary event
    WHEN a later save carries no summary, and get asks full=true
    THEN the earlier summary is still appended.
    """
    b.save(brief_key="k", events=[ev("summary", "SUMMARY-ONE verbatim")])
    b.save(brief_key="k", sections={"status": "moved on"})

    assert b.get(brief_key="k", full=True)["rendered"].endswith("SUMMARY-ONE verbatim")


def test_include_sections_returns_the_structure_only_when_asked(b):
    """GIVEN a brief with goal, decisions and next steps
    WHEN get asks include_sections, and then does not
    THEN the first returns those sections as saved; the second returns sections null.
    """
    b.save(brief_key="k", sections={"goal": "G", "decisions": ["d"], "next_steps": ["n"]})

    with_sections = b.get(brief_key="k", include_sections=True)["sections"]
    assert with_sections["goal"] == "G"
    assert with_sections["decisions"] == ["d"] and with_sections["next_steps"] == ["n"]
    assert with_sections["dead_ends"] == []
    assert b.get(brief_key="k")["sections"] is None


def test_get_fills_every_output_field(b, clock):
    """GIVEN a brief saved three times (project, branch, head sha, events, triggers, sessions)
    WHEN get reads it, with the clock moved two hours on
    THEN revisions, events_total, source_chars, brief_chars, age_seconds, source_sessions,
    actor, trigger, head_sha, project, branch, author and updated_at hold the right values.
    """
    b.set_logging(True)
    before = datetime.now(UTC)
    e1 = [ev("user", "abc"), ev("assistant", "defgh")]
    e2 = [ev("edit", "1234567", files=["x.py"])]
    b.save(
        brief_key="k",
        project="loom",
        branch="main",
        head_sha="sha1",
        session_id="s1",
        events=e1,
        use_llm=False,
    )
    b.save(brief_key="k", session_id="s2", head_sha="sha2", events=e2, trigger="precompact")
    b.save(brief_key="k", session_id="s1", sections={"status": "done"}, trigger="model")
    after = datetime.now(UTC)

    got = b.get(brief_key="k")
    assert got["revisions"] == 3 and got["revision"] == 3
    assert got["events_total"] == 3
    assert got["source_chars"] == len("abc") + len("defgh") + len("1234567")
    assert got["brief_chars"] == len(got["rendered"]) > 0
    assert got["source_sessions"] == ["s2", "s1"]
    assert got["actor"] in ("process:writer-bot", "human:writer-bot")
    assert got["trigger"] == "model" and got["author"] == "model"
    assert got["head_sha"] == "sha2"
    assert got["project"] == "loom" and got["branch"] == "main"
    updated = datetime.fromisoformat(got["updated_at"])
    assert before - timedelta(seconds=5) <= updated <= after + timedelta(seconds=5)
    assert 0 <= got["age_seconds"] <= 60

    first = b.get(brief_key="k", revision=1)
    assert first["head_sha"] == "sha1" and first["trigger"] == "manual"
    assert first["author"] == "deterministic"
    second = b.get(brief_key="k", revision=2)
    assert second["head_sha"] == "sha2" and second["trigger"] == "precompact"
    assert datetime.fromisoformat(first["updated_at"]) <= updated

    clock.later = timedelta(hours=2)
    aged = b.get(brief_key="k")["age_seconds"]
    assert 2 * 3600 - 5 <= aged <= 2 * 3600 + 60


def test_source_sessions_keep_the_last_20_oldest_first(b):
    """GIVEN one brief saved from 25 sessions in turn (s00 .. s24)
    WHEN get reads it
    THEN source_sessions are s05 .. s24, oldest first, and from_session s04 no longer finds it
    while s05 does.
    """
    for i in range(25):
        b.save(brief_key="k", session_id=f"s{i:02d}", sections={"status": f"from s{i:02d}"})

    got = b.get(brief_key="k")
    assert got["source_sessions"] == [f"s{i:02d}" for i in range(5, 25)]
    assert got["revisions"] == 25
    assert b.get(from_session="s04")["found"] is False
    assert b.get(from_session="s05")["brief_key"] == "k"


def test_a_session_saving_again_moves_to_the_end_of_source_sessions(b):
    """GIVEN a brief saved from s1, s2, then s1 again
    WHEN get reads it
    THEN source_sessions lists each once, s2 then s1.
    """
    for s in ("s1", "s2", "s1"):
        b.save(brief_key="k", session_id=s, sections={"status": s})

    assert b.get(brief_key="k")["source_sessions"] == ["s2", "s1"]


def test_events_total_counts_only_the_events_the_model_read(b, deps, pool):
    """GIVEN six events of about 500 characters, windows of 1,000 characters and at most one
    window read by the model
    WHEN they are saved THEN events_total and source_chars count the events of that last
    window only, not all six."""
    events = [ev("user", f"step {i} " + "y" * 480) for i in range(6)]
    deps._llm = RecordingLLM(reply=sections_json(status="revised"))
    with live_setting(pool, session_brief_window_chars="1000", session_brief_max_windows="1"):
        out = b.save(brief_key="k", events=events)
    assert out["author"] == "llm"
    read = [e for e in events if e["text"] in deps._llm.calls[-1]["user"]]
    assert 0 < len(read) < len(events)
    got = b.get(brief_key="k")
    assert got["events_total"] == len(read)
    assert got["source_chars"] == sum(len(e["text"]) for e in read)
