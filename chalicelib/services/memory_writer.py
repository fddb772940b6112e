"""Every memory write goes through here: blacklist, lock and pin checks, a verdict per row."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

import numpy as np
from psycopg import Connection

from chalicelib.blacklist import blacklisted
from chalicelib.deps import Deps
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.sensitivity import is_sensitive_embedded
from chalicelib.store import memories as store
from chalicelib.store.audit import write_audit

Verdict = Literal["created", "updated", "unchanged", "conflict", "locked", "pinned", "blacklisted"]
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")[:80] or "_"


def mint_key(subject: str, attribute: str) -> str:
    """A fact's key names what it is about, never its value: a later statement of the same
    attribute lands on the same key."""
    return f"{slug(subject)}/{slug(attribute)}"


def fold_statement(value: str) -> str:
    """A statement with only case and spacing folded and a final period dropped."""
    return " ".join(value.lower().split()).rstrip(".")


def canonical_hash(value: str) -> str:
    """The content hash two restatements share: case, spacing and a final period folded."""
    return hashlib.sha256(fold_statement(value).encode()).hexdigest()


@dataclass
class Entry:
    key: str
    value: str
    tags: list[str] = field(default_factory=list)
    kind: str = "fact"
    valid_at: datetime | None = None
    observation_date: date | None = None
    pinned: bool | None = None
    locked: bool | None = None


@dataclass
class Written:
    key: str
    version: int
    conflict_verdict: Verdict
    peers: list[str] = field(default_factory=list)


def write_entries(
    deps: Deps,
    *,
    org: str,
    namespace: str,
    user_id: str,
    entries: list[Entry],
    source: str,
    agent: str = "-",
    session_id: str = "-",
    principal: str = "local",
    value_updates: bool = True,
    timings: dict[str, float] | None = None,
) -> list[Written]:
    """Write entries with a verdict each. An explicit write revises a changed value; an
    extracted one does so only with `value_updates`, else it is a conflict. `timings` gets
    the milliseconds of each phase (bulk.checks, bulk.embed, bulk.write)."""
    clock = _Phases(timings)
    author = _Author(org, namespace, user_id, source, agent, session_id, principal)
    with deps.pool.connection() as conn:
        patterns = store.blacklist_patterns(conn, org, namespace)
    refused = {id(e) for e in entries if blacklisted(e.value, patterns)}
    clock.lap("bulk.checks")
    vectors = _embed(
        deps,
        [
            e
            for e in entries
            if id(e) not in refused and not is_sensitive_embedded(e.value, EMBED_CHARS)
        ],
    )
    clock.lap("bulk.embed")
    out: list[Written] = []
    with deps.pool.connection() as conn:
        existing = store.lock_rows(conn, org, namespace, user_id, [e.key for e in entries])
        deps.hooks.at("memories.locked", org=org, keys=[e.key for e in entries])
        subjects = sorted({e.key.split("/", 1)[0] + "/" for e in entries})
        neighbours = store.keys_by_subject(conn, org, namespace, user_id, subjects)
        for e in entries:
            if id(e) in refused:
                out.append(Written(e.key, 0, "blacklisted"))
                continue
            row = existing.get(e.key)
            verdict, version = _verdict(row, e, source, value_updates)
            if verdict in ("created", "updated"):
                vector = vectors.get(id(e))
                written = _write_version(conn, deps, author, e, version, verdict, vector)
                # The row as this write left it, so a later entry with the same key in this
                # call gets its verdict from it (unchanged, locked, pinned, updated).
                existing[e.key] = _row_after_write(row, e, version, written)
            elif verdict == "unchanged" and (e.pinned is not None or e.locked is not None):
                store.set_flags(conn, org, namespace, user_id, e.key, e.pinned, e.locked)
                if row is not None:
                    existing[e.key] = {**row, **_flags_after(row, e)}
            out.append(Written(e.key, version, verdict, _peers(e.key, neighbours)))
            neighbours.append(e.key)
    clock.lap("bulk.write")
    return out


@dataclass(frozen=True)
class _Author:
    """Who writes, and where: the scope of the rows and what each version records of it."""

    org: str
    namespace: str
    user_id: str
    source: str
    agent: str
    session_id: str
    principal: str


def _write_version(
    conn: Connection,
    deps: Deps,
    author: _Author,
    e: Entry,
    version: int,
    verdict: Verdict,
    vector: np.ndarray | None,
) -> str:
    """Write the entry as the row's new version, and its audit line; the content hash."""
    w = store.MemoryWrite(
        key=e.key,
        value=e.value,
        content_hash=canonical_hash(e.value),
        kind=e.kind,
        tags=sorted(set(e.tags)),
        source=author.source,
        agent=author.agent,
        session_id=author.session_id,
        valid_at=e.valid_at,
        observation_date=e.observation_date,
        pinned=e.pinned,
        locked=e.locked,
        vector=vector,
        embed_model=deps.embedder.name,
        withheld=is_sensitive_embedded(e.value, EMBED_CHARS),
    )
    scope = (author.org, author.namespace, author.user_id)
    store.write_memory(conn, *scope, w, version, verdict)
    write_audit(
        conn,
        org=author.org,
        namespace=author.namespace,
        op="memory.write",
        principal=author.principal,
        body_sha256=w.content_hash,
    )
    return w.content_hash


def _row_after_write(
    row: dict[str, Any] | None, e: Entry, version: int, content_hash: str
) -> dict[str, Any]:
    """The row as a write of `e` left it. A retired row's flags went with it (the new row
    starts unpinned, unlocked)."""
    before = row if row is not None and row["retired_at"] is None else {}
    return {
        **before,
        "version": version,
        "retired_at": None,
        "content_hash": content_hash,
        **_flags_after(before, e),
    }


class _Phases:
    """Milliseconds since the last lap, added to a stage_ms dict (when one is given)."""

    def __init__(self, into: dict[str, float] | None):
        self.into = into
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.into is not None:
            self.into[name] = round(self.into.get(name, 0.0) + (now - self.last) * 1000, 2)
        self.last = now


def _flags_after(row: dict[str, Any], e: Entry) -> dict[str, bool]:
    """A row's pinned and locked flags once the entry's (where it gives them) are applied."""
    return {
        "pinned": bool(row.get("pinned")) if e.pinned is None else e.pinned,
        "locked": bool(row.get("locked")) if e.locked is None else e.locked,
    }


def _verdict(
    row: dict[str, Any] | None, e: Entry, source: str, value_updates: bool
) -> tuple[Verdict, int]:
    if row is None:
        return "created", 1
    if row["retired_at"] is not None:
        return "created", row["version"] + 1
    if row["locked"]:
        return "locked", row["version"]
    if row["content_hash"] == canonical_hash(e.value):
        return "unchanged", row["version"]
    if source != "set" and row["pinned"]:
        return "pinned", row["version"]
    if source != "set" and not value_updates:
        return "conflict", row["version"]
    return "updated", row["version"] + 1


def _peers(key: str, neighbours: list[str]) -> list[str]:
    """Other live keys about the same subject: what a reader weighs this row against."""
    subject = key.split("/", 1)[0]
    return sorted({k for k in neighbours if k != key and k.split("/", 1)[0] == subject})[:10]


def _embed(deps: Deps, entries: list[Entry]) -> dict[int, np.ndarray]:
    """Vectors by entry identity; fail-open (an entry without one is found lexically)."""
    if not entries:
        return {}
    try:
        vectors = deps.embedder.embed_documents([e.value[:EMBED_CHARS] for e in entries])
    except EmbedderError:
        return {}
    return {id(e): v for e, v in zip(entries, vectors, strict=True)}
