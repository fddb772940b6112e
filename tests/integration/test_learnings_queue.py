"""The agent-learnings review queue over HTTP: a rule a bot states about itself is filed for
review with its users' quotes, never written as a memory; an admin promotes or rejects it; a
promoted rule is served back to that bot only (extraction.txt, "Rules the assistant states
about itself"; knowledge-and-agent-reads.md, "Learnings")."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from chalicelib import cli
from tests.conftest import live_setting
from tests.integration.test_extraction_drops import cli_env  # noqa: F401  (a fixture)
from tests.integration.test_memory_support import (
    NS,
    NS2,
    Mem,
    audit_rows,
    drop_rows,
    fact,
    facts_of,
    reply,
    scripted,
    turns,
)

ASK = "Can you refund my $900 order?"
SAID = "Sure thing. I escalate any refund over $500 to a human. Someone will write soon."
SPAN = "I escalate any refund over $500 to a human"
RULE = "I escalate any refund over $500 to a human."
KEY = "assistant/refund_escalation"
TALK = turns(("user", ASK), ("assistant", SAID))
HIGH = "the vault password=hunter22 opens it"


def rule(
    value: str = RULE, *, attribute: str = "refund escalation", indices: tuple[int, ...] = (1,),
    span: str = SPAN,
) -> dict[str, Any]:  # fmt: skip
    return fact("assistant", attribute, value, indices=indices, span=span, about="agent")


@pytest.fixture
def m(api, deps, org, pool):
    with live_setting(pool, memory_extract_agent_learnings="true"):
        yield Mem.open(api, deps, org)


def state(
    m: Mem, *rules: dict[str, Any], user: str = "u1", session: str = "s1",
    messages: list[dict[str, Any]] | None = None, **kw: Any,
) -> dict[str, Any]:  # fmt: skip
    """A session in which the bot states `rules` (default: the refund rule)."""
    scripted(m.deps, reply(*(rules or (rule(),))))
    return m.extract_ok(messages or TALK, user_id=user, session_id=session, **kw)


def listed(m: Mem, **filters: Any) -> list[dict[str, Any]]:
    status, data = m.admin("learnings.list", as_="admin", namespace=NS, **filters)
    assert status == 200, data
    return list(data["candidates"])


def review(m: Mem, candidate_id: str, decision: str = "promote", **kw: Any) -> dict[str, Any]:
    status, data = m.admin(
        "learnings.review", as_="admin", namespace=NS, candidate_id=candidate_id,
        decision=decision, **kw,
    )  # fmt: skip
    assert status == 200, data
    return dict(data)


def drops(m: Mem, reason: str) -> int:
    rows = drop_rows(m.deps.pool, m.org)
    return sum(d["count"] for d in rows if (d["stage"], d["reason"]) == ("learnings.file", reason))


def served(m: Mem, agent: str, token: str | None = None) -> set[str]:
    """The learning:// documents context.pack serves a read under `agent`."""
    packed = m.ok(
        "context.pack", as_="viewer", token=token, agent=agent, query="refund over $500",
        include_memories=False,
    )  # fmt: skip
    items = next((s["items"] for s in packed["sections"] if s["name"] == "knowledge"), [])
    return {i["uri"] for i in items if i["uri"].startswith("learning://")}


def erase(m: Mem, user: str) -> None:
    status, data = m.admin("erasure.request", kind="user", user_id=user)
    assert status == 200, data


# ---- filing ---------------------------------------------------------------------------------


