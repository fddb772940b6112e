"""erasure.request: a user's rows in every plane, and nobody else's; namespaces; jobs; access."""

from __future__ import annotations

import uuid

import pytest

from chalicelib.auth import mint_token
from chalicelib.ops import erasure as erasure_op
from chalicelib.services.erasure_steps import advance
from chalicelib.store.erasure import ERASED, NOT_ERASED
from chalicelib.workers.erasure import run_erasure_jobs
from tests.integration.test_conversation_support import NS
from tests.integration.test_erasure_support import (
    ANN,
    BOB,
    MARK,
    NS2,
    OWN_RECORD,
    dump,
    open_world,
    rows_of,
    without_own_record,
)

TOMBSTONE = {t.name: t.tombstone for t in ERASED}
# What each user's seeded turns say, around the user's marker word (test_erasure_support).
SAID = (
    "{w} asks where the harbour lighthouse key is",
    "the key for {w} is in the blue tin",
    "{w} plans a spring trip",
    "{w} writes a note about sourdough",
    "{w} saved the bread recipe",
)


def _turn_key(row: dict) -> tuple[str, str, str, str]:
    return (row["namespace"], row["thread_id"], row["agent"], row["msg_id"])


def _turns(pool, org: str) -> list[dict]:
    with pool.connection() as conn:
        cur = conn.execute("SELECT * FROM loom.conversations WHERE org = %s", (org,))
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


@pytest.fixture
def world(api, deps, org):
    return open_world(api, deps, org)


def _assert_erased(pool, org, user, *, purge):
    """Every row of the user is tombstoned (tables with a tombstone column) or gone."""
    left = {t: rows for t, rows in rows_of(pool, org, user).items() if t not in NOT_ERASED}
    if purge:
        assert left == {}, left
    for table, rows in left.items():
        col = TOMBSTONE[table]
        assert col is not None, (table, rows)
        assert all(r[col] is not None for r in rows), (table, rows)


@pytest.mark.parametrize("purge", [False, True])
def test_a_user_erasure_changes_nothing_of_the_other_user_or_another_org(
    api, deps, pool, org, world, purge
):
    """GIVEN two users with rows in every plane, sharing a thread and two namespaces, and a
    second org holding the same user ids and namespaces
    WHEN an org_admin erases one user across the org (with and without purge)
    THEN every row of that user is tombstoned (or, with purge, gone), every row of every
    table that is not theirs is byte-for-byte what it was, and the other org is untouched.
    """
    other = open_world(api, deps, f"org-{uuid.uuid4().hex[:10]}")
    assert set(rows_of(pool, org, ANN)) >= {t.name for t in ERASED}  # every plane seeded
    ann_turns = {_turn_key(r): r["content"] for r in rows_of(pool, org, ANN)["loom.conversations"]}
    bob_before = without_own_record(dump(pool, org, ANN))
    other_before = dump(pool, other.org)

    out = world.erase(kind="user", user_id=ANN, purge=purge)

    assert out["status"] == "done", out
    _assert_erased(pool, org, ANN, purge=purge)
    assert without_own_record(dump(pool, org, ANN)) == bob_before
    assert dump(pool, other.org) == other_before
    counts = out["removed"] if purge else out["tombstoned"]
    # Her four appended turns and the message she saved, by what they said.
    assert sorted(ann_turns.values()) == sorted(said.format(w=MARK[ANN]) for said in SAID)
    assert counts["loom.conversations"] == len(ann_turns)
    left = {_turn_key(r): r for r in _turns(pool, org)}
    for key in ann_turns:
        assert key not in left if purge else left[key]["tombstoned_at"] is not None, key
    # The set fact, the extracted fact, a chunk, a digest, and a chunk in her collection.
    assert counts["loom.memories"] == 5


