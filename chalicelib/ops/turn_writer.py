"""Embedding a stored turn: provider work first, then the vector under the thread lease."""

from __future__ import annotations

from datetime import datetime

from chalicelib.deps import Deps
from chalicelib.providers.embedder import EmbedderError
from chalicelib.store.conversation_search import ensure_vector_index
from chalicelib.store.conversations import NewTurn, write_embedding

EMBED_CHARS = 2048


def embeddable_role(role: str) -> bool:
    """User and assistant turns are embedded; system and tool turns stay unindexed."""
    return role in ("user", "assistant")


def embed_turn(deps: Deps, turn: NewTurn, ts: datetime) -> bool:
    """Embed the turn's first 2,048 characters, fail-open; False when the turn was removed
    while the embedding ran (no late vector is written then)."""
    text = turn.content[:EMBED_CHARS]
    embedder = deps.embedder
    try:
        vector, error = embedder.embed_documents([text])[0], None
    except EmbedderError as exc:
        vector, error = None, str(exc)[:1000]
    with deps.pool.connection() as conn:
        if vector is not None:
            ensure_vector_index(conn, len(vector))
        return write_embedding(
            conn, turn, model=embedder.name, text=text, ts=ts, vector=vector, error=error
        )
