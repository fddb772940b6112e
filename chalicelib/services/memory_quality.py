"""Fact quality over stored rows: a ranked list filtered for reads, confidence demoted and
restored, quality tags added and removed, and the pages a namespace's clean-up reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from psycopg import Connection

from chalicelib.deps import Deps
from chalicelib.fact_quality import Ranked, classify_ranked
from chalicelib.store import memory_quality as store

QUALITY_TAG = "quality:"
VECTOR_WINDOW = 50  # candidates whose vectors one round trip reads
ActionName = Literal["demote", "label", "restore"]


def filter_ranked(
    conn: Connection,
    deps: Deps,
    org: str,
    namespace: str,
    rows: list[dict[str, Any]],
    keep: int,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The first `keep` rows, best first, that are neither junk nor a restatement of a row
    kept above them, and what was left out on the way, by class. Only facts are classified:
    chunks and digests are transcripts by nature and a typed record is structured, so only
    the restatement rule reads them."""
    ranked = _ranked_with_vectors(conn, deps.embedder.name, org, namespace, rows)
    kept: list[dict[str, Any]] = []
    left_out: Counter[str] = Counter()
    for row, quality in zip(rows, classify_ranked(ranked, keep=keep), strict=False):
        if quality == "durable":
            kept.append(row)
        else:
            left_out[quality] += 1
    return kept, dict(sorted(left_out.items()))


def _ranked_with_vectors(
    conn: Connection, model: str, org: str, namespace: str, rows: list[dict[str, Any]]
) -> Iterator[Ranked]:
    """The rows as the classifier reads them, their stored vectors read a window at a time:
    a list cut at top_k reads the vectors of the rows it reached, not of every candidate."""
    for start in range(0, len(rows), VECTOR_WINDOW):
        part = rows[start : start + VECTOR_WINDOW]
        vectors = store.vectors_of(
            conn, org, namespace, model, [(r["user_id"], r["key"]) for r in part]
        )
        for r in part:
            yield Ranked(
                r["value"],
                vectors.get((r["user_id"], r["key"])),
                classify_text=r["kind"] == "fact",
            )


@dataclass(frozen=True)
class Action:
    action: ActionName
    user_id: str
    key: str
    factor: float = 0.25
    quality_class: str = ""


@dataclass
class Applied:
    """One action's effect on its row (what it would be, under a dry run)."""

    action: str
    user_id: str
    key: str
    changed: bool
    confidence_before: float
    confidence_after: float
    tags_after: list[str] = field(default_factory=list)


def apply_actions(
    deps: Deps, org: str, namespace: str, actions: list[Action], dry_run: bool
) -> tuple[list[Applied], list[Action]]:
    """Apply the actions in order, in one transaction, to the live rows they name; the
    applied effects and the actions whose row is not there. A dry run rolls back."""
    idents = sorted({(a.user_id, a.key) for a in actions})
    applied: list[Applied] = []
    unknown: list[Action] = []
    with deps.pool.connection() as conn:
        rows = store.lock_quality(conn, org, namespace, idents)
        for a in actions:
            row = rows.get((a.user_id, a.key))
            if row is None:
                unknown.append(a)
                continue
            after = _after(row, a)
            changed = any(after[k] != row[k] for k in ("confidence", "confidence_before", "tags"))
            applied.append(
                Applied(
                    a.action,
                    a.user_id,
                    a.key,
                    changed,
                    float(row["confidence"]),
                    float(after["confidence"]),
                    list(after["tags"]),
                )
            )
            if changed and not dry_run:
                store.set_quality(
                    conn,
                    org,
                    namespace,
                    a.user_id,
                    a.key,
                    confidence=after["confidence"],
                    confidence_before=after["confidence_before"],
                    tags=after["tags"],
                )
            rows[(a.user_id, a.key)] = after
    return applied, unknown


def _after(row: dict[str, Any], a: Action) -> dict[str, Any]:
    """The row's confidence, confidence before any demote, and tags once `a` is applied."""
    out = dict(row)
    if a.action == "demote":
        out["confidence"] = float(row["confidence"]) * a.factor
        before = row["confidence_before"]
        out["confidence_before"] = float(row["confidence"]) if before is None else before
    elif a.action == "label":
        tag = QUALITY_TAG + a.quality_class
        out["tags"] = row["tags"] if tag in row["tags"] else sorted([*row["tags"], tag])
    else:
        before = row["confidence_before"]
        out["confidence"] = row["confidence"] if before is None else before
        out["confidence_before"] = None
        out["tags"] = [t for t in row["tags"] if not t.startswith(QUALITY_TAG)]
    return out


def review_pages(
    deps: Deps, org: str, namespace: str, page_size: int
) -> Iterator[tuple[list[dict[str, Any]], int]]:
    """A namespace's live facts, a page at a time, each with the count of rows
    read so far; each page in its own short transaction, so a large namespace holds no lock
    and no snapshot for the whole run."""
    after: tuple[str, str] | None = None
    read = 0
    while True:
        with deps.pool.connection() as conn:
            page = store.review_page(conn, org, namespace, after, page_size)
        if not page:
            return
        read += len(page)
        yield page, read
        if len(page) < page_size:
            return
        after = (page[-1]["user_id"], page[-1]["key"])


def reviewable_count(deps: Deps, org: str, namespace: str) -> int:
    with deps.pool.connection() as conn:
        return store.count_reviewable(conn, org, namespace)


def read_since(row: dict[str, Any], since: datetime | None) -> bool:
    """Whether memory.get read the row by its key at or after `since`."""
    return since is not None and row["last_read_at"] is not None and row["last_read_at"] >= since
