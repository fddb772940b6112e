"""The dashboard's Knowledge page in a real browser (the server, browser and page fixtures of
test_dashboard): list, search, open, publish from text or a file, delete after confirming."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from chalicelib.auth import mint_token
from tests.functional import test_dashboard as shared
from tests.functional.test_dashboard import Page, call, unlabelled, wait_for_text

# The browser, the servers and the page of test_dashboard, used here by name.
browser, server, token_server, page = (
    shared.browser,
    shared.server,
    shared.token_server,
    shared.page,
)
pytestmark = shared.pytestmark

HTML = "<script>window.pwned = 1</script><b>bold?</b> & <img src=x onerror=alert(1)>"


def publish(base: str, org: str, uri: str, text: str, **more) -> dict:
    return call(base, "knowledge.publish", org=org, namespace="support", uri=uri, text=text, **more)


def open_knowledge(page: Page, org: str, extra: str = "") -> None:
    page.open(org, "support", f"&view=knowledge{extra}")
    page.tab.wait_for_selector("#knowledge:not([hidden])")
    page.wait_idle()


def hash_params(tab) -> dict[str, list[str]]:
    return parse_qs(tab.evaluate("location.hash").lstrip("#"))


def listed_uris(tab) -> list[str]:
    return tab.eval_on_selector_all("#docs .item", "items => items.map(i => i.dataset.uri)")


def test_the_nav_opens_knowledge_in_the_same_context_and_a_pasted_text_publishes(page, server, org):
    """GIVEN the Conversations page on org/support WHEN the user follows the Knowledge link,
    pastes a text holding HTML and publishes it THEN the answer shows its version and chunks,
    the list shows it, it opens whole with the HTML as text (nothing runs), the URL keeps the
    org, namespace, page and document, a reload reopens it, and every control is labelled."""
    page.open(org, "support")
    tab = page.tab
    assert tab.get_attribute("#nav-conversations", "aria-current") == "page"
    tab.focus("#nav-knowledge")
    tab.keyboard.press("Enter")
    tab.wait_for_selector("#knowledge:not([hidden])")
    page.wait_idle()
    assert tab.is_hidden("#app")
    assert tab.get_attribute("#nav-knowledge", "aria-current") == "page"
    assert tab.inner_text("#page-name") == "Knowledge"
    assert tab.is_visible("#docs-empty")
    params = hash_params(tab)
    assert params["org"] == [org] and params["ns"] == ["support"]
    assert params["view"] == ["knowledge"]

    tab.fill("#publish-uri", "doc://handbook/html.md")
    tab.fill("#publish-title-input", "Markup <i>title</i>")
    tab.fill("#publish-tags", "policy, web, policy")
    tab.fill("#publish-text", f"Returns take 30 days.\n\n{HTML}")
    tab.click("#publish-submit")
    wait_for_text(tab, "#publish-result", "Published doc://handbook/html.md")
    assert "version 1" in tab.inner_text("#publish-result")
    assert "1 chunk" in tab.inner_text("#publish-result")
    assert "0 withheld" in tab.inner_text("#publish-result")
    [body] = page.calls("knowledge.publish")
    assert body["tags"] == ["policy", "web"] and "if_version" not in body
    tab.wait_for_selector('#docs .item[data-uri="doc://handbook/html.md"]')
    tab.wait_for_selector("#doc-text:not([hidden])")
    page.wait_idle()

    assert tab.inner_text("#doc-title") == "Markup <i>title</i>"
    assert tab.text_content("#doc-text") == f"Returns take 30 days.\n\n{HTML}"
    assert tab.eval_on_selector("#doc-text", "e => e.children.length") == 0
    assert tab.evaluate("window.pwned") is None
    assert tab.eval_on_selector_all("#doc-tags li", "l => l.map(e => e.textContent)") == [
        "policy",
        "web",
    ]
    assert "version 1" in tab.inner_text("#doc-meta")
    item = tab.inner_text('#docs .item[data-uri="doc://handbook/html.md"]')
    assert "Markup <i>title</i>" in item and "version 1" in item and "characters" in item
    assert hash_params(tab)["doc"] == ["doc://handbook/html.md"]

    assert unlabelled(tab) == []
    page.shot("knowledge")

    tab.reload()
    tab.wait_for_selector("#doc-text:not([hidden])")
    page.wait_idle()
    assert tab.is_visible("#knowledge") and tab.is_hidden("#app")
    assert tab.text_content("#doc-text").endswith(HTML)
    assert tab.inner_text("a.skip") == "Skip to the open document"
    tab.focus("a.skip")
    tab.keyboard.press("Enter")
    tab.wait_for_function("() => document.activeElement.id === 'doc'")
    assert hash_params(tab)["doc"] == ["doc://handbook/html.md"]
    tab.click("#nav-conversations")
    tab.wait_for_selector("#app:not([hidden])")
    page.wait_idle()
    params = hash_params(tab)
    assert params["org"] == [org] and params["ns"] == ["support"]
    assert "view" not in params and "doc" not in params


def test_a_chosen_file_and_a_dropped_file_fill_the_form_and_publish(page, server, org):
    """GIVEN the Knowledge page WHEN the user chooses a Markdown file THEN its text, a
    doc://<file name> uri and its name as title fill the form, and Publish stores it; WHEN a
    file is dropped on the form THEN it replaces those defaults and publishes too."""
    open_knowledge(page, org)
    tab = page.tab
    text = "# Guide\n\nShipping <b>is</b> free over 50 euros.\n"
    tab.set_input_files(
        "#publish-file",
        files=[{"name": "guide.md", "mimeType": "text/markdown", "buffer": text.encode()}],
    )
    tab.wait_for_function("() => document.getElementById('publish-text').value.length > 0")
    assert tab.input_value("#publish-uri") == "doc://guide.md"
    assert tab.input_value("#publish-title-input") == "guide.md"
    assert tab.input_value("#publish-text") == text
    tab.click("#publish-submit")
    wait_for_text(tab, "#publish-result", "Published doc://guide.md")
    tab.wait_for_selector('#docs .item[data-uri="doc://guide.md"]')

    dropped = tab.evaluate_handle(
        """() => { const dt = new DataTransfer();
          dt.items.add(new File(['Dropped notes about returns.'], 'notes.txt',
                                {type: 'text/plain'}));
          return dt; }"""
    )
    tab.dispatch_event("#publish-form", "drop", {"dataTransfer": dropped})
    tab.wait_for_function(
        "() => document.getElementById('publish-text').value.startsWith('Dropped')"
    )
    assert tab.input_value("#publish-uri") == "doc://notes.txt"
    assert tab.input_value("#publish-title-input") == "notes.txt"
    tab.click("#publish-submit")
    wait_for_text(tab, "#publish-result", "Published doc://notes.txt")
    page.wait_idle()
    assert listed_uris(tab)[:2] == ["doc://notes.txt", "doc://guide.md"]
    got = call(server, "knowledge.get", org=org, namespace="support", uri="doc://guide.md")
    assert got["document"]["text"] == text and got["document"]["title"] == "guide.md"


def test_the_list_pages_newest_first_and_search_opens_a_hit(page, server, org):
    """GIVEN 23 documents WHEN the page opens THEN the newest 20 are listed, newest first, and
    More lists the other 3 once each by the server's cursor; WHEN the user searches THEN the
    hit shows its title, uri, excerpt and tags, and opening it shows the whole text."""
    for n in range(23):
        publish(server, org, f"doc://n/{n:02}", f"Plain note number {n}.", title=f"Note {n:02}")
    long = "The warranty on kettles lasts two years. " + "Filler sentence here. " * 400
    publish(server, org, "doc://policy/warranty", long, title="Warranty", tags=["policy"])
    open_knowledge(page, org)
    tab = page.tab
    first = listed_uris(tab)
    assert first == ["doc://policy/warranty"] + [f"doc://n/{n:02}" for n in range(22, 3, -1)]
    assert tab.is_visible("#docs-more")
    tab.click("#docs-more")
    tab.wait_for_function("() => document.querySelectorAll('#docs .item').length === 24")
    page.wait_idle()
    assert listed_uris(tab) == first + ["doc://n/03", "doc://n/02", "doc://n/01", "doc://n/00"]
    assert tab.is_hidden("#docs-more")
    [_, second] = page.calls("knowledge.list")
    assert second["cursor"] and second["limit"] == 20

    tab.fill("#kn-search-query", "warranty kettles")
    tab.press("#kn-search-query", "Enter")
    tab.wait_for_selector("#kn-results-wrap:not([hidden])")
    hit = tab.locator('#kn-results .item[data-uri="doc://policy/warranty"]').first
    shown = hit.inner_text()
    assert "Warranty" in shown and "doc://policy/warranty" in shown and "policy" in shown
    assert "kettles lasts two years" in shown
    hit.focus()
    tab.keyboard.press("Enter")
    tab.wait_for_selector("#doc-text:not([hidden])")
    tab.wait_for_function("() => document.activeElement.id === 'doc'")
    assert tab.text_content("#doc-text") == long
    assert tab.get_attribute('#docs .item[data-uri="doc://policy/warranty"]', "aria-current") == (
        "true"
    )


def test_delete_asks_in_the_page_first_then_the_list_updates(page, server, org):
    """GIVEN two documents, one open WHEN the user asks to delete it and cancels THEN nothing
    is deleted; WHEN they confirm THEN it is deleted, gone from the list, and focus lands on
    the list."""
    publish(server, org, "doc://keep", "Keep me.", title="Keep")
    publish(server, org, "doc://drop", "Drop me.", title="Drop")
    open_knowledge(page, org, "&doc=doc://drop")
    tab = page.tab
    tab.wait_for_selector("#doc-actions:not([hidden])")
    tab.click("#doc-delete")
    tab.wait_for_selector("#confirm-doc-delete[open]")
    assert "doc://drop" in tab.inner_text("#doc-confirm-text")
    tab.keyboard.press("Escape")
    tab.wait_for_selector("#confirm-doc-delete", state="hidden")
    assert page.calls("knowledge.delete") == []
    assert tab.evaluate("document.activeElement.id") == "doc-delete"

    tab.click("#doc-delete")
    tab.click("#doc-confirm-yes")
    wait_for_text(tab, "#status", "Deleted doc://drop")
    tab.wait_for_function("() => document.querySelectorAll('#docs .item').length === 1")
    page.wait_idle()
    assert listed_uris(tab) == ["doc://keep"]
    assert tab.inner_text("#doc-title") == "No document open"
    assert tab.evaluate("document.activeElement.id") == "docs-title"
    assert "doc" not in hash_params(tab)
    got = call(server, "knowledge.get", org=org, namespace="support", uri="doc://drop")
    assert got["found"] is False


def test_a_stale_version_and_a_bad_uri_show_the_servers_error(page, server, org):
    """GIVEN a document at version 1 opened and edited WHEN another writer publishes first
    THEN the page's publish (if_version 1) shows the server's 409; WHEN the uri has no scheme
    THEN the 422 shows; nothing was stored by either."""
    publish(server, org, "doc://faq", "Version one.", title="FAQ")
    open_knowledge(page, org, "&doc=doc://faq")
    tab = page.tab
    tab.wait_for_selector("#doc-actions:not([hidden])")
    tab.click("#doc-edit")
    assert tab.input_value("#publish-uri") == "doc://faq"
    assert tab.input_value("#publish-if-version") == "1"
    assert tab.evaluate("document.activeElement.id") == "publish-text"
    publish(server, org, "doc://faq", "Someone else's version two.", title="FAQ")
    tab.fill("#publish-text", "My version two.")
    tab.click("#publish-submit")
    wait_for_text(tab, "#publish-error", "(409)")
    assert "version 2, not 1" in tab.inner_text("#publish-error")
    assert tab.get_attribute("#publish-error", "role") == "alert"

    tab.fill("#publish-uri", "no scheme here")
    tab.fill("#publish-if-version", "")
    tab.click("#publish-submit")
    wait_for_text(tab, "#publish-error", "(422)")
    got = call(server, "knowledge.get", org=org, namespace="support", uri="doc://faq")
    assert got["document"]["text"] == "Someone else's version two."
    assert [json.dumps(b.get("if_version")) for b in page.calls("knowledge.publish")] == [
        "1",
        "null",
    ]


def test_the_knowledge_page_works_with_a_token(browser, token_server, deps, org):
    """GIVEN a server that needs tokens WHEN a writer signs in and opens Knowledge THEN they
    publish and list with their token; a viewer sees the list and gets the 403 on publish."""
    writer = mint_token(deps, org=org, role="writer", namespace="support")
    viewer = mint_token(deps, org=org, role="viewer", namespace="support")
    p = Page(browser, token_server)
    tab = p.tab
    try:
        tab.goto(token_server + "/#ns=support&view=knowledge")
        tab.wait_for_selector("#sign-in:not([hidden])")
        assert tab.is_hidden("#pages") and tab.is_hidden("#knowledge")
        tab.fill("#token", writer)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#knowledge:not([hidden])")
        p.wait_idle()
        tab.fill("#publish-uri", "doc://signed")
        tab.fill("#publish-text", "Written with a token.")
        tab.click("#publish-submit")
        wait_for_text(tab, "#publish-result", "Published doc://signed")
        tab.wait_for_selector('#docs .item[data-uri="doc://signed"]')
        p.wait_idle()
        assert p.calls("knowledge.list") and p.calls("knowledge.publish")
        tab.click("#sign-out")
        tab.wait_for_selector("#sign-in:not([hidden])")
        assert tab.is_hidden("#knowledge") and tab.locator("#docs .item").count() == 0

        tab.fill("#token", viewer)
        tab.click("#sign-in-form button[type=submit]")
        tab.wait_for_selector("#app:not([hidden])")
        tab.click("#nav-knowledge")
        tab.wait_for_selector('#docs .item[data-uri="doc://signed"]')
        tab.fill("#publish-uri", "doc://viewer")
        tab.fill("#publish-text", "Not allowed.")
        tab.click("#publish-submit")
        wait_for_text(tab, "#publish-error", "Not allowed")
    finally:
        p.context.close()
    assert p.errors == []


def test_knowledge_at_phone_width_has_no_sideways_scroll(browser, server, org):
    """GIVEN a document whose uri, title, tags and text are long unbroken strings WHEN a
    phone-sized window opens it THEN nothing is wider than the screen."""
    long = "x" * 80
    publish(server, org, f"doc://{long}", "Word" * 200, title="T" + long, tags=["g" + long])
    phone = Page(browser, server, width=390, height=844)
    try:
        phone.open(org, "support", f"&view=knowledge&doc=doc://{long}")
        phone.tab.wait_for_selector("#doc-text:not([hidden])")
        phone.tab.wait_for_selector("#docs .item")
        phone.wait_idle()
        overflow = phone.tab.evaluate(
            "() => document.documentElement.scrollWidth - window.innerWidth"
        )
        wide = phone.tab.evaluate(
            """() => [...document.querySelectorAll('body *')]
              .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
              .map(e => e.id || e.className || e.tagName).slice(0, 12)"""
        )
        assert overflow <= 0, wide
        phone.shot("knowledge-phone")
    finally:
        phone.context.close()
    assert phone.errors == []
