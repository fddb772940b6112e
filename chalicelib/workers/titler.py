"""The conversation_titler worker: a short LLM-written title for untitled, active threads.

Turns that read as high are never sent to the model; a thread whose first eight user and
assistant turns all read as high, or whose title reads as high, is marked `title_refused`.
"""

from __future__ import annotations

from chalicelib.deps import Deps
from chalicelib.errors import UnavailableError
from chalicelib.observability import logger
from chalicelib.policies import policy_block
from chalicelib.providers.llm import LLMError
from chalicelib.sensitivity import reads_as_high
from chalicelib.store import titles as store

FIRST_TURNS = 8
CLAIM_SECONDS = 300
TITLE_CHARS = 80
TITLER_SYSTEM = (
    "Write a short title (at most eight words) for the conversation below, naming its topic."
    " Answer with the title only, no quotes."
)


def title_threads(deps: Deps) -> dict[str, int]:
    """One pass over at most LOOM_CONVERSATION_TITLER_MAX_THREADS_PER_PASS threads."""
    live = deps.live()
    counts = {"titled": 0, "refused": 0, "waiting": 0, "failed": 0, "claimed_elsewhere": 0}
    if not live.conversation_titler_enabled or not deps.llm.answers:
        return counts  # the stock fake LLM titles nothing
    with deps.pool.connection() as conn:
        candidates = store.titler_candidates(
            conn,
            live.conversation_titler_window_hours,
            live.conversation_titler_min_turns,
            live.conversation_titler_max_threads_per_pass,
        )
    for c in candidates:
        key = (c["org"], c["namespace"], c["thread_id"])
        with deps.pool.connection() as conn:
            claimed = store.claim_thread(conn, *key, c["first_agent"], CLAIM_SECONDS)
        if not claimed:
            counts["claimed_elsewhere"] += 1
            continue
        outcome, title = _title_for(deps, key)
        with deps.pool.connection() as conn:
            store.finish_claim(conn, *key, title=title, refused=outcome == "refused")
        counts[outcome] += 1
    return counts


def _title_for(deps: Deps, key: tuple[str, str, str]) -> tuple[str, str]:
    """('titled', title), ('refused', ''), ('waiting', '') or ('failed', '')."""
    try:
        policy = deps.extraction_policy(key[0], key[1])
    except UnavailableError:
        return "waiting", ""  # never call the model without the operator's policy
    with deps.pool.connection() as conn:
        turns = store.first_turns(conn, *key, FIRST_TURNS)
    plain = [t for t in turns if not reads_as_high(t["content"])]
    if not plain:
        return ("refused" if len(turns) >= FIRST_TURNS else "waiting"), ""
    transcript = "\n".join(f"{t['role']}: {t['content'][:1000]}" for t in plain)
    try:
        system = TITLER_SYSTEM + (policy_block(policy) if policy else "")
        answer = deps.llm.complete(system, transcript).text
    except LLMError as exc:
        logger.warning("titler model call failed", extra={"thread_id": key[2], "error": str(exc)})
        return "failed", ""
    title = " ".join(answer.strip().strip("\"'").split())[:TITLE_CHARS]
    if not title:
        return "failed", ""
    if reads_as_high(title):
        return "refused", ""
    return "titled", title
