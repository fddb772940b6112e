"""Tokens that end: `loom token list` shows every token's grants and dates but never the token;
`loom token revoke` (by id or by the token) and `--expires-in` end a token on every server at
once; a bounded read scope must say what it bounds."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from chalicelib import cli
from chalicelib.auth import hash_token
from chalicelib.deps import Deps, set_deps, utcnow
from chalicelib.providers.llm import FakeLLM
from chalicelib.store.pool import open_pool
from tests.conftest import Api, make_settings
from tests.integration.legacy_tokens import legacy_token


@pytest.fixture
def cli_env(monkeypatch, database_url):
    """The CLI reads the same environment as the server."""
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)


@pytest.fixture
def loom(cli_env, capsys, deps):
    """Run a `loom` command: (exit code, stdout, stderr). The command builds its own Deps from
    the environment; the test's are put back after it, as the admin function does."""

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = cli.main(list(argv))
        finally:
            set_deps(deps)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def mint(loom, org: str, *flags: str) -> str:
    code, out, err = loom("token", "mint", "--org", org, *flags)
    assert code == 0, err
    return out.strip().splitlines()[-1]


def listed(loom, org: str) -> list[dict[str, str]]:
    """`loom token list --org` as rows keyed by its header."""
    code, out, err = loom("token", "list", "--org", org)
    assert code == 0, err
    header, *rows = out.strip().splitlines()
    return [dict(zip(header.split(), row.split(), strict=True)) for row in rows]


def whoami(api: Api, token: str) -> tuple[int, dict]:
    return api.post("system.whoami", token=token)


# Listing.


def test_token_list_shows_each_tokens_grants_and_dates_but_never_the_token(loom, pool, org):
    """GIVEN two tokens of an org, one bound to a namespace and pinned to a user with an expiry
    WHEN `loom token list --org` runs
    THEN it shows a row per token with its id, state, org, role, namespace, read scope, pinned
    user, subject and dates; neither the tokens nor their hashes appear anywhere."""
    wide = mint(loom, org, "--role", "admin", "--subject", "ops-desk")
    pinned = mint(
        loom, org, "--role", "viewer", "--namespace", "support", "--read-scope", "own_user",
        "--read-user-id", "u-42", "--expires-in", "30d",
    )  # fmt: skip

    code, out, err = loom("token", "list", "--org", org)

    assert code == 0, err
    for secret in (wide, pinned, hash_token(wide), hash_token(pinned)):
        assert secret not in out and secret not in err
    rows = listed(loom, org)
    assert [(r["role"], r["namespace"], r["read_scope"], r["user"]) for r in rows] == [
        ("admin", "*", "namespace", "-"),
        ("viewer", "support", "own_user", "u-42"),
    ]
    assert {r["org"] for r in rows} == {org} and {r["state"] for r in rows} == {"live"}
    assert rows[0]["subject"] == "ops-desk" and rows[0]["expires"] == "-"
    assert rows[1]["expires"] != "-" and {r["revoked"] for r in rows} == {"-"}
    assert all(re.fullmatch(r"\d+", r["id"]) for r in rows)
    assert int(rows[0]["id"]) < int(rows[1]["id"])


def test_token_list_names_an_org_without_tokens(loom, org):
    code, out, _ = loom("token", "list", "--org", org)
    assert (code, out.strip()) == (0, f"no tokens in org {org}")


# Revoking.


