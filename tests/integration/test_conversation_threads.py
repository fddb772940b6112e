"""Thread rows (conversation.create / update) and the thread list (conversation.threads)."""

from __future__ import annotations

import pytest

from tests.integration.test_conversation_support import Tenant


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


def thread(t, thread_id="th-1"):
    return t.ok("conversation.get", agent="", thread_id=thread_id, as_="viewer")


# ---- create / update -----------------------------------------------------------------------


def test_create_attaches_title_metadata_and_run(t):
    """GIVEN no thread yet
    WHEN conversation.create is called with a title, metadata, run_id and user_id
    THEN it echoes the thread id with created_at, and get returns what it attached.
    """
    out = t.ok(
        "conversation.create",
        agent="a1",
        thread_id="th-1",
        title="Trip to Lisbon",
        metadata={"topic": "travel", "tags": ["pt"]},
        run_id="r-1",
        user_id="u-1",
        as_="writer",
    )
    assert out["thread_id"] == "th-1" and out["created_at"]

    got = thread(t)
    assert got["found"] is True and got["msg_count"] == 0
    assert (got["title"], got["metadata"], got["run_id"], got["user_id"], got["agent"]) == (
        "Trip to Lisbon",
        {"topic": "travel", "tags": ["pt"]},
        "r-1",
        "u-1",
        "a1",
    )


def test_re_creating_a_thread_replaces_title_metadata_and_run(t):
    """GIVEN a thread created with a title, metadata {"a": 1, "b": 2} and run r-1
    WHEN it is created again with another title and metadata {"c": 3} and no run
    THEN get shows only the new title and metadata (not merged), and no run.
    """
    t.ok(
        "conversation.create",
        agent="a1",
        thread_id="th-1",
        title="First",
        metadata={"a": 1, "b": 2},
        run_id="r-1",
    )
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="Second", metadata={"c": 3})

    got = thread(t)
    assert (got["title"], got["metadata"], got["run_id"]) == ("Second", {"c": 3}, "-")


def test_update_with_nothing_to_change_is_a_400(t):
    """GIVEN a created thread
    WHEN conversation.update names none of title, metadata or run_id
    THEN it answers 400 and the thread is unchanged.
    """
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="Keep me")
    status, body = t.post("conversation.update", agent="a1", thread_id="th-1", as_="writer")
    assert status == 400, body
    assert body["error"]["code"] == "bad_request"
    assert thread(t)["title"] == "Keep me"


def test_updating_an_unknown_thread_answers_updated_false_and_writes_nothing(t):
    """GIVEN a thread that was never created (even one built by appends only)
    WHEN conversation.update sets its title
    THEN it answers updated=false with no updated_at, and the thread still has no title or row.
    """
    for thread_id in ("th-never", "th-appends-only"):
        if thread_id == "th-appends-only":
            t.append(thread_id, "hello")
        out = t.ok("conversation.update", agent="a1", thread_id=thread_id, title="New")
        assert (out["updated"], out["thread_id"], out["updated_at"]) == (False, thread_id, None)
        got = thread(t, thread_id)
        assert got["title"] == "" and got["created_at"] is None


def test_update_replaces_metadata_whole_and_leaves_the_rest(t):
    """GIVEN a thread with title "T", metadata {"a": 1, "b": 2} and run r-1
    WHEN update sends metadata {"c": 3} only, then a title only
    THEN metadata becomes exactly {"c": 3}; title and run stay until changed.
    """
    t.ok(
        "conversation.create",
        agent="a1",
        thread_id="th-1",
        title="T",
        metadata={"a": 1, "b": 2},
        run_id="r-1",
    )
    out = t.ok("conversation.update", agent="a1", thread_id="th-1", metadata={"c": 3})
    assert out["updated"] is True and out["updated_at"]
    got = thread(t)
    assert (got["title"], got["metadata"], got["run_id"]) == ("T", {"c": 3}, "r-1")

    t.ok("conversation.update", agent="a1", thread_id="th-1", title="T2")
    got = thread(t)
    assert (got["title"], got["metadata"], got["run_id"]) == ("T2", {"c": 3}, "r-1")
    assert got["updated_at"] >= out["updated_at"]


