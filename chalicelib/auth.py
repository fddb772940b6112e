"""Tokens, roles and read scopes, resolved into the Caller every op runs as."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from chalicelib.errors import BadRequestError, UnauthorizedError

if TYPE_CHECKING:
    from chalicelib.deps import Deps

Role = Literal["viewer", "writer", "admin", "org_admin"]
ReadScope = Literal["namespace", "own_user", "own_session"]
ROLES: tuple[Role, ...] = ("viewer", "writer", "admin", "org_admin")
READ_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user", "own_session")
TOKEN_PREFIX = "loom_"


def role_allows(have: str, need: str) -> bool:
    """True when role `have` is at least role `need`."""
    return ROLES.index(have) >= ROLES.index(need)


@dataclass(frozen=True)
class Caller:
    """Who is calling: the org is always known; namespace and user only when a token pins them."""

    org: str
    role: Role
    namespace: str | None = None
    read_scope: ReadScope = "namespace"
    read_user_id: str | None = None
    principal: str | None = None  # kind:subject of a token; None with auth off
    any_org: bool = False  # the single user of a LOOM_AUTH=off install may name any org
    agent: str | None = None  # the bot an end-user token names (its agent claim)

    def speaks_for(self, agent: str) -> str | None:
        """The bot this caller files and reads for: a token pinned to one end user speaks for
        the agent it names (None when it names none), never the body's `agent`; any other
        caller for `agent`."""
        if self.read_user_id is not None:
            return self.agent
        return agent

    @property
    def bounded(self) -> bool:
        """A token bounded to one user or session, not namespace-wide."""
        return self.read_scope != "namespace"


def local_caller(org: str) -> Caller:
    """The single user of a server running with LOOM_AUTH=off."""
    return Caller(org=org, role="org_admin", any_org=True)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an `Authorization: Bearer` header, if any (header names are case-blind)."""
    for name, value in headers.items():
        if name.lower() == "authorization":
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            raise UnauthorizedError("Authorization header must be 'Bearer <token>'")
    return None


def resolve_caller(headers: Mapping[str, str], deps: Deps) -> Caller:
    """The Caller of an HTTP request under the deployment's LOOM_AUTH mode."""
    if deps.settings.auth == "off":
        return local_caller(deps.settings.org)
    token = bearer_token(headers)
    if token is None:
        raise UnauthorizedError(
            "this server needs 'Authorization: Bearer <token>'; mint one with `loom token mint`"
        )
    from chalicelib.store.tokens import find_token

    with deps.pool.connection() as conn:
        row = find_token(conn, hash_token(token))
    if row is None:
        raise UnauthorizedError("unknown token; ask an operator for one (`loom token mint`)")
    refusal = token_refusal(row, deps.clock())
    if refusal is not None:
        raise UnauthorizedError(refusal)
    return Caller(
        org=row["org"],
        role=row["role"],
        namespace=row["namespace"],
        read_scope=row["read_scope"],
        read_user_id=row["read_user_id"],
        principal=f"token:{row['subject']}",
        agent=row["agent"],
    )


def token_refusal(row: Mapping[str, Any], now: datetime) -> str | None:
    """Why a stored token no longer answers, if it does not: revoked, expired, or minted by an
    earlier build with a read scope that bounds nothing."""
    if row["revoked_at"] is not None:
        return "this token was revoked; ask an operator for a new one"
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return (
            f"this token expired at {row['expires_at'].astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC;"
            " ask an operator for a new one"
        )
    if row["read_scope"] == "own_session":
        # Minted before own_session was refused: no session is stored, so each call named its
        # own user and session and the token bounded nothing.
        return (
            "this token is bounded to own_session but pins no session, so it bounds nothing;"
            " revoke it and mint one with --read-scope own_user --read-user-id USER"
        )
    if row["read_scope"] == "own_user" and row["read_user_id"] is None:
        # Minted before --read-user-id was required: each call named any user it liked.
        return (
            "this own_user token pins no user, so it bounds nothing; revoke it and mint one"
            " with --read-user-id USER"
        )
    if row["read_user_id"] is not None and not pinnable(row["read_user_id"]):
        # Minted before such pins were refused: it would act on rows of no one user.
        return (
            "this token is pinned to a user id that names no one user; revoke it and mint one"
            " with --read-user-id set to the user"
        )
    return None


def check_name(option: str, value: str) -> None:
    """Refuse an org or namespace name no op accepts (a token bound to it could never work)."""
    from chalicelib.names import is_name

    if not is_name(value):
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise BadRequestError(
            f"{option} {shown!r} is not a valid name: use 1-256 characters, no spaces"
        ) from None


