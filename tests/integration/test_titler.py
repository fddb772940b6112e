"""The conversation_titler worker, invoked as its scheduled Lambda: a short model-written title
for untitled, active threads of recording namespaces, never from a turn that reads as high.

The titler is global over orgs: every test uses its own org and unique markers in its turns,
and asserts only on its own threads; the model's answer depends on the prompt, not on order.
"""

from __future__ import annotations

import re
import threading
import time
import uuid

import pytest

from chalicelib.providers.llm import LLMResult, OpenAILLM
from chalicelib.workers.titler import TITLER_SYSTEM, title_threads
from tests.integration.test_conversation_support import NS, live_setting
from tests.integration.test_saved_support import execute, open_tenant
from tests.openai_stub import OpenAIStub

HIGH = "the vault password=hunter22 opens it"
MARK = re.compile(r"\bzz[a-z0-9]+\b")


class PromptTitler:
    """A model that names a thread after the marker its prompt holds (one a thread), records
    every prompt, and answers a title that reads as high for a marker starting "zzhigh"."""

    name = "prompt-titler"
    answers = True

    def __init__(self, pause: float = 0.0):
        self.pause = pause
        self.prompts: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def complete(self, system, user, *, json_output=False, model=None) -> LLMResult:
        with self._lock:
            self.prompts.append((system, user))
        time.sleep(self.pause)
        found = MARK.search(user)
        if found is None:
            return LLMResult(text="Some chat", model=self.name)
        marker = found.group(0)
        if marker.startswith("zzhigh"):
            return LLMResult(text=f"password=hunter22 for {marker}", model=self.name)
        return LLMResult(text=f'"Plan {marker}"', model=self.name)

    def asked(self, marker: str) -> int:
        return sum(marker in user for _, user in self.prompts)


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


@pytest.fixture
def llm(deps) -> PromptTitler:
    deps._llm = model = PromptTitler()
    return model


def marker(kind: str = "") -> str:
    return f"zz{kind}{uuid.uuid4().hex[:10]}"


def thread(t, mark: str, turns: int, *, namespace: str = NS, high: tuple[int, ...] = ()) -> str:
    """A thread named after its marker, of `turns` alternating turns (those in `high` read as
    high); returns its id."""
    for i in range(turns):
        text = f"{HIGH} {i}" if i in high else f"{mark} turn {i} about the orchard move"
        t.append(mark, text, role=("user", "assistant")[i % 2], namespace=namespace)
    return mark


def run_titler(client) -> dict:
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    return client.lambda_.invoke("conversation_titler", event).payload


def title_of(t, thread_id: str, namespace: str = NS) -> tuple[str, dict]:
    got = t.ok("conversation.get", agent="", thread_id=thread_id, namespace=namespace)
    return got["title"], got["metadata"]


def listed_title(t, thread_id: str) -> str:
    rows = t.ok("conversation.threads", as_="viewer")["threads"]
    return next(r["title"] for r in rows if r["thread_id"] == thread_id)


# ---- titling -------------------------------------------------------------------------------


def test_an_untitled_active_thread_gets_a_title(t, llm, client):
    """GIVEN an untitled thread of four turns in a recording namespace
    WHEN the scheduled titler runs
    THEN the model is asked once with the titler's instructions and the turns, and
    conversation.threads and conversation.get show its answer (unquoted) as the title; the
    thread still reads as built by appends.
    """
    mark = thread(t, marker(), 4)
    counts = run_titler(client)
    assert counts["titled"] >= 1
    assert llm.asked(mark) == 1
    system, user = next(p for p in llm.prompts if mark in p[1])
    assert system == TITLER_SYSTEM and all(f"turn {i}" in user for i in range(4))
    assert listed_title(t, mark) == f"Plan {mark}"
    got = t.ok("conversation.get", agent="", thread_id=mark)
    assert got["title"] == f"Plan {mark}" and got["metadata"] == {}
    assert got["created_at"] is None

    run_titler(client)
    assert llm.asked(mark) == 1  # titled threads are not asked again


