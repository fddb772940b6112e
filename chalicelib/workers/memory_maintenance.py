"""The entity_extractor and embedding_worker: rows written without entities or a vector.

Both compute from the value they read and write only onto a row that still holds that value:
the write locks the rows and compares, so a row rewritten meanwhile keeps no entities or
vector of its old value (it is picked up again with the new one). A row the embedder refuses
on its own is set aside for a while rather than failing every batch it heads.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import defaultdict
from typing import Any

from psycopg import Connection

from chalicelib.deps import Deps
from chalicelib.observability import logger
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.sensitivity import is_sensitive_embedded
from chalicelib.services.turn_writer import REPAIR_BATCH, REPAIR_PAGES, index_unembedded_turns
from chalicelib.store import memories as store

BATCH = 200
BATCHES_PER_PASS = 25
REFUSED_RETRY_SECONDS = 3600.0  # a row the embedder refused alone is tried again this late
CANARY = "loom embedder check"  # embedded when a batch fails: the embedder up, or down?
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_HANDLE = re.compile(r"(?<!\w)@[A-Za-z0-9_]{2,}")
_PATH = re.compile(r"(?<![\w/])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,6}\b")
_STOP = {
    "The", "A", "An", "User", "Users", "Assistant", "I", "It", "This", "That", "They",
    "My", "Our", "Your", "We", "You", "He", "She", "His", "Her", "Their", "Its",
}  # fmt: skip

Ident = tuple[str, str, str, str]
# Rows the embedder refused on their own: (org, namespace, user_id, key, value digest) -> the
# monotonic time before which this process does not send them again.
_refused: dict[tuple[str, ...], float] = {}


def _ident(row: dict[str, Any]) -> Ident:
    return row["org"], row["namespace"], row["user_id"], row["key"]


def _refusal_key(row: dict[str, Any]) -> tuple[str, ...]:
    return (*_ident(row), hashlib.sha256(row["value"].encode()).hexdigest())


def entities_of(text: str) -> list[str]:
    """Names, @handles and file paths a fact mentions (deterministic, no model call)."""
    found = [m for m in _NAME.findall(text) if m not in _STOP]
    found += _HANDLE.findall(text) + _PATH.findall(text)
    return list(dict.fromkeys(found))[:20]


def still_holding(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lock these rows (until the transaction ends) and keep those still live and holding the
    value they were read with."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["org"], r["namespace"], r["user_id"])].append(r)
    keep = []
    for scope in sorted(groups):
        group = groups[scope]
        locked = store.lock_rows(conn, *scope, sorted({r["key"] for r in group}))
        for r in group:
            now = locked.get(r["key"])
            if now is not None and now["retired_at"] is None and now["value"] == r["value"]:
                keep.append(r)
    return keep


def extract_entities(deps: Deps) -> dict[str, int]:
    """Fill `entities` on rows written without them (high text included: nothing leaves)."""
    filled = 0
    if not deps.live().entity_extractor_enabled:
        return {"filled": filled}
    for _ in range(BATCHES_PER_PASS):
        with deps.pool.connection() as conn:
            rows = store.rows_without(conn, "entities", BATCH)
            deps.hooks.at("entities.read", rows=rows)
            keep = still_holding(conn, rows)  # a row rewritten since the read waits its turn
            store.set_entities(conn, [(*_ident(r), entities_of(r["value"])) for r in keep])
        filled += len(keep)
        if len(rows) < BATCH or not keep:
            break
    return {"filled": filled}


def embed_missing(
    deps: Deps, *, turn_batch: int = REPAIR_BATCH, turn_pages: int = REPAIR_PAGES
) -> dict[str, int]:
    """Embed memory rows left without a vector (a failed embed), then transcript turns whose
    vector write never ran (`turn_batch` at a time, up to `turn_pages` reads). Text that reads
    as high is withheld
    at write time; a row that reads as high only under a newer guard is set aside, as is one
    the embedder refuses on its own (for REFUSED_RETRY_SECONDS), so the rows behind them are
    embedded."""
    embedded = 0
    if not deps.live().embedding_worker_enabled:
        return {"embedded": embedded, "turns": 0}
    now = time.monotonic()
    for key in [k for k, until in _refused.items() if until <= now]:
        del _refused[key]
    skipped: set[tuple[str, ...]] = set()  # set aside in this pass (high text, refused)
    for _ in range(BATCHES_PER_PASS):
        limit = BATCH + len(skipped) + len(_refused)
        with deps.pool.connection() as conn:
            fetched = store.rows_without(conn, "vector", limit)
        aside = skipped | _refused.keys()
        keyed = [(k, r) for r in fetched if (k := _refusal_key(r)) not in aside]
        plain = []
        for k, r in keyed[:BATCH]:
            if is_sensitive_embedded(r["value"], EMBED_CHARS):
                skipped.add(k)
            else:
                plain.append((k, r))
        if not plain:
            if len(fetched) < limit:
                break
            continue  # every row read was set aside (high text after a guard change): read on
        try:
            pairs = _embed(deps, [r for _, r in plain])
        except EmbedderError:
            break  # the embedder is down: the next pass tries again
        answered = {id(r) for r, _ in pairs}
        for k, r in plain:
            if id(r) not in answered:
                skipped.add(k)
                _refused[k] = time.monotonic() + REFUSED_RETRY_SECONDS
                logger.warning(
                    "embedder refused a memory",
                    extra={"org": r["org"], "namespace": r["namespace"], "key": r["key"]},
                )
        with deps.pool.connection() as conn:
            keep = {id(r) for r in still_holding(conn, [r for r, _ in pairs])}
            ready = [(*_ident(r), v) for r, v in pairs if id(r) in keep]
            store.set_vectors(conn, deps.embedder.name, ready)
        embedded += len(ready)
        if len(fetched) < limit:
            break
    # Turns whose append never wrote their vector (the database went away between its two
    # transactions): indexed as the append would have.
    turns = index_unembedded_turns(deps, batch=turn_batch, pages=turn_pages)
    return {"embedded": embedded, "turns": turns}


def _embed(deps: Deps, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """(row, vector) for the rows the embedder answers. A batch it refuses while it still
    embeds a plain text is split in halves, down to the rows it refuses on their own, which
    are left out; EmbedderError when it embeds nothing at all (it is down)."""
    try:
        return _embed_batch(deps, rows)
    except EmbedderError:
        deps.embedder.embed_documents([CANARY])  # raises on: the embedder is down
    return _split(deps, rows)


def _embed_batch(deps: Deps, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    vectors = deps.embedder.embed_documents([r["value"][:EMBED_CHARS] for r in rows])
    return list(zip(rows, vectors, strict=True))


def _split(deps: Deps, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """The rows of a batch the embedder refused, a half at a time."""
    if len(rows) == 1:
        return []
    mid = len(rows) // 2
    out = []
    for half in (rows[:mid], rows[mid:]):
        try:
            out += _embed_batch(deps, half)
        except EmbedderError:
            out += _split(deps, half)
    return out
