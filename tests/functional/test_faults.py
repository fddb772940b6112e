"""Faults, short form: the database restarted under load, the database away, a model or an
embedder failing or slow. (A queue worker killed mid-batch: tests/integration/
test_extraction_queue.py.) `make soak` runs the restart under a longer, heavier load."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request

import httpx2
import psycopg
import pytest

from chalicelib.config import Settings
from chalicelib.providers.embed_batcher import build_embedder
from chalicelib.providers.llm import OpenAILLM
from chalicelib.search import store_vectors as conversation_search
from soak.faults import restartable_database, token_minter
from soak.load import make_tenants, prepare, run_load, verify
from tests.live_server import live_server
from tests.openai_stub import OpenAIStub

POOL_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def restartable():
    """A server over a database of its own that the tests stop and start."""
    with restartable_database() as db:
        mint, deps = token_minter(db.url)
        env = {"LOOM_AUTH": "tokens", "LOOM_POOL_TIMEOUT_SECONDS": str(POOL_TIMEOUT)}
        with live_server(db.url, **env) as base:
            yield db, base, mint
        deps.close()


def _post(base: str, op: str, token: str, body: bytes = b"{}") -> tuple[int, dict, float]:
    req = urllib.request.Request(
        f"{base}/v1/{op}",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    began = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    import json

    return status, json.loads(raw), time.monotonic() - began


def test_a_database_restart_under_load_loses_no_acknowledged_write(restartable):
    """GIVEN 6 tenants writing and searching WHEN the database stops for 1.5 s in the middle of
    the load and starts again THEN requests caught by it answer 503 in the JSON error shape and
    succeed when tried again, nothing ends in an error, and every acknowledged write is read
    back exactly once."""
    db, base, mint = restartable
    tenants = make_tenants(6, mint)
    down: dict[str, float] = {}

    async def restart_midway() -> None:
        await asyncio.sleep(1.0)
        down["s"] = await asyncio.to_thread(db.restart, 1.5)

    async def go():
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
            await prepare(client, tenants)
        report, acked = await run_load(
            base, tenants, duration=4.5, concurrency=4, during=restart_midway
        )
        await verify(base, tenants, acked, report)
        return report, acked

    report, acked = asyncio.run(go())
    print("\n".join(report.lines()))
    assert down["s"] >= 1.5
    assert report.ok, report.summary()
    assert sum(report.retried.values()) > 0, "no request met the restart"
    assert set(k.rsplit(":", 1)[1] for k in report.retried) <= {"503"}, report.retried
    assert sum(len(v) for v in acked.turns.values()) > 0


def test_with_the_database_away_a_request_answers_503_within_the_pool_timeout(restartable):
    """GIVEN the database stopped WHEN an op is called THEN it answers 503 with the JSON error
    shape within the pool timeout (not a 500, not a hang), /healthz answers 503, and once the
    database is back the same call succeeds."""
    db, base, mint = restartable
    token = mint("org-away", "writer", "ns")
    assert _post(base, "system.whoami", token)[0] == 200
    db.stop()
    try:
        status, body, took = _post(base, "conversation.threads", token, b'{"agent": "*"}')
        assert status == 503, body
        assert body["error"]["code"] == "unavailable" and body["error"]["message"]
        assert took < POOL_TIMEOUT + 3
        with pytest.raises(urllib.error.HTTPError) as health:
            urllib.request.urlopen(f"{base}/healthz", timeout=30)
        assert health.value.code == 503
    finally:
        db.start()
    status, body, _ = _post(base, "conversation.threads", token, b'{"agent": "*"}')
    assert status == 200, body


# ---- the model and the embedder ------------------------------------------------------------


@pytest.fixture
def admin(api, deps, org):
    """The test client acting with an org_admin token of the test's org."""
    from chalicelib.auth import mint_token

    api.token = mint_token(deps, org=org, role="org_admin")
    return api


def _slow(seconds: float, answer):
    def reply(body):
        time.sleep(seconds)
        return answer(body)

    return reply


def test_a_stalled_model_fails_extraction_closed_within_the_timeout(admin, deps, org):
    """GIVEN a model that answers after 5 s and a 1 s model timeout WHEN memory.set_from_messages
    runs inline THEN it answers an error in the JSON shape (fail-closed: 502 or 503) in well
    under the model's delay, and writes nothing."""
    with OpenAIStub(chat_reply=_slow(5.0, lambda b: '{"facts": []}')) as stub:
        deps._llm = OpenAILLM(model="m", base_url=stub.base_url, api_key="k", timeout_seconds=0.5)
        began = time.monotonic()
        status, body = admin.post(
            "memory.set_from_messages",
            org=org,
            namespace="ns",
            agent="a",
            user_id="u",
            defer=False,
            messages=[{"role": "user", "content": "My favourite colour is teal."}],
        )
        took = time.monotonic() - began
    assert status in (502, 503), body
    assert body["error"]["code"] and body["error"]["message"]
    assert took < 4.0
    found = admin.ok("memory.search", org=org, namespace="ns", agent="a", user_id="u", query="teal")
    assert found["hits"] == []


