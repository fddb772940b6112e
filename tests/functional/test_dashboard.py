"""The dashboard in a real browser: Debian's headless chromium, driven by Playwright, against
`loom serve` on the test database. Every test uses its own org; screenshots of the main views
land in build/screenshots/."""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from chalicelib import dashboard
from chalicelib.auth import mint_token
from chalicelib.providers.llm import LLMResult
from chalicelib.store.compaction_rows import insert_summary
from chalicelib.store.turn_writes import NewTurn
from tests.live_server import ROOT, live_server

SHOTS = ROOT / "build" / "screenshots"
HIGH = "the vault password=hunter22 opens it"


def find_chromium() -> str | None:
    """LOOM_CHROMIUM, else Debian's chromium on the PATH."""
    named = os.environ.get("LOOM_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium found: `make test` installs Debian's chromium with apt-get where it can;"
    " install it (apt-get install chromium) or set LOOM_CHROMIUM=/path/to/chromium",
)


# ---- the server, the browser and the API ---------------------------------------------------


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[str]:
    """A single-user server, as `make run` starts one."""
    with live_server(database_url) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Page:
    """One browser tab, and the requests it made: the op names it called and every URL."""

    def __init__(self, browser, base: str, width: int = 1280, height: int = 900):
        self.base = base
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.tab = self.context.new_page()
        self.tab.set_default_timeout(20000)  # a loaded CI machine, not a slow page
        self.urls: list[str] = []
        self.ops: list[tuple[str, dict[str, Any]]] = []
        self.errors: list[str] = []
        self.tab.on("request", self._request)
        self.tab.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def _request(self, request) -> None:
        self.urls.append(request.url)
        path = urlsplit(request.url).path
        if path.startswith("/v1/"):
            self.ops.append((path[4:], json.loads(request.post_data or "{}")))

    def calls(self, op: str) -> list[dict[str, Any]]:
        return [body for name, body in self.ops if name == op]

    def open(self, org: str, namespace: str, extra: str = "") -> None:
        self.tab.goto(f"{self.base}/#org={org}&ns={namespace}{extra}")
        self.wait_idle()

    def wait_idle(self) -> None:
        """Until no request of the page is in flight (it marks itself aria-busy meanwhile)."""
        self.tab.wait_for_function(
            "() => document.getElementById('app').getAttribute('aria-busy') === 'false'"
        )

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.tab.screenshot(path=str(SHOTS / f"dashboard-{name}.png"), full_page=True)


@pytest.fixture
def page(browser, server) -> Iterator[Page]:
    tab = Page(browser, server)
    yield tab
    tab.context.close()
    assert tab.errors == [], tab.errors


def wait_for_text(tab, selector: str, text: str) -> None:
    tab.wait_for_function(
        "([sel, text]) => document.querySelector(sel).textContent.includes(text)",
        arg=[selector, text],
    )


def unlabelled(tab) -> list[str]:
    """The shown controls (inputs, selects, buttons, text areas) that no label, aria-label or
    text of their own names."""
    return tab.evaluate(
        """() => [...document.querySelectorAll('input, select, button, textarea')]
          .filter(e => e.offsetParent !== null)
          .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                        && !e.getAttribute('aria-labelledby') && !e.textContent.trim())
          .map(e => e.id || e.outerHTML.slice(0, 60))"""
    )


def call(base: str, op: str, token: str | None = None, **body: Any) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"{base}/v1/{op}", json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def append(base: str, org: str, thread: str, role: str, content: str, **more: Any) -> dict:
    more.setdefault("agent", "bot")
    return call(
        base,
        "conversation.append",
        org=org,
        namespace="support",
        thread_id=thread,
        role=role,
        content=content,
        **more,
    )


def create(base: str, org: str, thread: str, title: str) -> dict:
    """A thread created with a title (conversation.create) by agent bot in "support"."""
    return call(
        base,
        "conversation.create",
        org=org,
        namespace="support",
        agent="bot",
        thread_id=thread,
        title=title,
    )


def save(base: str, org: str, thread: str, msg_id: str, role: str, content: str) -> dict:
    """Agent bot's turn saved for the dashboard's own user ("local")."""
    return call(
        base,
        "conversation.save_message",
        org=org,
        namespace="support",
        agent="bot",
        user_id="local",
        conversation_id=thread,
        message_id=msg_id,
        role=role,
        content=content,
    )


def record(base: str, org: str, namespace: str = "support") -> None:
    call(base, "conversation.set_logging", org=org, namespace=namespace, enabled=True)


# ---- first visit ---------------------------------------------------------------------------


def test_a_first_visit_shows_the_conversations_page_with_only_its_own_origin(page, org):
    """GIVEN a single-user server WHEN someone opens / with no token THEN the Conversations
    page shows the namespace picker, a Record switch that is not on, an empty thread list,
    every control labelled, and the page fetched nothing from any other origin."""
    response = page.tab.goto(page.base + "/")
    assert response is not None and response.status == 200
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp
    page.tab.wait_for_selector("#context:not([hidden])")
    page.tab.fill("#org", org)
    page.tab.fill("#namespace", "support")
    page.tab.click("#context button[type=submit]")
    page.wait_idle()

    tab = page.tab
    assert "Single-user server" in tab.inner_text("#identity")
    assert tab.is_visible("#namespace") and tab.input_value("#namespace") == "support"
    switch = tab.locator("#recording-switch")
    assert switch.get_attribute("role") == "switch"
    assert switch.get_attribute("aria-checked") == "false"
    assert tab.inner_text("#recording-state") != "On"
    assert tab.is_visible("#threads-empty")
    assert tab.is_hidden("#sign-in")
    assert unlabelled(tab) == []
    origin = page.base
    assert page.urls and all(u.startswith(origin) for u in page.urls), page.urls
    page.shot("first-visit")