@pytest.mark.parametrize("purge", [False, True])
def test_a_user_erasure_takes_their_saved_message_and_leaves_the_other_users(
    pool, org, world, purge
):
    """GIVEN two users who each saved a message in the thread they share
    WHEN one of them is erased (with and without purge)
    THEN that user's saved message is gone from every saved-message op (list, search, status)
    and its transcript and embedding rows are tombstoned (with purge, removed), while the
    other user's saved message is still listed, found and checked, with its text, and its
    rows are what they were."""

    def saved_rows(table: str, msg_id: str) -> list[dict]:
        with pool.connection() as conn:
            cur = conn.execute(
                f"SELECT * FROM {table} WHERE org = %s AND msg_id = %s", (org, msg_id)
            )
            names = [d.name for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def reads(user: str) -> tuple[list, list, list]:
        scope = {"agent": "a1", "user_id": user, "as_": "viewer"}
        listed = world.t.ok("conversation.list_saved_messages", **scope)["rows"]
        found = world.t.ok("conversation.search_saved_messages", query="bread recipe", **scope)
        status = world.t.ok("conversation.saved_status", conversation_id="th-shared",
                            message_ids=[f"saved-{ANN}", f"saved-{BOB}"], **scope)  # fmt: skip
        return (
            [(r["message_id"], r["excerpt"]) for r in listed],
            [(h["message_id"], h["excerpt"]) for h in found["hits"]],
            status["saved"],
        )

    bob = f"saved-{BOB}"
    bob_said = f"{MARK[BOB]} saved the bread recipe"
    assert reads(ANN)[0] == [(f"saved-{ANN}", f"{MARK[ANN]} saved the bread recipe")]
    bob_rows = {
        t: saved_rows(t, bob) for t in ("loom.conversations", "loom.conversation_embeddings")
    }

    world.erase(kind="user", user_id=ANN, purge=purge)

    assert reads(ANN) == ([], [], [])
    assert reads(BOB) == ([(bob, bob_said)], [(bob, bob_said)], [bob])
    for table in ("loom.conversations", "loom.conversation_embeddings"):
        gone = saved_rows(table, f"saved-{ANN}")
        if purge:
            assert gone == [], table
        else:
            assert gone and all(r["tombstoned_at"] is not None for r in gone), table
        assert saved_rows(table, bob) == bob_rows[table], table


def test_a_user_erasure_in_one_namespace_leaves_their_rows_in_the_others(pool, org, world):
    """GIVEN a user with rows in two namespaces
    WHEN they are erased in one namespace
    THEN their rows there are tombstoned and their rows in the other namespace are unchanged.
    """
    before = rows_of(pool, org, ANN)
    world.erase(kind="user", user_id=ANN, namespace=NS2)
    after = rows_of(pool, org, ANN)
    for table, rows in after.items():
        for row in rows:
            if row.get("namespace") == NS and table in TOMBSTONE and TOMBSTONE[table]:
                assert row[TOMBSTONE[table]] is None, (table, row)
    side = [r for r in after["loom.conversations"] if r["namespace"] == NS2]
    assert side and all(r["tombstoned_at"] is not None for r in side)
    assert before["loom.memory_evidence"] == after["loom.memory_evidence"]  # all in NS


def test_a_namespace_erasure_reaches_every_user_there_and_nothing_elsewhere(pool, org, world):
    """GIVEN two users with rows in two namespaces
    WHEN the namespace_list [NS] is erased with purge
    THEN no row of any erased table is left in NS, and every row in NS2 is unchanged.
    """
    side_before = [r for r in dump(pool, org)["loom.conversations"] if f",{NS2}," in r]
    out = world.erase(kind="namespace_list", namespaces=[NS], purge=True)
    assert out["status"] == "done" and out["namespaces"] == [NS]
    with pool.connection() as conn:
        for table in ERASED:
            n = conn.execute(
                f"SELECT count(*) FROM {table.name} WHERE org = %s AND namespace = %s", (org, NS)
            ).fetchone()[0]
            assert n == 0, table.name
    assert [r for r in dump(pool, org)["loom.conversations"] if f",{NS2}," in r] == side_before


def test_erasure_is_idempotent_and_a_repeat_changes_nothing(pool, org, world):
    """GIVEN a user already erased
    WHEN the same erasure is requested again
    THEN it answers done with nothing tombstoned and no stored row changes.
    """
    world.erase(kind="user", user_id=ANN)
    before = without_own_record(dump(pool, org))
    again = world.erase(kind="user", user_id=ANN)
    assert again["status"] == "done"
    assert set(again["tombstoned"].values()) == {0}, again
    assert set(again["removed"].values()) == {0}, again
    assert without_own_record(dump(pool, org)) == before


def test_a_deferred_erasure_is_a_tracked_job_the_worker_finishes(deps, pool, org, world):
    """GIVEN an erasure requested with defer=true
    WHEN it is requested again before the worker runs, then the worker runs
    THEN both answers name one pending job, erasure.status reads it pending and then done with
    the counts, and the user's rows are tombstoned.
    """
    first = world.erase(kind="user", user_id=ANN, defer=True)
    second = world.erase(kind="user", user_id=ANN, defer=True)
    assert first["status"] == "pending" and second["job_id"] == first["job_id"]
    assert rows_of(pool, org, ANN)["loom.memories"][0]["retired_at"] is None  # not yet run

    status = world.t.ok("erasure.status", job_id=first["job_id"], namespace=None)
    assert status["found"] and status["job"]["status"] == "pending"

    while run_erasure_jobs(deps)["jobs"]:
        pass
    done = world.t.ok("erasure.status", job_id=first["job_id"], namespace=None)["job"]
    assert done["status"] == "done" and done["finished_at"]
    assert done["tombstoned"]["loom.conversations"] == 5
    _assert_erased(pool, org, ANN, purge=False)


def test_a_subject_over_the_inline_bound_becomes_a_job(deps, pool, org, world):
    """GIVEN a user holding more rows than erasure runs inline
    WHEN they are erased
    THEN the answer is a pending job, and the worker tombstones every row.
    """
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.memories (org, namespace, user_id, key, value, content_hash)"
            " SELECT %s, %s, %s, 'bulk/' || g, 'zanzibar bulk ' || g, md5(g::text)"
            " FROM generate_series(1, %s) g",
            (org, NS, ANN, erasure_op.INLINE_MAX_ROWS),
        )
    out = world.erase(kind="user", user_id=ANN)
    assert out["status"] == "pending"
    while run_erasure_jobs(deps)["jobs"]:
        pass
    job = world.t.ok("erasure.status", job_id=out["job_id"], namespace=None)["job"]
    assert job["status"] == "done"
    assert job["tombstoned"]["loom.memories"] == erasure_op.INLINE_MAX_ROWS + 5
    _assert_erased(pool, org, ANN, purge=False)


