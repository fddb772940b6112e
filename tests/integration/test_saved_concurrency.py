"""Save, unsave, append and delete share one thread lease: no interleaving loses a flag, a row
or a tombstone."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.providers.embedder import EmbedderError, FakeEmbedder
from chalicelib.registry import call
from chalicelib.store.thread_leases import take_thread_lease
from tests.integration.test_saved_support import (
    NS,
    OFF_NS,
    execute,
    hit_ids,
    open_tenant,
    save,
    saved_status,
    search_saved,
    transcript,
    vectors,
)

ROUNDS = 5
WORKERS = 4
OPS_PER_WORKER = 30


class JitteryEmbedder(FakeEmbedder):
    """Answers after a short random pause, and fails about one call in six."""

    def __init__(self, seed: int):
        super().__init__()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        with self._lock:
            pause, fail = self._rng.random() * 0.004, self._rng.random() < 1 / 6
        time.sleep(pause)
        if fail:
            raise EmbedderError("jittery embedder failed")
        return super().embed_documents(texts)


class BarrierEmbedder(FakeEmbedder):
    """Holds each embed until `parties` callers are embedding, so every concurrent caller has
    read the message (as new) before any of them writes."""

    def __init__(self, parties: int):
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=5)

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.barrier.wait()
        return super().embed_documents(texts)


class GateEmbedder(FakeEmbedder):
    """Signals when an embed starts and holds it until released."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.entered.set()
        self.release.wait(5)
        return super().embed_documents(texts)


def widen_race_windows(request, pool, org: str) -> None:
    """Pause briefly, on the server, inside each write step that holds the lease (after the
    append's vector write, between a save's claim and its embedding write or an unsave's
    unflag and its withdrawal, between a delete's two tables, after an unsave removes a
    turn), so that without the lease the threads would interleave inside those steps."""
    wait = "random() * 0.003"
    request.addfinalizer(held_vector_writes(pool, org, wait))
    mine = f"NEW.org = '{org}'"
    for step, event, when in [
        ("flag", "UPDATE OF is_saved ON loom.conversations", mine),
        ("thread", "UPDATE OF tombstoned_at ON loom.conversation_threads", mine),
        ("removed", "DELETE ON loom.conversations", f"OLD.org = '{org}'"),
    ]:
        request.addfinalizer(paused_on_server(pool, f"{step}_{org}", event, when, wait))


def text_of(msg: str) -> str:
    return f"the harbour log entry {msg} about ferries and tides"


def hammer(deps, org: str, namespace: str, conv: str, seed: int) -> tuple[list, list]:
    """One worker's random run of save / unsave / append / delete on one conversation."""
    rng = random.Random(seed)
    caller = local_caller(org)
    base = {"org": org, "namespace": namespace}
    deletes, errors = [], []
    for i in range(OPS_PER_WORKER):
        msg = f"m{i // 4 + rng.randint(0, 1)}"  # the workers move through ids side by side
        user = rng.choice(("u1", "u1", "u2"))
        roll = rng.random()
        try:
            if roll < 0.40:
                call(
                    "conversation.save_message",
                    {
                        **base,
                        "agent": "a1",
                        "conversation_id": conv,
                        "message_id": msg,
                        "role": "user",
                        "content": text_of(msg),
                        "user_id": user,
                    },
                    caller,
                    deps,
                )
            elif roll < 0.70:
                call(
                    "conversation.unsave_message",
                    {
                        **base,
                        "agent": "a1",
                        "conversation_id": conv,
                        "message_id": msg,
                        "user_id": user,
                    },
                    caller,
                    deps,
                )
            elif roll < 0.95:
                call(
                    "conversation.append",
                    {
                        **base,
                        "agent": "a1",
                        "thread_id": conv,
                        "msg_id": msg,
                        "role": "user",
                        "content": text_of(msg),
                    },
                    caller,
                    deps,
                )
            else:
                out = call(
                    "conversation.delete",
                    {**base, "agent": "", "thread_id": conv, "confirm_thread_id": conv},
                    caller,
                    deps,
                )
                deletes.append(out.body["tombstoned_at"])
        except Exception as exc:  # every call should be served, a LoomError included
            errors.append(repr(exc))
    return deletes, errors


