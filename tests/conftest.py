"""One embedded PostgreSQL per test session; tests isolate themselves by org and namespace."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest

import chalicelib.ops  # noqa: F401  (registers every op, as each entrypoint does)
from chalicelib.config import Settings
from chalicelib.deps import Deps, set_deps, utcnow
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


class FakeClock:
    """The deps' two clocks: the real ones until a test fixes the wall time (`now`), moves it
    on (`later`), or has each reading of the monotonic one come `step` seconds after the last."""

    def __init__(self) -> None:
        self.now: datetime | None = None
        self.later = timedelta()
        self.step: float | None = None
        self._ticks = 0.0

    def __call__(self) -> datetime:
        return (self.now if self.now is not None else utcnow()) + self.later

    def monotonic(self) -> float:
        if self.step is None:
            return time.monotonic()
        self._ticks += self.step
        return self._ticks


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def deps(pool, embedder: FakeEmbedder, clock: FakeClock) -> Iterator[Deps]:
    d = Deps(
        make_settings(),
        pool=pool,
        embedder=embedder,
        llm=FakeLLM(),
        clock=clock,
        monotonic=clock.monotonic,
    )
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