def test_a_failing_model_leaves_the_brief_to_the_deterministic_reviser(admin, deps, org):
    """GIVEN a model that fails WHEN a brief is saved from events THEN the save succeeds
    (fail-open), written deterministically from the events."""
    with OpenAIStub() as stub:
        stub.fail_next = 10
        deps._llm = OpenAILLM(model="m", base_url=stub.base_url, api_key="k", timeout_seconds=1)
        out = admin.ok(
            "session.brief_save",
            org=org,
            namespace="ns",
            agent="a",
            brief_key="k1",
            events=[{"kind": "user", "text": "Move invoices to the new ledger"}],
        )
    assert out["changed"] is True and out["author"] == "deterministic", out
    assert "ledger" in out["rendered"]


def test_a_failing_embedder_still_stores_the_turn(admin, deps, org):
    """GIVEN an embedder that fails WHEN a turn is appended THEN the turn is stored (fail-open)
    and read back; a saved message answers indexed false, reason embed_failed."""
    with OpenAIStub() as stub:
        stub.fail_next = 100
        deps._embedder = build_embedder(
            Settings(
                embedder="openai",
                embed_model="e",
                embed_dim=8,
                embed_base_url=stub.base_url,
                embed_api_key="k",
                embed_timeout_seconds=0.3,
            )
        )
        admin.ok("conversation.set_logging", org=org, namespace="ns", enabled=True)
        admin.ok(
            "conversation.append",
            org=org, namespace="ns", agent="a", thread_id="t", msg_id="m1",
            role="user", content="the ledger moved",
        )  # fmt: skip
        saved = admin.ok(
            "conversation.save_message",
            org=org, namespace="ns", agent="a", conversation_id="t", message_id="m2",
            role="user", content="keep this", user_id="u",
        )  # fmt: skip
    rows = admin.ok("conversation.list", org=org, namespace="ns", agent="a", thread_id="t")["rows"]
    assert [r["msg_id"] for r in rows][:1] == ["m1"]
    assert (saved["indexed"], saved["reason"]) == (False, "embed_failed")


def test_a_stalled_embedder_does_not_hold_an_append(admin, deps, org):
    """GIVEN an embedding server that answers after 4 s and an embedder bounded to 0.3 s a try
    (LOOM_EMBED_TIMEOUT_SECONDS) WHEN a turn is appended THEN the append answers within 2 s
    (the turn stored; the embed fails open)."""
    with OpenAIStub() as stub:
        answer = stub.embeddings
        stub.embeddings = _slow(4.0, answer)  # type: ignore[method-assign]
        deps._embedder = build_embedder(
            Settings(
                embedder="openai",
                embed_model="e",
                embed_dim=8,
                embed_base_url=stub.base_url,
                embed_api_key="k",
                embed_timeout_seconds=0.3,
            )
        )
        admin.ok("conversation.set_logging", org=org, namespace="ns", enabled=True)
        began = time.monotonic()
        admin.ok(
            "conversation.append",
            org=org, namespace="ns", agent="a", thread_id="t", msg_id="m1",
            role="user", content="slow embed",
        )  # fmt: skip
        took = time.monotonic() - began
    assert took < 2.0


def test_two_first_embeds_of_a_dimension_at_once_both_succeed(database_url):
    """GIVEN no vector index yet for a dimension WHEN two transactions ensure it at the same
    time (as two concurrent first appends do) THEN both succeed."""
    dim = 11  # no other test embeds at this dimension
    conversation_search._ensured_indexes.discard(dim)
    errors: list[BaseException] = []
    with psycopg.connect(database_url) as first:
        conversation_search.ensure_vector_index(first, dim)  # created, not yet committed
        conversation_search._ensured_indexes.discard(dim)

        def second() -> None:
            try:
                with psycopg.connect(database_url) as conn:
                    conversation_search.ensure_vector_index(conn, dim)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        other = threading.Thread(target=second)
        other.start()
        time.sleep(0.5)  # the second waits on the first's uncommitted index
        first.commit()
        other.join(timeout=30)
    with psycopg.connect(database_url, autocommit=True) as conn:
        name = conversation_search.vector_index_name(dim)
        conn.execute(f'DROP INDEX IF EXISTS loom."{name}"')
    conversation_search._ensured_indexes.discard(dim)
    assert errors == []
