"""erasure.export: everything held about a subject, one JSON document in pages; tombstoned rows
included unless asked otherwise; embedding rows never."""

from __future__ import annotations

import base64
import json

import pytest

from chalicelib.ops.erasure import EXPORTED
from chalicelib.store.erasure_export import CURSOR_TYPES, key_types
from tests.integration.test_conversation_support import NS
from tests.integration.test_erasure_support import ANN, BOB, MARK, open_world


@pytest.fixture
def world(api, deps, org):
    return open_world(api, deps, org)


def _text(doc):
    return json.dumps(doc["tables"], default=str)


def test_the_export_holds_the_user_in_every_plane_and_no_one_else(world):
    """GIVEN two users with rows in every plane
    WHEN one user is exported
    THEN the document holds their rows of every exported table, none of the other user's,
    no embedding rows (named in not_exported with the spec's reason), and no vectors.
    """
    doc = world.export(kind="user", user_id=ANN)
    assert doc["next_cursor"] is None
    held = {t for t, rows in doc["tables"].items() if rows}
    assert held == {
        "loom.conversations",
        "loom.conversation_threads",
        "loom.memories",
        "loom.memory_versions",
        "loom.memory_evidence_links",
        "loom.memory_evidence",
        "loom.memory_evidence_requests",
        "loom.memory_extraction_queue",
        "loom.memory_drops",
        "loom.observations",
        "loom.session_brief_revisions",
        "loom.session_briefs",
        "loom.knowledge_documents",
        "loom.learnings_supporters",
        "loom.learnings_queue",
    }
    assert "loom.conversation_embeddings" not in doc["tables"]
    assert "not exported" in doc["not_exported"]["loom.conversation_embeddings"]
    text = _text(doc)
    assert MARK[ANN] in text and MARK[BOB] not in text and BOB not in text
    assert not any("embedding" in row for row in doc["tables"]["loom.memories"])
    assert doc["subject"] == {"org": world.org, "kind": "user", "user_id": ANN, "namespaces": None}


def test_tombstoned_rows_are_exported_unless_asked_not_to_and_purged_rows_are_gone(world):
    """GIVEN a user erased without purge
    WHEN they are exported, then exported with include_tombstoned false, then purged and
    exported again
    THEN the first holds their tombstoned rows, the second and the third hold none.
    """
    world.erase(kind="user", user_id=ANN)
    kept = world.export(kind="user", user_id=ANN)
    turns = kept["tables"]["loom.conversations"]
    assert turns and all(r["tombstoned_at"] for r in turns)
    assert all(r["retired_at"] for r in kept["tables"]["loom.memories"])
    live = world.export(kind="user", user_id=ANN, include_tombstoned=False)
    assert not any(live["tables"].values()), live["tables"]
    world.erase(kind="user", user_id=ANN, purge=True)
    gone = world.export(kind="user", user_id=ANN)
    assert not any(gone["tables"].values()), gone["tables"]


def test_pages_of_a_few_rows_add_up_to_the_one_document(world):
    """GIVEN a user with rows in every plane
    WHEN the export is read three rows a page, following next_cursor
    THEN the pages hold exactly the rows of the one-page document, in the same order.
    """
    whole = world.export(kind="user", user_id=ANN, limit=5000)["tables"]
    pages: dict[str, list] = {}
    cursor, n = None, 0
    while True:
        page = world.export(kind="user", user_id=ANN, limit=3, cursor=cursor)
        assert sum(len(r) for r in page["tables"].values()) <= 3
        for table, rows in page["tables"].items():
            pages.setdefault(table, []).extend(rows)
        n += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert n > 5
    assert {t: r for t, r in pages.items() if r} == {t: r for t, r in whole.items() if r}


def test_a_namespace_export_holds_every_users_rows_there(world):
    """GIVEN two users with rows in two namespaces
    WHEN the namespace_list [NS] is exported
    THEN both users' rows are there and only rows of NS.
    """
    doc = world.export(kind="namespace_list", namespaces=[NS])
    text = _text(doc)
    assert MARK[ANN] in text and MARK[BOB] in text
    assert {r["namespace"] for rows in doc["tables"].values() for r in rows} == {NS}


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64 at all!",
        base64.urlsafe_b64encode(b"[99, []]").decode(),
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),
        base64.urlsafe_b64encode(b"[0, [1]]").decode(),
        base64.urlsafe_b64encode(b"[0, [true, 1, 2, 3]]").decode(),
        base64.urlsafe_b64encode(b"[" * 2000).decode(),
    ],
)
def test_a_cursor_export_did_not_return_is_a_400(world, cursor):
    """GIVEN any string that is not a cursor erasure.export returned
    WHEN it is sent as the cursor
    THEN the export answers 400 naming the cursor.
    """
    status, out = world.t.post(
        "erasure.export", kind="user", user_id=ANN, cursor=cursor, namespace=None
    )
    assert status == 400, out
    assert "cursor" in out["error"]["message"]


def _cursor(table: str, key: list) -> str:
    index = [t.name for t in EXPORTED].index(table)
    return base64.urlsafe_b64encode(json.dumps([index, key]).encode()).decode()


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("loom.conversations", [1, 2, 3, 4]),  # text columns
        ("loom.memory_versions", ["ns", "u", "k", "x"]),  # version is an integer
        ("loom.memory_versions", ["ns", "u", "k", 2**31]),  # past the integer's range
        ("loom.memory_evidence", ["abc"]),  # id is a bigint
        ("loom.memory_evidence", [2**63]),
        ("loom.memory_extraction_queue", [5]),  # queue_id is text
        ("loom.session_briefs", ["ns", "a\x00b"]),  # no text column holds a NUL
        ("loom.session_briefs", ["ns", "a\ud800b"]),  # nor a lone surrogate
    ],
)
def test_a_cursor_whose_values_do_not_fit_the_tables_key_is_a_400(world, table, key):
    """GIVEN a cursor of the right shape whose values are not of its table's key types
    WHEN it is sent as the cursor
    THEN the export answers 400 naming the cursor.
    """
    status, out = world.t.post(
        "erasure.export", kind="user", user_id=ANN, cursor=_cursor(table, key), namespace=None
    )
    assert status == 400, out
    assert "cursor" in out["error"]["message"]


def test_every_exported_key_column_is_of_a_type_a_cursor_carries(pool):
    """GIVEN the exported tables
    WHEN their primary-key columns' types are read from the catalogue
    THEN each is a type a cursor value is checked against, so a cursor the export returned
    always fits its table.
    """
    with pool.connection() as conn:
        types = {t.name: key_types(conn, t) for t in EXPORTED}
    assert {t: u for t, us in types.items() for u in us if u not in CURSOR_TYPES} == {}
