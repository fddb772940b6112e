"""The guard sweep: indexed text that today's guard reads as high leaves every index.

An earlier build with a weaker guard may have embedded and indexed a turn that reads as high
today. Every search hit is checked with today's guard, but such a row's text would still sit
in the windows of the turns around it (found by its words) and in the context vector of the
turn after it. Once for each guard (a fingerprint of its source), this reads every live
embedding row, tombstones those that read as high (the turn itself stays, as written) and
rewrites the windows and context vectors of their threads. A context vector whose pair of
texts reads as high (a shape the two turns make together, which today's append never sends)
gives way to its turn's own vector.
"""

from __future__ import annotations

from chalicelib.deps import Deps
from chalicelib.providers.embedder import EMBED_CHARS
from chalicelib.sensitivity import guard_fingerprint, is_sensitive, is_sensitive_embedded
from chalicelib.services.turn_writer import context_text
from chalicelib.store import guard_sweeps as store

NAME = "conversation_embeddings"
BATCH = 2000
BATCHES_PER_PASS = 50


def sweep_indexed_text(
    deps: Deps,
    *,
    batch: int = BATCH,
    batches_per_pass: int = BATCHES_PER_PASS,
    guard: str | None = None,
) -> dict[str, int]:
    """One pass of up to `batches_per_pass` batches under `guard` (today's guard's fingerprint
    by default); the next pass goes on where it stopped."""
    guard = guard or guard_fingerprint()
    with deps.pool.connection() as conn:
        position, done = store.sweep_position(conn, NAME, guard)
    checked = withdrawn = contexts = 0
    for _ in range(batches_per_pass):
        if done:
            break
        with deps.pool.connection() as conn:
            rows = store.indexed_after(conn, position, batch)
        deps.hooks.at("guard_sweep.read", rows=rows)
        high: list[dict] = []  # withdrawn: the row's own text reads as high
        paired: list[dict] = []  # their context gives way: the pair it was read from does
        for r in rows:
            if _indexed_is_sensitive(r):
                high.append(r)
            elif r["read_after"] is not None and is_sensitive(
                context_text(r["read_after"], r["text"])
            ):
                paired.append(r)
        if rows:
            position = store.position_of(rows[-1])
        done = len(rows) < batch
        with deps.pool.connection() as conn:
            if high:
                withdrawn += store.withdraw_indexed(conn, high)
            if paired:
                contexts += store.drop_contexts(conn, paired)
            store.advance(conn, NAME, guard, position, done)
        checked += len(rows)
    return {"checked": checked, "withdrawn": withdrawn, "contexts": contexts, "done": int(done)}


def _indexed_is_sensitive(row: dict) -> bool:
    """The indexed text, or the whole message it was cut from: a turn is never indexed when
    any of it reads as high (an earlier guard may have read only the cut)."""
    content = row["content"]
    return is_sensitive(row["text"]) or (
        content is not None and is_sensitive_embedded(content, EMBED_CHARS)
    )
