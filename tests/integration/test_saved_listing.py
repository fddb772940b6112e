"""conversation.list_saved_messages and conversation.saved_status: one user's saved messages,
newest saved first, and which of a conversation's messages that user saved."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime, timedelta

import pytest

from tests.integration.test_saved_support import (
    OFF_NS,
    insert_saved_row,
    list_saved,
    open_tenant,
    save,
    transcript,
)


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


def when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_saved_messages_are_listed_newest_saved_first(t):
    """GIVEN three messages saved in the order m1, m3, m2
    WHEN the user lists saved messages
    THEN they come back m2, m3, m1, each with its conversation, role and excerpt.
    """
    save(t, "c1", "m1", "first saved")
    save(t, "c2", "m3", "second saved", role="assistant")
    save(t, "c1", "m2", "third saved")
    rows = list_saved(t)["rows"]
    assert [(r["conversation_id"], r["message_id"]) for r in rows] == [
        ("c1", "m2"),
        ("c2", "m3"),
        ("c1", "m1"),
    ]
    assert [r["role"] for r in rows] == ["user", "assistant", "user"]
    assert [r["excerpt"] for r in rows] == ["third saved", "second saved", "first saved"]


def test_ts_is_the_save_time_not_the_message_time(t, pool, org):
    """GIVEN a turn recorded, then another recorded later, and the older one saved after both
    WHEN the user lists saved messages
    THEN the row's ts and saved_at are the save time, later than the turn's own timestamp, and
    the older turn (saved last) comes first.
    """
    t.append("c1", "an older recorded turn", msg_id="m-old")
    time.sleep(0.3)
    t.append("c1", "a newer recorded turn", msg_id="m-new")
    save(t, "c1", "m-new")
    time.sleep(0.05)
    save(t, "c1", "m-old")

    rows = list_saved(t)["rows"]
    assert [r["message_id"] for r in rows] == ["m-old", "m-new"]
    message_ts = transcript(pool, org, "m-old")[0]["ts"]
    assert when(rows[0]["ts"]) == when(rows[0]["saved_at"])
    assert when(rows[0]["ts"]) - message_ts >= timedelta(seconds=0.3)


def test_a_row_without_a_save_timestamp_lists_at_its_message_time(t, pool, org):
    """GIVEN a saved row an earlier build wrote without saved_at
    WHEN the user lists saved messages
    THEN its ts is the message's timestamp and saved_at is null.
    """
    insert_saved_row(pool, org, "c1", "m1", "an old saved note", saved_at=None)
    (row,) = list_saved(t)["rows"]
    assert row["saved_at"] is None
    assert when(row["ts"]) == transcript(pool, org, "m1")[0]["ts"]


def test_cursor_paging_returns_each_saved_message_once(t):
    """GIVEN seven saved messages
    WHEN the user pages through them three at a time with next_cursor
    THEN the pages hold 3, 3 and 1 rows, every message once in newest-saved order, and the
    last page has no next_cursor.
    """
    ids = [f"m{i}" for i in range(7)]
    for m in ids:
        save(t, "c1", m, f"note {m}")
    pages, cursor = [], None
    while True:
        body = list_saved(t, limit=3, **({"cursor": cursor} if cursor else {}))
        pages.append([r["message_id"] for r in body["rows"]])
        cursor = body["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 5, pages
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [m for p in pages for m in p] == list(reversed(ids))


def test_a_cursor_holding_a_lone_surrogate_is_a_400(t):
    """GIVEN a saved message
    WHEN the list is given a cursor whose ids hold a lone surrogate (no UTF-8 spelling)
    THEN it answers 400 bad_request, not a 500 from the database driver.
    """
    save(t, "c1", "m1", "a note")
    made_up = json.dumps(["2026-01-01T00:00:00+00:00", "c1", "\ud800"]).encode()
    status, body = t.post(
        "conversation.list_saved_messages",
        as_="viewer",
        agent="*",
        user_id="u1",
        cursor=base64.urlsafe_b64encode(made_up).decode(),
    )
    assert status == 400, body
    assert body["error"]["code"] == "bad_request"


def test_the_conversation_filter_lists_one_conversations_saves(t):
    """GIVEN saves from two conversations
    WHEN the user lists with conversation_id c2
    THEN only c2's saved messages come back.
    """
    save(t, "c1", "m1", "from one")
    save(t, "c2", "m2", "from two")
    save(t, "c2", "m3", "also from two")
    rows = list_saved(t, conversation_id="c2")["rows"]
    assert [(r["conversation_id"], r["message_id"]) for r in rows] == [("c2", "m3"), ("c2", "m2")]


def test_fields_whitelists_the_output(t):
    """GIVEN a saved message
    WHEN the user lists with fields [message_id, ts], and with an unknown field
    THEN the rows hold exactly those two keys; the unknown field is a 422.
    """
    save(t, "c1", "m1", "a note")
    (row,) = list_saved(t, fields=["message_id", "ts"])["rows"]
    assert set(row) == {"message_id", "ts"}
    status, body = t.post(
        "conversation.list_saved_messages",
        agent="*",
        user_id="u1",
        fields=["message_id", "content"],
        as_="viewer",
    )
    assert status == 422, body
    assert "content" in body["error"]["message"]


@pytest.mark.parametrize("limit", [0, 201])
def test_limit_out_of_range_is_a_422(t, limit):
    """GIVEN any caller
    WHEN it lists saved messages with limit 0 or 201
    THEN it answers 422.
    """
    status, body = t.post(
        "conversation.list_saved_messages", agent="*", user_id="u1", limit=limit, as_="viewer"
    )
    assert status == 422, body


def test_limit_200_is_allowed(t):
    """GIVEN a saved message
    WHEN the user lists with limit 200
    THEN it answers that message.
    """
    save(t, "c1", "m1", "a note")
    assert [r["message_id"] for r in list_saved(t, limit=200)["rows"]] == ["m1"]


def test_a_saved_row_that_reads_as_high_lists_with_an_empty_excerpt(t, pool, org):
    """GIVEN saved rows an earlier build wrote: one holding a password assignment in its
    first characters, one holding it just past the shown 240 characters, and a plain one
    WHEN the user lists saved messages
    THEN both high rows are listed with an empty excerpt, and the plain one shows its text.
    """
    insert_saved_row(pool, org, "c1", "m-high", "note to self password=hunter22 for the vpn")
    insert_saved_row(pool, org, "c1", "m-deep", "x " * 150 + "and the password=hunter22 ok")
    insert_saved_row(pool, org, "c1", "m-plain", "a plain note")
    rows = {r["message_id"]: r["excerpt"] for r in list_saved(t)["rows"]}
    assert rows == {"m-high": "", "m-deep": "", "m-plain": "a plain note"}


def test_another_users_saves_and_other_namespaces_are_not_listed(t):
    """GIVEN saves by u1 and u2 in one namespace, and by u1 in another
    WHEN u1 lists the first namespace
    THEN only u1's save there comes back.
    """
    save(t, "c1", "m1", "u1 here")
    save(t, "c1", "m2", "u2 here", user="u2")
    save(t, "c1", "m3", "u1 elsewhere", namespace=OFF_NS)
    assert [r["message_id"] for r in list_saved(t)["rows"]] == ["m1"]


# ---- saved_status --------------------------------------------------------------------------


def status(t, ids, *, user="u1", conv="c1"):
    return t.ok(
        "conversation.saved_status",
        agent="*",
        user_id=user,
        conversation_id=conv,
        message_ids=ids,
        as_="viewer",
    )["saved"]


def test_saved_status_answers_the_saved_subset_in_the_order_asked(t):
    """GIVEN u1 saved m2, m4 and m5 of conversation c1 (and m9 of c2), and unsaved m5
    WHEN u1 asks the status of m5, m4, m1, m9, m2
    THEN it answers [m4, m2]: the saved ones of c1, in the order asked.
    """
    for m in ("m2", "m4", "m5"):
        save(t, "c1", m, f"note {m}")
    save(t, "c2", "m9", "note m9")
    t.ok(
        "conversation.unsave_message",
        agent="a1",
        conversation_id="c1",
        message_id="m5",
        user_id="u1",
        as_="writer",
    )
    assert status(t, ["m5", "m4", "m1", "m9", "m2"]) == ["m4", "m2"]


def test_saved_status_does_not_report_another_users_saves(t):
    """GIVEN u2 saved m1 and u1 saved m2
    WHEN u1 asks about both
    THEN only m2 is reported; u2 asking sees only m1.
    """
    save(t, "c1", "m1", "u2 note", user="u2")
    save(t, "c1", "m2", "u1 note")
    assert status(t, ["m1", "m2"]) == ["m2"]
    assert status(t, ["m1", "m2"], user="u2") == ["m1"]


def test_saved_status_takes_up_to_500_ids(t):
    """GIVEN a saved message
    WHEN the user asks about 500 ids holding it, and about 501 ids or none
    THEN 500 answers it; 501 and an empty list are 422s.
    """
    save(t, "c1", "m1", "note")
    ids = [f"x{i}" for i in range(499)] + ["m1"]
    assert status(t, ids) == ["m1"]
    for bad in (ids + ["x-extra"], []):
        code, body = t.post(
            "conversation.saved_status",
            agent="*",
            user_id="u1",
            conversation_id="c1",
            message_ids=bad,
            as_="viewer",
        )
        assert code == 422, body
