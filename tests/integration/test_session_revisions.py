"""Session briefs, revisions: history, revision=N, retries, compare-and-set, concurrent saves."""

from __future__ import annotations

import threading

import pytest

from chalicelib.auth import Caller
from chalicelib.errors import ConflictError
from chalicelib.registry import call
from tests.integration.test_session_support import (
    NS,
    Briefs,
    RecordingLLM,
    brief_rows,
    ev,
    revision_rows,
    scripted,
    sections_json,
)


@pytest.fixture
def b(api, deps, org):
    return Briefs.open(api, deps, org)


def test_each_save_adds_a_revision_and_revision_n_reads_it(b, pool):
    """GIVEN three saves of one brief with goals one, two and three
    WHEN revision 1, 2 and 0 (current) are read
    THEN each returns that revision's text; the history holds 3 revisions.
    """
    saved = [b.save(brief_key="k", sections={"goal": f"goal {n}"}) for n in ("one", "two", "three")]
    assert [s["revision"] for s in saved] == [1, 2, 3]

    for n, s in enumerate(saved, start=1):
        got = b.get(brief_key="k", revision=n)
        assert got["found"] is True and got["revision"] == n
        assert got["rendered"] == s["rendered"]
        assert got["revisions"] == 3
    assert "goal one" in b.get(brief_key="k", revision=1)["rendered"]
    assert "goal one" not in b.get(brief_key="k", revision=2)["rendered"]
    assert b.get(brief_key="k")["rendered"] == saved[2]["rendered"]
    assert [r["revision"] for r in revision_rows(pool, b.org, "k")] == [1, 2, 3]


def test_a_revision_not_in_the_history_is_not_found(b):
    """GIVEN a brief at revision 2
    WHEN revision 3 or 99 is asked for
    THEN found is false and no text is served.
    """
    b.save(brief_key="k", sections={"goal": "g1"})
    b.save(brief_key="k", sections={"goal": "g2"})

    for n in (3, 99):
        got = b.get(brief_key="k", revision=n)
        assert got["found"] is False and got["rendered"] == "" and got["sections"] is None


def test_repeating_the_previous_session_and_cursor_is_a_retry_that_writes_nothing(b, deps, pool):
    """GIVEN a save from session s1 with event_cursor 'line-40', revised by a model
    WHEN the same save is sent again
    THEN it answers changed false, reason already-saved, the stored revision and text; no
    revision is added and the model is not called again.
    """
    llm = scripted(sections_json(goal="first"), sections_json(goal="second"))
    deps._llm = llm
    body = {"brief_key": "k", "session_id": "s1", "event_cursor": "line-40"}
    first = b.save(events=[ev("user", "hello")], **body)

    again = b.save(events=[ev("user", "hello")], **body)

    assert again["changed"] is False and again["reason"] == "already-saved"
    assert again["revision"] == 1 and again["rendered"] == first["rendered"]
    assert len(llm.prompts) == 1
    assert len(revision_rows(pool, b.org, "k")) == 1


def test_a_new_cursor_or_another_session_is_not_a_retry(b, pool):
    """GIVEN a save from session s1 at cursor 'line-40'
    WHEN s1 saves at 'line-80', then s2 saves at 'line-80'
    THEN both are written (revisions 2 and 3).
    """
    b.save(brief_key="k", session_id="s1", event_cursor="line-40", sections={"goal": "a"})

    moved = b.save(brief_key="k", session_id="s1", event_cursor="line-80", sections={"goal": "b"})
    other = b.save(brief_key="k", session_id="s2", event_cursor="line-80", sections={"goal": "c"})

    assert (moved["changed"], moved["revision"]) == (True, 2)
    assert (other["changed"], other["revision"]) == (True, 3)


def test_if_revision_mismatch_is_409_and_writes_nothing(b, pool):
    """GIVEN a brief at revision 2
    WHEN a save sends if_revision 1 (or 3)
    THEN it is refused with 409 and the brief and its history are unchanged; if_revision 2
    then lands as revision 3.
    """
    b.save(brief_key="k", sections={"goal": "g1"})
    b.save(brief_key="k", sections={"goal": "g2"})
    before = brief_rows(pool, b.org)

    for stale in (1, 3):
        status, data = b.post(
            "session.brief_save", brief_key="k", if_revision=stale, sections={"goal": "stale"}
        )
        assert status == 409, data

    assert brief_rows(pool, b.org) == before
    assert len(revision_rows(pool, b.org, "k")) == 2
    assert "stale" not in b.get(brief_key="k")["rendered"]
    assert b.save(brief_key="k", if_revision=2, sections={"goal": "g3"})["revision"] == 3


def test_if_revision_zero_creates_only_a_new_brief(b, pool):
    """GIVEN no brief under key k
    WHEN saved with if_revision 0, then again with if_revision 0
    THEN the first creates revision 1 and the second is refused with 409.
    """
    assert b.save(brief_key="k", if_revision=0, sections={"goal": "a"})["revision"] == 1
    status, _ = b.post("session.brief_save", brief_key="k", if_revision=0, sections={"goal": "b"})
    assert status == 409
    assert len(revision_rows(pool, b.org, "k")) == 1


def _concurrent_saves(deps, org, bodies):
    """Run one session.brief_save per body at once; return (results, errors) by body."""
    caller = Caller(org=org, role="writer", principal="token:racer")
    results: list = [None] * len(bodies)

    def run(i: int) -> None:
        try:
            results[i] = call("session.brief_save", bodies[i], caller, deps).body
        except Exception as exc:  # collected and asserted on below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return results


