"""session.brief_list never shows a goal that reads as high; the brief itself still does."""

from __future__ import annotations

import pytest

from tests.integration.test_session_support import Briefs

HIGH = "the vault password=hunter22 opens it"


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def test_a_goal_that_reads_as_high_lists_empty_and_the_brief_still_shows_it(b):
    """GIVEN a brief whose goal holds a password, and one with a plain goal
    WHEN the namespace's briefs are listed, and the first one is fetched by key
    THEN the list shows the first one's goal empty, in briefs and in rendered, and the plain
    goal as it is; session.brief_get of the brief is unchanged and shows its goal.
    """
    b.save(brief_key="vault", sections={"goal": HIGH})
    b.save(brief_key="plain", sections={"goal": "Move the invoices"})

    out = b.list()

    goals = {x["brief_key"]: x["goal"] for x in out["briefs"]}
    assert goals == {"vault": "", "plain": "Move the invoices"}
    assert "hunter22" not in out["rendered"]
    assert "Move the invoices" in out["rendered"]
    assert HIGH in b.get(brief_key="vault")["rendered"]


def test_a_goal_whose_listed_line_reads_as_high_lists_empty(b):
    """GIVEN a goal that reads as high only once rendered's one line joins its lines
    WHEN the briefs are listed
    THEN the goal lists empty.
    """
    goal = "pay with card 4111 1111\n1111 1111"  # a card number once on one line
    b.save(brief_key="card", sections={"goal": goal})

    out = b.list()

    assert out["briefs"][0]["goal"] == ""
    assert "4111" not in out["rendered"]