def test_update_run_id_dash_keeps_it_and_empty_detaches_it(t):
    """GIVEN a thread in run r-1
    WHEN update sends run_id "-" (with a title), then run_id "r-2", then run_id ""
    THEN "-" leaves r-1, "r-2" moves it, and "" detaches it (reads back "-").
    """
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="T", run_id="r-1")

    t.ok("conversation.update", agent="a1", thread_id="th-1", title="T", run_id="-")
    assert thread(t)["run_id"] == "r-1"
    t.ok("conversation.update", agent="a1", thread_id="th-1", run_id="r-2")
    assert thread(t)["run_id"] == "r-2"
    t.ok("conversation.update", agent="a1", thread_id="th-1", run_id="")
    assert thread(t)["run_id"] == "-"


# ---- threads -------------------------------------------------------------------------------


def listed(t, **kw) -> list[str]:
    return [r["thread_id"] for r in t.ok("conversation.threads", as_="viewer", **kw)["threads"]]


def test_threads_are_listed_newest_activity_first(t):
    """GIVEN threads A, B, C appended to in that order
    WHEN threads lists them, and again after a new turn in A
    THEN the order is C, B, A, then A, C, B; each row carries its count and last excerpt.
    """
    for name in ("th-a", "th-b", "th-c"):
        t.append(name, f"opening of {name}")
    assert listed(t) == ["th-c", "th-b", "th-a"]

    t.append("th-a", "a reply in a", role="assistant", agent="a2")
    rows = t.ok("conversation.threads")["threads"]
    assert [r["thread_id"] for r in rows] == ["th-a", "th-c", "th-b"]
    first = rows[0]
    assert (first["msg_count"], first["last_excerpt"], first["agent"]) == (2, "a reply in a", "a2")
    assert first["last_ts"] and first["title"] == ""
    assert set(first) == {"thread_id", "title", "agent", "msg_count", "last_excerpt", "last_ts"}


def test_the_last_excerpt_is_the_last_turn_not_a_late_copy_of_an_earlier_one(t):
    """GIVEN turns X then Y logged by a1, and a2's copy of X logged after both
    WHEN every agent's threads are listed
    THEN the thread's last turn is Y (read once, from its first copy), as get reads them; its
    last activity (last_ts, which orders the list) is a2's copy, the thread's latest write.
    """
    t.append("th", "first turn X", agent="a1", msg_id="x")
    t.append("th", "second turn Y", agent="a1", msg_id="y")
    late = t.append("th", "first turn X", agent="a2", msg_id="x")
    got = t.ok("conversation.get", agent="", thread_id="th", include_messages=True)
    assert [m["msg_id"] for m in got["messages"]] == ["x", "y"]
    (th,) = t.ok("conversation.threads", agent="*", as_="viewer")["threads"]
    assert (th["msg_count"], th["last_excerpt"], th["agent"]) == (2, "second turn Y", "a1")
    assert th["last_ts"] == late["ts"]


def test_threads_are_ordered_by_the_last_ts_they_report(t):
    """GIVEN thread tx's turn, then thread ty's, then a late copy of tx's turn by another agent
    WHEN every agent's threads are listed
    THEN they come newest activity first, in the order of the last_ts each reports."""
    t.append("tx", "thread x first turn", msg_id="x1", agent="a1")
    t.append("ty", "thread y turn", msg_id="y1", agent="a1")
    t.append("tx", "thread x first turn", msg_id="x1", agent="a2")
    out = t.ok("conversation.threads", agent="*", as_="viewer")["threads"]
    assert [r["thread_id"] for r in out] == ["tx", "ty"]
    stamps = [r["last_ts"] for r in out]
    assert stamps == sorted(stamps, reverse=True)