def test_a_rule_the_bot_states_waits_pending_with_the_users_quotes_and_is_no_memory(m, pool):
    """GIVEN the setting on and a session where the bot says it escalates refunds over $500
    WHEN the transcript is extracted
    THEN learning_candidates is 1, learnings.list shows one pending candidate for the
    request's agent with the rule, its key, support 1 and the user's quotes as rationale (the
    user turn before, and the span the extractor cited), and no memory holds the rule."""
    out = state(m)

    assert out["learning_candidates"] == 1
    assert out["written"] == []
    (c,) = listed(m)
    assert (c["agent"], c["key"], c["text"], c["status"], c["support"]) == (
        "a1", KEY, RULE, "pending", 1,
    )  # fmt: skip
    assert c["rationale"] == {"user_quote": ASK, "rule_quote": SPAN}
    assert facts_of(pool, m.org) == {}
    with pool.connection() as conn:
        kind, version = conn.execute(
            "SELECT source_kind, version FROM loom.learnings_queue WHERE org = %s", (m.org,)
        ).fetchone()
    assert (kind, version) == ("assistant_turn", 1)


def test_the_rule_as_said_is_the_turn_when_the_span_is_not_in_it_and_quotes_are_cut(m):
    """GIVEN a user turn of 300 characters, and an assistant turn of 600 that does not hold
    the span the extractor cited
    THEN the user quote is the turn's first 200 characters and the rule as said the
    assistant turn's first 400."""
    asked, said = "u" * 300, "I escalate big refunds. " + "a" * 576
    state(m, rule(span="not in the turn"), messages=turns(("user", asked), ("assistant", said)))

    (c,) = listed(m)
    assert c["rationale"] == {"user_quote": asked[:200], "rule_quote": said[:400]}


def test_a_rule_citing_no_assistant_turn_is_never_filed(m):
    """GIVEN a rule whose source_message_indices name only the user's turn
    THEN nothing is filed, learning_candidates is 0 and the drop is counted under
    learnings.file no_assistant_turn."""
    out = state(m, rule(indices=(0,)))

    assert out["learning_candidates"] == 0
    assert listed(m) == []
    assert drops(m, "no_assistant_turn") == 1


@pytest.mark.parametrize("how", ["reads_high", "blacklisted"])
def test_a_rule_that_reads_as_high_or_matches_the_blacklist_is_never_filed(m, how):
    """GIVEN a rule that reads as high, or one matching the namespace's blacklist
    THEN nothing is filed and the drop is counted under reason sensitive."""
    text = f"I tell callers {HIGH}." if how == "reads_high" else "I always mention Quokkabank."
    if how == "blacklisted":
        m.blacklist("quokkabank")
    out = state(m, rule(text, span=""))

    assert out["learning_candidates"] == 0
    assert listed(m) == []
    assert drops(m, "sensitive") == 1


def test_a_quote_that_reads_as_high_or_matches_the_blacklist_is_stored_blank(m, pool):
    """GIVEN a user turn that reads as high, and a span that matches the blacklist
    THEN the rule is filed and both quotes are stored blank."""
    m.blacklist("someone will write")
    talk = turns(("user", f"refund please, {HIGH}"), ("assistant", SAID))
    state(m, rule(span="to a human. Someone will write"), messages=talk)

    with pool.connection() as conn:
        quotes = conn.execute(
            "SELECT asked_quote, rule_quote FROM loom.learnings_supporters WHERE org = %s",
            (m.org,),
        ).fetchall()
    assert quotes == [("", "")]
    assert listed(m)[0]["text"] == RULE


def test_one_rule_is_one_candidate_by_agent_key_and_folded_text(m):
    """GIVEN the rule stated by two users in two sessions, the second time in other case with
    no final period; a different rule under the same key; the same rule for another agent
    THEN the first two are one candidate with support 2 whose text stays the first wording,
    and each of the others is a candidate of its own."""
    state(m, user="u1", session="s1")
    again = state(m, rule("i ESCALATE any refund over  $500 to a human"), user="u2", session="s2")
    state(m, rule("I escalate refunds over $900 to a manager."), user="u3", session="s3")
    state(m, user="u4", session="s4", agent="other-bot")

    assert again["learning_candidates"] == 1  # this session's support
    by = {(c["agent"], c["text"]): c["support"] for c in listed(m)}
    assert by == {
        ("a1", RULE): 2,
        ("a1", "I escalate refunds over $900 to a manager."): 1,
        ("other-bot", RULE): 1,
    }