def test_a_token_revoked_by_id_answers_401_at_once_on_every_server(
    loom, api, deps, database_url, embedder, org
):
    """GIVEN a token two servers (two processes' Deps, each with its own pool) both serve
    WHEN `loom token revoke <id from token list>` runs
    THEN the next request on either server answers 401 saying the token was revoked, and the
    list shows it revoked."""
    token = mint(loom, org, "--role", "writer")
    other_pool = open_pool(database_url, max_size=1)
    other = Deps(make_settings(), pool=other_pool, embedder=embedder, llm=FakeLLM())
    try:
        for server in (deps, other):
            set_deps(server)
            assert whoami(api, token)[0] == 200
        (row,) = listed(loom, org)

        code, out, err = loom("token", "revoke", row["id"])

        assert code == 0, err
        assert f"revoked token {row['id']}" in out
        for server in (deps, other):
            set_deps(server)
            status, body = whoami(api, token)
            assert status == 401, body
            assert body["error"]["code"] == "unauthorized"
            assert "revoked" in body["error"]["message"]
    finally:
        set_deps(deps)
        other_pool.close()
    (row,) = listed(loom, org)
    assert row["state"] == "revoked" and row["revoked"] != "-"


def test_a_token_revoked_by_its_value_answers_401(loom, api, org):
    token = mint(loom, org, "--role", "viewer")
    keep = mint(loom, org, "--role", "viewer")
    assert whoami(api, token)[0] == 200

    code, out, err = loom("token", "revoke", token)

    assert code == 0, err
    assert token not in out + err  # the token is never printed back
    assert whoami(api, token)[0] == 401
    assert whoami(api, keep)[0] == 200  # only the named token ends


def test_revoking_twice_says_when_and_unknown_tokens_are_refused(loom, org):
    """GIVEN a revoked token WHEN it is revoked again, and ids or values that name no token are
    revoked THEN the second revoke succeeds saying it was already revoked; the others exit 2
    saying how to find the id."""
    mint(loom, org, "--role", "viewer")
    (row,) = listed(loom, org)
    assert loom("token", "revoke", row["id"])[0] == 0

    code, out, _ = loom("token", "revoke", row["id"])
    assert code == 0 and "already revoked at" in out

    for ref in ("999999999999", "99999999999999999999999", "loom_no-such-token", "acme"):
        code, _, err = loom("token", "revoke", ref)
        assert code == 2, ref
        assert err.startswith("error: ") and "loom token list" in err, err


def test_the_admin_function_lists_and_revokes_tokens(client, api, monkeypatch, database_url, org):
    """GIVEN a token minted through the admin function (the cloud's way to run `loom`)
    WHEN the admin function lists the org's tokens, then revokes it by the id listed
    THEN the listing holds the id and no token, and the API answers 401 for the token."""
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    minted = client.lambda_.invoke(
        "admin", {"args": ["token", "mint", "--org", org, "--role", "viewer"]}
    ).payload
    token = minted["stdout"].strip().splitlines()[-1]
    assert whoami(api, token)[0] == 200

    shown = client.lambda_.invoke("admin", {"args": ["token", "list", "--org", org]}).payload
    assert shown["exit_code"] == 0, shown
    assert token not in shown["stdout"] and hash_token(token) not in shown["stdout"]
    token_id = shown["stdout"].strip().splitlines()[-1].split()[0]
    revoked = client.lambda_.invoke("admin", {"args": ["token", "revoke", token_id]}).payload

    assert revoked["exit_code"] == 0, revoked
    assert whoami(api, token)[0] == 401


# Expiry.


def test_an_expired_token_answers_401_naming_its_expiry(loom, api, pool, embedder, org):
    """GIVEN a token minted with --expires-in 1h
    WHEN it calls now, and on a server whose clock reads two hours later
    THEN the first answers 200; the second 401 saying when it expired."""
    token = mint(loom, org, "--role", "writer", "--expires-in", "1h")
    assert whoami(api, token)[0] == 200

    later = Deps(
        make_settings(),
        pool=pool,
        embedder=embedder,
        llm=FakeLLM(),
        clock=lambda: utcnow() + timedelta(hours=2),
    )
    set_deps(later)
    status, body = whoami(api, token)

    assert status == 401, body
    assert "expired at" in body["error"]["message"]