def test_threads_keeps_to_the_window(t, pool, org):
    """GIVEN a thread whose turns are ten days old and a thread active today
    WHEN threads lists with window_days 5, 30 (the default) and 365
    THEN the old thread shows only in windows of at least ten days.
    """
    t.append("th-old", "said long ago")
    t.append("th-new", "said today")
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversations SET ts = ts - interval '10 days'"
            " WHERE org = %s AND thread_id = 'th-old'",
            (org,),
        )
    assert listed(t, window_days=5) == ["th-new"]
    assert listed(t) == ["th-new", "th-old"]
    assert listed(t, window_days=365) == ["th-new", "th-old"]


def test_threads_pages_with_limit_and_offset(t):
    """GIVEN five active threads
    WHEN threads pages with limit 2 and offsets 0, 2, 4 and 100,000
    THEN the pages are disjoint slices of the newest-first list, the last ones short or empty.
    """
    names = [f"th-{i}" for i in range(5)]
    for name in names:
        t.append(name, f"hello {name}")
    newest_first = names[::-1]
    assert listed(t, limit=2) == newest_first[:2]
    assert listed(t, limit=2, offset=2) == newest_first[2:4]
    assert listed(t, limit=2, offset=4) == newest_first[4:]
    assert listed(t, offset=100_000) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"offset": 100_001},
        {"offset": -1},
        {"limit": 0},
        {"limit": 201},
        {"window_days": 0},
        {"window_days": 366},
        {"fields": ["thread_id", "colour"]},
        {"fields": "thread_id"},
    ],
)
def test_threads_refuses_out_of_bounds_paging_and_unknown_fields(t, bad):
    """GIVEN a namespace with a thread
    WHEN threads is asked for an offset past 100,000, a limit outside 1-200, a window outside
    1-365 or an output field the row model does not have
    THEN it answers 422.
    """
    t.append("th-1", "hello")
    status, body = t.post("conversation.threads", as_="viewer", **bad)
    assert status == 422, (bad, body)
    assert body["error"]["code"] == "validation_error"


def test_threads_returns_only_the_fields_asked_for(t):
    """GIVEN a thread with two turns
    WHEN threads is asked for fields ["thread_id", "msg_count"]
    THEN each row holds exactly those two keys.
    """
    t.append("th-1", "hello")
    t.append("th-1", "hi", role="assistant")
    rows = t.ok("conversation.threads", fields=["thread_id", "msg_count"])["threads"]
    assert rows == [{"thread_id": "th-1", "msg_count": 2}]


def test_threads_filters_by_agent(t):
    """GIVEN a thread of agent a1 and a thread of agent a2
    WHEN threads lists with agent "a1", "a2", "*", "-" and with the default
    THEN one agent's name lists its threads only; "*", "-" and the default list both.
    """
    t.append("th-1", "from a1", agent="a1")
    t.append("th-2", "from a2", agent="a2")
    assert listed(t, agent="a1") == ["th-1"]
    assert listed(t, agent="a2") == ["th-2"]
    assert listed(t, agent="a3") == []
    for everyone in ("*", "-"):
        assert listed(t, agent=everyone) == ["th-2", "th-1"]
    assert listed(t) == ["th-2", "th-1"]


def test_re_creating_a_thread_replaces_title_metadata_and_run_but_keeps_its_owner(t):
    """GIVEN a thread a1 created for user u1 on run r1
    WHEN a2 creates it again with a new title and run_id "" (no run)
    THEN the title, metadata and run are replaced (no run reads "-"), and its owner (a1) and
    user (u1) stay."""
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="T1", user_id="u1",
         run_id="r1", as_="writer")  # fmt: skip
    t.ok("conversation.create", agent="a2", thread_id="th-1", title="T2",
         metadata={"k": "v"}, run_id="", as_="writer")  # fmt: skip
    got = thread(t)
    assert (got["title"], got["metadata"], got["run_id"]) == ("T2", {"k": "v"}, "-")
    assert (got["agent"], got["user_id"]) == ("a1", "u1")


def test_threads_shows_the_title_from_create(t):
    """GIVEN a titled thread with a turn
    WHEN threads lists it
    THEN its row shows the title.
    """
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="Budget review")
    t.append("th-1", "let's start")
    (row,) = t.ok("conversation.threads")["threads"]
    assert row["title"] == "Budget review"