def test_the_skip_link_moves_focus_and_keeps_the_state_in_the_url(page, server, org):
    """GIVEN the page open on a thread, its org, namespace and thread in the URL WHEN a
    keyboard user follows "Skip to the open thread" THEN focus lands on the thread and the URL
    still holds the state, and no history entry is added."""
    record(server, org)
    append(server, org, "t1", "user", "hello", msg_id="a")
    page.open(org, "support", "&thread=t1")
    tab = page.tab
    tab.wait_for_selector('#messages li[data-msg="a"]')
    before, depth = tab.evaluate("[location.hash, history.length]")
    tab.focus("a.skip")
    tab.keyboard.press("Enter")
    tab.wait_for_function("() => document.activeElement.id === 'thread'")
    assert tab.evaluate("[location.hash, history.length]") == [before, depth]
    assert "thread=t1" in before


def test_asset_route_serves_only_the_dashboards_own_files(server):
    """GIVEN the server WHEN a browser asks for a file beside the dashboard's own, or for a
    path that climbs out of its folder THEN it gets a 404, never a file of the package."""
    with urllib.request.urlopen(f"{server}/dashboard/main.js") as resp:
        assert resp.headers["Content-Type"].startswith("text/javascript")
    for name in ("__init__.py", "..%2F__init__.py", "%2E%2E", "missing.js"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{server}/dashboard/{name}")
        assert err.value.code in (403, 404)


def test_the_page_answers_only_at_a_folder_address_so_its_relative_urls_resolve(page, org):
    """GIVEN the page's asset and API URLs are relative to its folder WHEN a browser opens
    /dashboard/index.html THEN it is sent to / and the page works there; WHEN the page is
    asked for at a stage root without its trailing slash THEN the answer sends it to the
    address with one, keeping any prefix (a relative Location)."""
    response = page.tab.goto(page.base + "/dashboard/index.html")
    assert response is not None and response.status == 200
    assert page.tab.url == page.base + "/"
    page.tab.wait_for_selector("#context:not([hidden])")
    assert all(urlsplit(u).path.count("/dashboard/") <= 1 for u in page.urls), page.urls
    status, _, headers = dashboard.page("/dev")
    assert (status, headers["Location"]) == (302, "dev/")
    assert dashboard.page("/dev/")[0] == dashboard.page()[0] == 200


# ---- recording, threads and titles ---------------------------------------------------------


class Titler:
    """The model the scheduled titler asks: names a thread after the ledger it talks about."""

    name = "dashboard-titler"
    answers = True

    def __init__(self, marker: str):
        self.marker = marker

    def complete(self, system, user, *, json_output=False, model=None) -> LLMResult:
        # Another test's thread is left untitled (an empty answer titles nothing).
        title = '"Moving invoices to the new ledger"' if self.marker in user else ""
        return LLMResult(text=title, model=self.name)


def run_titler(client) -> dict:
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    return client.lambda_.invoke("conversation_titler", event).payload


def test_recording_switch_then_an_appended_thread_appears_and_takes_its_title(
    page, server, org, deps, client
):
    """GIVEN a namespace that does not record WHEN the admin flips Record conversations on,
    an agent appends four turns and the scheduled titler runs THEN the append is kept, the
    thread appears newest first as untitled, then under the titler's title; flipping the
    switch off makes appends go unkept again."""
    page.open(org, "support")
    tab = page.tab
    assert append(server, org, "before", "user", "hello")["stored"] is False

    tab.click("#recording-switch")
    tab.wait_for_selector("#recording-switch[aria-checked=true]")
    assert tab.inner_text("#recording-state") == "On"
    assert page.calls("conversation.set_logging")[-1]["enabled"] is True

    marker = f"ledger{org[-6:]}"
    for i, (role, text) in enumerate(
        [
            ("user", f"We moved invoices to the new {marker} ledger."),
            ("assistant", "Noted; I will update the export job."),
            ("user", "Also the March statements."),
            ("assistant", "Done: March statements now read from the new ledger."),
        ]
    ):
        assert append(server, org, "move", role, text, msg_id=f"m{i}")["stored"] is True
    tab.click("#threads-refresh")
    item = tab.locator('#threads .item[data-thread="move"]')
    item.wait_for()
    assert item.locator(".title").inner_text() == "Untitled"
    assert "4 messages" in item.inner_text()
    assert "new ledger" in item.locator(".excerpt").inner_text()

    deps._llm = Titler(marker)
    assert run_titler(client)["titled"] >= 1
    tab.click("#threads-refresh")
    tab.wait_for_selector('#threads .item[data-thread="move"] .title:not(.untitled)')
    assert item.locator(".title").inner_text() == "Moving invoices to the new ledger"
    page.shot("threads")

    tab.click("#recording-switch")
    tab.wait_for_selector("#recording-switch[aria-checked=false]")
    assert tab.inner_text("#recording-state") == "Off"
    assert append(server, org, "after", "user", "bye")["stored"] is False


def test_the_switch_fails_closed(page, server, org):
    """GIVEN recording turned on from the page in one namespace WHEN the user moves to another
    namespace THEN the switch shows that namespace's own state (off), and the first one's (on)
    on the way back; WHEN a switch write fails, or the server's read of the switch fails, THEN
    the switch never shows on; only a read that says on shows on."""
    page.open(org, "support")
    tab = page.tab
    tab.click("#recording-switch")
    tab.wait_for_selector("#recording-switch[aria-checked=true]")

    tab.fill("#namespace", "elsewhere")
    tab.click("#context button[type=submit]")
    page.wait_idle()
    assert tab.get_attribute("#recording-switch", "aria-checked") == "false"
    assert tab.inner_text("#recording-state") == "Off"

    tab.route(
        "**/v1/conversation.set_logging",
        lambda route: route.fulfill(status=503, body='{"error":{"code":"x","message":"down"}}'),
    )
    tab.click("#recording-switch")
    tab.wait_for_selector("#recording-error:not(:empty)")
    assert tab.get_attribute("#recording-switch", "aria-checked") == "false"
    assert tab.inner_text("#recording-state") != "On"
    tab.unroute("**/v1/conversation.set_logging")

    # A failed read of the switch is shown as unknown (off), never as on.
    answers = iter([{"status": 500, "body": "{}"}])
    tab.route(
        "**/v1/conversation.get_logging",
        lambda route: route.fulfill(content_type="application/json", **next(answers)),
    )
    tab.fill("#namespace", "support")
    tab.click("#context button[type=submit]")
    page.wait_idle()
    assert tab.get_attribute("#recording-switch", "aria-checked") == "false"
    assert tab.inner_text("#recording-state").startswith("Unknown")
    tab.unroute("**/v1/conversation.get_logging")
    tab.click("#context button[type=submit]")
    tab.wait_for_selector("#recording-switch[aria-checked=true]")
    assert tab.inner_text("#recording-state") == "On"


# ---- a thread, saving and the Saved panel --------------------------------------------------


def contrast(tab, selector: str) -> float:
    """The WCAG contrast ratio of an element's text against the background it sits on."""
    return tab.evaluate(
        """(sel) => {
          const el = document.querySelector(sel);
          const rgb = s => s.match(/[\\d.]+/g).map(Number);
          const lum = ([r, g, b]) => {
            const c = [r, g, b].map(v => { v /= 255;
              return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
            return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
          };
          let node = el, bg = null;
          while (node && !bg) {
            const c = rgb(getComputedStyle(node).backgroundColor);
            if (c.length < 4 || c[3] > 0) bg = c;
            node = node.parentElement;
          }
          bg = bg || [255, 255, 255];
          const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg);
          return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        }""",
        selector,
    )


def test_a_thread_shows_roles_reasoning_and_summaries_and_saves_per_message(
    page, server, org, pool
):
    """GIVEN a recorded thread with a compaction summary, user and assistant turns (one with
    reasoning) and a tool turn WHEN the user opens it from the list with the keyboard, saves
    the assistant's answer, searches the Saved panel, reloads, and unsaves it THEN roles are
    drawn apart, reasoning is folded, the summary is marked, saved state comes from one
    saved_status call per page, and the Saved panel follows every change."""
    record(server, org)
    summary = NewTurn(
        org=org,
        namespace="support",
        thread_id="t",
        agent="bot",
        msg_id="summary-s0",  # written as compaction writes one (an append refuses such ids)
        role="system",
        content="Summary: the customer asked about refunds.",
        metadata={"compacted_from": ["a", "b", "c"]},
    )
    with pool.connection() as conn:
        at = datetime.now(UTC)
        assert insert_summary(conn, summary, at, at)
    # A client's system turn naming compacted_from is no summary: it is not marked as one.
    append(server, org, "t", "system", "A note.", msg_id="s1", metadata={"compacted_from": ["a"]})
    append(server, org, "t", "user", "Where do invoices live now?", msg_id="u1")
    append(
        server,
        org,
        "t",
        "assistant",
        "Invoices live in the quartz ledger since March.",
        msg_id="a1",
        reasoning="The migration note says quartz.",
    )
    append(server, org, "t", "tool", '{"rows": 3}', msg_id="x1")
    page.open(org, "support")
    tab = page.tab

    tab.focus('#threads .item[data-thread="t"]')
    tab.keyboard.press("Enter")
    tab.wait_for_selector('#messages li[data-msg="a1"]')
    page.wait_idle()
    assert tab.inner_text("#thread-title") == "Thread t"  # untitled: the id, not a turn's text
    assert len(page.calls("conversation.saved_status")) == 1
    assert set(page.calls("conversation.saved_status")[0]["message_ids"]) == {"u1", "a1"}

    user, assistant = tab.locator('li[data-msg="u1"]'), tab.locator('li[data-msg="a1"]')
    assert user.locator(".role").inner_text().lower() == "user"
    assert assistant.locator(".role").inner_text().lower() == "assistant"
    backgrounds = {
        tab.eval_on_selector(f'li[data-msg="{m}"]', "e => getComputedStyle(e).backgroundColor")
        for m in ("u1", "a1", "summary-s0", "x1")
    }
    assert len(backgrounds) == 4
    reasoning = assistant.locator("details")
    assert reasoning.get_attribute("open") is None
    assert not reasoning.locator("pre").is_visible()
    reasoning.locator("summary").click()
    assert reasoning.locator("pre").inner_text() == "The migration note says quartz."
    assert "Compaction summary" in tab.locator('li[data-msg="summary-s0"] .badge').inner_text()
    assert tab.locator('li[data-msg="s1"] .badge').count() == 0
    assert tab.locator('li[data-msg="x1"] button.save').count() == 0
    for sel in (
        'li[data-msg="u1"] .role',
        'li[data-msg="a1"] .role',
        'li[data-msg="a1"] time',
        'li[data-msg="summary-s0"] .badge',
        "#thread-meta",
        "#recording-note",
        'li[data-msg="a1"] .content',
    ):
        assert contrast(tab, sel) >= 4.5, sel

    save = assistant.locator("button.save")
    assert save.get_attribute("aria-pressed") == "false"
    save.click()
    tab.wait_for_selector('li[data-msg="a1"] button.save[aria-pressed=true]')
    saved_item = tab.locator('#saved .item[data-msg="a1"]')
    saved_item.wait_for()
    assert "quartz ledger" in saved_item.inner_text()
    tab.click('li[data-msg="u1"] button.save')
    tab.locator('#saved .item[data-msg="u1"]').wait_for()
    page.shot("thread")

    with tab.expect_response("**/v1/conversation.search_saved_messages"):
        tab.fill("#saved-query", "quartz")
    assert page.calls("conversation.search_saved_messages")[-1]["query"] == "quartz"
    tab.wait_for_function("() => document.querySelector('#saved .item').dataset.msg === 'a1'")
    page.shot("saved")
    with tab.expect_response("**/v1/conversation.list_saved_messages"):
        tab.fill("#saved-query", "")
    tab.wait_for_function("() => document.querySelectorAll('#saved .item').length === 2")

    page.ops.clear()
    tab.reload()
    tab.wait_for_selector('li[data-msg="a1"] button.save[aria-pressed=true]')
    page.wait_idle()
    assert tab.get_attribute('li[data-msg="u1"] button.save', "aria-pressed") == "true"
    assert len(page.calls("conversation.saved_status")) == 1  # one call, not one per message
    assert page.calls("session.brief_get") == []

    tab.click('li[data-msg="a1"] button.save')
    tab.wait_for_selector('li[data-msg="a1"] button.save[aria-pressed=false]')
    tab.wait_for_function("() => document.querySelectorAll('#saved .item').length === 1")
    listed = call(
        server,
        "conversation.list_saved_messages",
        org=org,
        namespace="support",
        agent="x",
        user_id="local",
    )
    assert [r["message_id"] for r in listed["rows"]] == ["u1"]

    # Withdrawn from the Saved panel: the thread's toggle follows.
    tab.click("#saved .saved-row button:not(.item)")
    tab.wait_for_selector('li[data-msg="u1"] button.save[aria-pressed=false]')
    tab.wait_for_selector("#saved-empty:not([hidden])")


def test_search_finds_a_turn_and_opens_its_thread(page, server, org):
    """GIVEN two recorded threads WHEN the user searches for words of one turn THEN the hit
    shows that turn's excerpt and opening it shows its thread."""
    record(server, org)
    append(server, org, "billing", "user", "The refund for the duplicate invoice is done.")
    append(server, org, "weather", "user", "Sunny with a light breeze tomorrow.")
    page.open(org, "support")
    tab = page.tab
    tab.fill("#search-query", "duplicate invoice refund")
    tab.press("#search-query", "Enter")
    hit = tab.locator('#search-results .item[data-thread="billing"]')
    hit.wait_for()
    assert "refund for the duplicate invoice" in hit.inner_text()
    assert tab.locator('#search-results .item[data-thread="weather"]').count() == 0
    assert page.calls("conversation.search")[-1]["namespace_scope"] == "this"
    page.shot("search")
    hit.click()
    tab.wait_for_selector("#messages li.role-user")
    assert "duplicate invoice" in tab.inner_text("#messages")
    assert "billing" in tab.url


def test_opening_a_hit_far_back_in_a_long_thread_shows_it(page, server, org):
    """GIVEN a thread of 120 turns whose first holds a rare word
    WHEN the user searches for that word and opens the hit
    THEN the thread loads older pages until the turn is on screen, and scrolls to it."""
    record(server, org)
    for i in range(120):
        text = "zebracorn first turn" if i == 0 else f"turn {i:03d}"
        append(server, org, "big", ("user", "assistant")[i % 2], text, msg_id=f"m{i:03d}")
    page.open(org, "support")
    tab = page.tab
    tab.fill("#search-query", "zebracorn")
    tab.press("#search-query", "Enter")
    hit = tab.locator('#search-results .item[data-thread="big"]', has_text="zebracorn")
    hit.wait_for()
    hit.click()
    tab.wait_for_selector('#messages li[data-msg="m000"]')
    page.wait_idle()
    assert tab.locator('#messages li[data-msg="m000"]').is_visible()
    in_view = tab.eval_on_selector(
        '#messages li[data-msg="m000"]',
        "e => { const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }",
    )
    assert in_view


def test_threads_and_turns_page_newest_first(page, server, org):
    """GIVEN 21 threads, the oldest of them 52 turns long WHEN the user opens the page, loads
    more threads, opens the long thread and asks for earlier messages THEN threads come
    newest first 20 at a time, the thread shows its latest 50 turns in order and then the
    rest, and each page of turns asks for its saved state once."""
    record(server, org)
    for i in range(52):
        append(
            server, org, "long", ("user", "assistant")[i % 2], f"turn {i:02d}", msg_id=f"m{i:02d}"
        )
    for i in range(20):
        append(server, org, f"t{i:02d}", "user", f"thread {i:02d}")
    page.open(org, "support")
    tab = page.tab
    items = tab.locator("#threads .item")
    assert items.count() == 20
    assert items.first.get_attribute("data-thread") == "t19"
    tab.click("#threads-more")
    tab.wait_for_selector('#threads .item[data-thread="long"]')
    assert items.count() == 21 and items.last.get_attribute("data-thread") == "long"
    assert tab.is_hidden("#threads-more")

    items.last.click()
    tab.wait_for_selector('#messages li[data-msg="m51"]')
    page.wait_idle()
    shown = tab.eval_on_selector_all("#messages li", "els => els.map(e => e.dataset.msg)")
    assert shown == [f"m{i:02d}" for i in range(2, 52)]
    tab.click("#thread-earlier")
    tab.wait_for_selector('#messages li[data-msg="m00"]')
    page.wait_idle()
    shown = tab.eval_on_selector_all("#messages li", "els => els.map(e => e.dataset.msg)")
    assert shown == [f"m{i:02d}" for i in range(52)]
    assert tab.is_hidden("#thread-earlier")
    asked = [set(c["message_ids"]) for c in page.calls("conversation.saved_status")]
    assert asked == [{f"m{i:02d}" for i in range(2, 52)}, {"m00", "m01"}]


def shown_turns(tab) -> list[str]:
    return tab.eval_on_selector_all("#messages li", "els => els.map(e => e.dataset.msg)")


def listed(tab, selector: str) -> list[str]:
    return tab.eval_on_selector_all(
        selector, "els => els.map(e => e.dataset.thread || e.dataset.msg)"
    )


def test_show_earlier_pressed_twice_loads_each_page_once(page, server, org):
    """GIVEN a thread of 60 turns, open on its newest 50 WHEN "Show earlier messages" is
    pressed twice before the first page arrives (a double click) THEN the second press does
    nothing: one page is asked for, and every turn is drawn once, in order."""
    record(server, org)
    for i in range(60):
        append(server, org, "long", ("user", "assistant")[i % 2], f"turn {i}", msg_id=f"m{i:02d}")
    page.open(org, "support", "&thread=long")
    tab = page.tab
    tab.wait_for_selector('#messages li[data-msg="m59"]')
    page.wait_idle()
    tab.evaluate(
        "() => { const b = document.getElementById('thread-earlier'); b.click(); b.click(); }"
    )
    tab.wait_for_selector('#messages li[data-msg="m00"]')
    page.wait_idle()
    assert shown_turns(tab) == [f"m{i:02d}" for i in range(60)]
    assert [c["offset"] for c in page.calls("conversation.get")] == [0, 50]
    assert tab.is_hidden("#thread-earlier")


def test_lists_neither_repeat_nor_drop_items_when_the_data_changes_between_pages(page, server, org):
    """GIVEN 26 threads (one 60 turns long), the first 20 listed, and 21 saved messages
    WHEN a thread beyond the first page and one on it get new turns, then the user loads more
    threads; WHEN more than a page of turns is appended to the open long thread, then the
    user asks for earlier ones; WHEN Refresh and Load more are pressed together (threads, and
    the Saved panel) THEN no thread or turn is listed twice and none goes missing, and a load
    in flight is superseded by a refresh, never run against the offset or cursor it reset."""
    record(server, org)
    for i in range(60):
        append(server, org, "long", ("user", "assistant")[i % 2], f"turn {i}", msg_id=f"m{i:02d}")
    for i in range(25):
        append(server, org, f"t{i:02d}", "user", f"thread {i:02d}")
    for i in range(21):
        save(server, org, "long", f"m{i:02d}", ("user", "assistant")[i % 2], f"turn {i}")
    everyone = sorted(["long", *(f"t{i:02d}" for i in range(25))])
    page.open(org, "support")
    tab = page.tab
    assert len(listed(tab, "#threads .item")) == 20
    append(server, org, "t00", "assistant", "back again")  # was on page 2: now the newest
    append(server, org, "t10", "assistant", "and again")  # on page 1
    tab.click("#threads-more")
    tab.wait_for_selector('#threads .item[data-thread="long"]')
    page.wait_idle()
    threads = listed(tab, "#threads .item")
    assert sorted(threads) == everyone  # each once, t00 included
    assert threads[:2] == ["t10", "t00"]

    tab.click('#threads .item[data-thread="long"]')
    tab.wait_for_selector('#messages li[data-msg="m59"]')
    page.wait_idle()
    for i in range(60, 110):  # an agent is still talking: a page's worth of turns and more
        append(server, org, "long", "user", f"turn {i}", msg_id=f"m{i:03d}")
    tab.click("#thread-earlier")
    tab.wait_for_selector('#messages li[data-msg="m00"]')
    page.wait_idle()
    assert shown_turns(tab) == [f"m{i:02d}" for i in range(60)]

    tab.evaluate(
        """() => { document.getElementById('threads-refresh').click();
                   document.getElementById('threads-more').click(); }"""
    )
    page.wait_idle()
    threads = listed(tab, "#threads .item")
    assert len(threads) == len(set(threads)) == 20

    assert len(listed(tab, "#saved .item")) == 20
    tab.evaluate(
        """() => { document.dispatchEvent(new CustomEvent('loom:saved-changed',
                     { detail: { namespace: 'support' } }));
                   document.getElementById('saved-more').click(); }"""
    )
    page.wait_idle()
    saved = listed(tab, "#saved .item")
    assert len(saved) == len(set(saved)) == 20


def test_text_that_reads_as_high_never_reaches_a_title_or_excerpt(page, server, org):
    """GIVEN a thread whose last turn holds a password, one created with a title that holds
    one, and a brief whose goal holds one WHEN the user lists and opens them THEN neither the
    lists nor the thread header show the secret, and the page does not fill the blank from
    the turns."""
    record(server, org)
    append(server, org, "leaky", "user", "How do I open the vault?")
    append(server, org, "leaky", "user", HIGH)
    create(server, org, "titled", "password=hunter22")
    append(server, org, "titled", "user", "A plain turn.")
    brief = {"org": org, "namespace": "support", "agent": "coder", "project": "vault"}
    call(server, "session.brief_save", **brief, branch="main", sections={"goal": HIGH})
    page.open(org, "support")
    tab = page.tab
    leaky = tab.locator('#threads .item[data-thread="leaky"]')
    leaky.wait_for()
    assert "hunter22" not in tab.inner_text("#threads")
    tab.locator('#briefs .item[data-brief="auto/vault/main"]').wait_for()
    assert "hunter22" not in tab.inner_text("#briefs")  # the list never shows the goal
    assert leaky.locator(".excerpt").inner_text() == "No excerpt shown"
    assert "How do I open the vault" not in leaky.inner_text()  # not re-derived from turns
    tab.click('#threads .item[data-thread="titled"]')
    tab.wait_for_selector("#messages li")
    assert "hunter22" not in tab.inner_text("#thread-title")
    assert "hunter22" not in tab.inner_text("#threads")


# ---- briefs --------------------------------------------------------------------------------


def test_briefs_open_only_when_asked_browse_revisions_and_delete_after_confirming(
    page, server, org
):
    """GIVEN a brief saved twice with a client summary WHEN the page lists the briefs THEN
    none is loaded; WHEN the user opens it, picks revision 1, ticks full, cancels a delete and
    then confirms one THEN each view shows that revision's text, the summary appears only
    with full, and the brief is gone only after the confirmation; closing it returns focus to
    its list entry, deleting it to the list's heading."""
    brief = {"org": org, "namespace": "support", "agent": "coder", "project": "billing"}
    call(server, "session.brief_save", **brief, branch="ledger", sections={"goal": "Goal one"})
    call(
        server,
        "session.brief_save",
        **brief,
        branch="ledger",
        sections={"goal": "Goal two"},
        events=[{"kind": "summary", "text": "Client summary: half the invoices moved."}],
    )
    page.open(org, "support")
    tab = page.tab
    item = tab.locator("#briefs .item").first
    item.wait_for()
    assert "auto/billing/ledger" in item.inner_text() and "Goal two" in item.inner_text()
    assert page.calls("session.brief_get") == []

    item.click()
    tab.wait_for_selector("#brief:not([hidden])")
    assert "Goal two" in tab.inner_text("#brief-text")
    assert "half the invoices" not in tab.inner_text("#brief-text")
    assert page.calls("session.brief_get")[-1]["full"] is False
    tab.select_option("#brief-revision", "1")
    wait_for_text(tab, "#brief-text", "Goal one")
    assert "revision 1 of 2" in tab.inner_text("#brief-meta")
    tab.select_option("#brief-revision", "2")
    tab.check("#brief-full")
    wait_for_text(tab, "#brief-text", "half the invoices")
    assert page.calls("session.brief_get")[-1]["full"] is True
    page.shot("brief")

    # Closing it puts focus back on its entry in the list, not on the hidden Close button.
    tab.focus("#brief-close")
    tab.keyboard.press("Enter")
    tab.wait_for_selector("#brief", state="hidden")
    focused = "() => document.activeElement.dataset.brief || document.activeElement.id"
    assert tab.evaluate(focused) == "auto/billing/ledger"
    tab.keyboard.press("Enter")
    tab.wait_for_selector("#brief:not([hidden])")

    tab.click("#brief-delete")
    tab.wait_for_selector("#confirm-delete[open]")
    tab.click("#confirm-delete button[value=cancel]")
    tab.wait_for_selector("#confirm-delete", state="hidden")
    page.wait_idle()
    assert page.calls("session.brief_delete") == []
    assert tab.locator("#briefs .item").count() == 1

    tab.click("#brief-delete")
    tab.click("#confirm-yes")
    tab.wait_for_selector("#briefs-empty:not([hidden])")
    tab.wait_for_selector("#brief", state="hidden")
    assert tab.evaluate(focused) == "briefs-title"  # its entry is gone: the list's heading
    gone = call(server, "session.brief_get", **brief, brief_key="auto/billing/ledger")
    assert gone["found"] is False


# ---- phone width and signed-in callers ----------------------------------------------------


def test_a_full_brief_list_says_so_and_a_project_filter_reaches_the_others(page, server, org):
    """GIVEN 51 briefs: the oldest of project "archive", 50 newer of project "billing"
    WHEN the page lists them, then filters by project "archive"
    THEN the list shows 50 and says more may exist; the filter lists the archive brief, and
    the note goes."""
    common = {"org": org, "namespace": "support", "agent": "coder"}
    call(server, "session.brief_save", **common, project="archive", branch="old",
         sections={"goal": "The oldest goal"})  # fmt: skip
    for i in range(50):
        call(server, "session.brief_save", **common, project="billing", branch=f"b{i:02d}",
             sections={"goal": f"Goal {i}"})  # fmt: skip
    page.open(org, "support")
    tab = page.tab
    tab.locator("#briefs .item").first.wait_for()
    assert tab.locator("#briefs .item").count() == 50
    assert tab.is_visible("#briefs-capped")
    assert tab.locator('#briefs .item[data-brief="auto/archive/old"]').count() == 0

    tab.fill("#briefs-project", "archive")
    tab.press("#briefs-project", "Enter")
    tab.wait_for_selector('#briefs .item[data-brief="auto/archive/old"]')
    page.wait_idle()
    assert tab.locator("#briefs .item").count() == 1
    assert tab.is_hidden("#briefs-capped")
    assert page.calls("session.brief_list")[-1]["project"] == "archive"


def test_phone_width_has_no_sideways_scroll(browser, server, org):
    """GIVEN a phone-sized window, and a thread and a brief whose id, title, agent, user id,
    project and branch are long unbroken strings WHEN the page shows the thread, the brief and
    the Saved panel THEN nothing is wider than the screen, so no sideways scrolling is needed."""
    record(server, org)
    long = "x" * 60
    thread = "T" + long
    create(server, org, thread, "See https://example.com/" + long)
    append(server, org, thread, "user", "A long line " + "withaverylongunbrokenword" * 8)
    append(server, org, thread, "assistant", "Short answer.", reasoning="Because.", msg_id="a1")
    append(server, org, thread, "user", "Hi.", agent="A" + long, user_id="U" + long)
    save(server, org, thread, "a1", "assistant", "Short answer.")
    brief = {"org": org, "namespace": "support", "agent": "bot"}
    call(
        server,
        "session.brief_save",
        **brief,
        project="P" + long,
        branch="B" + long,
        sections={"goal": "G"},
    )
    phone = Page(browser, server, width=390, height=844)
    try:
        phone.open(org, "support", f"&thread={thread}")
        phone.tab.wait_for_selector("#messages li.role-assistant")
        phone.tab.wait_for_selector("#saved .item")
        phone.tab.click("#briefs .item")
        phone.tab.wait_for_selector("#brief:not([hidden])")
        phone.wait_idle()
        assert "example.com" in phone.tab.inner_text("#thread-title")
        overflow = phone.tab.evaluate(
            "() => document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 0
        phone.shot("phone")
    finally:
        phone.context.close()
    assert phone.errors == []


@pytest.fixture(scope="module")
def token_server(database_url: str) -> Iterator[str]:
    with live_server(database_url, LOOM_AUTH="tokens") as base:
        yield base


def test_a_viewer_signs_in_with_a_token_and_cannot_flip_the_switch(
    browser, token_server, deps, org
):
    """GIVEN a server that needs tokens WHEN someone opens the page THEN it asks for a token;
    WHEN a viewer signs in THEN the page loads with the viewer's org and every call carries
    the token, and the Record switch is disabled as admin-only; signing out forgets it."""
    viewer = mint_token(deps, org=org, role="viewer")
    tab = Page(browser, token_server)
    try:
        tab.tab.goto(token_server + "/#ns=support")
        tab.tab.wait_for_selector("#sign-in:not([hidden])")
        assert tab.tab.is_hidden("#app")
        tab.tab.fill("#token", viewer)
        tab.tab.click("#sign-in-form button[type=submit]")
        tab.tab.wait_for_selector("#app:not([hidden])")
        tab.wait_idle()
        assert re.search(rf"org {org}.*role viewer", tab.tab.inner_text("#identity"))
        assert tab.tab.is_hidden("#org-field")
        assert tab.tab.is_disabled("#recording-switch")
        assert "Only an admin" in tab.tab.inner_text("#recording-note")
        assert tab.tab.is_visible("#threads-empty")
        tab.shot("signed-in-viewer")
        tab.tab.click("#sign-out")
        tab.tab.wait_for_selector("#sign-in:not([hidden])")
        stored = "() => sessionStorage.getItem('loom.token') || localStorage.getItem('loom.token')"
        assert tab.tab.evaluate(stored) is None
    finally:
        tab.context.close()
    assert tab.errors == []


def test_only_an_accepted_token_is_kept_and_signing_out_forgets_the_person(
    browser, token_server, deps, org
):
    """GIVEN a server that needs tokens WHEN someone submits a token the server refuses, with
    Remember ticked THEN it is not stored, and a reload sends none; WHEN an admin signs in,
    types a user id and signs out THEN no token, user id, org or namespace is left in the
    browser or the URL, and the next person (a viewer) starts with no user id; WHEN the server
    refuses the token while the page is open THEN the page forgets it and asks for one."""
    admin = mint_token(deps, org=org, role="admin")
    viewer = mint_token(deps, org=org, role="viewer")
    stored = "() => [Object.keys(localStorage), Object.keys(sessionStorage)]"
    page = Page(browser, token_server)
    tab = page.tab
    try:
        tab.goto(token_server + "/#ns=support")
        tab.wait_for_selector("#sign-in:not([hidden])")
        tab.fill("#token", "sk-live-NOT-A-LOOM-TOKEN")
        tab.check("#remember")
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#sign-in-error:not(:empty)")
        assert tab.evaluate(stored) == [[], []]
        with tab.expect_request("**/v1/system.whoami") as asked:
            tab.reload()
        assert "authorization" not in asked.value.headers
        tab.wait_for_selector("#sign-in:not([hidden])")
        assert tab.is_hidden("#sign-out")

        tab.fill("#token", admin)
        tab.check("#remember")
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#app:not([hidden])")
        page.wait_idle()
        assert tab.evaluate("() => localStorage.getItem('loom.token')") == admin
        assert tab.is_visible("#sign-out")
        tab.fill("#user", "alice")
        tab.click("#context button[type=submit]")
        page.wait_idle()
        tab.click("#sign-out")
        tab.wait_for_selector("#sign-in:not([hidden])")
        assert tab.evaluate(stored) == [[], []]
        assert tab.evaluate("location.hash") == ""

        page.ops.clear()
        tab.fill("#token", viewer)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#app:not([hidden])")
        page.wait_idle()
        assert tab.input_value("#user") == ""
        assert all(body.get("user_id") != "alice" for _, body in page.ops)

        refused = '{"error": {"code": "unauthorized", "message": "token expired"}}'
        tab.route(
            "**/v1/conversation.threads",
            lambda route: route.fulfill(status=401, content_type="application/json", body=refused),
        )
        tab.click("#threads-refresh")
        tab.wait_for_selector("#sign-in:not([hidden])")
        assert "Sign in again" in tab.inner_text("#sign-in-error")
        assert tab.evaluate(stored) == [[], []]
        assert tab.is_hidden("#app") and tab.locator("#threads .item").count() == 0
    finally:
        page.context.close()
    assert page.errors == []


# ---- answers arriving late ---------------------------------------------------------------


def _hold_first_search(tab, held: list, needle: str = "") -> None:
    """Keep the first conversation.search request (whose body holds `needle`) pending until
    the test releases it; every other search goes through."""

    def handler(route):
        if not held and needle in (route.request.post_data or ""):
            held.append(route)
        else:
            route.continue_()

    tab.route("**/v1/conversation.search", handler)


def test_a_slower_earlier_search_never_replaces_the_newer_searchs_results(page, server, org):
    """GIVEN two searches, the first answered after the second WHEN both answers land THEN the
    results shown are the ones for the query in the box (the newer search)."""
    record(server, org)
    append(server, org, "a", "user", "alpha invoice refund")
    append(server, org, "b", "user", "beta weather breeze")
    page.open(org, "support")
    tab = page.tab
    held: list = []
    _hold_first_search(tab, held, "alpha")
    tab.fill("#search-query", "alpha invoice refund")
    tab.press("#search-query", "Enter")
    while not held:
        tab.wait_for_timeout(50)
    tab.fill("#search-query", "beta weather breeze")
    tab.press("#search-query", "Enter")
    tab.wait_for_selector('#search-results .item[data-thread="b"]')
    held[0].continue_()  # the older search's answer arrives last
    page.wait_idle()
    tab.wait_for_timeout(300)
    assert tab.input_value("#search-query") == "beta weather breeze"
    assert tab.inner_text("#search-results-title") == "Results for “beta weather breeze”"
    assert tab.locator('#search-results .item[data-thread="a"]').count() == 0


def test_a_search_answer_for_the_signed_out_person_is_never_shown_to_the_next(
    browser, token_server, deps, org
):
    """GIVEN person A (org 1) searching on a token server WHEN A signs out before the answer
    arrives and person B (org 2) signs in THEN B's page never shows A's hits."""
    a = mint_token(deps, org=org, role="admin")
    b = mint_token(deps, org=org + "b", role="admin")
    call(token_server, "conversation.set_logging", token=a, namespace="support", enabled=True)
    call(
        token_server,
        "conversation.append",
        token=a,
        namespace="support",
        agent="bot",
        thread_id="payroll",
        role="user",
        content="alpha payroll figures for the whole company",
    )
    p = Page(browser, token_server)
    tab = p.tab
    try:
        tab.goto(token_server + "/#ns=support")
        tab.fill("#token", a)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#app:not([hidden])")
        p.wait_idle()
        held: list = []
        _hold_first_search(tab, held)
        tab.fill("#search-query", "alpha payroll figures for the whole company")
        tab.press("#search-query", "Enter")
        while not held:
            tab.wait_for_timeout(50)
        tab.click("#sign-out")
        tab.wait_for_selector("#sign-in:not([hidden])")
        tab.fill("#token", b)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#app:not([hidden])")
        tab.wait_for_selector("#threads-empty:not([hidden])")
        assert f"org {org}b" in tab.inner_text("#identity")  # B is signed in
        held[0].continue_()  # A's answer lands now
        p.wait_idle()
        tab.wait_for_timeout(300)
        assert "payroll" not in tab.inner_text("#app"), "person B sees person A's search hit"
        assert tab.is_hidden("#search-results-wrap")
    finally:
        p.context.close()


def test_a_titled_thread_opened_from_a_search_hit_shows_its_title(page, server, org):
    """GIVEN a titled thread older than the first page of the threads list WHEN the user opens
    it from a search hit THEN the thread view leads with its title (conversation.get answers
    it, blanked when it reads as high), not 'Thread <id>'."""
    record(server, org)
    create(server, org, "old", "Ledger migration plan")
    append(server, org, "old", "user", "quartz ledger migration cutover")
    for i in range(20):
        append(server, org, f"n{i:02d}", "user", f"newer thread {i}")
    page.open(org, "support")
    tab = page.tab
    assert tab.locator('#threads .item[data-thread="old"]').count() == 0  # not on page 1
    tab.fill("#search-query", "quartz ledger migration cutover")
    tab.press("#search-query", "Enter")
    tab.locator('#search-results .item[data-thread="old"]').click()
    tab.wait_for_selector("#messages li.role-user")
    page.wait_idle()
    assert tab.inner_text("#thread-title") == "Ledger migration plan"
