"""A support team's day with Loom, over HTTP with tokens, end to end."""

from __future__ import annotations

from chalicelib.auth import mint_token
from tests.conftest import Api


def test_record_search_and_forget_a_thread_without_leaking_across_orgs(api, deps, org):
    """GIVEN an admin, a writer bot and a viewer in one org, and a stranger in another org
    WHEN the admin turns recording on, the bot logs a conversation and the viewer searches it
    THEN the viewer finds it, the stranger finds nothing, and after the admin deletes the
    thread nobody finds it."""
    admin = Api(api.client, mint_token(deps, org=org, role="admin"))
    bot = Api(api.client, mint_token(deps, org=org, role="writer", namespace="support"))
    viewer = Api(api.client, mint_token(deps, org=org, role="viewer"))
    stranger = Api(api.client, mint_token(deps, org=f"{org}-other", role="org_admin"))

    first = bot.ok("conversation.append", agent="bot", thread_id="t", role="user", content="hi")
    assert (first["stored"], first["reason"]) == (False, "logging_disabled")

    admin.ok("conversation.set_logging", namespace="support", enabled=True)
    for role, content in [
        ("user", "My invoice for March was charged twice."),
        ("assistant", "I refunded the duplicate March invoice charge."),
    ]:
        assert bot.ok(
            "conversation.append", agent="bot", thread_id="t", role=role, content=content
        )["stored"]

    query = {"namespace": "support", "agent": "*", "query": "duplicate invoice charge refund"}
    hits = viewer.ok("conversation.search", **query)["hits"]
    assert hits and hits[0]["excerpt"] == "I refunded the duplicate March invoice charge."
    assert stranger.ok("conversation.search", **query)["hits"] == []

    status, _ = bot.post("conversation.delete", agent="bot", thread_id="t", confirm_thread_id="t")
    assert status == 403  # deleting a thread is an admin's call
    admin.ok(
        "conversation.delete", namespace="support", agent="*", thread_id="t", confirm_thread_id="t"
    )
    assert viewer.ok("conversation.search", **query)["hits"] == []
    thread = viewer.ok("conversation.get", namespace="support", agent="", thread_id="t")
    assert thread["msg_count"] == 0 and not thread["found"]