@pytest.mark.parametrize("purge", [False, True])
def test_batches_of_one_reach_what_one_pass_reaches(api, deps, pool, org, world, purge):
    """GIVEN two orgs seeded alike
    WHEN one erases a user in one pass and the other a batch of one thread or row at a time
    THEN both end with the same rows (tombstone times aside) and the same counts.
    """
    twin = open_world(api, deps, f"org-{uuid.uuid4().hex[:10]}")
    one = world.erase(kind="user", user_id=ANN, purge=purge)
    job = twin.erase(kind="user", user_id=ANN, purge=purge, defer=True)
    with pool.connection() as conn:
        job = _job_row(conn, job["job_id"])
    batches = 0
    while True:
        with pool.connection() as conn:
            batches += 1
            if advance(conn, job, thread_batch=1, row_batch=1):
                break
    assert batches > 20
    for key in ("tombstoned", "removed"):
        assert {k: v for k, v in job[key].items() if v} == {k: v for k, v in one[key].items() if v}
    assert _shape(rows_of(pool, org, ANN)) == _shape(rows_of(pool, twin.org, ANN))


def _job_row(conn, job_id):
    from chalicelib.store.erasure_jobs import get_job

    row = conn.execute("SELECT org FROM loom.erasure_jobs WHERE job_id = %s", (job_id,)).fetchone()
    return get_job(conn, row[0], job_id)


def _shape(rows):
    """Rows without the columns that differ between two orgs seeded alike."""
    volatile = ("org", "queue_id", "request_id", "id", "evidence_id", "actor", "principal")
    out = {}
    for table, rs in rows.items():
        if table in NOT_ERASED:
            continue
        out[table] = sorted(
            str(
                {
                    k: (v is None) if k.endswith(("_at", "_until")) else v
                    for k, v in r.items()
                    if k not in volatile and not k.endswith("ts") and k != "embedding"
                }
            )
            for r in rs
        )
    return out