def test_a_session_stating_the_rule_again_adds_no_support(m):
    """GIVEN a session that filed the rule
    WHEN the same session's next request states it again
    THEN learning_candidates is 0 and support stays 1."""
    state(m)
    out = state(m)

    assert out["learning_candidates"] == 0
    assert listed(m)[0]["support"] == 1


def test_without_the_setting_a_rule_is_dropped_not_filed(m, pool):
    """GIVEN a request that turns agent learnings off
    THEN the rule is neither filed nor written, counted as not_filed."""
    out = state(m, agent_learnings=False)

    assert out["learning_candidates"] == 0 and listed(m) == []
    assert drops(m, "not_filed") == 1 and facts_of(pool, m.org) == {}


def test_a_failed_queue_write_is_named_in_pipeline_errors_and_the_rule_dropped(m, pool):
    """GIVEN a queue write that fails once its supporter row is written
    THEN the response names learnings.file in pipeline_errors, the user's fact is still
    written, and neither the supporter nor the candidate is kept."""

    def fail(**_: Any) -> None:
        raise RuntimeError("queue down")

    m.deps.hooks.on("learnings.supporter_written", fail)
    home = fact("user", "home", "The user lives in Lisbon.", indices=[0])
    out = state(m, rule(), home)

    assert "learnings.file:RuntimeError" in out["pipeline_errors"]
    assert out["learning_candidates"] == 0
    assert facts_of(pool, m.org) == {"user/home": "The user lives in Lisbon."}
    assert listed(m) == [] and drops(m, "queue_write_failed") == 1
    with pool.connection() as conn:
        assert conn.execute(
            "SELECT count(*) FROM loom.learnings_supporters WHERE org = %s", (m.org,)
        ).fetchone() == (0,)


# ---- who files for which bot ----------------------------------------------------------------


def test_a_token_pinned_to_a_user_files_for_its_signed_agent_never_the_bodys(m):
    """GIVEN an end-user token pinned to u1 and signed for agent support-bot, a token pinned
    to u2 that names no agent, and a namespace-wide writer
    WHEN each states the rule with body agent a1
    THEN the first files for support-bot, the second files nothing (no_agent), the third
    files for a1."""
    signed = m.token("writer", read_scope="own_user", read_user_id="u1", agent="support-bot")
    unsigned = m.token("writer", read_scope="own_user", read_user_id="u2")

    scripted(m.deps, reply(rule()))
    m.post("memory.set_from_messages", token=signed, messages=TALK, session_id="s1")
    scripted(m.deps, reply(rule()))
    out = m.post("memory.set_from_messages", token=unsigned, messages=TALK, session_id="s2")[1]
    state(m, user="u3", session="s3")

    assert out["learning_candidates"] == 0 and drops(m, "no_agent") == 1
    assert sorted((c["agent"], c["support"]) for c in listed(m)) == [("a1", 1), ("support-bot", 1)]


def test_an_agent_claim_needs_a_pinned_user(deps, org):
    """An agent claim is refused on a token not pinned to one end user, and '*' is no agent."""
    from chalicelib.auth import mint_token
    from chalicelib.errors import BadRequestError

    with pytest.raises(BadRequestError, match="--agent needs"):
        mint_token(deps, org=org, role="writer", agent="bot")
    with pytest.raises(BadRequestError, match="not one agent"):
        mint_token(deps, org=org, role="writer", read_scope="own_user", read_user_id="u", agent="*")


# ---- review ---------------------------------------------------------------------------------


