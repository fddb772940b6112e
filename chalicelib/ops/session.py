"""Session briefs: the resumable state of one line of work. Never embedded, never searched."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.auth import Caller, ReadScope
from chalicelib.brief.builder import build
from chalicelib.brief.events import MAX_EVENTS, BriefEvent, windows
from chalicelib.brief.reviser import revise
from chalicelib.brief.sections import ACCUMULATING, BriefSections, merge, render
from chalicelib.errors import BadRequestError, ConflictError, UnavailableError
from chalicelib.ops.common import AgentScoped, Ident, OpOutput
from chalicelib.registry import OpContext, op
from chalicelib.sensitivity import is_sensitive
from chalicelib.store import session_briefs as store
from chalicelib.store.namespaces import conversation_logging_enabled
from chalicelib.store.pool import autocommit_connection

KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,159}$")
_KEY_CHAR = re.compile(r"[^A-Za-z0-9_.:/@+-]")
ALL_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user", "own_session")
AUTOMATIC_TRIGGERS = ("precompact", "session_end", "stop")
SOURCE_SESSIONS_KEPT = 20
CLIENT_SUMMARY_CHARS = 15_000
Short = Annotated[str, StringConstraints(max_length=400)]


class BriefScoped(AgentScoped):
    user_id: Ident = "-"
    session_id: Ident = "-"
    run_id: Ident = "-"


# ---- keys ----------------------------------------------------------------------------------


def _key_prefix(caller: Caller, user_id: str, session_id: str) -> str | None:
    """`~<user>~` (or `~<user>~<session>~`) for a token bounded to one user or session."""
    if caller.read_scope == "namespace":
        return None
    user = caller.read_user_id or user_id  # never "" or "-": the registry refuses those
    # "~" separates the prefix's parts: a user "a~b" would share briefs with session b of user a.
    if "~" in user:
        raise BadRequestError("a token bounded to one user needs a user_id without ~")
    if caller.read_scope == "own_user":
        return f"~{user}~"
    if session_id in ("", "-"):
        raise BadRequestError("a token bounded to one session needs session_id")
    if "~" in session_id:
        raise BadRequestError("a token bounded to one session needs a session_id without ~")
    return f"~{user}~{session_id}~"


def _check_key(key: str) -> str:
    if not KEY.fullmatch(key):  # match's $ would pass a key ending in a newline
        raise BadRequestError(f"brief_key must match {KEY.pattern}")
    return key


def stored_key(caller: Caller, key: str, user_id: str, session_id: str) -> tuple[str, str]:
    """(the key as stored, the key as this caller sees it)."""
    prefix = _key_prefix(caller, user_id, session_id)
    if prefix is not None:
        if "~" in key:
            raise BadRequestError("a token bounded to one user or session cannot send a ~ key")
        return prefix + _check_key(key), key
    if key.startswith("~"):  # a namespace-wide token addresses a bounded brief by its prefix
        parts = key.split("~")
        if len(parts) not in (3, 4) or parts[0] or not all(parts[1:-1]):
            raise BadRequestError("a ~ key is ~<user>~<key> or ~<user>~<session>~<key>")
        _check_key(parts[-1])
        return key, key
    return _check_key(key), key


def auto_key(project: str, branch: str, session_id: str) -> str:
    """auto/<project>/<branch>, or session/<session_id> when neither is known."""
    if project or branch:
        raw = f"auto/{project or '-'}/{branch or '-'}"
    elif session_id not in ("", "-"):
        raw = f"session/{session_id}"
    else:
        raise BadRequestError("give brief_key, project and branch, or session_id")
    return _KEY_CHAR.sub("-", raw)[:160]


def _shown(caller: Caller, key: str, user_id: str, session_id: str) -> str:
    prefix = _key_prefix(caller, user_id, session_id)
    return key[len(prefix) :] if prefix and key.startswith(prefix) else key


def _actor(caller: Caller) -> str:
    if caller.principal is None:
        return "human:local"
    return "process:" + caller.principal.split(":", 1)[-1]


# ---- save ----------------------------------------------------------------------------------


class SaveInput(BriefScoped):
    brief_key: Annotated[str, StringConstraints(max_length=400)] = ""
    project: Short = ""
    repo: Short = ""
    branch: Short = ""
    head_sha: Annotated[str, StringConstraints(max_length=100)] = ""
    trigger: Literal["precompact", "session_end", "stop", "manual", "model"] = "manual"
    events: Annotated[list[BriefEvent], Field(max_length=MAX_EVENTS)] = Field(default_factory=list)
    sections: BriefSections | None = None
    event_cursor: Annotated[str, StringConstraints(max_length=200)] = ""
    if_revision: int | None = Field(default=None, ge=0)
    use_llm: bool | None = None


class SessionBriefStats(OpOutput):
    events: int = 0
    windows: int = 0
    windows_failed: int = 0
    event_chars: int = 0
    brief_chars: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""


class SaveOutput(OpOutput):
    brief_key: str
    revision: int
    changed: bool
    author: str
    reason: str
    rendered: str
    stats: SessionBriefStats


@op(
    "session.brief_save",
    role="writer",
    kind="idempotent",
    audited=True,
    mcp="unlisted",
    scopes=ALL_SCOPES,
)
def brief_save(inp: SaveInput, ctx: OpContext) -> SaveOutput:
    """Revise (or start) a brief from events, from the agent's own sections, or both."""
    deps, caller = ctx.deps, ctx.caller
    raw_key = inp.brief_key or auto_key(inp.project, inp.branch, inp.session_id)
    key, shown = stored_key(caller, raw_key, inp.user_id, inp.session_id)
    with autocommit_connection(deps.pool) as conn:
        current = store.read_brief(conn, inp.org, inp.namespace, key)
        recording = conversation_logging_enabled(conn, inp.org, inp.namespace)
    live = current if current and current["deleted_at"] is None else None
    event_chars = sum(len(e.text) for e in inp.events)
    stats = SessionBriefStats(events=len(inp.events), event_chars=event_chars)

    def unchanged(reason: str, brief: dict[str, Any] | None) -> SaveOutput:
        """The answer of a save that writes nothing: the brief as it stands."""
        return SaveOutput(
            brief_key=shown,
            revision=brief["revision"] if brief else 0,
            changed=False,
            author=brief["author"] if brief and reason == "already-saved" else "",
            reason=reason,
            rendered=brief["rendered"] if brief else "",
            stats=stats,
        )

    if inp.trigger in AUTOMATIC_TRIGGERS and not recording:
        return unchanged("recording_off", live)
    if not inp.events and inp.sections is None:
        return unchanged("nothing-to-save", live)
    if _is_retry(live, inp):
        return unchanged("already-saved", live)
    stored = BriefSections.model_validate(live["sections"]) if live else BriefSections()
    policy = deps.extraction_policy(inp.org, inp.namespace)
    if inp.sections is None:
        revised = _revise_from_events(ctx, inp, stored, stats, policy)
        if revised is None:
            return unchanged("not-revised", live)
        new, author, condensed = revised
    else:
        # The model revises the events first and the agent's sections go over its revision.
        # With no model to call, or every call failed, they go over the brief as it was and
        # nothing is taken from the events: the agent's sections stand in for the builder.
        base, condensed = _model_revision(ctx, inp, stored, stats, policy) or (stored, [])
        new, author = merge(base, inp.sections), "model"
    client_summary = _client_summary(inp.events) if policy is None else None
    with deps.pool.connection() as conn:
        locked = store.lock_brief(conn, inp.org, inp.namespace, key)
        locked_live = locked if locked and locked["deleted_at"] is None else None
        revision = locked_live["revision"] if locked_live else 0
        if inp.if_revision is not None and inp.if_revision != revision:
            raise ConflictError(
                f"brief {shown!r} is at revision {revision}, not {inp.if_revision}; reload it"
            )
        if _is_retry(locked_live, inp):
            return unchanged("already-saved", locked_live)
        if _landed_meanwhile(live, locked_live):  # a save, a first save or a delete
            now = locked_live["sections"] if locked_live else {}
            new = _rebase(new, stored, BriefSections.model_validate(now))
        row = _next_row(
            inp, caller, key, revision + 1, new, author, locked_live, client_summary, condensed
        )
        store.write_brief(conn, inp.org, inp.namespace, row)
    stats.brief_chars = len(row["rendered"])
    return SaveOutput(
        brief_key=shown,
        revision=row["revision"],
        changed=True,
        author=author,
        reason="",
        rendered=row["rendered"],
        stats=stats,
    )


