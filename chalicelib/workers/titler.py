"""The conversation_titler worker: a short LLM-written title for untitled, active threads.

Turns that read as high are never sent to the model; a thread whose first eight user and
assistant turns all read as high, or whose title reads as high, is marked `title_refused`.
The title is written only if, once the model has answered, the claim is still this run's, the
thread is still live and untitled, and the turns it was made from are still live (a delete, a
user's own title or an erasure meanwhile wins: the answer is discarded).
"""

from __future__ import annotations

from chalicelib.deps import Deps
from chalicelib.errors import UnavailableError
from chalicelib.observability import logger
from chalicelib.policies import policy_block
from chalicelib.providers.llm import LLMError
from chalicelib.sensitivity import is_sensitive, is_sensitive_embedded
from chalicelib.storable import unstorable
from chalicelib.store import titles as store

FIRST_TURNS = 8
CLAIM_SECONDS = 300
TITLE_CHARS = 80
TURN_CHARS = 1000  # of each turn the model reads
TITLER_SYSTEM = (
    "Write a short title (at most eight words) for the conversation below, naming its topic."
    " Answer with the title only, no quotes."
)


def title_threads(deps: Deps) -> dict[str, int]:
    """One pass over at most LOOM_CONVERSATION_TITLER_MAX_THREADS_PER_PASS threads."""
    live = deps.live()
    counts = {
        "titled": 0,
        "refused": 0,
        "waiting": 0,
        "failed": 0,
        "claimed_elsewhere": 0,
        "discarded": 0,  # the thread changed while the model answered
    }
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
            claim = store.claim_thread(conn, *key, c["first_agent"], CLAIM_SECONDS)
        if claim is None:
            counts["claimed_elsewhere"] += 1
            continue
        try:
            outcome, title, source = _title_for(deps, key)
            with deps.pool.connection() as conn:
                written = store.finish_claim(
                    conn, *key, claim=claim, turns=source, title=title, refused=outcome == "refused"
                )
        except Exception:  # one thread's failure ends neither the pass nor the others'
            logger.exception("titling a thread failed", extra={"thread_id": key[2]})
            counts["failed"] += 1
            continue  # its claim runs out, and a later pass tries it again
        if outcome in ("titled", "refused") and not written:
            outcome = "discarded"
        counts[outcome] += 1
    return counts


Source = list[tuple[str, str]]  # the (agent, msg_id) of each turn an outcome was read from


def _title_for(deps: Deps, key: tuple[str, str, str]) -> tuple[str, str, Source]:
    """('titled', title, turns), ('refused', '', turns), ('waiting', '', []) or
    ('failed', '', [])."""
    try:
        policy = deps.extraction_policy(key[0], key[1])
        if deps.model_calls_off(key[0]):
            return "waiting", "", []  # the org's model calls are switched off
    except UnavailableError:
        return "waiting", "", []  # never call the model without the operator's policy
    with deps.pool.connection() as conn:
        turns = store.first_turns(conn, *key, FIRST_TURNS)
    # A turn is sent cut to TURN_CHARS: the cut must not make a high shape either.
    plain = [t for t in turns if not is_sensitive_embedded(t["content"], TURN_CHARS)]
    if not plain:
        if len(turns) >= FIRST_TURNS:
            return "refused", "", [(t["agent"], t["msg_id"]) for t in turns]
        return "waiting", "", []
    source = [(t["agent"], t["msg_id"]) for t in plain]
    transcript = "\n".join(f"{t['role']}: {t['content'][:TURN_CHARS]}" for t in plain)
    try:
        system = TITLER_SYSTEM + (policy_block(policy) if policy else "")
        answer = deps.llm.complete(system, transcript).text
    except LLMError as exc:
        logger.warning("titler model call failed", extra={"thread_id": key[2], "error": str(exc)})
        return "failed", "", []
    title = " ".join(answer.strip().strip("\"'").split())[:TITLE_CHARS]
    if not title or unstorable(title):  # nothing, or text the database cannot hold (a NUL)
        return "failed", "", []
    if is_sensitive(title):
        return "refused", "", source
    return "titled", title, source