def test_support_never_promotes_and_a_promoted_rule_is_served_to_that_bot_only(m):
    """GIVEN a rule of a1 supported by three sessions
    THEN it stays pending and no read is served it
    WHEN an admin promotes it (audited)
    THEN learning://<id> is published tagged agent:a1 and authored by the reviewer; a1's
    reads are served it (an end-user token signed for a1 included), another bot's and a read
    under no agent are not, a namespace-wide read ('*') is."""
    for i in range(3):
        state(m, user=f"u{i}", session=f"s{i}")
    (c,) = listed(m)
    assert c["status"] == "pending" and served(m, "a1") == set()

    out = review(m, c["candidate_id"], note="matches the refund policy")

    uri = f"learning://{c['candidate_id']}"
    assert (out["status"], out["destination"], out["uri"]) == ("promoted", "knowledge", uri)
    doc = m.ok("knowledge.get", as_="viewer", uri=uri)["document"]
    assert doc["text"] == RULE and doc["tags"] == ["agent:a1"]
    assert doc["author"] == "token:admin-" + m.org
    assert [r["op"] for r in audit_rows(m.deps.pool, m.org, "learnings.review")]
    signed = m.token("viewer", read_scope="own_user", read_user_id="u0", agent="a1")
    assert served(m, "a1") == served(m, "*") == served(m, "ignored", signed) == {uri}
    assert served(m, "other-bot") == served(m, "-") == set()
    (after,) = listed(m, status="promoted")
    assert (after["decided_by"], after["note"]) == ("token:admin-" + m.org, out and after["note"])
    assert after["decided_at"] is not None


def test_a_promoted_rule_restated_by_the_bot_files_nothing_new(m):
    """GIVEN a1's rule promoted to knowledge
    WHEN the bot restates it in other words under the same key, and word for word
    THEN no new candidate is filed: already_promoted for the new wording, decided for the
    promoted one
    WHEN the learning:// document is deleted
    THEN a new wording is filed as a new candidate, and the promoted one still counts as
    decided."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    review(m, cid)
    reworded = rule("Refunds above $500 are handed to a person by me.")

    assert state(m, reworded, user="u2", session="s2")["learning_candidates"] == 0
    assert state(m, user="u3", session="s3")["learning_candidates"] == 0
    assert (drops(m, "already_promoted"), drops(m, "decided")) == (1, 1)
    assert [c["candidate_id"] for c in listed(m)] == [cid]

    m.ok("knowledge.delete", uri=f"learning://{cid}")
    assert state(m, reworded, user="u4", session="s4")["learning_candidates"] == 1
    state(m, user="u5", session="s5")
    assert drops(m, "decided") == 2
    assert [c["text"] for c in listed(m, status="pending")] == [reworded["value"]]


def test_a_rejected_rule_coming_back_is_counted_and_another_rule_under_its_key_is_filed(m):
    """GIVEN a rule rejected before any promotion
    WHEN the bot states it again, and states a different rule under its key
    THEN the first is counted under decided and takes no supporter; the second is filed;
    nothing is served."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    assert review(m, cid, "reject")["status"] == "rejected"

    assert state(m, user="u2", session="s2")["learning_candidates"] == 0
    other = rule("I send refunds over $500 to the finance team.")
    assert state(m, other, user="u3", session="s3")["learning_candidates"] == 1

    assert drops(m, "decided") == 1
    (rejected,) = listed(m, status="rejected")
    assert rejected["support"] == 1
    assert [c["text"] for c in listed(m, status="pending")] == [other["value"]]
    assert served(m, "a1") == set()