def pinnable(user_id: str) -> bool:
    """Whether a token may act for this user only: a user id naming one user. "-" names the
    namespace's shared rows, "*" every user and "" none; "~" splits brief keys."""
    return (
        0 < len(user_id) <= 256
        and user_id not in ("-", "*")
        and "~" not in user_id
        and "\x00" not in user_id
    )


@dataclass(frozen=True)
class MintedToken:
    token: str  # shown once; only its hash is stored
    id: int  # what `loom token list` shows and `loom token revoke` takes
    expires_at: datetime | None


def mint_token(deps: Deps, **grants: Any) -> str:
    """Store a new token (hashed) and return it; the plain token is never stored."""
    return issue_token(deps, **grants).token


def issue_token(
    deps: Deps,
    *,
    org: str,
    role: str,
    namespace: str | None = None,
    read_scope: str = "namespace",
    read_user_id: str | None = None,
    subject: str | None = None,
    expires_in: timedelta | None = None,
    agent: str | None = None,
) -> MintedToken:
    """Store a new token (hashed), with its id and expiry. `agent` makes it an end-user token
    of one bot: pinned to one user, it files and is served that bot's rules."""
    check_grants(role, read_scope, read_user_id)
    check_name("--org", org)
    if namespace is not None:
        check_name("--namespace", namespace)
    if agent is not None:
        check_agent_claim(agent, read_user_id)
    if expires_in is not None and expires_in <= timedelta(0):
        raise BadRequestError("--expires-in must be more than 0")
    expires_at = deps.clock() + expires_in if expires_in is not None else None
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    from chalicelib.store.tokens import insert_token

    with deps.pool.connection() as conn:
        token_id = insert_token(
            conn,
            token_hash=hash_token(token),
            org=org,
            role=role,
            namespace=namespace,
            read_scope=read_scope,
            read_user_id=read_user_id,
            subject=subject or secrets.token_hex(8),
            expires_at=expires_at,
            agent=agent,
        )
    return MintedToken(token, token_id, expires_at)


def token_rows(deps: Deps, org: str | None) -> list[dict[str, Any]]:
    """Every token's grants and dates (of one org when named), oldest first; no hash."""
    from chalicelib.store.tokens import list_tokens

    with deps.pool.connection() as conn:
        return list_tokens(conn, org)


def revoke(
    deps: Deps, *, token_id: int | None = None, token_hash: str | None = None
) -> dict[str, Any] | None:
    """Revoke the token with this id or hash (None when there is none): every server refuses
    it from its next request, since each request reads its token's row."""
    from chalicelib.store.tokens import revoke_token

    with deps.pool.connection() as conn:
        return revoke_token(conn, token_id=token_id, token_hash=token_hash)


def check_agent_claim(agent: str, read_user_id: str | None) -> None:
    """An agent claim names one bot, and only a token pinned to one end user carries it."""
    from chalicelib.names import is_name

    if read_user_id is None:
        raise BadRequestError(
            "--agent needs --read-scope own_user --read-user-id USER: it names the bot an end"
            " user's token speaks for"
        )
    if not is_name(agent) or agent in ("-", "*"):
        raise BadRequestError(f"--agent {agent[:40]!r} is not one agent's name")


def check_grants(role: str, read_scope: str, read_user_id: str | None) -> None:
    """Refuse a role or read scope no token may hold: a bounded scope must say what it
    bounds."""
    if role not in ROLES:
        raise BadRequestError(f"role must be one of {', '.join(ROLES)}")
    if read_scope not in READ_SCOPES:
        raise BadRequestError(f"read scope must be one of {', '.join(READ_SCOPES)}")
    if read_scope == "own_session":
        # No op's rows are bounded by a session alone, and a token minted here stores none: each
        # call would name its own user and session.
        raise BadRequestError(
            "--read-scope own_session is not minted: a token cannot pin a session, so it would"
            " bound nothing; mint --read-scope own_user --read-user-id USER instead"
        )
    if read_user_id and read_scope != "own_user":
        raise BadRequestError("--read-user-id needs --read-scope own_user")
    if read_user_id is not None and not pinnable(read_user_id):
        shown = read_user_id if len(read_user_id) <= 40 else read_user_id[:40] + "..."
        raise BadRequestError(
            f"--read-user-id {shown!r} names no one user: use 1-256 characters without ~,"
            " and not - (the shared rows) or * (every user)"
        )
    if read_scope == "own_user" and read_user_id is None:
        raise BadRequestError(
            "--read-scope own_user needs --read-user-id USER: without a pinned user each call"
            " names the user it likes, so the token would bound nothing"
        )
