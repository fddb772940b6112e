"""After an erasure no read returns the subject's data: every op that reads is probed, before
(it does return it) and after (it does not), while the other user's data still reads."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.registry import registered
from tests.integration.test_conversation_support import NS
from tests.integration.test_erasure_support import ANN, BOB, MADE, MARK, NS2, World, open_world

# Reads that return no user's data, so there is nothing of a subject to probe.
NOT_PROBED = {
    "conversation.get_logging": "a namespace's recording switch",
    "erasure.status": "an erasure job's own record",
    "extraction_policy.get": "operator configuration",
    "model_calls.get": "operator configuration",
    "system.whoami": "the caller's own identity",
}


def _search_modes() -> list[str | None]:
    """Every search_mode conversation.search accepts (None: the op takes no mode)."""
    field = registered()["conversation.search"].input_model.model_fields.get("search_mode")
    if field is None:
        return [None]
    return [a for a in typing.get_args(field.annotation) if isinstance(a, str)]


def _search(mode: str | None, *, failing: bool = False) -> Callable[[World, str], Any]:
    def probe(w: World, user: str) -> Any:
        w.t.deps.embedder.failing = failing  # the substring fallback
        try:
            body = {"search_mode": mode} if mode else {}
            return [
                w.t.search(MARK[user], namespace=ns, namespace_scope="this", **body)
                for ns in (NS, NS2)
            ]
        finally:
            w.t.deps.embedder.failing = False

    return probe


def _viewer(op: str, **body: Any) -> Callable[[World, str], Any]:
    def probe(w: World, user: str) -> Any:
        filled = {k: (v(user) if callable(v) else v) for k, v in body.items()}
        return w.t.ok(op, as_="viewer", **filled)

    return probe


def _brief(op: str, **body: Any) -> Callable[[World, str], Any]:
    def probe(w: World, user: str) -> Any:
        token = w.t.token("viewer", read_scope="own_user", read_user_id=user)
        mine = w.t.ok(op, agent="a1", token=token, **body)
        wide = w.t.ok(op, agent="a1", as_="viewer", **body)  # a namespace-wide reader
        return [mine, wide] if op == "session.brief_list" else [mine]

    return probe


def _mine(w: World, user: str) -> Any:
    """The batches answered (an id asked about comes back in `unknown` once it is gone)."""
    return w.t.ok(
        "memory.extraction_status_mine", agent="a1", queue_ids=[w.queue_ids[user]], as_="writer"
    )["batches"]


def _threads(w: World, user: str) -> Any:
    return [w.t.ok("conversation.threads", namespace=ns, as_="viewer") for ns in (NS, NS2)]


def _export(w: World, user: str) -> Any:
    return w.export(kind="user", user_id=user, include_tombstoned=False)["tables"]


PROBES: dict[str, Callable[[World, str], Any]] = {
    "conversation.get": _viewer(
        "conversation.get", agent="", thread_id="th-shared", include_messages=True
    ),
    "conversation.get own thread": _viewer(
        "conversation.get", agent="", thread_id=lambda u: MADE[u], include_messages=True
    ),
    "conversation.list": _viewer("conversation.list", agent="", thread_id="th-shared"),
    "conversation.threads": _threads,
    **{f"conversation.search mode={m}": _search(m) for m in _search_modes()},
    "conversation.search substring fallback": _search(None, failing=True),
    "conversation.search_saved_messages": _viewer(
        "conversation.search_saved_messages", agent="a1", user_id=lambda u: u, query="bread"
    ),
    "conversation.list_saved_messages": _viewer(
        "conversation.list_saved_messages", agent="a1", user_id=lambda u: u
    ),
    "conversation.saved_status": _viewer(
        "conversation.saved_status",
        agent="a1",
        user_id=lambda u: u,
        conversation_id="th-shared",
        message_ids=lambda u: [f"saved-{u}"],
    ),
    "session.brief_get": _brief("session.brief_get", brief_key="plan"),
    "session.brief_get revision 1": _brief("session.brief_get", brief_key="plan", revision=1),
    "session.brief_list": _brief("session.brief_list"),
    "memory.search": _viewer("memory.search", agent="a1", query=lambda u: MARK[u]),
    "memory.search by user": _viewer(
        "memory.search", agent="a1", query=lambda u: MARK[u], user_id=lambda u: u
    ),
    "memory.get": _viewer("memory.get", agent="a1", key=lambda u: f"pref/{u}", user_id=lambda u: u),
    "memory.recall": _viewer("memory.recall", agent="a1", query=lambda u: MARK[u]),
    "memory.evidence": _viewer("memory.evidence", agent="a1", key="user/home", user_id=lambda u: u),
    "memory.extraction_status": _viewer("memory.extraction_status", agent="a1"),
    "memory.extraction_status_mine": _mine,
    "erasure.export include_tombstoned=false": _export,
    # The user's personal collection holds a document of theirs.
    "knowledge.get": _viewer(
        "knowledge.get", namespace=lambda u: f"@me:{u}", uri=lambda u: f"doc://{u}/notes"
    ),
    "knowledge.list": _viewer("knowledge.list", namespace=lambda u: f"@me:{u}"),
    **{
        f"knowledge.search mode={m}": _viewer(
            "knowledge.search",
            namespace=lambda u: f"@me:{u}",
            query=lambda u: MARK[u],
            search_mode=m,
        )
        for m in ("hybrid", "semantic", "lexical")
    },  # fmt: skip
    # The agents' reads, over the namespace and over the user's personal collection.
    "context.pack": _viewer(
        "context.pack",
        agent="a1",
        query=lambda u: MARK[u],
        thread_id="th-shared",
        recent_turns=200,
        include_conversation=True,
    ),  # fmt: skip
    "context.pack personal": _viewer(
        "context.pack", agent="a1", namespace=lambda u: f"@me:{u}", query=lambda u: MARK[u]
    ),
    "memory.stack": _viewer("memory.stack", agent="a1", user_id=lambda u: u),
    "memory.stack personal": _viewer("memory.stack", agent="a1", namespace=lambda u: f"@me:{u}"),
    "search": _viewer("search", agent="a1", query=lambda u: MARK[u]),
    "search personal": _viewer(
        "search", agent="a1", namespace=lambda u: f"@me:{u}", query=lambda u: MARK[u]
    ),
    # The review queue: the users' quotes, the rule a user's collection holds, the reviewer.
    "learnings.list": lambda w, u: w.t.ok("learnings.list", as_="admin"),
    "learnings.list personal": lambda w, u: w.t.ok(
        "learnings.list", namespace=f"@me:{u}", as_="admin"
    ),
    "memory.ask": _viewer("memory.ask", agent="a1", question=lambda u: MARK[u]),
    "memory.ask personal": _viewer(
        "memory.ask", agent="a1", namespace=lambda u: f"@me:{u}", question=lambda u: MARK[u]
    ),
}


def _holds(answer: Any, w: World, user: str) -> bool:
    """True when the answer carries any of the user's data: their word, id or queued batch."""
    text = json.dumps(answer, default=str)
    return any(mark in text for mark in (MARK[user], user, w.queue_ids[user]))


@pytest.fixture
def world(api, deps, org):
    return open_world(api, deps, org)


@pytest.mark.parametrize("probe", list(PROBES))
def test_no_read_returns_an_erased_users_data(world, probe):
    """GIVEN two users with rows in every plane
    WHEN one user is erased
    THEN the read that returned their data before returns none of it after, and still
    returns the other user's.
    """
    read = PROBES[probe]
    assert _holds(read(world, ANN), world, ANN), "the probe must see the data before erasure"
    world.erase(kind="user", user_id=ANN)
    assert not _holds(read(world, ANN), world, ANN)
    assert _holds(read(world, BOB), world, BOB)


def test_every_read_op_is_probed():
    """Every registered op that reads is probed above, or named as returning no user's data."""
    reads = {name for name, spec in registered().items() if spec.kind == "read"}
    probed = {name.split(" ")[0] for name in PROBES}
    assert reads - probed - set(NOT_PROBED) == set()
    assert set(NOT_PROBED) <= reads
