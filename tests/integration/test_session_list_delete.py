"""Session briefs, brief_list and brief_delete."""

from __future__ import annotations

import pytest

from tests.integration.test_session_support import Briefs, brief_rows, revision_rows


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def keys(listing: dict) -> list[str]:
    return [x["brief_key"] for x in listing["briefs"]]


def test_list_is_newest_first_with_one_rendered_line_per_brief(b):
    """GIVEN briefs A, B and C saved in that order, then A revised
    WHEN the namespace's briefs are listed
    THEN they come A, C, B, and rendered has one line per brief naming its key, revision,
    agent and goal, in the same order.
    """
    b.save(brief_key="A", sections={"goal": "goal of A"})
    b.save(brief_key="B", sections={"goal": "goal of B"}, agent="a2")
    b.save(brief_key="C", sections={"goal": "goal of C"})
    b.save(brief_key="A", sections={"status": "again"})

    out = b.list()

    assert keys(out) == ["A", "C", "B"]
    lines = out["rendered"].split("\n")
    assert len(lines) == 3
    expected = [("A", 2, "a1"), ("C", 1, "a1"), ("B", 1, "a2")]
    for line, (key, rev, agent) in zip(lines, expected, strict=True):
        assert line.startswith(f"{key} · rev {rev} · ")
        assert f" · {agent} · goal of {key}" in line
    a = out["briefs"][0]
    assert (a["revision"], a["agent"], a["goal"]) == (2, "a1", "goal of A")
    assert a["age_seconds"] >= 0 and a["updated_at"]


def test_an_empty_namespace_lists_nothing(b):
    """GIVEN a namespace holding no briefs
    WHEN its briefs are listed
    THEN briefs is empty and rendered is empty.
    """
    out = b.list()
    assert out["briefs"] == [] and out["rendered"] == ""


def test_a_multi_line_goal_still_lists_as_one_line(b):
    """GIVEN two briefs, one whose goal spans two lines
    WHEN the briefs are listed
    THEN rendered still has exactly one line per brief.
    """
    b.save(brief_key="A", sections={"goal": "first line\nsecond line"})
    b.save(brief_key="B", sections={"goal": "plain"})

    out = b.list()

    assert len(out["rendered"].split("\n")) == 2
    assert all(line.startswith(("A ·", "B ·")) for line in out["rendered"].split("\n"))


def test_an_agent_name_holding_a_line_break_still_lists_as_one_line(b):
    """GIVEN two briefs, one saved by an agent whose name holds a line break
    WHEN the briefs are listed
    THEN rendered still has exactly one line per brief, the name on one line.
    """
    b.save(brief_key="A", agent="bot\nrogue line", sections={"goal": "G1"})
    b.save(brief_key="B", sections={"goal": "G2"})

    lines = b.list()["rendered"].split("\n")

    assert len(lines) == 2
    assert "· bot rogue line ·" in next(line for line in lines if line.startswith("A ·"))


def test_mine_only_lists_only_the_calling_agents_briefs(b):
    """GIVEN briefs saved by agents a1 and a2
    WHEN a1 lists with mine_only, and without
    THEN mine_only shows a1's briefs only; without it, every agent's.
    """
    b.save(brief_key="mine-1", sections={"goal": "g"}, agent="a1")
    b.save(brief_key="theirs", sections={"goal": "g"}, agent="a2")
    b.save(brief_key="mine-2", sections={"goal": "g"}, agent="a1")

    assert keys(b.list(agent="a1", mine_only=True)) == ["mine-2", "mine-1"]
    assert keys(b.list(agent="a2", mine_only=True)) == ["theirs"]
    assert keys(b.list(agent="a1")) == ["mine-2", "theirs", "mine-1"]


def test_list_filters_by_project_and_from_session(b):
    """GIVEN briefs of projects p1 and p2 from sessions s1 and s2
    WHEN listed by project, by from_session, and by both
    THEN each filter keeps only the matching briefs.
    """
    b.save(brief_key="A", project="p1", session_id="s1", sections={"goal": "g"})
    b.save(brief_key="B", project="p2", session_id="s1", sections={"goal": "g"})
    b.save(brief_key="C", project="p1", session_id="s2", sections={"goal": "g"})

    assert keys(b.list(project="p1")) == ["C", "A"]
    assert keys(b.list(from_session="s1")) == ["B", "A"]
    assert keys(b.list(project="p1", from_session="s2")) == ["C"]
    assert keys(b.list(project="p9")) == []