def check_invariants(pool, org: str, namespace: str, conv: str, delete_times: set[str]) -> None:
    rows = [r for r in transcript(pool, org) if r["thread_id"] == conv]
    vecs = {r["msg_id"]: r for r in vectors(pool, org) if r["thread_id"] == conv}
    live = [r for r in rows if r["tombstoned_at"] is None]

    # No two live transcript rows for one (thread, agent, msg_id).
    keys = [(r["agent"], r["msg_id"]) for r in live]
    assert len(keys) == len(set(keys)), keys

    # A live saved transcript row has a live embedding row flagged with the same save time and
    # owner, holding a vector or the error of a failed embed.
    for r in live:
        if not r["is_saved"]:
            continue
        v = vecs.get(r["msg_id"])
        assert v is not None, ("saved row without embedding row", r)
        assert v["tombstoned_at"] is None, ("saved row, tombstoned embedding", r, v)
        assert v["is_saved"] and v["saved_at"] == r["saved_at"], ("flag lost", r, v)
        assert v["user_id"] == r["user_id"], ("owner differs", r, v)
        assert v["has_vector"] or v["error"], ("embedding row with neither", v)

    # A live embedding row flagged saved answers for a live saved copy of its turn.
    saved_ids = {r["msg_id"]: r for r in live if r["is_saved"]}
    for v in vecs.values():
        if v["tombstoned_at"] is None and v["is_saved"]:
            assert v["msg_id"] in saved_ids, ("flag outlived the save", v)
            assert v["user_id"] == saved_ids[v["msg_id"]]["user_id"], ("owner differs", v)

    # No saved row is tombstoned except by a thread delete (at that delete's time), and no
    # embedding row stays flagged under a tombstone of its own.
    stamps = {s.replace("Z", "+00:00") for s in delete_times}
    for r in rows:
        if r["tombstoned_at"] is not None:
            assert r["tombstoned_at"].isoformat() in stamps, ("tombstoned by no delete", r)
    for v in vecs.values():
        if v["tombstoned_at"] is not None and v["is_saved"]:
            assert v["tombstoned_at"].isoformat() in stamps, ("flagged under tombstone", v)

    # No live embedding row without a live transcript copy of its turn.
    live_ids = {r["msg_id"] for r in live}
    for v in vecs.values():
        if v["tombstoned_at"] is None:
            assert v["msg_id"] in live_ids, ("live embedding, no live turn", v)

    # Where the namespace does not record, a turn exists only because it is saved.
    if namespace == OFF_NS:
        assert all(r["is_saved"] for r in live), live


def test_saves_unsaves_appends_and_deletes_interleave_without_losing_state(
    api, deps, org, pool, request
):
    """GIVEN one conversation per round, in a recording namespace or one that does not record,
    an embedder that pauses at random and fails one call in six, and short pauses inside the
    write steps the lease covers
    WHEN four threads run random saves, unsaves, appends and thread deletes (two users,
    message ids the threads move through side by side), for five rounds
    THEN every call is served, and after each round: no two live copies share a key; every
    live saved row has a live embedding row flagged with its save time and owner, and every
    flagged embedding row a live saved turn; no saved row is tombstoned but by a thread
    delete (which tombstones saved turns with the rest); no live embedding row outlives its
    turn; and where the namespace does not record, every live row is saved.
    """
    t = open_tenant(api, deps, org)
    # A warm process: its vector index is ensured (the cold case is the xfail test below).
    t.append("c-warm", "the harbour log opens", msg_id="warm")
    widen_race_windows(request, pool, org)
    started = time.monotonic()
    for rnd in range(ROUNDS):
        deps._embedder = JitteryEmbedder(seed=rnd)
        namespace = (NS, OFF_NS)[rnd % 2]
        conv = f"c-round-{rnd}"
        with ThreadPoolExecutor(max_workers=WORKERS) as ex:
            results = list(
                ex.map(
                    lambda w, r=rnd, n=namespace, c=conv: hammer(
                        deps, org, n, c, seed=1000 * r + w
                    ),
                    range(WORKERS),
                )
            )
        errors = [e for _, errs in results for e in errs]
        assert errors == [], errors[:5]
        deletes = {d for dels, _ in results for d in dels}
        check_invariants(pool, org, namespace, conv, deletes)
    assert time.monotonic() - started < 20