@pytest.mark.parametrize("case", ["three-turns", "not-recording", "outside-window", "titled"])
def test_threads_outside_the_titlers_scope_are_left_alone(t, llm, client, pool, org, case):
    """GIVEN a thread with only three turns, one in a namespace that stopped recording, one
    whose turns are all older than the 168-hour window, or one created with a title
    WHEN the scheduled titler runs
    THEN the model is never asked about it and its title is unchanged.
    """
    mark, namespace, expected = marker(), NS, ""
    if case == "three-turns":
        thread(t, mark, 3)
    elif case == "not-recording":
        namespace = "ns-stopped"
        t.set_logging(namespace, True)
        thread(t, mark, 4, namespace=namespace)
        t.set_logging(namespace, False)
    elif case == "outside-window":
        thread(t, mark, 4)
        execute(
            pool,
            "UPDATE loom.conversations SET ts = ts - interval '200 hours'"
            " WHERE org = %s AND thread_id = %s",
            (org, mark),
        )
    else:
        t.ok("conversation.create", agent="a1", thread_id=mark, title="Mine", as_="writer")
        thread(t, mark, 4)
        expected = "Mine"
    run_titler(client)
    assert llm.asked(mark) == 0
    assert title_of(t, mark, namespace) == (expected, {})


def test_one_pass_titles_at_most_the_per_pass_cap(t, llm, client, pool):
    """GIVEN three untitled threads and LOOM_CONVERSATION_TITLER_MAX_THREADS_PER_PASS set to 2
    WHEN the titler runs once, then again
    THEN the first pass titles only the two most recently active, the second the third.
    """
    marks = [thread(t, marker(), 4) for _ in range(3)]
    with live_setting(pool, "conversation_titler_max_threads_per_pass", "2"):
        run_titler(client)
        assert [title_of(t, m)[0] for m in marks] == ["", f"Plan {marks[1]}", f"Plan {marks[2]}"]
        run_titler(client)
    assert [title_of(t, m)[0] for m in marks] == [f"Plan {m}" for m in marks]
    assert [llm.asked(m) for m in marks] == [1, 1, 1]


# ---- sensitivity ---------------------------------------------------------------------------


def test_turns_that_read_as_high_never_reach_the_model(t, llm, client):
    """GIVEN a thread mixing plain turns with turns holding a password
    WHEN the titler runs
    THEN the thread is titled from its plain turns, and no prompt holds the password.
    """
    mark = thread(t, marker(), 6, high=(1, 3))
    run_titler(client)
    assert title_of(t, mark)[0] == f"Plan {mark}"
    assert not any("hunter22" in user for _, user in llm.prompts)


def test_a_thread_whose_first_eight_turns_read_as_high_is_marked_refused(t, llm, client):
    """GIVEN a thread whose first eight turns all read as high (a ninth is plain)
    WHEN the titler runs twice
    THEN the model is never asked, the thread stays untitled with title_refused in its
    metadata, and the second pass leaves it alone.
    """
    mark = thread(t, marker(), 9, high=tuple(range(8)))
    run_titler(client)
    assert title_of(t, mark) == ("", {"title_refused": True})
    run_titler(client)
    assert llm.asked(mark) == 0
    assert not any("hunter22" in user for _, user in llm.prompts)
    assert listed_title(t, mark) == ""


def test_a_thread_with_fewer_high_turns_waits_unmarked_for_a_plain_one(t, llm, client):
    """GIVEN a thread of five turns that all read as high
    WHEN the titler runs, then a plain turn arrives and it runs again
    THEN the first pass asks nothing and leaves no mark; the second titles it from the plain
    turn alone.
    """
    mark = marker()
    for i in range(5):
        t.append(mark, f"{HIGH} {i}", role=("user", "assistant")[i % 2])
    run_titler(client)
    assert title_of(t, mark) == ("", {})
    t.append(mark, f"{mark} now a plain question about the orchard", role="user")
    run_titler(client)
    assert title_of(t, mark)[0] == f"Plan {mark}"
    assert not any("hunter22" in user for _, user in llm.prompts)


def test_a_title_that_reads_as_high_is_refused_and_marked(t, llm, client):
    """GIVEN a thread the model names with a title that reads as high
    WHEN the titler runs twice
    THEN the thread stays untitled, marked title_refused, and the model is asked only once.
    """
    mark = thread(t, marker("high"), 4)
    run_titler(client)
    assert title_of(t, mark) == ("", {"title_refused": True})
    run_titler(client)
    assert llm.asked(mark) == 1