def test_rejecting_a_promoted_rule_leaves_its_document_served(m):
    """GIVEN a promoted rule, then rejected
    THEN its document is still served to the bot and a new wording is still not filed."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    review(m, cid)
    assert review(m, cid, "reject")["version"] == 3

    assert served(m, "a1") == {f"learning://{cid}"}
    assert state(m, rule("Big refunds go to a human."), user="u2")["learning_candidates"] == 0
    assert drops(m, "already_promoted") == 1


def test_promoting_to_memory_writes_the_agents_shared_row(m, pool):
    """GIVEN a rule promoted with destination memory
    THEN the agent's row is written at user_id - with source learning:<id>: a namespace-wide
    memory.get finds it, a token bounded to one user does not; no document is published, so
    a new wording under its key is filed."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    out = review(m, cid, destination="memory")

    assert (out["destination"], out["key"], out["uri"]) == ("memory", KEY, "")
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT user_id, agent, value, source FROM loom.memories WHERE org = %s AND key = %s",
            (m.org, KEY),
        ).fetchone()
    assert row == ("-", "a1", RULE, f"learning:{cid}")
    assert m.get(KEY, user_id="-")["found"]
    bounded = m.token("viewer", read_scope="own_user", read_user_id="u1")
    assert not m.get(KEY, token=bounded)["found"]
    assert m.ok("knowledge.get", as_="viewer", uri=f"learning://{cid}")["found"] is False
    assert state(m, rule("Big refunds go to a human."), user="u2")["learning_candidates"] == 1


def test_a_rule_for_every_agent_carries_no_tag_and_is_served_to_every_read(m):
    """GIVEN a rule filed under agent '-' and promoted
    THEN its document has no agent tag and every read is served it."""
    state(m, agent="-")
    cid = listed(m)[0]["candidate_id"]
    review(m, cid)

    assert m.ok("knowledge.get", as_="viewer", uri=f"learning://{cid}")["document"]["tags"] == []
    assert served(m, "a1") == served(m, "-") == {f"learning://{cid}"}


def test_reviews_of_unknown_or_blank_candidates_and_bad_bodies(m):
    """An unknown id is found false; a bad decision is a 4xx naming the field."""
    assert review(m, "nope")["found"] is False
    status, data = m.admin(
        "learnings.review", as_="admin", namespace=NS, candidate_id="x", decision="maybe"
    )
    assert status in (400, 422) and "decision" in str(data)


def test_only_an_admin_of_the_namespace_lists_or_reviews_and_orgs_stay_apart(m, api, deps):
    """GIVEN a pending rule in org A
    THEN a writer is refused both ops, an admin bound to another namespace is refused, and
    another org's admin neither lists nor reviews it."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    writer = m.admin("learnings.list", as_="writer", namespace=NS)
    assert writer[0] == 403
    other_ns = m.token("admin", namespace=NS2)
    assert m.admin("learnings.list", token=other_ns, namespace=NS)[0] == 403

    other = Mem.open(api, deps, m.org + "-b")
    status, data = other.admin("learnings.list", as_="admin", namespace=NS)
    assert status == 200 and data["candidates"] == []
    status, data = other.admin(
        "learnings.review", as_="admin", namespace=NS, candidate_id=cid, decision="promote"
    )
    assert status == 200 and data["found"] is False
    assert listed(m)[0]["status"] == "pending"


def test_the_list_filters_by_status_and_agent_and_pages(m):
    """GIVEN five candidates of two agents, one rejected
    THEN status and agent filter, and pages of two walk all five once."""
    for i in range(4):
        state(m, rule(f"I follow house rule number {i}."), user=f"u{i}", session=f"s{i}")
    state(m, rule("I follow house rule number 9."), agent="b2", user="u9", session="s9")
    review(m, listed(m, agent="a1")[0]["candidate_id"], "reject")

    assert len(listed(m, agent="a1")) == 4 and len(listed(m, agent="b2")) == 1
    assert len(listed(m, status="pending")) == 4 and len(listed(m, status="rejected")) == 1
    seen, cursor = [], None
    while True:
        status, data = m.admin("learnings.list", as_="admin", namespace=NS, limit=2,
                               cursor=cursor)  # fmt: skip
        seen += [c["candidate_id"] for c in data["candidates"]]
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 5


# ---- erasure --------------------------------------------------------------------------------


def test_two_users_support_one_rule_and_erasing_them_settles_it(m):
    """GIVEN one rule stated first by u1, then by u2
    THEN the rationale is u1's quotes
    WHEN u1 is erased
    THEN support is 1 and the rationale u2's quotes
    WHEN u2 is erased
    THEN the pending candidate, left with no supporter, is deleted."""
    state(m, user="u1", session="s1")
    later = turns(("user", "What about my $700 refund?"), ("assistant", SAID))
    state(m, user="u2", session="s2", messages=later)
    (c,) = listed(m)
    assert (c["support"], c["rationale"]["user_quote"]) == (2, ASK)

    erase(m, "u1")
    (c,) = listed(m)
    assert (c["support"], c["rationale"]["user_quote"]) == (1, "What about my $700 refund?")

    erase(m, "u2")
    assert listed(m) == []


def test_a_decided_rule_whose_supporters_are_all_erased_keeps_its_decision_blank(m):
    """GIVEN a rejected rule supported by u1 alone
    WHEN u1 is erased
    THEN the candidate stays rejected with its rule blanked and no rationale, a promotion of
    it is refused (409), and the bot's restatement still counts as decided."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    review(m, cid, "reject")

    erase(m, "u1")

    (c,) = listed(m)
    assert (c["status"], c["text"], c["support"], c["rationale"]) == ("rejected", "", 0, None)
    status, data = m.admin(
        "learnings.review", as_="admin", namespace=NS, candidate_id=cid, decision="promote"
    )
    assert status == 409 and "no rule left" in data["error"]["message"]
    state(m, user="u2", session="s2")
    assert drops(m, "decided") == 1


