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


def test_two_agents_copies_of_a_turn_count_once_among_the_first_eight(t, llm, client):
    """GIVEN a thread of four high turns, each logged by agents a1 and a2 (eight copies)
    WHEN the titler runs
    THEN the thread waits unmarked for a plain turn: it holds four turns, not eight."""
    mark = marker()
    for i in range(4):
        for agent in ("a1", "a2"):
            t.append(mark, f"{HIGH} {i}", role=("user", "assistant")[i % 2], msg_id=f"m{i}",
                     agent=agent)  # fmt: skip
    run_titler(client)
    assert title_of(t, mark) == ("", {})


def test_a_turn_whose_cut_reads_as_high_never_reaches_the_model(t, llm, client):
    """GIVEN a thread whose first turn is plain whole but, cut to the 1,000 characters the
    model reads, ends in a card number (five groups of four digits, cut after the fourth)
    WHEN the titler runs
    THEN no prompt holds the digits."""
    mark = marker()
    cut = f"{mark} the orchard move " + "x" * 960
    cut = cut[:980] + " 4111 1111 1111 1111 1111 end."
    t.append(mark, cut, role="user")
    thread(t, mark, 4)
    run_titler(client)
    assert not any("4111 1111 1111 1111" in user for _, user in llm.prompts)


class NulTitler(PromptTitler):
    """Answers a title the database cannot hold for one marker."""

    def __init__(self, poison: str):
        super().__init__()
        self.poison = poison

    def complete(self, system, user, *, json_output=False, model=None) -> LLMResult:
        answer = super().complete(system, user)
        if self.poison in user:
            return LLMResult(text="Orchard\x00plan", model=self.name)
        return answer


def test_a_title_the_database_cannot_hold_fails_that_thread_alone(t, deps, client):
    """GIVEN two untitled threads, the model answering one of them with a NUL in its title
    WHEN the titler runs
    THEN that thread stays untitled (its answer failed) and the other is titled in the same
    pass."""
    poison, other = thread(t, marker(), 4), thread(t, marker(), 4)
    deps._llm = NulTitler(poison)
    counts = run_titler(client)
    assert counts["failed"] >= 1
    assert title_of(t, poison)[0] == ""
    assert title_of(t, other)[0] == f"Plan {other}"


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


# ---- the thread changes while the model answers --------------------------------------------


class HookTitler(PromptTitler):
    """A PromptTitler that, asked about a thread holding `mark`, first runs `act` (once): it
    stands for a request that commits while the model is answering."""

    def __init__(self, mark: str, act):
        super().__init__()
        self.mark, self.act, self.done = mark, act, False

    def complete(self, system, user, *, json_output=False, model=None) -> LLMResult:
        if self.mark in user and not self.done:
            self.done = True
            self.act()
        return super().complete(system, user, json_output=json_output, model=model)


def thread_row(pool, org, thread_id):
    with pool.connection() as conn:
        return conn.execute(
            "SELECT title, metadata, tombstoned_at IS NOT NULL FROM loom.conversation_threads"
            " WHERE org = %s AND thread_id = %s",
            (org, thread_id),
        ).fetchone()


@pytest.mark.parametrize("purge", [False, True])
def test_an_erasure_while_the_model_answers_leaves_no_title_from_the_erased_turns(
    t, deps, pool, org, purge
):
    """GIVEN a thread whose first turns are ann's (two) and bob's (four)
    WHEN ann is erased (with and without purge) while the model is titling the thread
    THEN the model's title, made from ann's words, is not written; the next pass titles the
    thread from bob's turns alone, and no prompt of it holds ann's words.
    """
    mark = marker()
    for i in range(2):
        t.append(mark, f"{mark} ann zanzibar lighthouse {i}", role="user", user_id="u-ann")
    for i in range(4):
        t.append(mark, f"{mark} bob orchard move {i}", role=("assistant", "user")[i % 2])

    def erase():
        t.ok("erasure.request", kind="user", user_id="u-ann", namespace=NS, purge=purge)

    deps._llm = model = HookTitler(mark, erase)
    counts = title_threads(deps)
    assert model.done, counts
    assert thread_row(pool, org, mark)[0] == ""

    model.prompts.clear()
    title_threads(deps)
    assert title_of(t, mark)[0] == f"Plan {mark}"
    asked = [user for _, user in model.prompts if mark in user]
    assert len(asked) == 1 and "zanzibar" not in asked[0] and "bob orchard" in asked[0]


@pytest.mark.parametrize("case", ["own-title", "delete", "create"])
def test_a_title_set_or_a_delete_while_the_model_answers_wins(t, deps, pool, org, case):
    """GIVEN an untitled thread of four turns
    WHEN, while the model is titling it, a writer sets its title (conversation.update), deletes
    it, or creates it with metadata (conversation.create)
    THEN the model's title is not written: the user's title stays, the deleted thread row
    stays untitled, and the created thread is titled by the next pass from its live turns.
    """
    mark = thread(t, marker(), 4)
    acts = {
        "own-title": lambda: t.ok(
            "conversation.update", agent="a1", thread_id=mark, title="Bob's own", as_="writer"
        ),
        "delete": lambda: t.ok(
            "conversation.delete", agent="a1", thread_id=mark, confirm_thread_id=mark
        ),
        "create": lambda: t.ok(
            "conversation.create", agent="a1", thread_id=mark, metadata={"k": 1}, as_="writer"
        ),
    }
    deps._llm = model = HookTitler(mark, acts[case])
    counts = title_threads(deps)
    assert model.done, counts
    if case == "own-title":
        assert thread_row(pool, org, mark) == ("Bob's own", {}, False)
    elif case == "delete":
        assert thread_row(pool, org, mark) == ("", {}, True)
    else:
        assert thread_row(pool, org, mark) == ("", {"k": 1}, False)
        title_threads(deps)
        assert thread_row(pool, org, mark) == (f"Plan {mark}", {"k": 1}, False)


