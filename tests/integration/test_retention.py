"""LOOM_RETENTION_CONVERSATIONS_DAYS: expired turns leave the disk; embeddings have no TTL."""

from __future__ import annotations

from chalicelib.auth import mint_token
from chalicelib.workers.retention import purge_expired_conversations
from tests.conftest import Api


def _seed(api, deps, org):
    token = mint_token(deps, org=org, role="admin")
    a = Api(api.client, token)
    a.ok("conversation.set_logging", namespace="ns", enabled=True)
    for i, content in enumerate(["old ledger note", "fresh ledger note"]):
        a.ok(
            "conversation.append",
            namespace="ns",
            agent="bot",
            thread_id="t",
            msg_id=f"m{i}",
            role="user",
            content=content,
        )
    with deps.pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversations SET ts = now() - interval '40 days'"
            " WHERE org = %s AND msg_id = 'm0'",
            (org,),
        )


def _live(deps, org, table):
    with deps.pool.connection() as conn:
        rows = conn.execute(f"SELECT msg_id FROM loom.{table} WHERE org = %s", (org,)).fetchall()
    return sorted(r[0] for r in rows)


def _set_days(deps, days):
    with deps.pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.settings (name, value) VALUES ('retention_conversations_days', %s)"
            " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
            (str(days),),
        )


def test_zero_days_keeps_every_turn_forever(api, deps, org):
    _seed(api, deps, org)
    assert purge_expired_conversations(deps)["turns_removed"] == 0
    assert _live(deps, org, "conversations") == ["m0", "m1"]


def test_a_stored_ttl_past_a_hundred_years_is_left_out_and_removes_nothing(api, deps, org):
    """GIVEN a live TTL of 3,000,000 days stored in loom.settings (past what a timestamp holds)
    WHEN the retention worker runs
    THEN the value is left out (the boot value, 0, keeps every turn) and the pass ends cleanly."""
    _seed(api, deps, org)
    _set_days(deps, 3_000_000)
    try:
        deps._live = None  # read the stored value now
        out = purge_expired_conversations(deps)
    finally:
        with deps.pool.connection() as conn:
            conn.execute("DELETE FROM loom.settings WHERE name = 'retention_conversations_days'")
        deps._live = None
    assert (out["retention_days"], out["turns_removed"]) == (0, 0)
    assert _live(deps, org, "conversations") == ["m0", "m1"]


def test_expired_turns_are_removed_and_their_embeddings_stay(api, deps, org, client):
    """GIVEN a 30-day TTL and a 40-day-old turn WHEN the scheduled worker runs
    THEN the old turn is gone from disk, the fresh one stays, and both embedding rows stay."""
    _seed(api, deps, org)
    _set_days(deps, 30)
    try:
        event = client.events.generate_cw_event(
            source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
        )
        result = client.lambda_.invoke("conversation_retention", event).payload
    finally:
        with deps.pool.connection() as conn:
            conn.execute("DELETE FROM loom.settings WHERE name = 'retention_conversations_days'")
    assert result["turns_removed"] >= 1
    assert _live(deps, org, "conversations") == ["m1"]
    assert _live(deps, org, "conversation_embeddings") == ["m0", "m1"]


def test_a_saved_turn_the_ttl_removes_leaves_its_users_saved_search(api, deps, org):
    """GIVEN a 40-day-old turn u1 saved, and a fresh one u1 saved, under a 30-day TTL
    WHEN the retention worker runs
    THEN the old turn's embedding row stays but is no longer flagged saved: the saved search
    no longer finds what u1 could neither list nor withdraw; the fresh one stays saved."""
    _seed(api, deps, org)
    token = mint_token(deps, org=org, role="writer")
    a = Api(api.client, token)
    for i, content in enumerate(["old ledger note", "fresh ledger note"]):
        a.ok("conversation.save_message", namespace="ns", agent="bot", conversation_id="t",
             message_id=f"m{i}", role="user", content=content, user_id="u1")  # fmt: skip
    _set_days(deps, 30)
    try:
        purge_expired_conversations(deps)
    finally:
        with deps.pool.connection() as conn:
            conn.execute("DELETE FROM loom.settings WHERE name = 'retention_conversations_days'")
    with deps.pool.connection() as conn:
        flags = dict(
            conn.execute(
                "SELECT msg_id, is_saved FROM loom.conversation_embeddings WHERE org = %s",
                (org,),
            ).fetchall()
        )
    assert flags == {"m0": False, "m1": True}
    hits = a.ok("conversation.search_saved_messages", namespace="ns", agent="*", user_id="u1",
                query="ledger note", search_mode="semantic")["hits"]  # fmt: skip
    assert [h["message_id"] for h in hits] == ["m1"]