def _is_retry(live: dict[str, Any] | None, inp: SaveInput) -> bool:
    """A save repeating the previous save's session and event cursor writes nothing."""
    return bool(
        live
        and inp.event_cursor
        and live["last_event_cursor"] == inp.event_cursor
        and live["last_session_id"] == inp.session_id
    )


def _revise_from_events(
    ctx: OpContext,
    inp: SaveInput,
    stored: BriefSections,
    stats: SessionBriefStats,
    policy: str | None,
) -> tuple[BriefSections, str, list[BriefEvent]] | None:
    """A save of events alone: the model's revision, or the deterministic builder's, and the
    events it condensed; None when neither may run."""
    revised = _model_revision(ctx, inp, stored, stats, policy)
    if revised is not None:
        return revised[0], "llm", revised[1]
    if policy is None:
        return merge(stored, build(stored, inp.events)), "deterministic", inp.events
    # Under an operator's extraction policy the builder never runs.
    if stats.windows:  # the model was called and every call failed
        raise UnavailableError(
            "every model call revising this brief failed; send the same events again"
        )
    return None


def _model_revision(
    ctx: OpContext,
    inp: SaveInput,
    stored: BriefSections,
    stats: SessionBriefStats,
    policy: str | None,
) -> tuple[BriefSections, list[BriefEvent]] | None:
    """The model's revision and the events it read (the last windows only); None when there
    is no model to call or every call failed."""
    live = ctx.live()
    llm = ctx.deps.llm
    use_llm = live.session_brief_llm if inp.use_llm is None else inp.use_llm
    if not (inp.events and use_llm and llm.answers):
        return None

    def switched_off() -> bool:
        return ctx.deps.model_calls_off(inp.org)

    if switched_off():  # off before the first window: as with no model to call
        return None
    chunks = windows(inp.events, live.session_brief_window_chars, live.session_brief_max_windows)
    result = revise(
        llm, live.session_brief_llm_model or None, stored, chunks, policy, stop=switched_off
    )
    stats.windows, stats.windows_failed = result.windows, result.failed
    stats.tokens_in, stats.tokens_out = result.tokens_in, result.tokens_out
    stats.model = result.model or llm.name
    if result.failed == result.windows:
        return None
    return result.sections, [e for chunk in chunks for e in chunk]


