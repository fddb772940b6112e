"""Shared helpers for the erasure tests: two users seeded in every plane, and whole-row dumps.

This module holds no tests; the test_erasure_*.py modules import from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psycopg import sql

from tests.conftest import live_setting
from tests.integration.test_conversation_support import NS, Tenant
from tests.integration.test_memory_support import fact, reply, scripted

NS2 = "ns-side"
ANN, BOB = "u-ann", "u-bob"
# A word only that user's rows carry, so a read that returns it returned that user's data.
MARK = {ANN: "zanzibar", BOB: "quokka"}
MADE = {ANN: "th-alpha", BOB: "th-beta"}  # a thread each user opened with conversation.create
# The erasure's own record: it grows with every erasure, by design.
OWN_RECORD = ("loom.audit_log", "loom.erasure_jobs")


@dataclass
class World:
    """One org over HTTP with two users who share a thread and both namespaces."""

    t: Tenant
    queue_ids: dict[str, str] = field(default_factory=dict)
    brief_tokens: dict[str, str] = field(default_factory=dict)

    @property
    def org(self) -> str:
        return self.t.org

    def erase(self, **body: Any) -> dict[str, Any]:
        body.setdefault("namespace", None)
        return self.t.ok("erasure.request", **body)

    def export(self, **body: Any) -> dict[str, Any]:
        body.setdefault("namespace", None)
        return self.t.ok("erasure.export", **body)


def open_world(api: Any, deps: Any, org: str) -> World:
    t = Tenant.open(api, deps, org, logging_on=(NS, NS2))
    world = World(t=t)
    scripted(deps, *(r for u in (ANN, BOB) for r in (_extraction_reply(u), _personal_rule(u))))
    with live_setting(deps.pool, memory_extract_agent_learnings="true"):
        for user in (ANN, BOB):
            seed_user(world, user)
    # Rows of no user: the namespace's own, which a user erasure leaves alone.
    t.ok("memory.set", agent="a1", key="team/chat", value="the team chats on slack", as_="writer")
    t.ok(
        "session.brief_save",
        agent="a1",
        brief_key="team-plan",
        sections={"goal": "ship the harbour release"},
        as_="writer",
    )
    return world


def _extraction_reply(user: str) -> str:
    w = MARK[user]
    malformed = {"subject": "", "attribute": "", "value": "", "source_message_indices": [0]}
    # Both users support one rule of the bot: the quotes are each user's, the candidate no one's.
    rule = fact("assistant", "greeting", GREETING, indices=[1], about="agent")
    return reply(
        fact("user", "home", f"{w} lives in Lisbon", span=f"{w} lives in Lisbon"),
        rule,
        malformed,  # counted in loom.memory_drops under this user
        digest=f"{w} talked about moving to Lisbon",
    )


def _personal_rule(user: str) -> str:
    w = MARK[user]
    return reply(fact("assistant", "notes", f"I keep {w}'s notes.", indices=[1], about="agent"))


GREETING = "I greet every guest by name."


def seed_user(world: World, user: str) -> None:
    """Rows of `user` in every plane: turns (a shared thread, an own thread, a thread row, in
    two namespaces), a saved message, memories, evidence, chunks, a digest, drops, a queued
    extraction, an observation, a brief with two revisions, and a document in their personal
    collection."""
    t, w = world.t, MARK[user]
    t.append("th-shared", f"{w} asks where the harbour lighthouse key is", user_id=user)
    t.append("th-shared", f"the key for {w} is in the blue tin", role="assistant", user_id=user)
    t.append(f"th-own-{user}", f"{w} plans a spring trip", user_id=user, namespace=NS2)
    t.ok(
        "conversation.create",
        agent="a1",
        thread_id=MADE[user],
        title=f"{w} notes",
        user_id=user,
        as_="writer",
    )
    t.append(MADE[user], f"{w} writes a note about sourdough", user_id=user)
    t.ok(
        "conversation.save_message",
        agent="a1",
        conversation_id="th-shared",
        message_id=f"saved-{user}",
        role="user",
        content=f"{w} saved the bread recipe",
        user_id=user,
        as_="writer",
    )
    t.ok("memory.set", agent="a1", key=f"pref/{user}", value=f"{w} prefers tea", user_id=user,
         lock=True, as_="writer")  # fmt: skip
    t.ok(
        "memory.set_from_messages",
        agent="a1",
        user_id=user,
        session_id=f"s-{user}",
        messages=[
            {"role": "user", "content": f"I am {w} and I live in Lisbon now"},
            {"role": "assistant", "content": f"Welcome {w}! {GREETING}"},
        ],
        as_="writer",
    )
    # A rule stated in their personal collection: a candidate there is theirs.
    t.ok("memory.set_from_messages", namespace=f"@me:{user}", agent="a1", user_id=user,
         session_id=f"s-{user}", as_="writer", messages=[
             {"role": "user", "content": f"{w} asks about notes"},
             {"role": "assistant", "content": f"I keep {w}'s notes."},
         ])  # fmt: skip
    queued = t.ok(
        "memory.set_from_messages",
        agent="a1",
        user_id=user,
        messages=[{"role": "user", "content": f"{w} wants a deferred reminder"}],
        defer=True,
        as_="writer",
    )
    world.queue_ids[user] = queued["queue_id"]
    t.ok("observe.record", agent="a1", user_id=user, session_id=f"s-{user}", tool="bash",
         action=f"{w} ran the test suite", as_="writer")  # fmt: skip
    # A document in the user's personal collection: theirs, as the collection is.
    t.ok("knowledge.publish", namespace=f"@me:{user}", uri=f"doc://{user}/notes",
         text=f"{w} keeps notes on the harbour", as_="writer")  # fmt: skip
    token = t.token("writer", read_scope="own_user", read_user_id=user)
    world.brief_tokens[user] = token
    for goal in (f"{w} migrates the ledger", f"{w} migrates the ledger and the exports"):
        t.ok("session.brief_save", agent="a1", brief_key="plan", sections={"goal": goal},
             token=token)  # fmt: skip


# ---- whole-row dumps ----------------------------------------------------------------------


# A partition's rows are its table's (loom.conversations' months): tables read from the
# catalogue leave partitions out.
NOT_A_PARTITION = (
    " table_name NOT IN (SELECT c.relname FROM pg_class c"
    "  JOIN pg_namespace n ON n.oid = c.relnamespace"
    "  WHERE n.nspname = 'loom' AND c.relispartition)"
)


def org_tables(conn: Any) -> list[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.columns WHERE table_schema = 'loom'"
        " AND column_name = 'org' AND" + NOT_A_PARTITION + " ORDER BY table_name"
    ).fetchall()
    return [f"loom.{r[0]}" for r in rows]


def _owned_by(conn: Any, table: str, user: str) -> sql.Composable:
    """A row of `user`: a user column names them, a brief key is theirs, or it is in their
    personal collection."""
    name = table.split(".")[1]
    cols = [
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'loom'"
            " AND table_name = %s",
            (name,),
        ).fetchall()
    ]
    conds = [
        sql.SQL("t.{} = {}").format(sql.Identifier(c), sql.Literal(user))
        for c in cols
        if "user" in c
    ]
    if "brief_key" in cols:
        conds.append(sql.SQL("starts_with(t.brief_key, {})").format(sql.Literal(f"~{user}~")))
    if "namespace" in cols:
        conds.append(sql.SQL("t.namespace = {}").format(sql.Literal(f"@me:{user}")))
    return sql.SQL(" OR ").join(conds) if conds else sql.SQL("false")


# Search indexes a row derives from the turns around it (its window, its vector read after
# the turn before it): rewritten when a neighbour is erased, so no other row keeps erased text.
NEIGHBOUR_DERIVED = {
    "loom.conversation_embeddings": ["window_tsv", "window_len", "context_embedding", "context_of"]
}


def dump(pool: Any, org: str, user: str | None = None) -> dict[str, list[str]]:
    """Every row the org holds in every table, as its full text, sorted; with `user`, only
    the rows that are not that user's (without the columns derived from their neighbours)."""
    out = {}
    with pool.connection() as conn:
        for table in org_tables(conn):
            ident = sql.Identifier(*table.split("."))
            mine = _owned_by(conn, table, user) if user else sql.SQL("false")
            derived = NEIGHBOUR_DERIVED.get(table, []) if user else []
            query = sql.SQL(
                "SELECT (to_jsonb(t) - %s::text[])::text FROM {} t WHERE t.org = %s AND NOT ({})"
            ).format(ident, mine)
            out[table] = sorted(r[0] for r in conn.execute(query, (derived, org)).fetchall())
    return out


def rows_of(pool: Any, org: str, user: str) -> dict[str, list[dict[str, Any]]]:
    """The user's rows in every table, as dicts (tables where they hold none left out)."""
    out = {}
    with pool.connection() as conn:
        for table in org_tables(conn):
            if table in OWN_RECORD:
                continue
            ident = sql.Identifier(*table.split("."))
            query = sql.SQL("SELECT * FROM {} t WHERE t.org = %s AND ({})").format(
                ident, _owned_by(conn, table, user)
            )
            cur = conn.execute(query, (org,))
            names = [d.name for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
            if rows:
                out[table] = rows
    return out


def without_own_record(d: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: v for k, v in d.items() if k not in OWN_RECORD}