@pytest.mark.parametrize("op", ["conversation.update", "conversation.create"])
def test_new_metadata_clears_the_mark_and_the_titler_asks_once_more(t, llm, client, op):
    """GIVEN a thread marked title_refused because its title read as high
    WHEN a writer sets new metadata on it (update or create), and the titler runs twice
    THEN the metadata is the new object without the mark, the model is asked exactly once
    more, and the thread is marked again.
    """
    mark = thread(t, marker("high"), 4)
    run_titler(client)
    assert llm.asked(mark) == 1
    t.ok(op, agent="a1", thread_id=mark, metadata={"topic": "ops"}, as_="writer")
    assert title_of(t, mark) == ("", {"topic": "ops"})
    run_titler(client)
    run_titler(client)
    assert llm.asked(mark) == 2
    assert title_of(t, mark) == ("", {"topic": "ops", "title_refused": True})


# ---- when it does nothing ------------------------------------------------------------------


def test_with_the_stock_fake_llm_nothing_happens(t, client, pool, org):
    """GIVEN the stock fake LLM and an untitled thread of four turns
    WHEN the titler runs
    THEN it reports no work and writes no thread row.
    """
    mark = thread(t, marker(), 4)
    counts = run_titler(client)
    assert all(v == 0 for v in counts.values()), counts
    assert title_of(t, mark) == ("", {})
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT count(*) FROM loom.conversation_threads WHERE org = %s", (org,)
        ).fetchone()
    assert rows[0] == 0


def test_switched_off_the_titler_does_nothing(t, llm, client, pool):
    """GIVEN a model and an untitled thread, with conversation_titler_enabled set false live
    WHEN the titler runs
    THEN the model is not asked and the thread stays untitled; switched back on, it titles.
    """
    mark = thread(t, marker(), 4)
    execute(
        pool,
        "INSERT INTO loom.settings (name, value) VALUES ('conversation_titler_enabled', 'false')",
    )
    try:
        counts = run_titler(client)
    finally:
        execute(pool, "DELETE FROM loom.settings WHERE name = 'conversation_titler_enabled'")
    assert all(v == 0 for v in counts.values()), counts
    assert llm.asked(mark) == 0 and title_of(t, mark)[0] == ""
    run_titler(client)
    assert title_of(t, mark)[0] == f"Plan {mark}"


# ---- overlapping runs ----------------------------------------------------------------------


def test_overlapping_runs_never_title_a_thread_twice(t, deps, pool):
    """GIVEN six untitled threads and a model that takes a moment per call
    WHEN two titler passes run at the same time
    THEN every thread is titled and the model was asked about each exactly once.
    """
    deps._llm = slow = PromptTitler(pause=0.1)
    marks = [thread(t, marker(), 4) for _ in range(6)]
    results: list = []
    runners = [
        threading.Thread(target=lambda: results.append(title_threads(deps))) for _ in range(2)
    ]
    for r in runners:
        r.start()
    for r in runners:
        r.join(30)
    assert len(results) == 2
    assert [slow.asked(m) for m in marks] == [1] * 6
    assert [title_of(t, m)[0] for m in marks] == [f"Plan {m}" for m in marks]
    assert sum(r["claimed_elsewhere"] for r in results) >= 1


# ---- through the real openai client --------------------------------------------------------


def test_the_titler_titles_through_an_openai_compatible_server(t, deps, client):
    """GIVEN an OpenAI-compatible server answering "Ledger migration", reached through the
    openai client
    WHEN the titler runs over an untitled thread of four turns
    THEN the server got a chat request holding the thread's turns, and the thread's title is
    "Ledger migration".
    """
    mark = thread(t, marker(), 4)
    with OpenAIStub(chat_reply=lambda req: "Ledger migration") as stub:
        deps._llm = OpenAILLM(model="m", base_url=stub.base_url, api_key="k")
        run_titler(client)
    chats = [body for path, body in stub.requests if path.endswith("/chat/completions")]
    mine = [b for b in chats if mark in b["messages"][1]["content"]]
    assert len(mine) == 1
    assert mine[0]["messages"][0] == {"role": "system", "content": TITLER_SYSTEM}
    assert mine[0]["model"] == "m"
    assert title_of(t, mark)[0] == "Ledger migration"
    assert listed_title(t, mark) == "Ledger migration"
