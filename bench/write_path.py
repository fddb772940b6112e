"""conversation.append through the registry against raw single-row statements on the same tables."""

from __future__ import annotations

import time

from bench.harness import BenchDb, Figure, p95, say, timed
from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.ops.turn_writer import context_text, embeddable
from chalicelib.providers.embedder import EMBED_CHARS
from chalicelib.registry import call
from chalicelib.sensitivity import reads_as_high
from chalicelib.store.conversations import NewTurn
from chalicelib.store.pool import lease_lock, read_connection, sent_whole

SIZES = {"quick": 400, "full": 3000}
ROUNDS = 5


def _turn(i: int) -> str:
    return f"turn {i}: we moved invoice batch {i} to the new ledger and checked the export job"


def _raw(deps: Deps, org: str, rows: range, vectors: list) -> float:
    """Seconds for the raw baseline: each turn's row and its vector row, INSERT + COMMIT."""
    with deps.pool.connection() as conn:
        conn.commit()
        start = time.perf_counter()
        for i in rows:
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
        return time.perf_counter() - start


def _floor(deps: Deps, org: str, rows: range, vectors: list) -> float:
    """Seconds for the least any append can send, as raw statements with no Loom code between
    them: the duplicate check (a primary-key read, so a re-logged turn is answered before
    any embed), the turn's insert under the thread lease, then its vector row (one vector, no
    window, no context vector) under the lease again. The spec orders these (the embed runs
    between the two transactions, so a turn deleted meanwhile gets no late vector); an append's
    ratio to raw cannot exceed this one's."""
    lease = lease_lock("%s", 0)
    with read_connection(deps.pool) as conn:
        start = time.perf_counter()
        for i in rows:
            conn.execute(
                "SELECT 1 FROM loom.conversations WHERE org = %s AND namespace = 'w'"
                " AND thread_id = 'floor' AND agent = 'bench' AND msg_id = %s",
                (org, f"f{i}"),
            ).fetchall()
            with sent_whole(conn):
                conn.execute(lease, (f"{org}\x1fw\x1ffloor",))
                conn.execute(
                    "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id,"
                    " role, content, ts)"
                    " VALUES (%s, 'w', 'floor', 'bench', %s, 'user', %s, clock_timestamp())",
                    (org, f"f{i}", _turn(i)),
                )
            with sent_whole(conn):
                conn.execute("SET LOCAL synchronous_commit = off")
                conn.execute(lease, (f"{org}\x1fw\x1ffloor",))
                conn.execute(
                    "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id,"
                    " model, agent, role, text, dim, embedding, ts)"
                    " VALUES (%s, 'w', 'floor', %s, 'raw', 'bench', 'user', %s, %s, %s, now())",
                    (org, f"f{i}", _turn(i), len(vectors[i]), vectors[i]),
                )
        return time.perf_counter() - start


def run(db: BenchDb, quick: bool) -> list[Figure]:
    n = SIZES["quick" if quick else "full"]
    deps = db.deps_for()
    org = "bench-write"
    caller = local_caller(org)
    call("conversation.set_logging", {"namespace": "w", "enabled": True}, caller, deps)
    body = {"namespace": "w", "agent": "bench", "thread_id": "t", "role": "user"}

    vectors = deps.embedder.embed_documents([_turn(i) for i in range(n)])
    # In rounds, each path in turn, so background work weighs on all three alike.
    spent = {"append": 0.0, "raw": 0.0, "floor": 0.0}
    for r in range(ROUNDS):
        rows = range(r * n // ROUNDS, (r + 1) * n // ROUNDS)
        say(f"write path: round {r + 1} of {ROUNDS}: {len(rows)} appends, raw rows, floor rows ...")
        start = time.perf_counter()
        for i in rows:
            call(
                "conversation.append",
                {**body, "msg_id": f"m{i}", "content": _turn(i)},
                caller,
                deps,
            )
        spent["append"] += time.perf_counter() - start
        spent["raw"] += _raw(deps, org, rows, vectors)
        spent["floor"] += _floor(deps, org, rows, vectors)
    append_rate, raw_rate, floor_rate = (n / spent[k] for k in ("append", "raw", "floor"))

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
            "append floor (its raw statements)",
            floor_rate,
            "turns/s",
            "raw INSERTs+COMMIT",
            raw_rate,
            "",
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
