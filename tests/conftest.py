"""One embedded PostgreSQL per test session; tests isolate themselves by org and namespace."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import chalicelib.ops  # noqa: F401  (registers every op, as each entrypoint does)
from chalicelib.config import Settings
from chalicelib.deps import Deps, set_deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.providers.llm import FakeLLM
from chalicelib.store.embedded import start_embedded, stop_embedded
from chalicelib.store.migrate import migrate
from chalicelib.store.pool import open_pool


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    root = tempfile.mkdtemp(prefix="loomt-", dir="/tmp")  # short: the socket lives here
    url = start_embedded(f"{root}/pg", cleanup_mode="delete")
    migrate(url)
    yield url
    stop_embedded(f"{root}/pg")  # before its directory goes: the server is found through it
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pool(database_url: str):
    pool = open_pool(database_url, max_size=6)
    yield pool
    pool.close()


@pytest.fixture
def org() -> str:
    """A fresh org per test, so tests never see each other's rows."""
    return f"org-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


def make_settings(**overrides: Any) -> Settings:
    base = {"auth": "tokens", "settings_refresh_seconds": 0, "embedder": "fake"}
    base.update(overrides)
    return Settings.model_validate(base)


@pytest.fixture
def deps(pool, embedder: FakeEmbedder) -> Iterator[Deps]:
    d = Deps(make_settings(), pool=pool, embedder=embedder, llm=FakeLLM())
    set_deps(d)
    yield d
    set_deps(None)


@pytest.fixture
def client(deps: Deps):
    from chalice.test import Client

    from app import app

    with Client(app) as c:
        yield c


class Api:
    """POST /v1/<op> through the Chalice test client, as an HTTP caller would."""

    def __init__(self, client, token: str | None = None):
        self.client = client
        self.token = token

    def raw(self, op: str, body: str | bytes, token: str | None = None, **headers: str):
        hdrs = {"Content-Type": "application/json", **headers}
        tok = token or self.token
        if tok:
            hdrs["Authorization"] = f"Bearer {tok}"
        resp = self.client.http.post(f"/v1/{op}", headers=hdrs, body=body)
        return resp.status_code, json.loads(resp.body or b"{}"), resp.headers

    def post(self, op: str, token: str | None = None, **body: Any):
        status, data, _ = self.raw(op, json.dumps(body), token=token)
        return status, data

    def ok(self, op: str, token: str | None = None, **body: Any) -> dict[str, Any]:
        status, data = self.post(op, token=token, **body)
        assert status == 200, (op, status, data)
        return data


@pytest.fixture
def api(client) -> Api:
    return Api(client)


@contextmanager
def live_setting(pool: Any, **values: str) -> Iterator[None]:
    """Set live settings (re-read on every call under the test settings), then remove them."""
    with pool.connection() as conn:
        for name, value in values.items():
            conn.execute(
                "INSERT INTO loom.settings (name, value) VALUES (%s, %s)"
                " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (name, value),
            )
    try:
        yield
    finally:
        with pool.connection() as conn:
            for name in values:
                conn.execute("DELETE FROM loom.settings WHERE name = %s", (name,))