def test_a_thread_id_used_again_after_a_delete_is_titled_again(t, deps, pool, org):
    """GIVEN a thread created with a title, deleted, and its id used again by four new turns
    WHEN the titler runs
    THEN the thread is titled from its new turns (its deleted row, title and all, is made
    anew), and conversation.get shows it as built by appends.
    """
    deps._llm = PromptTitler()
    mark = marker()
    t.append(mark, f"{mark} an old turn")
    t.ok("conversation.create", agent="a1", thread_id=mark, title="old title", as_="writer")
    t.ok("conversation.delete", agent="", thread_id=mark, confirm_thread_id=mark, as_="admin")
    thread(t, mark, 4)
    assert listed_title(t, mark) == ""

    title_threads(deps)

    assert thread_row(pool, org, mark) == (f"Plan {mark}", {}, False)
    assert t.ok("conversation.get", agent="", thread_id=mark)["created_at"] is None


# ---- fairness ------------------------------------------------------------------------------


def _tool_threads(t, n: int) -> list[str]:
    """`n` threads of tool and system turns only: the titler finds no plain turn and waits."""
    marks = [marker() for _ in range(n)]
    for mark in marks:
        for j in range(4):
            t.append(mark, f"{mark} step {j} exit 0", role=("tool", "system")[j % 2])
    return marks


def test_threads_that_keep_waiting_never_take_every_slot_of_a_pass(api, deps, pool, t, llm):
    """GIVEN an org whose ten threads keep waiting (tool and system turns only, and the most
    recently active), another org's untitled thread, and an older untitled thread of the
    noisy org, with at most ten threads a pass
    WHEN the titler runs twice, and the ten get new tool turns between passes
    THEN the first pass tries the ten, and the second titles both other threads: threads
    that waited go behind those not tried since, however recent their activity.
    """
    for _ in range(100):  # title what earlier tests left, so only waiting threads compete
        counts = title_threads(deps)
        if not (counts["titled"] or counts["refused"] or counts.get("discarded")):
            break
    victim = open_tenant(api, deps, f"org-{uuid.uuid4().hex[:10]}")
    theirs = thread(victim, marker(), 4)
    own_older = thread(t, marker(), 4)
    noisy = _tool_threads(t, 10)
    with live_setting(pool, "conversation_titler_max_threads_per_pass", "10"):
        for n in range(2):
            title_threads(deps)
            for mark in noisy:  # the noisy tenant's agents keep logging tool output
                t.append(mark, f"{mark} pass {n} exit 0", role="tool")
    assert title_of(victim, theirs)[0] == f"Plan {theirs}"
    assert title_of(t, own_older)[0] == f"Plan {own_older}"
    assert all(title_of(t, m) == ("", {}) for m in noisy)


@pytest.mark.parametrize("given", ["", "Our own name"])
def test_erasing_the_turns_a_title_came_from_clears_it_on_a_created_thread_too(
    t, llm, deps, pool, org, given
):
    """GIVEN a thread made by conversation.create (untitled, or with a title a person gave),
    whose turns are ann's, and one pass of the titler
    WHEN ann is erased
    THEN a title the titler wrote from ann's turns is cleared, while a title a person gave
    stays as it was."""
    mark = marker()
    t.ok("conversation.create", agent="a1", thread_id=mark, title=given)
    for i in range(4):
        t.append(mark, f"{mark} ann zanzibar lighthouse {i}", role="user", user_id="u-ann")
    title_threads(deps)
    assert title_of(t, mark)[0] == (given or f"Plan {mark}")

    t.ok("erasure.request", kind="user", user_id="u-ann", namespace=NS)

    assert thread_row(pool, org, mark)[0] == given


def test_an_orgs_threads_wait_untitled_while_its_model_calls_are_off(t, llm, client, deps, org):
    """GIVEN an untitled thread of four turns in an org whose model calls are switched off
    WHEN the scheduled titler runs, then runs again once they are back on
    THEN the first run never asks the model about it and leaves it untitled; the second
    titles it."""
    from chalicelib.auth import local_caller
    from chalicelib.registry import call

    def switch(enabled: bool) -> None:
        call("model_calls.set", {"org": org, "enabled": enabled}, local_caller(org), deps)

    mark = thread(t, marker(), 4)
    switch(False)
    run_titler(client)
    assert llm.asked(mark) == 0 and listed_title(t, mark) == ""

    switch(True)
    run_titler(client)
    assert listed_title(t, mark) == f"Plan {mark}"