def test_an_erasure_mid_filing_never_leaves_the_new_supporter_without_its_candidate(m):
    """GIVEN a pending rule supported by u1 alone
    WHEN u2's filing has written its supporter row, and u1's erasure runs before the filing
    commits
    THEN the candidate is there afterwards, with u2's support."""
    state(m, user="u1", session="s1")
    started: list[threading.Thread] = []

    def erase_meanwhile(**_: Any) -> None:
        t = threading.Thread(target=erase, args=(m, "u1"))
        t.start()
        started.append(t)
        time.sleep(0.5)  # the erasure reaches the candidate while this filing holds it

    m.deps.hooks.on("learnings.supporter_written", erase_meanwhile)
    state(m, user="u2", session="s2")
    started[0].join(10)

    (c,) = listed(m)
    assert c["support"] == 1 and c["rationale"]["user_quote"] == ASK


def test_erasure_export_lists_a_users_supporter_quotes(m):
    """GIVEN u1's support of a rule
    THEN erasure.export of u1 lists the supporter row with the quotes."""
    state(m)
    status, data = m.admin("erasure.export", kind="user", user_id="u1")
    assert status == 200, data
    text = str(data)
    assert "learnings_supporters" in text and ASK in text


# ---- loom drops -----------------------------------------------------------------------------


def test_loom_drops_shows_the_learnings_reasons(m, capsys, cli_env):  # noqa: F811
    """GIVEN a rule citing no assistant turn, one that reads as high, and a rejected rule
    restated
    WHEN `loom drops` runs for the namespace
    THEN each reason has its line under learnings.file."""
    state(m, rule(indices=(0,)), rule(f"I say {HIGH}.", attribute="secret", span=""))
    assert listed(m) == []
    state(m)
    review(m, listed(m)[0]["candidate_id"], "reject")
    state(m, user="u2", session="s2")

    assert cli.main(["drops", "--namespace", NS, "--org", m.org]) == 0
    lines = [ln.split()[:3] for ln in capsys.readouterr().out.splitlines()]
    for reason in ("no_assistant_turn", "sensitive", "decided"):
        assert ["learnings.file", reason, "1"] in lines


