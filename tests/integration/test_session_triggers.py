"""Session briefs, triggers: automatic saves follow the namespace's recording switch."""

from __future__ import annotations

import pytest

from tests.integration.test_session_support import Briefs, brief_rows, ev


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


@pytest.mark.parametrize("trigger", ["precompact", "session_end", "stop"])
def test_an_automatic_trigger_stores_nothing_while_recording_is_off(b, pool, trigger):
    """GIVEN a namespace whose conversation recording was never turned on
    WHEN a save with events and sections arrives with an automatic trigger
    THEN it answers changed false, reason recording_off, and stores nothing; once
    conversation.set_logging turns recording on, the same save is stored.
    """
    body = {
        "brief_key": "k",
        "trigger": trigger,
        "events": [ev("user", "work on it")],
        "sections": {"goal": "G"},
    }

    off = b.save(**body)
    assert off["changed"] is False and off["reason"] == "recording_off"
    assert off["revision"] == 0 and off["rendered"] == ""
    assert brief_rows(pool, b.org) == []

    b.set_logging(True)
    on = b.save(**body)
    assert on["changed"] is True and on["reason"] == "" and on["revision"] == 1
    assert b.get(brief_key="k")["trigger"] == trigger


def test_turning_recording_off_again_stops_automatic_saves(b):
    """GIVEN recording on and a brief saved at precompact
    WHEN recording is turned off and another precompact save arrives
    THEN that save answers recording_off with the stored revision and text, and writes nothing.
    """
    b.set_logging(True)
    first = b.save(brief_key="k", trigger="precompact", sections={"goal": "G1"})
    b.set_logging(False)

    out = b.save(brief_key="k", trigger="precompact", sections={"goal": "G2"})

    assert out["reason"] == "recording_off" and out["changed"] is False
    assert out["revision"] == 1 and out["rendered"] == first["rendered"]
    assert "G2" not in b.get(brief_key="k")["rendered"]


@pytest.mark.parametrize("trigger", ["manual", "model"])
def test_manual_and_model_saves_store_while_recording_is_off(b, pool, trigger):
    """GIVEN a namespace whose recording is off
    WHEN a save arrives with trigger manual (or model)
    THEN it is stored.
    """
    out = b.save(brief_key="k", trigger=trigger, sections={"goal": "G"})

    assert out["changed"] is True and out["revision"] == 1
    assert [r["brief_key"] for r in brief_rows(pool, b.org)] == ["k"]


def test_the_default_trigger_is_manual(b):
    """GIVEN recording off
    WHEN a save sends no trigger
    THEN it is stored, and its revision's trigger is manual.
    """
    assert b.save(brief_key="k", sections={"goal": "G"})["changed"] is True
    assert b.get(brief_key="k")["trigger"] == "manual"


def test_no_events_and_no_sections_is_nothing_to_save(b, pool):
    """GIVEN a brief at revision 1
    WHEN a manual save sends no events and no sections (to k, and to a new key)
    THEN each answers changed false, reason nothing-to-save, and nothing is written.
    """
    first = b.save(brief_key="k", sections={"goal": "G"})

    same = b.save(brief_key="k", events=[])
    fresh = b.save(brief_key="new")

    assert (same["changed"], same["reason"], same["revision"]) == (False, "nothing-to-save", 1)
    assert same["rendered"] == first["rendered"]
    assert (fresh["changed"], fresh["reason"], fresh["revision"]) == (False, "nothing-to-save", 0)
    assert [r["brief_key"] for r in brief_rows(pool, b.org)] == ["k"]
