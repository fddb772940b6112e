"""The thread lease: one writer of a thread at a time, until its transaction ends."""

from __future__ import annotations

from psycopg import Connection

from chalicelib.store.pool import lease_lock


def take_thread_lease(conn: Connection, org: str, namespace: str, thread_id: str) -> None:
    """Serialise writers of one thread until this transaction ends (appends, saves, deletes)."""
    conn.execute(lease_lock("%s", 0), (f"{org}\x1f{namespace}\x1f{thread_id}",))


def take_thread_leases(conn: Connection, org: str, threads: list[tuple[str, str]]) -> None:
    """The leases of several (namespace, thread_id), always in one order (no deadlock)."""
    for namespace, thread_id in sorted(set(threads)):
        take_thread_lease(conn, org, namespace, thread_id)
