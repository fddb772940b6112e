"""conversation.get and conversation.list: agents, paging, cursors and bounds."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from chalicelib.auth import Caller
from chalicelib.registry import call
from tests.integration.test_conversation_support import NS, Tenant


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


def fill(t, thread_id: str, n: int, prefix: str = "turn", **kw) -> list[str]:
    """Append n turns; their msg_ids in append order."""
    return [
        t.append(thread_id, f"{prefix} {i}", msg_id=f"{prefix}-{i:03d}", **kw)["msg_id"]
        for i in range(n)
    ]


def ids(rows) -> list[str]:
    return [r["msg_id"] for r in rows]


def walk(t, thread_id: str, limit: int, **kw) -> list[str]:
    """Every msg_id conversation.list returns, following next_cursor to the end."""
    out, cursor = [], None
    for _ in range(1000):
        page = t.ok(
            "conversation.list", agent="", thread_id=thread_id, limit=limit, cursor=cursor, **kw
        )
        out += ids(page["rows"])
        cursor = page["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("list never ended")


# ---- agents --------------------------------------------------------------------------------


@pytest.fixture
def shared_thread(t):
    """a1 and a2 both log the same greeting (same derived msg_id); each adds one own turn."""
    hello_a1 = t.append("th-1", "hello, both of you", agent="a1")
    hello_a2 = t.append("th-1", "hello, both of you", agent="a2")
    assert hello_a1["msg_id"] == hello_a2["msg_id"]
    own_a1 = t.append("th-1", "a1 here: what is on the agenda", role="assistant", agent="a1")
    own_a2 = t.append("th-1", "a2 here: the budget review", role="assistant", agent="a2")
    return {"hello": hello_a1["msg_id"], "a1": own_a1["msg_id"], "a2": own_a2["msg_id"]}


@pytest.mark.parametrize("agent", ["", "-"])
def test_any_agent_reads_every_agents_turns_and_a_shared_turn_once(t, shared_thread, agent):
    """GIVEN a thread where agents a1 and a2 both logged one turn and each logged its own
    WHEN get (with messages) and list read it with agent "" or "-"
    THEN all three distinct turns come back, the shared one once, and msg_count is 3.
    """
    expected = [shared_thread["hello"], shared_thread["a1"], shared_thread["a2"]]
    got = t.ok("conversation.get", agent=agent, thread_id="th-1", include_messages=True)
    assert got["found"] is True and got["msg_count"] == 3
    assert ids(got["messages"]) == expected
    listed = t.ok("conversation.list", agent=agent, thread_id="th-1")
    assert ids(listed["rows"]) == expected


@pytest.mark.parametrize("agent", ["a1", "a2"])
def test_an_agent_reads_only_its_own_turns(t, shared_thread, agent):
    """GIVEN the same two-agent thread
    WHEN get and list read it as one agent
    THEN only that agent's copies come back (the shared turn and its own), all with its name.
    """
    expected = [shared_thread["hello"], shared_thread[agent]]
    got = t.ok("conversation.get", agent=agent, thread_id="th-1", include_messages=True)
    assert got["msg_count"] == 2 and ids(got["messages"]) == expected
    assert {m["agent"] for m in got["messages"]} == {agent}
    listed = t.ok("conversation.list", agent=agent, thread_id="th-1")["rows"]
    assert ids(listed) == expected and {m["agent"] for m in listed} == {agent}
    assert t.ok("conversation.get", agent="a9", thread_id="th-1")["msg_count"] == 0


def test_turns_read_back_every_field_they_were_written_with(t):
    """GIVEN a turn appended with every optional field
    WHEN conversation.list reads it
    THEN each field comes back as sent.
    """
    out = t.append(
        "th-1",
        "the answer",
        role="assistant",
        agent="a1",
        msg_id="m-1",
        reasoning="because",
        user_id="u-1",
        run_id="r-1",
        metadata={"lang": "en", "n": [1, 2]},
        tokens=42,
    )
    (row,) = t.ok("conversation.list", agent="a1", thread_id="th-1")["rows"]
    assert row == {
        "msg_id": "m-1",
        "thread_id": "th-1",
        "role": "assistant",
        "content": "the answer",
        "reasoning": "because",
        "agent": "a1",
        "user_id": "u-1",
        "run_id": "r-1",
        "metadata": {"lang": "en", "n": [1, 2]},
        "tokens": 42,
        "ts": out["ts"],
    }


# ---- get -----------------------------------------------------------------------------------


def test_get_pages_from_either_end(t):
    """GIVEN a thread of ten turns
    WHEN get asks for messages with limit/offset, in asc and in desc order
    THEN asc counts from the oldest, desc from the newest (the tail), msg_count is always 10,
    and a desc page has no next_cursor.
    """
    turns = fill(t, "th-1", 10)

    def page(**kw):
        return t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True, **kw)

    asc = page(limit=3, offset=2)
    assert ids(asc["messages"]) == turns[2:5] and asc["msg_count"] == 10
    tail = page(limit=3, order="desc")
    assert sorted(ids(tail["messages"])) == turns[7:10]
    assert tail["next_cursor"] is None and tail["msg_count"] == 10
    skipped = page(limit=3, offset=2, order="desc")
    assert sorted(ids(skipped["messages"])) == turns[5:8]
    assert page(limit=5, offset=9, order="desc")["messages"][0]["msg_id"] == turns[0]


def test_get_without_messages_returns_the_count_only(t):
    """GIVEN a thread of three turns
    WHEN get is called without include_messages
    THEN messages is empty, msg_count is 3, and there is no cursor.
    """
    fill(t, "th-1", 3)
    got = t.ok("conversation.get", agent="", thread_id="th-1")
    assert (got["found"], got["msg_count"], got["messages"], got["next_cursor"]) == (
        True,
        3,
        [],
        None,
    )


def test_get_next_cursor_continues_with_list(t):
    """GIVEN a thread of ten turns
    WHEN get (asc) returns the first four and its next_cursor is passed to list
    THEN list returns the other six, and the last page has no cursor; a get page that reaches
    the end has no cursor either.
    """
    turns = fill(t, "th-1", 10)
    first = t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True, limit=4)
    assert ids(first["messages"]) == turns[:4] and first["next_cursor"]

    rest = t.ok("conversation.list", agent="", thread_id="th-1", cursor=first["next_cursor"])
    assert ids(rest["rows"]) == turns[4:] and rest["next_cursor"] is None

    whole = t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True, limit=10)
    assert whole["next_cursor"] is None


def test_an_unknown_thread_is_not_found(t):
    """GIVEN no turn or thread row for a thread id
    WHEN get and list read it
    THEN get answers found=false with msg_count 0, and list an empty page.
    """
    got = t.ok("conversation.get", agent="", thread_id="th-nobody", include_messages=True)
    assert (got["found"], got["msg_count"], got["messages"]) == (False, 0, [])
    assert t.ok("conversation.list", agent="", thread_id="th-nobody") == {
        "rows": [],
        "next_cursor": None,
        "ignored_args": [],
    }


def test_a_thread_holding_only_another_agents_turns_is_found(t):
    """GIVEN a thread (no thread row) whose only live turn a1 logged
    WHEN a2 reads it with get
    THEN found is true (the thread has a live message) with a2's own msg_count, 0.
    """
    t.append("th-a1", "only a1 here", agent="a1")
    got = t.ok("conversation.get", agent="a2", thread_id="th-a1", include_messages=True)
    assert (got["found"], got["msg_count"], got["messages"]) == (True, 0, [])


def test_thread_timestamps_exist_only_once_a_thread_row_does(t):
    """GIVEN a thread built by appends only
    WHEN get reads it, and again after conversation.create
    THEN created_at/updated_at are null before, and set after; the owner shows as the agent.
    """
    t.append("th-1", "hello", agent="a1")
    t.append("th-1", "hi", agent="a2", role="assistant")
    before = t.ok("conversation.get", agent="", thread_id="th-1")
    assert before["created_at"] is None and before["updated_at"] is None
    assert before["found"] is True and before["agent"] == ""
    with_messages = t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True)
    assert with_messages["agent"] == "a2"  # the latest writer among the messages read

    t.ok("conversation.create", agent="a1", thread_id="th-1", title="Hello")
    after = t.ok("conversation.get", agent="", thread_id="th-1")
    assert after["created_at"] and after["updated_at"]
    assert (after["title"], after["agent"], after["msg_count"]) == ("Hello", "a1", 2)


# ---- list ----------------------------------------------------------------------------------


def test_list_pages_every_turn_exactly_once_in_order(t):
    """GIVEN a thread of 25 turns
    WHEN list pages through it seven at a time by next_cursor
    THEN pages hold 7, 7, 7 and 4 turns, every turn exactly once, oldest first.
    """
    turns = fill(t, "th-1", 25)
    sizes, seen, cursor = [], [], None
    while True:
        page = t.ok("conversation.list", agent="", thread_id="th-1", limit=7, cursor=cursor)
        sizes.append(len(page["rows"]))
        seen += ids(page["rows"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sizes == [7, 7, 7, 4]
    assert seen == turns


def test_turns_appended_between_pages_appear_at_the_end(t):
    """GIVEN a thread of 15 turns, paged four at a time
    WHEN two new turns are appended after every page read
    THEN the walk ends with every turn exactly once, old ones first, new ones at the end.
    """
    old = fill(t, "th-1", 15, prefix="old")
    new, seen, cursor, n = [], [], None, 0
    while True:
        page = t.ok("conversation.list", agent="", thread_id="th-1", limit=4, cursor=cursor)
        seen += ids(page["rows"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
        if n < 8:
            for _ in range(2):
                new.append(t.append("th-1", f"new {n}", msg_id=f"new-{n:03d}")["msg_id"])
                n += 1
    assert seen == old + new
    assert len(new) > 0


def test_a_walk_concurrent_with_appends_skips_and_repeats_nothing(t, deps, org):
    """GIVEN a thread of 60 turns, and a second thread appending 30 more while a reader pages
    WHEN the reader walks list three at a time to the end
    THEN what it read has no repeat and is exactly the start of the final transcript (no turn
    skipped), and every appended turn lands after the old ones.
    """
    old = fill(t, "th-1", 60, prefix="old")
    writer = Caller(org=org, role="writer")
    appended: list[str] = []
    errors: list[BaseException] = []
    go = threading.Event()

    def write():
        try:
            go.wait(5)
            for i in range(30):
                body = {
                    "namespace": NS,
                    "agent": "a1",
                    "thread_id": "th-1",
                    "role": "user",
                    "content": f"late {i}",
                    "msg_id": f"late-{i:03d}",
                }
                appended.append(call("conversation.append", body, writer, deps).body["msg_id"])
                time.sleep(0.003)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    worker = threading.Thread(target=write)
    worker.start()
    seen, cursor = [], None
    go.set()
    while True:
        page = t.ok("conversation.list", agent="", thread_id="th-1", limit=3, cursor=cursor)
        seen += ids(page["rows"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    worker.join(10)
    assert not errors, errors
    assert len(appended) == 30

    final = walk(t, "th-1", limit=1000)
    assert final == old + appended
    assert len(seen) == len(set(seen))
    assert seen == final[: len(seen)]
    assert len(seen) >= len(old)


def test_list_filters_by_run(t):
    """GIVEN a thread with turns in runs r-1 and r-2
    WHEN list is asked for run r-1, for "-" and with no run
    THEN r-1 returns only its turns; "-" and no run return all, in order.
    """
    r1 = fill(t, "th-1", 3, prefix="one", run_id="r-1")
    r2 = fill(t, "th-1", 2, prefix="two", run_id="r-2")
    assert walk(t, "th-1", limit=2, run_id="r-1") == r1
    assert walk(t, "th-1", limit=2, run_id="-") == r1 + r2
    assert walk(t, "th-1", limit=2) == r1 + r2


def test_a_turn_two_agents_logged_in_two_runs_is_listed_in_each_run(t):
    """GIVEN one turn that agent a1 logged in run r-1 and then agent a2 logged in run r-2
    WHEN every agent's turns are listed for run r-2, for r-1 and for no run
    THEN each run lists the turn once, as its own copy holds it (the earlier copy, in the
    other run, does not hide it); with no run filter it is listed once."""
    one = t.append("th-1", "the same turn in two runs", agent="a1", run_id="r-1")
    two = t.append("th-1", "the same turn in two runs", agent="a2", run_id="r-2")
    assert one["msg_id"] == two["msg_id"]

    def listed(**kw):
        rows = t.ok("conversation.list", agent="", thread_id="th-1", **kw)["rows"]
        return [(r["msg_id"], r["agent"], r["run_id"]) for r in rows]

    assert listed(run_id="r-2") == [(two["msg_id"], "a2", "r-2")]
    assert listed(run_id="r-1") == [(one["msg_id"], "a1", "r-1")]
    assert listed() == [(one["msg_id"], "a1", "r-1")]


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor!",
        "abc",
        base64.urlsafe_b64encode(b"5").decode(),
        base64.urlsafe_b64encode(b'{"ts": 1}').decode(),
        base64.urlsafe_b64encode(json.dumps(["yesterday", "m-1"]).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps([1, 2, 3]).encode()).decode(),
        # A lone surrogate cannot be sent to the database as UTF-8.
        base64.urlsafe_b64encode(
            json.dumps(["2026-01-01T00:00:00+00:00", "\ud800"]).encode()
        ).decode(),
    ],
)
def test_a_bad_cursor_is_a_400(t, cursor):
    """GIVEN a thread with turns
    WHEN list is given a cursor this server never issued
    THEN it answers 400 with a JSON error, not a page and not a 500.
    """
    fill(t, "th-1", 2)
    status, body = t.post("conversation.list", agent="", thread_id="th-1", cursor=cursor)
    assert status == 400, body
    assert body["error"]["code"] == "bad_request"


@pytest.mark.parametrize("op", ["conversation.get", "conversation.list"])
@pytest.mark.parametrize("limit", [0, 1001, -1])
def test_limit_outside_1_to_1000_is_a_422(t, op, limit):
    """GIVEN a thread with turns
    WHEN get (with messages) or list asks for limit 0, -1 or 1001
    THEN it answers 422; limits 1 and 1000 are served.
    """
    fill(t, "th-1", 2)
    extra = {"include_messages": True} if op == "conversation.get" else {}
    status, body = t.post(op, agent="", thread_id="th-1", limit=limit, **extra)
    assert status == 422, body
    assert body["error"]["code"] == "validation_error"
    for ok_limit in (1, 1000):
        assert t.post(op, agent="", thread_id="th-1", limit=ok_limit, **extra)[0] == 200