def test_limit_bounds_the_list_and_must_be_1_to_50(b):
    """GIVEN three briefs
    WHEN listed with limit 2, 1 and 50, then with limit 0 and 51
    THEN 2, 1 and 3 come back (newest first); 0 and 51 are refused with 422.
    """
    for k in ("A", "B", "C"):
        b.save(brief_key=k, sections={"goal": "g"})

    assert keys(b.list(limit=2)) == ["C", "B"]
    assert keys(b.list(limit=1)) == ["C"]
    assert keys(b.list(limit=50)) == ["C", "B", "A"]
    for bad in (0, 51, -1):
        status, data = b.post("session.brief_list", as_="viewer", limit=bad)
        assert status == 422, (bad, data)


def test_delete_forgets_a_brief_which_then_serves_only_deleted(b, pool):
    """GIVEN a brief at revision 2 with a client summary
    WHEN it is deleted
    THEN delete answers deleted true at revision 2; get (by key, with every option) answers
    found false, deleted true and nothing else; it leaves the list; its history is gone.
    """
    b.save(brief_key="k", sections={"goal": "secret goal"}, session_id="s1", project="p")
    b.save(brief_key="k", sections={"status": "secret status"}, session_id="s1")

    out = b.delete(brief_key="k")

    assert (out["deleted"], out["brief_key"], out["revision"]) == (True, "k", 2)
    for opts in ({}, {"revision": 1}, {"full": True, "include_sections": True}):
        got = b.get(brief_key="k", **opts)
        assert got["found"] is False and got["deleted"] is True, opts
        assert got["rendered"] == "" and got["sections"] is None
        assert got["revision"] == 0 and got["revisions"] == 0 and got["source_sessions"] == []
        assert got["author"] == got["actor"] == got["project"] == got["head_sha"] == ""
        assert got["updated_at"] is None and got["brief_chars"] == 0
    assert keys(b.list()) == []
    assert b.get(from_session="s1")["found"] is False
    assert b.get(project="p")["found"] is False
    assert revision_rows(pool, b.org, "k") == []
    assert all("secret" not in r["rendered"] for r in brief_rows(pool, b.org))


def test_deleting_an_unknown_or_already_deleted_key_answers_deleted_false(b):
    """GIVEN a brief deleted once, and a key never saved
    WHEN each is deleted
    THEN each answers deleted false at revision 0.
    """
    b.save(brief_key="k", sections={"goal": "g"})
    assert b.delete(brief_key="k")["deleted"] is True

    for key in ("k", "never-saved"):
        out = b.delete(brief_key=key)
        assert (out["deleted"], out["brief_key"], out["revision"]) == (False, key, 0)


def test_a_deleted_key_saved_again_starts_a_new_brief(b):
    """GIVEN a deleted brief
    WHEN the same key is saved again
    THEN it is a new brief at revision 1, without the old text.
    """
    b.save(brief_key="k", sections={"goal": "old goal"})
    b.save(brief_key="k", sections={"status": "old status"})
    b.delete(brief_key="k")

    out = b.save(brief_key="k", sections={"goal": "new goal"})

    assert out["revision"] == 1 and "old" not in out["rendered"]
    got = b.get(brief_key="k")
    assert got["found"] is True and got["revisions"] == 1 and "old" not in got["rendered"]


def test_delete_needs_the_writer_role(b, pool):
    """GIVEN a brief
    WHEN a viewer tries to delete it
    THEN it is refused with 403 and the brief is still served.
    """
    b.save(brief_key="k", sections={"goal": "g"})

    status, data = b.post("session.brief_delete", as_="viewer", brief_key="k")

    assert status == 403, data
    assert b.get(brief_key="k")["found"] is True


def test_save_needs_the_writer_role_and_get_and_list_only_viewer(b, pool):
    """GIVEN a viewer token
    WHEN it saves a brief, then gets and lists
    THEN the save is refused with 403 and stores nothing; get and list answer 200.
    """
    status, _ = b.post("session.brief_save", as_="viewer", brief_key="k", sections={"goal": "g"})
    assert status == 403
    assert brief_rows(pool, b.org) == []
    assert b.get(brief_key="k")["found"] is False
    assert b.list()["briefs"] == []
