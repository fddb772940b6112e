"""Migrations, live settings and the CLI against the real database."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from pydantic import ValidationError

from chalicelib import cli
from chalicelib.auth import hash_token
from chalicelib.config import Settings
from chalicelib.search import store_vectors as conversation_search
from chalicelib.store.embedded import (
    SERVER_USER,
    hand_over,
    start_embedded,
    stop_embedded,
)
from chalicelib.store.migrate import is_migrated, migrate, migration_files
from tests.conftest import make_settings


def test_migrations_are_safe_to_run_twice(database_url, pool):
    assert migrate(database_url) == []
    with pool.connection() as conn:
        assert is_migrated(conn)


@contextmanager
def migrated_to(database_url: str, version: int) -> Iterator[str]:
    """A database of its own migrated up to `version` (as a server of that version left it),
    dropped afterwards: its URL."""
    name = f"loom_upgrade_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(database_url, dbname=name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA loom")
            for _, path in (f for f in migration_files() if f[0] <= version):
                conn.execute(path.read_text())
            conn.execute(
                "CREATE TABLE loom.schema_migrations (version int PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for v, path in migration_files():
                if v <= version:
                    conn.execute(
                        "INSERT INTO loom.schema_migrations VALUES (%s, %s)", (v, path.name)
                    )
        yield url
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_the_vector_index_migrations_leave_each_dimension_one_index_over_turns(database_url):
    """GIVEN a database migrated to 0016 whose vectors of dimensions 8 and 16 have the HNSW
    indexes that version made (over turns alone and over context vectors alone)
    WHEN the later migrations run (0017 replaced the context index by a blend index, 0024
    drops the blend: context vectors are derived and ranked only among the leg's rows)
    THEN each dimension keeps its index over turns alone, the one the code makes for a new
    dimension."""
    with migrated_to(database_url, 16) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            for dim in (8, 16):
                for prefix, column in (
                    ("conversation_embeddings_hnsw", "embedding"),
                    ("conversation_context_hnsw", "context_embedding"),
                ):
                    conn.execute(
                        f"CREATE INDEX {prefix}_{dim} ON loom.conversation_embeddings USING hnsw"
                        f" (({column}::vector({dim})) vector_cosine_ops) WHERE dim = {dim}"
                        f" AND tombstoned_at IS NULL AND {column} IS NOT NULL"
                    )
        applied = migrate(url)
        assert {"0017_blend_vector_index.sql", "0024_one_vector_index.sql"} <= set(applied)
        with psycopg.connect(url) as conn:
            indexes = dict(
                conn.execute(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'loom'"
                    " AND indexname LIKE '%%hnsw%%'"
                ).fetchall()
            )
            # A dimension whose first vectors arrive later gets the same index from the code.
            conversation_search._ensured_indexes.discard(24)
            conversation_search.ensure_vector_index(conn, 24)
            conn.commit()
            conversation_search._ensured_indexes.discard(24)
            (made,) = conn.execute(
                "SELECT indexdef FROM pg_indexes"
                " WHERE indexname = 'conversation_embeddings_hnsw_24'"
            ).fetchone()
    assert sorted(indexes) == ["conversation_embeddings_hnsw_16", "conversation_embeddings_hnsw_8"]
    assert made.replace("24", "8") == indexes["conversation_embeddings_hnsw_8"]


def test_rows_saved_before_provenance_was_kept_are_saved_only_where_nothing_records(
    database_url,
):
    """GIVEN a database migrated to 0017 holding saved rows in a namespace that records and in
    one that does not, and an unsaved row in the one that does not
    WHEN the later migrations run
    THEN only the saved row where nothing records is taken as there only because of its save
    (its unsave removes it, as it did); the others are not."""
    with migrated_to(database_url, 17) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO loom.namespaces (org, namespace, conversation_logging_enabled)"
                " VALUES ('o', 'on', true), ('o', 'off', false)"
            )
            conn.execute(
                "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
                " content, is_saved, ts) VALUES"
                " ('o', 'on', 't', 'a', 'saved-on', 'user', 'x', true, now()),"
                " ('o', 'off', 't', 'a', 'saved-off', 'user', 'x', true, now()),"
                " ('o', 'nowhere', 't', 'a', 'saved-nowhere', 'user', 'x', true, now()),"
                " ('o', 'off', 't', 'a', 'plain-off', 'user', 'x', false, now())"
            )
        assert "0018_saved_only_rows.sql" in migrate(url)
        with psycopg.connect(url) as conn:
            rows = dict(conn.execute("SELECT msg_id, saved_only FROM loom.conversations"))
    assert rows == {
        "saved-on": False,
        "saved-off": True,
        "saved-nowhere": True,  # a namespace with no row does not record
        "plain-off": False,
    }


@pytest.fixture
def cli_env(monkeypatch, database_url):
    """The CLI reads the same environment as the server."""
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_SETTINGS_REFRESH_SECONDS", "0")


def test_token_mint_prints_the_token_last_and_stores_only_its_hash(cli_env, capsys, pool, org):
    assert cli.main(["token", "mint", "--org", org, "--role", "writer", "--namespace", "ns"]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert token.startswith("loom_")
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT token_hash, role, namespace FROM loom.tokens WHERE org = %s", (org,)
        ).fetchall()
    assert rows == [(hash_token(token), "writer", "ns")]
    assert token not in str(rows)


def test_settings_set_changes_a_live_setting_without_restart(cli_env, deps, pool):
    before = deps.live().conversation_search_excerpt_chars
    try:
        assert cli.main(["settings", "set", "LOOM_CONVERSATION_SEARCH_EXCERPT_CHARS", "99"]) == 0
        assert deps.live().conversation_search_excerpt_chars == 99
    finally:
        with pool.connection() as conn:
            conn.execute(
                "DELETE FROM loom.settings WHERE name = 'conversation_search_excerpt_chars'"
            )
    assert deps.live().conversation_search_excerpt_chars == before


def test_settings_set_refuses_bad_values_and_boot_only_names(cli_env, capsys, pool):
    assert cli.main(["settings", "set", "conversation_search_excerpt_chars", "lots"]) == 2
    assert cli.main(["settings", "set", "LOOM_AUTH", "off"]) == 2
    assert cli.main(["settings", "set", "no_such_setting", "1"]) == 2
    err = capsys.readouterr().err
    assert "invalid value" in err and "restart" in err and "unknown setting" in err
    with pool.connection() as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM loom.settings").fetchall()]
    assert "auth" not in names and "conversation_search_excerpt_chars" not in names


def test_settings_defaults_match_the_spec():
    s = make_settings()
    assert s.conversation_search_excerpt_chars == 240
    assert s.conversation_titler_window_hours == 168
    assert s.conversation_titler_min_turns == 4
    assert s.conversation_titler_max_threads_per_pass == 10
    assert s.retention_conversations_days == 0
    assert s.conversation_titler_enabled is True


@pytest.mark.parametrize(
    ("name", "value"),
    [("embed_dim", 2001), ("retention_conversations_days", 36501)],
)
def test_settings_past_what_the_database_holds_are_refused_at_boot(name, value):
    """GIVEN an embedding dimension over the 2,000 an HNSW index holds, or a TTL over a hundred
    years (a date before it overflows a timestamp)
    WHEN the settings are read at boot
    THEN they are refused, naming the setting; the bound itself is accepted."""
    with pytest.raises(ValidationError, match=name):
        make_settings(**{name: value})
    assert getattr(make_settings(**{name: value - 1}), name) == value - 1


def test_an_empty_data_dir_is_refused(monkeypatch):
    """GIVEN LOOM_DATA_DIR set but empty WHEN settings are read THEN it is refused (it would
    name the working directory, which initdb would take over)."""
    monkeypatch.setenv("LOOM_DATA_DIR", "")
    with pytest.raises(ValidationError):
        Settings()


def test_a_directory_holding_other_files_is_never_made_a_database(tmp_path):
    """GIVEN a data directory that holds files but no PostgreSQL data
    WHEN the embedded server is started there
    THEN it is refused with a message naming the directory, and the directory is unchanged."""
    (tmp_path / "notes.txt").write_text("mine")
    before = (tmp_path.stat().st_uid, tmp_path.stat().st_mode, sorted(tmp_path.iterdir()))
    with pytest.raises(OSError, match="holds files but no PostgreSQL data"):
        start_embedded(str(tmp_path))
    assert (tmp_path.stat().st_uid, tmp_path.stat().st_mode, sorted(tmp_path.iterdir())) == before


def test_stop_embedded_stops_the_server_it_started():
    """GIVEN an embedded server started in a directory of its own
    WHEN stop_embedded is called for that directory
    THEN its postmaster is gone (a test session that removed the directory first left it
    running)."""
    root = tempfile.mkdtemp(prefix="loomt-", dir="/tmp")
    try:
        start_embedded(f"{root}/pg", cleanup_mode="delete")
        pid = int((Path(root) / "pg" / "postmaster.pid").read_text().split()[0])
        assert psutil.pid_exists(pid)
        stop_embedded(f"{root}/pg")
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a server started by root runs as another user")
def test_a_data_directory_another_os_user_owns_is_taken_over_when_started_by_root():
    """GIVEN a data directory with a table, whose files another OS user owns (the earlier
    embedded wheel's server ran as `pgserver`)
    WHEN root starts the embedded server there
    THEN it starts on the same data, now owned by the server's user."""
    root = tempfile.mkdtemp(prefix="loomt-", dir="/tmp")
    data = f"{root}/pg"
    try:
        url = start_embedded(data, cleanup_mode="stop")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (v text)")
            conn.execute("INSERT INTO kept VALUES ('before')")
        stop_embedded(data)
        nobody = pwd.getpwnam("nobody")
        hand_over(data, nobody.pw_uid, nobody.pw_gid)
        url = start_embedded(data, cleanup_mode="delete")
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT v FROM kept").fetchall() == [("before",)]
        assert Path(data, "PG_VERSION").stat().st_uid == pwd.getpwnam(SERVER_USER).pw_uid
    finally:
        stop_embedded(data)
        shutil.rmtree(root, ignore_errors=True)