def test_two_concurrent_saves_with_the_same_if_revision_never_both_land(b, deps, pool):
    """GIVEN a brief at revision 1, and two saves both holding if_revision 1, whose model
    calls are held until both saves have read the brief
    WHEN they run at once
    THEN exactly one lands (revision 2) and the other is refused with a conflict (409).
    """
    b.save(brief_key="k", sections={"goal": "start"})
    deps._llm = RecordingLLM(barrier=threading.Barrier(2))
    bodies = [
        {
            "namespace": NS,
            "agent": f"a{i}",
            "brief_key": "k",
            "if_revision": 1,
            "session_id": f"s{i}",
            "events": [ev("user", f"racer {i}")],
        }
        for i in (1, 2)
    ]

    results = _concurrent_saves(deps, b.org, bodies)

    landed = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, ConflictError)]
    assert len(landed) == 1 and len(refused) == 1, results
    assert refused[0].status == 409
    assert landed[0]["revision"] == 2
    assert len(revision_rows(pool, b.org, "k")) == 2
    assert b.get(brief_key="k")["revision"] == 2


def test_two_concurrent_saves_without_if_revision_both_land_keeping_both_decisions(b, deps, pool):
    """GIVEN a brief at revision 1 and two concurrent saves, each adding its own decision
    WHEN they run at once without if_revision
    THEN both land (revisions 2 and 3) and the brief keeps both decisions.
    """
    b.save(brief_key="k", sections={"goal": "start"})
    bodies = [
        {
            "namespace": NS,
            "agent": "a1",
            "brief_key": "k",
            "session_id": f"s{i}",
            "events": [ev("user", f"racer {i}")],
        }
        for i in (1, 2)
    ]

    def reply(user: str) -> str:
        who = "one" if "racer 1" in user else "two"
        return sections_json(decisions=[f"decision of racer {who}"])

    deps._llm = RecordingLLM(reply=reply, barrier=threading.Barrier(2))

    results = _concurrent_saves(deps, b.org, bodies)

    assert all(isinstance(r, dict) for r in results), results
    assert sorted(r["revision"] for r in results) == [2, 3]
    s = b.get(brief_key="k", include_sections=True)["sections"]
    assert sorted(s["decisions"]) == ["decision of racer one", "decision of racer two"]
    assert s["goal"] == "start"


def test_a_brief_deleted_while_a_save_runs_gets_back_none_of_its_text(b, deps, pool):
    """GIVEN a brief with a goal and a decision, and a save whose model call runs while the
    brief is deleted (the model carries the old goal and decision into its revision and adds
    one decision)
    WHEN the save lands after the delete
    THEN the brief it writes holds only what the save added: revision 1, the new decision, and
    nothing of the deleted goal or decision."""
    b.save(brief_key="k", sections={"goal": "SECRET goal", "decisions": ["SECRET decision"]})

    def reply(user: str) -> str:
        assert b.delete(brief_key="k")["deleted"] is True
        return sections_json(goal="SECRET goal", decisions=["SECRET decision", "new decision"])

    deps._llm = RecordingLLM(reply=reply)
    out = b.save(brief_key="k", session_id="s2", events=[ev("user", "carry on")])
    got = b.get(brief_key="k", include_sections=True)
    assert (out["revision"], got["revision"]) == (1, 1)
    assert got["sections"]["decisions"] == ["new decision"] and got["sections"]["goal"] == ""
    assert "SECRET" not in got["rendered"]


def test_a_first_save_that_lands_while_another_runs_keeps_both_decisions(b, deps, pool):
    """GIVEN no brief 'k', and a save whose model call runs while another save creates 'k'
    with its own decision
    WHEN the first save lands
    THEN it lands as revision 2 on top of the other, and the brief keeps both decisions."""

    def reply(user: str) -> str:
        b.save(brief_key="k", sections={"decisions": ["inner decision"]})
        return sections_json(decisions=["outer decision"])

    deps._llm = RecordingLLM(reply=reply)
    out = b.save(brief_key="k", session_id="s1", events=[ev("user", "outer")])
    got = b.get(brief_key="k", include_sections=True)
    assert out["revision"] == got["revision"] == 2
    assert sorted(got["sections"]["decisions"]) == ["inner decision", "outer decision"]


def test_a_retry_caught_under_the_lock_answers_the_stored_revision(b, deps, pool):
    """GIVEN a brief at revision 1, and two identical saves (same session and event cursor)
    whose model calls are held until both have read the brief
    WHEN they run at once
    THEN one lands as revision 2; the other is a retry that writes nothing and answers the
    stored brief (revision 2, its text), so an if_revision taken from it holds."""
    b.save(brief_key="k", sections={"goal": "start"})
    body = {"namespace": NS, "agent": "a1", "brief_key": "k", "session_id": "s1",
            "event_cursor": "c-7", "events": [ev("user", "the same events")]}  # fmt: skip
    deps._llm = RecordingLLM(barrier=threading.Barrier(2))
    results = _concurrent_saves(deps, b.org, [body, dict(body)])
    assert all(isinstance(r, dict) for r in results), results
    landed = [r for r in results if r["changed"]]
    retried = [r for r in results if not r["changed"]]
    assert len(landed) == 1 and len(retried) == 1
    assert retried[0]["reason"] == "already-saved"
    assert retried[0]["revision"] == landed[0]["revision"] == 2
    assert retried[0]["rendered"] == landed[0]["rendered"]
    assert len(revision_rows(pool, b.org, "k")) == 2