def test_erasing_the_reviewer_blanks_the_decision_s_name_and_keeps_the_decision(m):
    """GIVEN a rule rejected by an admin whose token's subject is the user rev-1
    WHEN rev-1 is erased
    THEN the candidate stays rejected, its rule and support kept, decided_by blank."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    reviewer = m.token("admin", subject="rev-1")
    status, _ = m.admin("learnings.review", token=reviewer, namespace=NS, candidate_id=cid,
                        decision="reject")  # fmt: skip
    assert status == 200 and listed(m)[0]["decided_by"] == "token:rev-1"

    erase(m, "rev-1")

    (c,) = listed(m)
    assert (c["status"], c["text"], c["support"], c["decided_by"]) == ("rejected", RULE, 1, "")


def _every_read(m: Mem, agent: str, token: str | None = None) -> dict[str, set[str]]:
    """The learning:// uris each agent read serves under `agent` (by `token` when given)."""
    q = "refund over $500"
    who: dict[str, Any] = {"token": token} if token else {"as_": "viewer"}

    def uris(items: list[dict[str, Any]]) -> set[str]:
        return {i["uri"] for i in items if str(i.get("uri") or "").startswith("learning://")}

    asked = m.ok("memory.ask", agent=agent, question=q, **who)
    return {
        "context.pack": served(m, agent, token),
        "memory.stack": uris(m.ok("memory.stack", agent=agent, **who)["documents"]),
        "search": uris(m.ok("search", agent=agent, query=q, **who)["knowledge"]),
        "memory.ask": uris([p for p in asked["passages"] if p["source"] == "knowledge"]),
    }


def test_every_agent_read_serves_a_promoted_rule_to_its_bot_only(m):
    """GIVEN a1's rule promoted to knowledge
    THEN context.pack, memory.stack, search and memory.ask (its whole-document route for a
    short document) serve it under a1, under '*', and to a1's end-user token whatever agent
    the body names; not under another bot, not under '-', and not to a pinned token minted
    without an agent."""
    state(m)
    cid = listed(m)[0]["candidate_id"]
    review(m, cid)
    uri = {f"learning://{cid}"}
    every = dict.fromkeys(("context.pack", "memory.stack", "search", "memory.ask"), uri)
    nothing = dict.fromkeys(every, set())
    signed = m.token("viewer", read_scope="own_user", read_user_id="u1", agent="a1")
    unsigned = m.token("viewer", read_scope="own_user", read_user_id="u1")

    assert _every_read(m, "a1") == _every_read(m, "*") == every
    assert _every_read(m, "other-bot", signed) == every
    assert _every_read(m, "other-bot") == _every_read(m, "-") == nothing
    assert _every_read(m, "a1", unsigned) == nothing


def test_a_deferred_request_files_for_the_agent_its_token_was_signed_for(m):
    """GIVEN a deferred request sent with an end-user token signed for support-bot, body agent
    a1
    WHEN the worker replays it
    THEN the rule is filed for support-bot, with that user's support."""
    from chalicelib.workers.extraction_queue import process_job

    signed = m.token("writer", read_scope="own_user", read_user_id="u1", agent="support-bot")
    status, queued = m.post("memory.set_from_messages", token=signed, messages=TALK,
                            session_id="s1", defer=True)  # fmt: skip
    assert status == 200 and queued["deferred"]
    scripted(m.deps, reply(rule()))

    assert process_job(m.deps, queued["queue_id"]) == "done"
    (c,) = listed(m)
    assert (c["agent"], c["support"], c["rationale"]["user_quote"]) == ("support-bot", 1, ASK)


def test_the_prompt_says_a_behaviour_agreed_at_the_users_request_is_the_users(m):
    """GIVEN agent learnings on
    THEN the extraction prompt asks for the bot's rules and says that behaviour agreed to at
    the user's request is a fact about the user, not the bot."""
    llm = scripted(m.deps, reply())
    m.extract_ok(TALK, user_id="u1")

    system = llm.prompts[0][0]
    assert "rules the assistant states about its own behaviour" in system
    assert "at the user's request" in system and "preference, not a rule of the bot" in system
