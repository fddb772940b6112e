"""Keys minted from a fact's subject and attribute, revisions under value updates, the memory
plane's checks on extracted facts, and forget requests."""

from __future__ import annotations

import pytest

from tests.integration.test_memory_support import (
    Mem,
    fact,
    facts_of,
    keys,
    live_setting,
    reply,
    scripted,
    turns,
    verdicts,
    version_rows,
)

LISBON = fact("User", "Home City", "The user lives in Lisbon.", span="moved to Lisbon")
BERLIN = fact("user", "home  city", "The user lives in Berlin.", span="moved to Berlin")
FIRST = turns(("user", "I moved to Lisbon last month."))
LATER = turns(("user", "Update: I moved to Berlin this week."))


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def test_a_key_is_minted_from_subject_and_attribute_never_the_value(m, deps):
    """GIVEN an extraction returning a fact with subject "User" and attribute "Home City"
    WHEN it is written
    THEN its key is user/home_city: folded subject and attribute, nothing of the value.
    """
    scripted(deps, reply(LISBON))

    out = m.extract_ok(FIRST)

    assert keys(out) == ["user/home_city"]
    assert "lisbon" not in out["written"][0]["key"].lower()


def test_a_later_session_on_the_same_attribute_is_a_conflict_while_value_updates_are_off(
    m, deps, pool
):
    """GIVEN a fact extracted in one session, and value updates off (the default)
    WHEN a later session states the same attribute with a new value
    THEN it lands on the same key with verdict conflict at version 1, and the old value stays.
    """
    scripted(deps, reply(LISBON), reply(BERLIN))
    m.extract_ok(FIRST, session_id="s1")

    out = m.extract_ok(LATER, session_id="s2")

    assert [(w["key"], w["conflict_verdict"], w["version"]) for w in out["written"]] == [
        ("user/home_city", "conflict", 1)
    ]
    assert facts_of(pool, m.org) == {"user/home_city": "The user lives in Lisbon."}
    assert [v for v, _, _ in version_rows(pool, m.org, "user/home_city")] == [1]


def test_a_later_session_on_the_same_attribute_revises_the_row_with_value_updates_on(m, deps, pool):
    """GIVEN a fact extracted in one session, and memory_extract_value_updates set live to true
    WHEN a later session states the same attribute with a new value
    THEN the same key is updated to version 2; loom.memory_versions holds both values, and
    memory.evidence serves the new version's turn first.
    """
    scripted(deps, reply(LISBON), reply(BERLIN))
    m.extract_ok(FIRST, session_id="s1")

    with live_setting(pool, memory_extract_value_updates="true"):
        out = m.extract_ok(LATER, session_id="s2")

    assert [(w["key"], w["conflict_verdict"], w["version"]) for w in out["written"]] == [
        ("user/home_city", "updated", 2)
    ]
    assert facts_of(pool, m.org) == {"user/home_city": "The user lives in Berlin."}
    assert version_rows(pool, m.org, "user/home_city") == [
        (1, "The user lives in Lisbon.", "created"),
        (2, "The user lives in Berlin.", "updated"),
    ]
    ev = m.ok("memory.evidence", as_="viewer", key="user/home_city")["turns"]
    assert [(t["version"], t["content"], t["span"]) for t in ev] == [
        (2, LATER[0]["content"], "moved to Berlin"),
        (1, FIRST[0]["content"], "moved to Lisbon"),
    ]


def test_one_attribute_stated_twice_in_a_transcript_keeps_the_later_statement(m, deps, pool):
    """GIVEN an extraction returning the same subject and attribute twice with two values
    WHEN it is written
    THEN one row is written at that key, holding the later value.
    """
    scripted(deps, reply(LISBON, BERLIN))

    out = m.extract_ok(FIRST + LATER)

    assert keys(out) == ["user/home_city"]
    assert facts_of(pool, m.org) == {"user/home_city": "The user lives in Berlin."}


def test_extracted_facts_meet_the_blacklist_and_locks(m, deps, pool):
    """GIVEN a locked row and a blacklist pattern, and value updates on
    WHEN an extraction revises the locked row and states a blacklisted value
    THEN the verdicts are locked and blacklisted, the locked value stays and nothing matching
    the pattern is stored.
    """
    m.set("user/home_city", "The user lives in Lisbon.", lock=True)
    m.blacklist("project nightjar")
    scripted(deps, reply(BERLIN, fact("user", "project", "The user leads Project Nightjar.")))

    with live_setting(pool, memory_extract_value_updates="true"):
        out = m.extract_ok(LATER)

    assert verdicts(out) == {"user/home_city": "locked", "user/project": "blacklisted"}
    assert facts_of(pool, m.org) == {"user/home_city": "The user lives in Lisbon."}


def test_a_forget_request_retires_the_matching_rows_and_names_them(m, deps, pool):
    """GIVEN stored memories of the user's city, employer and pet
    WHEN the extraction returns forget requests by subject and attribute (the city) and by
    content ("Initech")
    THEN those two rows are retired and named in forgotten / forgotten_keys; the pet stays.
    """
    m.set("user/home_city", "The user lives in Lisbon.")
    m.set("user/employer", "The user works at Initech.")
    m.set("user/pet", "The user has a cat called Miso.")
    scripted(
        deps,
        reply(
            forget=[{"subject": "User", "attribute": "home city", "text": ""}, {"text": "initech"}]
        ),
    )

    out = m.extract_ok(turns(("user", "Please forget where I live and where I work.")))

    assert out["forgotten"] == 2
    assert out["forgotten_keys"] == ["user/employer", "user/home_city"]
    assert facts_of(pool, m.org) == {"user/pet": "The user has a cat called Miso."}
    assert m.get("user/home_city")["found"] is False


def test_a_forget_by_subject_and_attribute_is_not_held_to_the_latest_50(m, deps, pool):
    """GIVEN a stored home city, and a content match ("Initech") in the window
    WHEN the extraction returns a forget request by subject and attribute (the city), then
    50 by content only, and an old content request (Initech) before those 50
    THEN the city is retired (every request naming a key counts); only the latest 50 are
    matched by content, so the employer stays.
    """
    m.set("user/home_city", "The user lives in Porto.")
    m.set("user/employer", "The user works at Initech.")
    forget = [{"subject": "user", "attribute": "home city", "text": ""}, {"text": "initech"}]
    forget += [
        {"subject": "", "attribute": "", "text": f"nothing like this {i}"} for i in range(50)
    ]
    scripted(deps, reply(forget=forget))

    out = m.extract_ok(turns(("user", "Forget where I live, and a lot of other things.")))

    assert out["forgotten_keys"] == ["user/home_city"]
    assert facts_of(pool, m.org) == {"user/employer": "The user works at Initech."}


def test_a_forget_request_leaves_a_locked_row(m, deps, pool):
    """GIVEN a locked memory of the user's city
    WHEN the extraction returns a forget request for it
    THEN the row stays and is not named in forgotten_keys.
    """
    m.set("user/home_city", "The user lives in Lisbon.", lock=True)
    scripted(deps, reply(forget=[{"subject": "user", "attribute": "home city", "text": "Lisbon"}]))

    out = m.extract_ok(turns(("user", "Forget where I live.")))

    assert (out["forgotten"], out["forgotten_keys"]) == (0, [])
    assert facts_of(pool, m.org) == {"user/home_city": "The user lives in Lisbon."}