def _client_summary(events: list[BriefEvent]) -> str | None:
    """The client's own last compaction summary, kept verbatim for brief_get(full=true)."""
    summaries = [e.text for e in events if e.kind == "summary" and e.text.strip()]
    return summaries[-1][:CLIENT_SUMMARY_CHARS] if summaries else None


def _landed_meanwhile(read: dict[str, Any] | None, locked: dict[str, Any] | None) -> bool:
    """Whether the brief under the lock is not the one this save read: another save landed
    (or created it), or it was deleted."""
    if read is None or locked is None:
        return (read is None) != (locked is None)
    return (read["revision"], read["sections"]) != (locked["revision"], locked["sections"])


def _rebase(new: BriefSections, read: BriefSections, locked: BriefSections) -> BriefSections:
    """This save's own changes (the items it added, the sections it rewrote) applied to the
    brief as it now stands: what landed meanwhile keeps its accumulated items and any section
    this save left as it read it, and a brief deleted meanwhile gets nothing of the text it
    held back."""
    own: dict[str, Any] = {}
    for name in BriefSections.model_fields:
        mine, before = getattr(new, name), getattr(read, name)
        if name in ACCUMULATING:
            own[name] = [i for i in mine if i not in before]
        else:
            own[name] = mine if mine != before else type(mine)()
    return merge(locked, BriefSections.model_validate(own))


