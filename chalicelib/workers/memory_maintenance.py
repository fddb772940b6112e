"""The entity_extractor and embedding_worker: rows written without entities or a vector."""

from __future__ import annotations

import re
from typing import Any

from chalicelib.deps import Deps
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.sensitivity import embedded_reads_as_high
from chalicelib.store import memories as store

BATCH = 200
BATCHES_PER_PASS = 25
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_HANDLE = re.compile(r"(?<!\w)@[A-Za-z0-9_]{2,}")
_PATH = re.compile(r"(?<![\w/])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,6}\b")
_STOP = {"The", "A", "An", "User", "Users", "Assistant", "I", "It", "This", "That", "They"}


def _ident(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return row["org"], row["namespace"], row["user_id"], row["key"]


def entities_of(text: str) -> list[str]:
    """Names, @handles and file paths a fact mentions (deterministic, no model call)."""
    found = [m for m in _NAME.findall(text) if m not in _STOP]
    found += _HANDLE.findall(text) + _PATH.findall(text)
    return list(dict.fromkeys(found))[:20]


def extract_entities(deps: Deps) -> dict[str, int]:
    """Fill `entities` on rows written without them (high text included: nothing leaves)."""
    filled = 0
    if not deps.live().entity_extractor_enabled:
        return {"filled": filled}
    for _ in range(BATCHES_PER_PASS):
        with deps.pool.connection() as conn:
            rows = store.rows_without(conn, "entities", BATCH)
            store.set_entities(conn, [(*_ident(r), entities_of(r["value"])) for r in rows])
        filled += len(rows)
        if len(rows) < BATCH:
            break
    return {"filled": filled}


def embed_missing(deps: Deps) -> dict[str, int]:
    """Embed rows left without a vector (a failed embed); text that reads as high is
    withheld at write time and never appears here."""
    embedded = 0
    if not deps.live().embedding_worker_enabled:
        return {"embedded": embedded}
    for _ in range(BATCHES_PER_PASS):
        with deps.pool.connection() as conn:
            rows = store.rows_without(conn, "vector", BATCH)
        plain = [r for r in rows if not embedded_reads_as_high(r["value"], EMBED_CHARS)]
        if not plain:
            break
        try:
            vectors = deps.embedder.embed_documents([r["value"][:EMBED_CHARS] for r in plain])
        except EmbedderError:
            break
        with deps.pool.connection() as conn:
            pairs = zip(plain, vectors, strict=True)
            store.set_vectors(conn, deps.embedder.name, [(*_ident(r), v) for r, v in pairs])
        embedded += len(plain)
        if len(rows) < BATCH:
            break
    return {"embedded": embedded}