# ---- interleavings pinned down -------------------------------------------------------------


def run(results: dict, key: str, fn, *args) -> threading.Thread:
    """Run `fn(*args)` in a thread, keeping its answer (or exception) under `key`."""

    def target() -> None:
        try:
            results[key] = fn(*args)
        except Exception as exc:
            results[key] = exc

    thread = threading.Thread(target=target)
    thread.start()
    return thread


def append_body(org: str, msg: str, content: str) -> dict:
    return {
        "org": org,
        "namespace": NS,
        "agent": "a1",
        "thread_id": "c1",
        "msg_id": msg,
        "role": "user",
        "content": content,
    }


def test_a_delete_waits_for_an_appends_vector_write(api, deps, org, pool, request):
    """GIVEN an append whose vector write has run but not yet committed
    WHEN an admin deletes the thread at that moment
    THEN the delete waits for the append (the lease) and then tombstones the turn and its
    embedding: no live embedding row is left for a deleted turn.
    """
    t = open_tenant(api, deps, org)
    t.append("c-warm", "the harbour log opens", msg_id="warm")
    request.addfinalizer(held_vector_writes(pool, org, "1.0", msg_id="m1"))
    results: dict = {}
    caller = local_caller(org)
    appender = run(
        results,
        "append",
        call,
        "conversation.append",
        append_body(org, "m1", "the harbour opens at dawn"),
        caller,
        deps,
    )
    assert sleeping_writer(pool, 5)  # the vector written, its transaction held, lease and all
    body = {"org": org, "namespace": NS, "agent": "", "thread_id": "c1", "confirm_thread_id": "c1"}
    deleter = run(results, "delete", call, "conversation.delete", body, caller, deps)
    appender.join(5)
    deleter.join(5)
    assert not isinstance(results["append"], Exception), results
    assert not isinstance(results["delete"], Exception), results
    assert [r["tombstoned_at"] is not None for r in transcript(pool, org, "m1")] == [True]
    assert [v["tombstoned_at"] is not None for v in vectors(pool, org, "m1")] == [True]
    assert "m1" not in t.hit_ids("harbour opens at dawn")


def paused_on_server(pool, name: str, event: str, when: str, seconds: str):
    """A trigger that, after each row `event` (e.g. `UPDATE OF x ON loom.t`) writes where
    `when` holds, sleeps on the server for `seconds` (an SQL expression) in the writing
    transaction, which stays open, the lease held; the call it returns drops the trigger."""
    name = "hold_" + "".join(c if c.isalnum() else "_" for c in name)[:50]
    execute(
        pool,
        f"CREATE FUNCTION public.{name}() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$ BEGIN PERFORM pg_sleep({seconds}); RETURN NULL; END $$",
    )
    table = event.rsplit(" ON ", 1)[1]
    execute(
        pool,
        f"CREATE TRIGGER {name} AFTER {event} FOR EACH ROW WHEN ({when})"
        f" EXECUTE FUNCTION public.{name}()",
    )

    def drop() -> None:
        execute(pool, f"DROP TRIGGER IF EXISTS {name} ON {table}")
        execute(pool, f"DROP FUNCTION IF EXISTS public.{name}()")

    return drop


def held_vector_writes(pool, org: str, seconds: str, msg_id: str | None = None):
    """Once a vector row of the org (of one turn, given `msg_id`) is written, a sleep on the
    server for `seconds` (an SQL expression) in the writing transaction (`paused_on_server`)."""
    turn = f" AND NEW.msg_id = '{msg_id}'" if msg_id else ""
    return paused_on_server(
        pool,
        f"vector_{org}",
        "INSERT OR UPDATE OF embedding ON loom.conversation_embeddings",
        f"NEW.org = '{org}'{turn} AND NEW.embedding IS NOT NULL",
        seconds,
    )