def test_an_erasure_is_audited_when_asked_and_when_done(pool, org, world):
    """GIVEN a user
    WHEN they are erased
    THEN the audit trail holds a hash-only row of the request and one of its completion.
    """
    world.erase(kind="user", user_id=ANN)
    with pool.connection() as conn:
        ops = [
            r[0]
            for r in conn.execute(
                "SELECT op FROM loom.audit_log WHERE org = %s AND op LIKE 'erasure.%%' ORDER BY id",
                (org,),
            ).fetchall()
        ]
    assert ops == ["erasure.done", "erasure.request"]


# ---- access and bad input ------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "writer", "admin"])
def test_only_an_org_admin_may_erase_or_export(pool, org, world, role):
    """GIVEN a user with rows
    WHEN a viewer, writer or admin asks to erase or export them
    THEN each answers 403 and nothing changes.
    """
    before = dump(pool, org)
    for op in ("erasure.request", "erasure.export", "erasure.status"):
        status, body = world.t.post(
            op, kind="user", user_id=ANN, job_id="x", namespace=None, as_=role
        )
        assert status == 403, (op, body)
    assert dump(pool, org) == before


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"kind": "user"}, 400, "needs user_id"),
        ({"kind": "user", "user_id": "-"}, 400, "name no one"),
        ({"kind": "user", "user_id": "*"}, 400, "name no one"),
        ({"kind": "user", "user_id": ANN, "namespaces": [NS]}, 400, "namespace_list"),
        ({"kind": "namespace_list"}, 400, "needs namespaces"),
        ({"kind": "namespace_list", "namespaces": [NS], "user_id": ANN}, 400, "drop user_id"),
        ({"kind": "namespace_list", "namespaces": []}, 422, "namespaces"),
        ({"kind": "everyone", "user_id": ANN}, 422, "kind"),
        ({"user_id": ANN}, 422, "kind"),
        ({"kind": "user", "user_id": ANN, "purge": "soon"}, 422, "purge"),
    ],
)
def test_bad_subjects_are_refused_with_a_clear_4xx_and_erase_nothing(
    pool, org, world, body, status, words
):
    """GIVEN rows of two users
    WHEN an erasure names no one, mixes the two kinds or sends a malformed field
    THEN it answers the status with a message naming the problem, and nothing changes.
    """
    before = dump(pool, org)
    got, out = world.t.post("erasure.request", namespace=None, **body)
    assert got == status, out
    assert words in out["error"]["message"]
    assert dump(pool, org) == before


def test_a_namespace_bound_token_erases_only_in_its_namespace(deps, pool, org, world):
    """GIVEN an org_admin token bound to NS2
    WHEN it asks to erase a user in NS, or the namespace_list [NS, NS2]
    THEN both answer 403 and nothing changes; erasing the user with no namespace reaches NS2
    only.
    """
    token = mint_token(deps, org=org, role="org_admin", namespace=NS2)
    before = dump(pool, org)
    for body in (
        {"kind": "user", "user_id": ANN, "namespace": NS},
        {"kind": "namespace_list", "namespaces": [NS, NS2]},
    ):
        status, out = world.t.post("erasure.request", token=token, **body)
        assert status == 403, out
    assert dump(pool, org) == before
    out = world.t.ok("erasure.request", token=token, kind="user", user_id=ANN, namespace=None)
    assert out["namespaces"] == [NS2]
    rows = rows_of(pool, org, ANN)["loom.conversations"]
    assert {r["namespace"] for r in rows if r["tombstoned_at"] is not None} == {NS2}


def test_a_token_of_another_org_cannot_erase_or_read_a_job(api, deps, pool, org, world):
    """GIVEN an erasure job of one org
    WHEN another org's org_admin names this org, or reads the job by its id
    THEN the request is refused with 403 and the job is not found.
    """
    job = world.erase(kind="user", user_id=BOB, defer=True)
    stranger = mint_token(deps, org=f"org-{uuid.uuid4().hex[:10]}", role="org_admin")
    before = dump(pool, org)
    status, _ = api.post("erasure.request", token=stranger, org=org, kind="user", user_id=ANN)
    assert status == 403
    out = api.post("erasure.status", token=stranger, job_id=job["job_id"])[1]
    assert out["found"] is False and out["job"] is None
    assert dump(pool, org) == before


def test_own_record_tables_are_the_ones_left_out_of_the_comparison():
    """The two-user comparison leaves out only the erasure's own record."""
    assert set(OWN_RECORD) <= set(NOT_ERASED)
