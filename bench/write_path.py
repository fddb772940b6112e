"""conversation.append through the registry against raw single-row statements on the same tables."""

from __future__ import annotations

import time

from bench.harness import BenchDb, Figure, p95, say, timed
from chalicelib.auth import local_caller
from chalicelib.ops.turn_writer import context_text, embeddable
from chalicelib.providers.embedder import EMBED_CHARS
from chalicelib.registry import call
from chalicelib.sensitivity import reads_as_high
from chalicelib.store.conversations import NewTurn
from chalicelib.store.pool import read_connection

SIZES = {"quick": 400, "full": 3000}


def _turn(i: int) -> str:
    return f"turn {i}: we moved invoice batch {i} to the new ledger and checked the export job"


def run(db: BenchDb, quick: bool) -> list[Figure]:
    n = SIZES["quick" if quick else "full"]
    deps = db.deps_for()
    org = "bench-write"
    caller = local_caller(org)
    call("conversation.set_logging", {"namespace": "w", "enabled": True}, caller, deps)
    body = {"namespace": "w", "agent": "bench", "thread_id": "t", "role": "user"}

    say(f"write path: {n} appends through the registry ...")
    start = time.perf_counter()
    for i in range(n):
        call("conversation.append", {**body, "msg_id": f"m{i}", "content": _turn(i)}, caller, deps)
    append_rate = n / (time.perf_counter() - start)

    say(f"write path: {n} raw INSERT + COMMIT of the same rows ...")
    vectors = deps.embedder.embed_documents([_turn(i) for i in range(n)])
    with deps.pool.connection() as conn:
        conn.commit()
        start = time.perf_counter()
        for i in range(n):
            conn.execute(
                "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
                " content, ts) VALUES (%s, 'w', 'raw', 'bench', %s, 'user', %s, clock_timestamp())",
                (org, f"r{i}", _turn(i)),
            )
            conn.execute(
                "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id,"
                " model, agent, role, text, dim, embedding, ts)"
                " VALUES (%s, 'w', 'raw', %s, 'raw', 'bench', 'user', %s, %s, %s, now())",
                (org, f"r{i}", _turn(i), len(vectors[i]), vectors[i]),
            )
            conn.commit()
        raw_rate = n / (time.perf_counter() - start)

    say("write path: duplicate appends against primary-key lookups ...")

    def duplicate() -> None:
        call("conversation.append", {**body, "msg_id": "m7", "content": _turn(7)}, caller, deps)

    def lookup() -> None:
        with read_connection(deps.pool) as conn:
            conn.execute(
                "SELECT 1 FROM loom.conversations WHERE org = %s AND namespace = 'w'"
                " AND thread_id = 't' AND agent = 'bench' AND msg_id = 'm7'",
                (org,),
            ).fetchone()

    # One after the other, so background work weighs on both alike.
    dup: list[float] = []
    pk: list[float] = []
    for _ in range(n):
        dup += timed(duplicate, 1)
        pk += timed(lookup, 1)

    # The guard as each append above ran it: on the turn (embeddable), then on the turn read
    # after the one before it (its context vector's text).
    def guard(i: int) -> None:
        turn = NewTurn(org, "w", "t", "bench", f"m{i}", "user", _turn(i))
        if embeddable(turn) and i:
            reads_as_high(context_text(_turn(i - 1)[:EMBED_CHARS], _turn(i)[:EMBED_CHARS]))

    guard_s = [timed(lambda i=i: guard(i), 1)[0] for i in range(n)]
    append_each = 1.0 / append_rate
    return [
        Figure(
            "append throughput", append_rate, "turns/s", "raw INSERTs+COMMIT", raw_rate, ">= 0.5x"
        ),
        Figure(
            "duplicate append p95", p95(dup) * 1e3, "ms", "PK lookup p95", p95(pk) * 1e3, "<= 1.2x"
        ),
        Figure(
            "sensitivity guard per append",
            sum(guard_s) / n * 1e3,
            "ms",
            "whole append",
            append_each * 1e3,
            "<= 0.05x",
        ),
    ]