def sleeping_writer(pool, timeout: float) -> bool:
    """Whether a backend sleeps inside a vector write within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with pool.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
                " AND query ILIKE '%conversation_embeddings%'"
            ).fetchone()
        if row and row[0]:
            return True
        time.sleep(0.02)
    return False


class FirstCallGated(FakeEmbedder):
    """The first embed waits for a gate; every later one fails."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.gate = threading.Event(), threading.Event()
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.calls += 1
        if self.calls > 1:
            raise EmbedderError("down for this caller")
        self.entered.set()
        self.gate.wait(3)
        return super().embed_documents(texts)


def test_an_appends_late_vector_keeps_a_concurrent_saves_flag(api, deps, org, pool, request):
    """GIVEN an append whose embed is still running, and a save of the same turn whose own
    embed fails (so it writes a flagged embedding row holding only the error)
    WHEN the append's vector lands while the save is still committing
    THEN the embedding row ends with the append's vector and still flagged saved for u1, with
    the transcript row's save time, and u1's semantic saved search finds the message.
    """
    t = open_tenant(api, deps, org)
    t.append("c-warm", "the harbour log opens", msg_id="warm")
    deps._embedder = embedder = FirstCallGated()
    # The save's embedding write (flagged, holding only the error) sleeps before it commits.
    flagged = f"NEW.org = '{org}' AND NEW.is_saved AND NEW.embedding IS NULL"
    event = "INSERT OR UPDATE ON loom.conversation_embeddings"
    request.addfinalizer(paused_on_server(pool, f"flag_{org}", event, flagged, "0.4"))
    results: dict = {}
    caller = local_caller(org)
    appender = run(
        results,
        "append",
        call,
        "conversation.append",
        append_body(org, "m1", "the harbour opens at dawn"),
        caller,
        deps,
    )
    assert embedder.entered.wait(5)
    body = {
        "org": org,
        "namespace": NS,
        "agent": "a1",
        "conversation_id": "c1",
        "message_id": "m1",
        "role": "user",
        "content": "the harbour opens at dawn",
        "user_id": "u1",
    }
    saver = run(results, "save", call, "conversation.save_message", body, caller, deps)
    assert sleeping_writer(pool, 5)  # the save's flag written, not yet committed
    embedder.gate.set()  # the append's vector is now on its way
    appender.join(5)
    saver.join(5)
    assert results["save"].body["reason"] == "embed_failed", results
    assert results["append"].body["stored"] is True, results

    (row,) = transcript(pool, org, "m1")
    (vec,) = vectors(pool, org, "m1")
    assert row["is_saved"] and vec["has_vector"]
    assert vec["is_saved"] and vec["saved_at"] == row["saved_at"] and vec["user_id"] == "u1"
    deps._embedder = FakeEmbedder()
    assert hit_ids(search_saved(t, "harbour dawn", search_mode="semantic")) == ["m1"]


def test_a_cold_processs_first_append_does_not_deadlock_with_the_lease_holder(api, deps, org, pool):
    """GIVEN a process that has not yet ensured its vector index, and another writer holding
    the thread's lease
    WHEN an append to that thread embeds its turn while the lease holder writes an embedding
    row and commits
    THEN both finish: the lease holder's write lands and the append is stored.
    """
    open_tenant(api, deps, org)
    gate = GateEmbedder()
    # A process that has made sure of no vector index yet.
    cold = Deps(deps.settings, pool=pool, embedder=gate, llm=deps.llm, vector_indexes=set())
    outcome: dict = {}

    def append() -> None:
        body = {
            "org": org,
            "namespace": NS,
            "agent": "a1",
            "thread_id": "c1",
            "msg_id": "m1",
            "role": "user",
            "content": "the harbour opens at dawn",
        }
        try:
            outcome["append"] = call("conversation.append", body, local_caller(org), cold).body
        except Exception as exc:
            outcome["append"] = exc

    vec = FakeEmbedder()._vector("the lighthouse closes at dusk")
    worker = threading.Thread(target=append)
    worker.start()
    assert gate.entered.wait(5)  # the turn is stored; its embed is running
    with pool.connection() as holder:
        take_thread_lease(holder, org, NS, "c1")
        gate.release.set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # until the append waits for the lease
            with pool.connection() as probe:
                row = probe.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
            if row and row[0]:
                break
            time.sleep(0.01)
        try:
            holder.execute(
                "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id,"
                " model, agent, role, text, dim, embedding, ts, is_saved, saved_at)"
                " VALUES (%s, %s, 'c1', 'm0', 'fake-bow', 'a1', 'user', 'the lighthouse',"
                " %s, %s, now(), true, now())",
                (org, NS, len(vec), vec),
            )
            outcome["holder"] = "written"
        except Exception as exc:
            outcome["holder"] = exc
    worker.join(timeout=10)
    assert outcome.get("holder") == "written", outcome
    assert isinstance(outcome.get("append"), dict), outcome
    assert outcome["append"]["stored"] is True