@pytest.mark.parametrize(
    ("lifetime", "seconds"),
    [("90s", 90), ("30m", 1800), ("12h", 43200), ("30d", 2592000), ("2w", 1209600)],
)
def test_expires_in_takes_seconds_minutes_hours_days_or_weeks(loom, pool, org, lifetime, seconds):
    before = utcnow()
    token = mint(loom, org, "--role", "viewer", "--expires-in", lifetime)
    with pool.connection() as conn:
        expires_at, created_at = conn.execute(
            "SELECT expires_at, created_at FROM loom.tokens WHERE token_hash = %s",
            (hash_token(token),),
        ).fetchone()
    assert before + timedelta(seconds=seconds) <= expires_at
    assert expires_at <= utcnow() + timedelta(seconds=seconds)
    assert created_at < expires_at


@pytest.mark.parametrize(
    ("lifetime", "said"),
    [
        ("30", "is not a lifetime"),
        ("30x", "is not a lifetime"),
        ("1.5h", "is not a lifetime"),
        ("-1d", "is not a lifetime"),
        ("soon", "is not a lifetime"),
        ("0d", "must be more than 0"),
        ("3651d", "at most 3650d"),
        ("9999999999w", "is not a lifetime"),
    ],
)
def test_a_bad_expiry_is_refused_with_what_to_write(loom, capsys, pool, org, lifetime, said):
    with pytest.raises(SystemExit) as exited:
        loom("token", "mint", "--org", org, "--role", "viewer", f"--expires-in={lifetime}")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --expires-in" in err and said in err, err
    with pool.connection() as conn:
        assert conn.execute("SELECT count(*) FROM loom.tokens WHERE org = %s", (org,)).fetchone()[
            0
        ] == 0  # fmt: skip


# Bounded read scopes.


def test_an_own_session_token_is_not_minted(loom, pool, org):
    """GIVEN `loom token mint --read-scope own_session` (a token stores no session, so each
    call would name its own) WHEN it runs THEN it exits 2 saying what to mint instead, and
    stores no token."""
    code, out, err = loom(
        "token", "mint", "--org", org, "--role", "writer", "--read-scope", "own_session"
    )
    assert (code, out) == (2, "")
    assert "own_session is not minted" in err and "--read-user-id" in err
    assert listed_count(pool, org) == 0


def test_an_own_user_token_needs_the_user_it_acts_for(loom, pool, org):
    """GIVEN `loom token mint --read-scope own_user` with no --read-user-id WHEN it runs THEN it
    exits 2 asking for --read-user-id and stores nothing; with one it mints."""
    code, out, err = loom(
        "token", "mint", "--org", org, "--role", "writer", "--read-scope", "own_user"
    )
    assert (code, out) == (2, "")
    assert "needs --read-user-id" in err
    assert listed_count(pool, org) == 0
    mint(loom, org, "--role", "writer", "--read-scope", "own_user", "--read-user-id", "u1")
    assert listed_count(pool, org) == 1


@pytest.mark.parametrize(
    "grants",
    [{"read_scope": "own_session"}, {"read_scope": "own_user"}],
    ids=["own_session", "own_user-unpinned"],
)
def test_a_bounded_token_an_earlier_build_minted_unpinned_answers_401(api, pool, org, grants):
    """GIVEN a token an earlier build minted bounded to own_session, or to own_user with no
    pinned user (each call named the user it liked: it bounded nothing)
    WHEN it calls, even naming a user and session
    THEN it answers 401 saying to revoke it and mint one pinned to a user."""
    token = legacy_token(pool, org=org, **grants)
    for op, body in (
        ("system.whoami", {}),
        ("memory.search", {"namespace": "ns", "agent": "a", "query": "q", "user_id": "u1"}),
    ):
        status, out = api.post(op, token=token, **body, session_id="s1")
        assert status == 401, (op, out)
        assert "revoke it and mint one" in out["error"]["message"], out
        assert "--read-user-id" in out["error"]["message"], out


def listed_count(pool, org: str) -> int:
    with pool.connection() as conn:
        return conn.execute("SELECT count(*) FROM loom.tokens WHERE org = %s", (org,)).fetchone()[0]