def _next_row(
    inp: SaveInput,
    caller: Caller,
    key: str,
    revision: int,
    sections: BriefSections,
    author: str,
    live: dict[str, Any] | None,
    client_summary: str | None,
    condensed: list[BriefEvent],
) -> dict[str, Any]:
    prev: dict[str, Any] = live or {}
    sessions = [s for s in prev.get("source_sessions", []) if s != inp.session_id]
    if inp.session_id not in ("", "-"):
        sessions.append(inp.session_id)
    return {
        "brief_key": key,
        "revision": revision,
        "project": inp.project or prev.get("project", ""),
        "repo": inp.repo or prev.get("repo", ""),
        "branch": inp.branch or prev.get("branch", ""),
        "head_sha": inp.head_sha or prev.get("head_sha", ""),
        "agent": inp.agent,
        "sections": sections.model_dump(),
        "rendered": render(key.rsplit("~", 1)[-1], revision, sections),  # no bounded prefix
        "author": author,
        "trigger": inp.trigger,
        "actor": _actor(caller),
        "source_sessions": sessions[-SOURCE_SESSIONS_KEPT:],
        "events_total": prev.get("events_total", 0) + len(condensed),
        "source_chars": prev.get("source_chars", 0) + sum(len(e.text) for e in condensed),
        "last_session_id": inp.session_id,
        "last_event_cursor": inp.event_cursor,
        "client_summary": client_summary
        if client_summary is not None
        else prev.get("client_summary", ""),
        "events": len(inp.events),
    }


# ---- get -----------------------------------------------------------------------------------


class GetInput(BriefScoped):
    brief_key: Annotated[str, StringConstraints(max_length=400)] = ""
    from_session: Ident = ""
    project: Short = ""
    revision: int = Field(default=0, ge=0)
    include_sections: bool = False
    full: bool = False


class GetOutput(OpOutput):
    found: bool
    brief_key: str = ""
    revision: int = 0
    rendered: str = ""
    sections: BriefSections | None = None
    project: str = ""
    branch: str = ""
    head_sha: str = ""
    author: str = ""
    trigger: str = ""
    actor: str = ""
    source_sessions: list[str] = Field(default_factory=list)
    updated_at: datetime | None = None
    age_seconds: int = 0
    revisions: int = 0
    events_total: int = 0
    source_chars: int = 0
    brief_chars: int = 0
    deleted: bool = False


@op("session.brief_get", role="viewer", kind="read", mcp="unlisted", scopes=ALL_SCOPES)
def brief_get(inp: GetInput, ctx: OpContext) -> GetOutput:
    """Load a brief by key, else the newest a session contributed to, else a project's newest."""
    caller = ctx.caller
    prefix = _key_prefix(caller, inp.user_id, inp.session_id)
    with autocommit_connection(ctx.deps.pool) as conn:
        if inp.brief_key:
            key, _ = stored_key(caller, inp.brief_key, inp.user_id, inp.session_id)
        else:
            newest = store.find_briefs(
                conn,
                org=inp.org,
                namespace=inp.namespace,
                key_prefix=prefix,
                project="" if inp.from_session else inp.project,
                agent=None,
                from_session=inp.from_session,
                limit=1,
            )
            if not newest:
                return GetOutput(found=False)
            key = newest[0]["brief_key"]
        brief = store.read_brief(conn, inp.org, inp.namespace, key)
        if brief is None:
            return GetOutput(found=False)
        shown = _shown(caller, key, inp.user_id, inp.session_id)
        if brief["deleted_at"] is not None:
            return GetOutput(found=False, brief_key=shown, deleted=True)
        at: dict[str, Any] | None = brief
        if inp.revision and inp.revision != brief["revision"]:
            at = store.read_revision(conn, inp.org, inp.namespace, key, inp.revision)
        if at is None:
            return GetOutput(found=False, brief_key=shown)
    rendered = at["rendered"]
    if inp.full and brief["client_summary"]:
        rendered += "\n\n## Last compaction summary (the client's own)\n" + brief["client_summary"]
    updated = at["updated_at"]
    return GetOutput(
        found=True,
        brief_key=shown,
        revision=at["revision"],
        rendered=rendered,
        sections=BriefSections.model_validate(at["sections"]) if inp.include_sections else None,
        project=brief["project"],
        branch=brief["branch"],
        head_sha=at["head_sha"],
        author=at["author"],
        trigger=at["trigger"],
        actor=at["actor"],
        source_sessions=brief["source_sessions"],
        updated_at=updated,
        age_seconds=max(0, int((ctx.deps.clock() - updated).total_seconds())),
        revisions=brief["revisions"],
        events_total=brief["events_total"],
        source_chars=brief["source_chars"],
        brief_chars=len(at["rendered"]),
    )


