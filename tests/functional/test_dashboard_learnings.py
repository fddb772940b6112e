"""The dashboard's Learnings page in a real browser (the server, browser and page fixtures of
test_dashboard): the rules bots stated about themselves, listed with their support and quotes,
promoted or rejected with a note, filtered by status, paged, and refused as the server says.
Candidates are filed in-process (a scripted extraction model, the live setting on) into the
database the served page reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.auth import mint_token
from tests.conftest import live_setting
from tests.functional import test_dashboard as shared
from tests.functional.test_dashboard import Page, call, unlabelled, wait_for_text
from tests.integration.test_memory_support import Mem, fact, reply, scripted, turns

# The browser, the servers and the page of test_dashboard, used here by name.
browser, server, token_server, page = (
    shared.browser,
    shared.server,
    shared.token_server,
    shared.page,
)
pytestmark = shared.pytestmark

NS = "support"
BOT = "triage-bot"
ASK = "Can you refund my $900 order?"
REFUND = "I escalate any refund over $500 to a human."
ASK_TONE = "Why so formal?"
TONE = "I always answer in formal English."
HTML = "<img src=x onerror=alert(1)>"


@pytest.fixture
def m(api, deps, org, pool) -> Iterator[Mem]:
    """The org over the in-process API, with agent learnings filed while the test runs."""
    with live_setting(pool, memory_extract_agent_learnings="true"):
        yield Mem.open(api, deps, org)


def state(m: Mem, ask: str, said: str, attribute: str, *, user: str, session: str) -> None:
    """A session of BOT in which it states `said` as a rule about itself, after `ask`."""
    rule = fact("assistant", attribute, said, indices=(1,), span=said, about="agent")
    scripted(m.deps, reply(rule))
    out = m.extract_ok(
        turns(("user", ask), ("assistant", said)),
        namespace=NS,
        agent=BOT,
        user_id=user,
        session_id=session,
    )
    assert out["learning_candidates"] == 1, out


def seed(m: Mem) -> dict[str, str]:
    """Two pending rules: the refund rule supported by two users, the tone rule by one.
    Answers {rule text: its candidate id}."""
    state(m, ASK, REFUND, "refund escalation", user="u1", session="s1")
    state(m, "Another refund, please.", REFUND, "refund escalation", user="u2", session="s2")
    state(m, ASK_TONE, TONE, "tone", user="u3", session="s3")
    return {c["text"]: c["candidate_id"] for c in queue(m)}


def queue(m: Mem, **filters: Any) -> list[dict[str, Any]]:
    """learnings.list of the namespace, as an admin."""
    status, data = m.admin("learnings.list", as_="admin", namespace=NS, **filters)
    assert status == 200, data
    return list(data["candidates"])


def open_learnings(page: Page, org: str) -> None:
    page.open(org, NS, "&view=learnings")
    page.tab.wait_for_selector("#learnings:not([hidden])")
    page.wait_idle()


def item(cid: str) -> str:
    return f'#candidates li[data-key="{cid}"]'


def shown(tab) -> list[str]:
    """The candidate ids the list shows, in its order."""
    return tab.eval_on_selector_all("#candidates > li", "l => l.map(e => e.dataset.key)")


def show(page: Page, status: str) -> None:
    """Pick a status in the filter and wait for its list."""
    page.tab.select_option("#learnings-status", status)  # its change event asks at once
    page.wait_idle()


# ---- the queue ------------------------------------------------------------------------------


def test_the_nav_opens_the_queue_with_each_rules_support_and_quotes(page, m, org):
    """GIVEN two pending rules of triage-bot, the refund rule stated in two users' sessions
    WHEN the user follows the Learnings link from Conversations THEN both are listed, newest
    first, each with its agent, key, rule, support and the user's quote and the rule as said;
    the URL keeps the org, namespace and page, and every control is labelled."""
    ids = seed(m)
    page.open(org, NS)
    tab = page.tab
    tab.click("#nav-learnings")
    tab.wait_for_selector("#learnings:not([hidden])")
    page.wait_idle()
    assert tab.is_hidden("#app") and tab.is_hidden("#knowledge")
    assert tab.get_attribute("#nav-learnings", "aria-current") == "page"
    assert tab.inner_text("#page-name") == "Learnings"
    assert "view=learnings" in tab.evaluate("location.hash")
    assert page.calls("learnings.list")[-1]["status"] == "pending"

    assert shown(tab) == [ids[TONE], ids[REFUND]]
    refund = tab.locator(item(ids[REFUND]))
    assert refund.locator(".rule").inner_text() == REFUND
    meta = refund.locator(".meta").first.inner_text()
    assert f"agent {BOT}" in meta and "key assistant/refund_escalation" in meta
    assert "2 supporters" in meta and "pending" in meta
    assert refund.locator(".user-quote").inner_text() == ASK
    assert refund.locator(".rule-quote").inner_text() == REFUND
    tone = tab.locator(item(ids[TONE]))
    assert "1 supporter" in tone.locator(".meta").first.inner_text()
    assert tone.locator(".user-quote").inner_text() == ASK_TONE
    assert tone.locator(".destination").input_value() == "knowledge"

    assert unlabelled(tab) == []
    page.shot("learnings")
    tab.reload()
    tab.wait_for_selector(item(ids[REFUND]))
    assert tab.is_visible("#learnings") and tab.is_hidden("#app")
    assert tab.inner_text("a.skip") == "Skip to the review queue"


def test_promote_publishes_the_rule_and_reject_keeps_the_note(page, m, org, server):
    """GIVEN two pending rules WHEN the user promotes the refund rule (knowledge, the default)
    THEN it leaves the pending list, the page shows its learning:// uri, the queue holds it
    promoted and knowledge.get finds the document; WHEN they reject the tone rule with a note
    THEN it leaves the list too, the queue holds it rejected with the note, the pending list is
    empty, and the status filter shows each under its decision."""
    ids = seed(m)
    open_learnings(page, org)
    tab = page.tab
    refund, tone = item(ids[REFUND]), item(ids[TONE])
    tab.click(f"{refund} button.promote")
    uri = f"learning://{ids[REFUND]}"
    wait_for_text(tab, "#learnings-result", uri)
    tab.wait_for_selector(refund, state="detached")
    assert "Promoted assistant/refund_escalation to knowledge" in tab.inner_text(
        "#learnings-result"
    )
    assert shown(tab) == [ids[TONE]]
    [promoted] = queue(m, status="promoted")
    assert (promoted["candidate_id"], promoted["destination"]) == (ids[REFUND], "knowledge")
    got = call(server, "knowledge.get", org=org, namespace=NS, uri=uri)
    assert got["found"] is True and got["document"]["text"] == REFUND

    tab.fill(f"{tone} .note-input", "Tone is the brand team's call.")
    tab.click(f"{tone} button.reject")
    wait_for_text(tab, "#learnings-result", "Rejected assistant/tone")
    tab.wait_for_selector(tone, state="detached")
    assert tab.is_visible("#learnings-empty")
    [body] = [b for b in page.calls("learnings.review") if b["decision"] == "reject"]
    assert body["candidate_id"] == ids[TONE] and "destination" not in body
    [rejected] = queue(m, status="rejected")
    assert rejected["candidate_id"] == ids[TONE]
    assert rejected["note"] == "Tone is the brand team's call."
    assert queue(m, status="pending") == []

    show(page, "promoted")
    assert shown(tab) == [ids[REFUND]]
    assert uri in tab.inner_text(f"{refund} .decision")
    show(page, "rejected")
    assert shown(tab) == [ids[TONE]]
    decision = tab.inner_text(f"{tone} .decision")
    assert "rejected" in decision and "Note: Tone is the brand team's call." in decision
    show(page, "")
    assert sorted(shown(tab)) == sorted(ids.values())
    assert page.calls("learnings.list")[-1]["status"] is None


def test_promote_to_memory_writes_the_bots_memory(page, m, org):
    """GIVEN a pending rule WHEN the user picks the bot's memory and promotes it THEN the page
    says which key it wrote, and the queue holds it promoted to memory."""
    ids = seed(m)
    open_learnings(page, org)
    tab = page.tab
    tone = item(ids[TONE])
    tab.select_option(f"{tone} .destination", "memory")
    tab.click(f"{tone} button.promote")
    wait_for_text(tab, "#learnings-result", "to the bot's memory under assistant/tone")
    tab.wait_for_selector(tone, state="detached")
    [promoted] = queue(m, status="promoted")
    assert (promoted["candidate_id"], promoted["destination"]) == (ids[TONE], "memory")
    assert page.calls("learnings.review")[-1]["destination"] == "memory"


def test_a_rule_and_quotes_holding_html_are_shown_as_text(page, m, org):
    """GIVEN a rule, and a user turn, holding markup WHEN the queue is shown THEN the markup
    is their text, no element is made of it and nothing runs."""
    said = f"I reply with {HTML} when asked."
    state(m, f"Show me <b>{HTML}</b>", said, "markup", user="u1", session="s1")
    [c] = queue(m)
    tab = page.tab
    dialogs: list[str] = []
    tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_learnings(page, org)
    li = item(c["candidate_id"])
    assert tab.text_content(f"{li} .rule") == said
    assert tab.text_content(f"{li} .user-quote") == f"Show me <b>{HTML}</b>"
    assert tab.text_content(f"{li} .rule-quote") == said
    assert tab.locator(f"{li} img, {li} b").count() == 0
    assert tab.locator("#learnings img").count() == 0
    assert dialogs == []


def test_the_queue_pages_newest_first_by_the_servers_cursor(page, m, org):
    """GIVEN 23 pending rules WHEN the page opens THEN the newest 20 are listed and More lists
    the other 3 once each, by the server's cursor."""
    rules = [
        fact("assistant", f"rule {n:02}", f"I follow rule {n:02}.", indices=(1,), about="agent")
        for n in range(23)
    ]
    scripted(m.deps, reply(*rules))
    talk = turns(("user", "What are your rules?"), ("assistant", "I follow many rules."))
    out = m.extract_ok(talk, namespace=NS, agent=BOT, user_id="u1", session_id="s1")
    assert out["learning_candidates"] == 23
    everything = [c["candidate_id"] for c in queue(m, limit=200)]
    open_learnings(page, org)
    tab = page.tab
    assert shown(tab) == everything[:20]
    assert tab.is_visible("#learnings-more")
    tab.click("#learnings-more")
    tab.wait_for_function("() => document.querySelectorAll('#candidates > li').length === 23")
    page.wait_idle()
    assert shown(tab) == everything
    assert tab.is_hidden("#learnings-more")
    [first, second] = page.calls("learnings.list")
    assert first["cursor"] is None and second["cursor"] and second["limit"] == 20


