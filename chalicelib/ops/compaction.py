"""conversation.compact: the oldest turns become one embedded summary; the originals retire."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field

from chalicelib.deps import Deps
from chalicelib.errors import UnavailableError, UpstreamError
from chalicelib.ops.common import AgentScoped, OpOutput
from chalicelib.ops.conversation_fields import ThreadId, any_agent
from chalicelib.policies import policy_block
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.providers.llm import LLMError, LLMResult
from chalicelib.registry import OpContext, op
from chalicelib.search.store_vectors import ensure_vector_index
from chalicelib.sensitivity import is_sensitive, is_sensitive_embedded
from chalicelib.store.compaction_rows import (
    SUMMARY_ID_PREFIX,
    insert_summary,
    live_thread_turns,
    unsaved_copies,
    window_state,
)
from chalicelib.store.thread_leases import take_thread_lease
from chalicelib.store.turn_tombstones import retire_turns
from chalicelib.store.turn_vectors import TurnVector, insert_vectors
from chalicelib.store.turn_writes import NewTurn

SUMMARIZER_SYSTEM = (
    "You compact a conversation so it can be resumed later. Write one summary of the turns"
    " below, in the third person, keeping every decision, fact, name, number, identifier,"
    " open question and commitment; drop greetings and filler. Earlier summaries, if given,"
    " come first: fold them in. Answer with the summary text only."
)


class CompactInput(AgentScoped):
    thread_id: ThreadId
    keep_recent: int = Field(default=10, ge=0, le=100_000)
    min_to_compact: int = Field(default=4, ge=1, le=100_000)


class CompactOutput(OpOutput):
    compacted: bool
    messages_summarized: int
    summary_msg_id: str
    tokens_in: int
    tokens_out: int
    reason: str


def summary_msg_id(agent: str, sources: list[str]) -> str:
    """A summary's id: from its agent and the msg_ids it replaces, so a failed run's summary of
    the same turns is replaced in place, and two agents' summaries of their own copies of the
    same turns are two turns, each with its own embedding row."""
    digest = hashlib.sha256("\x1f".join([agent, *sources]).encode()).hexdigest()[:24]
    return SUMMARY_ID_PREFIX + digest


def is_summary(turn: dict[str, Any]) -> bool:
    """A compaction's summary (summary_row in the store): a system turn under a summary id
    whose metadata lists the msg_ids it replaced. A client's turn whose metadata happens to name
    `compacted_from` is a turn like any other: summarised, never retired unread."""
    metadata = turn.get("metadata")
    sources = metadata.get("compacted_from") if isinstance(metadata, dict) else None
    return (
        turn.get("role") == "system"
        and turn["msg_id"].startswith(SUMMARY_ID_PREFIX)
        and isinstance(sources, list)
        and all(isinstance(m, str) for m in sources)
    )


@dataclass
class Window:
    """What one compaction reads and replaces."""

    folded: list[dict[str, Any]] = field(default_factory=list)  # earlier summaries read
    replaced_unread: list[dict[str, Any]] = field(default_factory=list)  # a failed run's
    turns: list[dict[str, Any]] = field(default_factory=list)  # summarised, in order
    held_back: int = 0  # saved or high turns left live
    new_turns: int = 0  # turns that are not earlier summaries
    # New turns before the last keep_recent, those past the prompt's budget too (counted up
    # to the `min_to_compact` asked for): what min_to_compact is measured against.
    preceding: int = 0


def plan_window(
    live: list[dict[str, Any]],
    keep_recent: int,
    prompt_chars: int,
    summary_chars: int,
    min_to_compact: int = 0,
) -> Window:
    """Choose the summaries to fold and the turns to summarise, oldest first, within budget,
    and count the new turns before the last keep_recent (up to min_to_compact)."""
    candidates = live[: max(0, len(live) - keep_recent)]
    in_window = {t["msg_id"]: t["ts"] for t in candidates}
    w = Window()
    allowance, budget = summary_chars, prompt_chars
    leading, full = True, False
    for turn in candidates:
        if full and w.preceding >= min_to_compact:
            break
        if turn["is_saved"] or is_sensitive(turn["content"]):
            w.held_back += 1
            continue
        if full:  # past the budget: only counted
            w.preceding += not is_summary(turn)
            continue
        if is_summary(turn):
            sources = set(turn["metadata"].get("compacted_from") or [])
            # A failed run's: its turns all still here, and it placed at the first one's time
            # (a summary further in, another agent's, is read like any turn).
            if (
                sources
                and sources <= in_window.keys()
                and turn["ts"] == min(in_window[m] for m in sources)
            ):
                w.replaced_unread.append(turn)
                continue
            if leading:
                if len(turn["content"]) <= allowance:
                    allowance -= len(turn["content"])
                    w.folded.append(turn)
                continue  # one that does not fit stays live
        leading = False
        w.preceding += not is_summary(turn)
        if w.turns and len(turn["content"]) > budget:
            full = True
            continue
        budget -= len(turn["content"])
        w.turns.append(turn)
        if not is_summary(turn):
            w.new_turns += 1
    return w


def _prompt(w: Window, prompt_chars: int) -> str:
    """Earlier summaries, then the turns; a first turn longer than the budget is cut to it."""
    parts = [f"[earlier summary]\n{t['content']}" for t in w.folded]
    parts += [f"[{t['role']}] {t['content'][:prompt_chars]}" for t in w.turns]
    return "\n\n".join(parts)


@op(
    "conversation.compact",
    role="writer",
    kind="idempotent",
    audited=True,
    mcp="unlisted",
)
def compact(inp: CompactInput, ctx: OpContext) -> CompactOutput:
    """Summarise the oldest turns before the last `keep_recent` into one embedded system turn
    that lists them in `metadata.compacted_from`, and retire the originals."""
    deps = ctx.deps
    live_settings = ctx.live()
    if not deps.llm.answers:
        raise UnavailableError(
            "conversation.compact needs an LLM provider: set LOOM_LLM_PROVIDER=openai"
        )
    agent = any_agent(inp.agent)
    scope = (inp.org, inp.namespace, inp.thread_id)
    with deps.pool.connection() as conn:
        live = live_thread_turns(conn, *scope, agent)
    w = plan_window(
        live,
        inp.keep_recent,
        live_settings.conversation_compact_prompt_chars,
        live_settings.conversation_compact_summary_chars,
        inp.min_to_compact,
    )
    unready = _window_refusal(w, inp.min_to_compact)
    if unready:
        return _refused(unready)
    result = _summarise(deps, inp, w, live_settings.conversation_compact_prompt_chars)
    spent = (result.tokens_in, result.tokens_out)
    summary = result.text.strip()
    if not summary:
        return _refused("summarizer-empty", *spent)
    if is_sensitive_embedded(summary, EMBED_CHARS):
        return _refused("summary-high-sensitivity", *spent)
    try:
        vector = deps.embedder.embed_documents([summary[:EMBED_CHARS]])[0]
    except EmbedderError:
        return _refused("embed-failed", *spent)
    with deps.pool.connection() as conn:
        ensure_vector_index(conn, len(vector), deps.vector_indexes)
    return _replace_window(deps, inp, w, summary, vector, spent)


def _refused(reason: str, tokens_in: int = 0, tokens_out: int = 0) -> CompactOutput:
    return CompactOutput(
        compacted=False,
        messages_summarized=0,
        summary_msg_id="",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        reason=reason,
    )


def _window_refusal(w: Window, min_to_compact: int) -> str | None:
    """Why the window, as read, is not worth a summarizer call; None when it is."""
    if w.new_turns == 0:
        if w.folded or w.replaced_unread or any(is_summary(t) for t in w.turns):
            return "already-compacted"
        return "nothing-to-compact" if w.held_back else "below-min-to-compact"
    if w.preceding < min_to_compact:
        return "below-min-to-compact"
    return None


def _summarise(deps: Deps, inp: CompactInput, w: Window, prompt_chars: int) -> LLMResult:
    """The summarizer's answer, under the namespace's extraction policy."""
    policy = deps.extraction_policy(inp.org, inp.namespace)  # 503 when policies are stale
    deps.require_model_calls(inp.org)
    system = SUMMARIZER_SYSTEM + (policy_block(policy) if policy else "")
    try:
        return deps.llm.complete(system, _prompt(w, prompt_chars))
    except LLMError as exc:
        raise UpstreamError(f"the summarizer failed: {exc}") from exc


def _replace_window(
    deps: Deps,
    inp: CompactInput,
    w: Window,
    summary: str,
    vector: np.ndarray,
    spent: tuple[int, int],
) -> CompactOutput:
    """Under the thread's lease, all or nothing: retire the window's turns, if it still stands,
    and write the summary and its vector in their place."""
    agent = any_agent(inp.agent)
    scope = (inp.org, inp.namespace, inp.thread_id)
    retiring = w.turns + w.folded + w.replaced_unread
    keys = [(t["agent"], t["msg_id"]) for t in retiring]
    with deps.pool.connection() as conn:
        take_thread_lease(conn, *scope)
        # The window was read before the summarizer ran: read it again under the lease. A
        # turn deleted or retired by another compaction meanwhile means the window changed,
        # and nothing is written; a turn saved meanwhile is left out (it stays live).
        now = window_state(conn, *scope, keys)
        if len(now.live) < len(set(keys)):
            return _refused("already-compacted" if now.summarised else "nothing-to-compact", *spent)
        kept = [t for t in w.turns if (t["agent"], t["msg_id"]) not in now.saved]
        sources = [t["msg_id"] for t in kept if not is_summary(t)]
        if not sources:
            return _refused("nothing-to-compact", *spent)
        # Turns of the window saved meanwhile no longer count toward min_to_compact.
        if w.preceding - (w.new_turns - len(sources)) < inp.min_to_compact:
            return _refused("below-min-to-compact", *spent)
        wanted = {(t["agent"], t["msg_id"]) for t in kept + w.folded + w.replaced_unread}
        if agent is None:  # every agent's: each summarised turn goes with all its copies
            wanted |= unsaved_copies(conn, *scope, sources)
        retired = retire_turns(conn, *scope, sorted(wanted))
        if retired.keys != wanted:  # only the call that retires the turns writes a summary
            conn.rollback()
            return _refused("nothing-to-compact", *spent)
        first = kept[0]
        author = agent or first["agent"]
        turn = NewTurn(
            org=inp.org,
            namespace=inp.namespace,
            thread_id=inp.thread_id,
            agent=author,
            msg_id=summary_msg_id(author, sources),
            role="system",
            content=summary,
            metadata={"compacted_from": sources},
        )
        if not insert_summary(conn, turn, first["ts"], retired.at):
            conn.rollback()  # a summary of these turns was deleted: it is not brought back
            return _refused("already-compacted", *spent)
        insert_vectors(
            conn,
            deps.embedder.name,
            [TurnVector(turn, first["ts"], summary[:EMBED_CHARS], vector, None)],
        )
    return CompactOutput(
        compacted=True,
        messages_summarized=len(sources),
        summary_msg_id=turn.msg_id,
        tokens_in=spent[0],
        tokens_out=spent[1],
        reason="",
    )