# ---- list / delete -------------------------------------------------------------------------


class ListInput(BriefScoped):
    project: Short = ""
    mine_only: bool = False
    from_session: Ident = ""
    limit: int = Field(default=10, ge=1, le=50)


class SessionBriefSummary(OpOutput):
    brief_key: str
    revision: int
    agent: str
    goal: str
    project: str
    branch: str
    updated_at: datetime
    age_seconds: int


class ListOutput(OpOutput):
    briefs: list[SessionBriefSummary]
    rendered: str


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _line(text: str) -> str:
    """Text as one line of `rendered` shows it."""
    return " ".join(text.split())


def _goal_line(goal: str) -> str:
    """The one line of a goal that `rendered` shows."""
    return _line(goal)[:120]


def _listed_goal(goal: str) -> str:
    """The goal as the list shows it: empty when it, or its line in `rendered`, reads as high
    (as conversation.threads blanks such a title)."""
    return "" if is_sensitive(goal) or is_sensitive(_goal_line(goal)) else goal


@op("session.brief_list", role="viewer", kind="read", mcp="unlisted", scopes=ALL_SCOPES)
def brief_list(inp: ListInput, ctx: OpContext) -> ListOutput:
    """The namespace's live briefs, newest first, one line each.

    A goal that reads as high lists empty (session.brief_get still shows the brief)."""
    caller = ctx.caller
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = store.find_briefs(
            conn,
            org=inp.org,
            namespace=inp.namespace,
            key_prefix=_key_prefix(caller, inp.user_id, inp.session_id),
            project=inp.project,
            agent=inp.agent if inp.mine_only else None,
            from_session=inp.from_session,
            limit=inp.limit,
        )
    now = ctx.deps.clock()
    briefs = [
        SessionBriefSummary(
            brief_key=_shown(caller, r["brief_key"], inp.user_id, inp.session_id),
            revision=r["revision"],
            agent=r["agent"],
            goal=_listed_goal((r["sections"] or {}).get("goal", "")),
            project=r["project"],
            branch=r["branch"],
            updated_at=r["updated_at"],
            age_seconds=max(0, int((now - r["updated_at"]).total_seconds())),
        )
        for r in rows
    ]
    lines = [
        f"{b.brief_key} · rev {b.revision} · {_age(b.age_seconds)} · {_line(b.agent)}"
        + (f" · {_goal_line(b.goal)}" if b.goal else "")
        for b in briefs
    ]
    return ListOutput(briefs=briefs, rendered="\n".join(lines))


class DeleteInput(BriefScoped):
    brief_key: Annotated[str, StringConstraints(min_length=1, max_length=400)]


class DeleteOutput(OpOutput):
    deleted: bool
    brief_key: str
    revision: int


@op(
    "session.brief_delete",
    role="writer",
    kind="idempotent",
    audited=True,
    mcp="unlisted",
    scopes=ALL_SCOPES,
)
def brief_delete(inp: DeleteInput, ctx: OpContext) -> DeleteOutput:
    """Forget a brief when its writer asks: its revisions go, and it serves nothing after."""
    key, shown = stored_key(ctx.caller, inp.brief_key, inp.user_id, inp.session_id)
    with ctx.deps.pool.connection() as conn:
        revision = store.forget_brief(conn, inp.org, inp.namespace, key)
    return DeleteOutput(deleted=revision is not None, brief_key=shown, revision=revision or 0)