def test_the_queue_at_phone_width_has_no_sideways_scroll(browser, server, m, org):
    """GIVEN a rule, key and quote that are long unbroken strings WHEN a phone-sized window
    shows the queue THEN nothing is wider than the screen."""
    long = "x" * 120
    state(m, "y" * 150, f"I say {long}.", "z" * 60, user="u1", session="s1")
    phone = Page(browser, server, width=390, height=844)
    try:
        open_learnings(phone, org)
        phone.tab.wait_for_selector("#candidates li")
        wide = phone.tab.evaluate(
            """() => [...document.querySelectorAll('body *')]
              .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
              .map(e => e.id || e.className || e.tagName).slice(0, 12)"""
        )
        assert wide == []
        phone.shot("learnings-phone")
    finally:
        phone.context.close()
    assert phone.errors == []


# ---- refusals -------------------------------------------------------------------------------


def test_a_non_admin_is_refused_and_a_blanked_rule_cannot_be_promoted(
    browser, token_server, m, org, deps
):
    """GIVEN a server that needs tokens WHEN a writer opens Learnings THEN the server's 403
    shows in the page and nothing is listed; GIVEN a rejected rule whose only supporter was
    erased WHEN an admin shows the rejected rules THEN it shows no rule left and no quotes, and
    promoting it shows the server's 409 in its entry, which stays."""
    state(m, ASK_TONE, TONE, "tone", user="u3", session="s3")
    [c] = queue(m)
    status, data = m.admin(
        "learnings.review", as_="admin", namespace=NS, candidate_id=c["candidate_id"],
        decision="reject",
    )  # fmt: skip
    assert status == 200, data
    status, data = m.admin("erasure.request", kind="user", user_id="u3")
    assert status == 200, data
    writer = mint_token(deps, org=org, role="writer", namespace=NS)
    admin = mint_token(deps, org=org, role="admin", namespace=NS)
    p = Page(browser, token_server)
    tab = p.tab
    try:
        tab.goto(token_server + f"/#ns={NS}&view=learnings")
        tab.fill("#token", writer)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#learnings:not([hidden])")
        wait_for_text(tab, "#learnings-error", "Not allowed")
        assert tab.get_attribute("#learnings-error", "role") == "alert"
        assert shown(tab) == [] and tab.is_hidden("#learnings-empty")
        tab.click("#sign-out")
        tab.wait_for_selector("#sign-in:not([hidden])")

        tab.fill("#token", admin)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#app:not([hidden])")
        tab.click("#nav-learnings")
        tab.wait_for_selector("#learnings:not([hidden])")
        p.wait_idle()
        assert tab.inner_text("#learnings-error") == ""
        show(p, "rejected")
        li = item(c["candidate_id"])
        assert "No rule left" in tab.inner_text(f"{li} .rule")
        assert "No supporter left" in tab.inner_text(li)
        tab.click(f"{li} button.promote")
        wait_for_text(tab, f"{li} .review .error", "(409)")
        assert "no rule left to promote" in tab.inner_text(f"{li} .review .error")
        assert tab.is_visible(li) and tab.inner_text("#learnings-result") == ""
    finally:
        p.context.close()
    assert p.errors == []
    assert queue(m, status="rejected")[0]["candidate_id"] == c["candidate_id"]
