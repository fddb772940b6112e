"""What the `loom` commands and the health check read and write outside any op: the schema,
live settings and extraction's drop counts, each in a transaction of its own."""

from __future__ import annotations

from typing import Any

from chalicelib.deps import Deps


def migrate_database(deps: Deps) -> list[str]:
    """Apply the migrations the database lacks (starting the embedded one if it is used);
    the names of those applied."""
    from chalicelib.store.migrate import migrate

    return migrate(deps.database_url())


def database_ready(deps: Deps) -> bool:
    """Whether the database answers and holds every migration."""
    from chalicelib.store.migrate import is_migrated

    with deps.pool.connection() as conn:
        return is_migrated(conn)


def set_live_setting(deps: Deps, name: str, value: str) -> None:
    """Store a setting every server reads within its refresh interval."""
    from chalicelib.store.live_settings import set_setting

    with deps.pool.connection() as conn:
        set_setting(conn, name, value)


def drop_counts(deps: Deps, org: str, namespace: str, hours: int) -> list[dict[str, Any]]:
    """What extraction dropped in a namespace over the last hours, by stage and reason."""
    from chalicelib.store.extraction_support import sum_drops

    with deps.pool.connection() as conn:
        return sum_drops(conn, org, namespace, hours)