def test_concurrent_saves_of_a_new_message_by_one_agent_store_one_row(deps, api, org, pool):
    """GIVEN an embedder that holds each caller until all four are embedding, so every caller
    reads the message as new before any writes
    WHEN four threads save one new message with the same agent
    THEN exactly one transcript row holds it, saved.
    """
    open_tenant(api, deps, org)
    deps._embedder = BarrierEmbedder(4)
    body = {
        "org": org,
        "namespace": OFF_NS,
        "agent": "a1",
        "conversation_id": "c1",
        "message_id": "m1",
        "role": "user",
        "content": "the harbour opens at dawn",
        "user_id": "u1",
    }
    with ThreadPoolExecutor(max_workers=4) as ex:
        answers = list(
            ex.map(
                lambda _: call("conversation.save_message", body, local_caller(org), deps).body,
                range(4),
            )
        )
    assert all(a["indexed"] for a in answers), answers
    rows = transcript(pool, org, "m1")
    assert len(rows) == 1 and rows[0]["is_saved"]


def test_concurrent_saves_of_a_new_message_by_two_agents_store_one_row(deps, api, org, pool):
    """GIVEN an embedder that holds each caller until both are embedding, so both read the
    message as new before either writes
    WHEN two clients (agents a1 and a2) save one new message of a conversation at once, and
    the user then unsaves it
    THEN one transcript row held it, and after the unsave the message is no longer saved.
    """
    t = open_tenant(api, deps, org)
    deps._embedder = BarrierEmbedder(2)

    def save_as(agent: str) -> dict:
        body = {
            "org": org,
            "namespace": OFF_NS,
            "agent": agent,
            "conversation_id": "c1",
            "message_id": "m1",
            "role": "user",
            "content": "the harbour opens at dawn",
            "user_id": "u1",
        }
        return call("conversation.save_message", body, local_caller(org), deps).body

    with ThreadPoolExecutor(max_workers=2) as ex:
        answers = list(ex.map(save_as, ["a1", "a2"]))
    assert all(a["indexed"] for a in answers), answers
    rows = transcript(pool, org, "m1")
    assert len(rows) == 1, rows
    deps._embedder = FakeEmbedder()
    t.ok(
        "conversation.unsave_message",
        agent="a1",
        conversation_id="c1",
        message_id="m1",
        user_id="u1",
        namespace=OFF_NS,
        as_="writer",
    )
    assert saved_status(t, "c1", ["m1"], namespace=OFF_NS) == []


def test_another_agents_append_does_not_unflag_a_saved_turns_embedding(
    api, deps, org, pool, embedder
):
    """GIVEN a turn agent a2 recorded and u1 saved while the embedder was down (its shared
    embedding row holds only the error, flagged saved)
    WHEN agent a1 records the same turn once the embedder answers
    THEN the embedding row, now with a vector, is still flagged saved for u1, and u1's
    semantic saved search finds the message.
    """
    t = open_tenant(api, deps, org)
    embedder.failing = True
    t.append("c1", "the harbour opens at dawn", msg_id="m1", agent="a2")
    assert save(t, "c1", "m1", agent="a2")["reason"] == "embed_failed"
    assert vectors(pool, org, "m1")[0]["is_saved"]
    embedder.failing = False
    t.append("c1", "the harbour opens at dawn", msg_id="m1", agent="a1")

    (vec,) = vectors(pool, org, "m1")
    assert vec["has_vector"]
    assert vec["is_saved"] and vec["user_id"] == "u1", vec
    assert hit_ids(search_saved(t, "harbour dawn", search_mode="semantic")) == ["m1"]
