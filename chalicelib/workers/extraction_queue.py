"""The extraction_queue worker: replays deferred requests through the inline handler.

At-least-once delivery is safe: a job is claimed by state with a lease, so a second delivery
of a finished or running job does nothing, and a killed worker's job is taken again once its
lease expires (an attempt spent: a job that keeps killing its worker ends failed); a replay
reuses its evidence rows and rewrites facts as `unchanged`. A worker whose lease ran out
before it finished changes nothing: its result and its retry are fenced by the claim's lease.
With the worker switched off (LOOM_EXTRACTION_QUEUE_ENABLED=false) jobs stay pending: the SQS
consumer sends each message back for later and runs nothing.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.auth import Caller
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.errors import LoomError, UnavailableError
from chalicelib.observability import logger
from chalicelib.providers.llm import GATEWAY_WAIT, LLMHeldError, LLMUnavailableError
from chalicelib.providers.queue import SQS_MAX_DELAY
from chalicelib.store import erasure_jobs, job_claims, model_calls
from chalicelib.store import extraction_queue as store
from chalicelib.store.extraction_support import Drop, record_drops

BACKOFF_SECONDS = (15, 60, 300, 1800)  # after the 1st, 2nd, 3rd and later failed attempts
UNREACHABLE_DELAY = 15
TTL_DAYS = 30
# A running job whose lease expired this long ago was not taken again by a redelivery of its
# message (SQS makes a message visible again 720 s after it was received, 420 s after a 300 s
# lease): its message is gone (the dead-letter queue after five receives), so it is taken back.
LOST_AFTER_SECONDS = 900
# The longest a gateway's hold keeps a job (a Retry-After further off is cut to this): the
# queue drops a request still waiting a day before its 30-day TTL.
GATEWAY_MAX_HOLD_SECONDS = 86400.0


def _unreachable(exc: BaseException) -> bool:
    """A provider that could not be reached (or policies unreadable): no attempt spent."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, LLMUnavailableError | UnavailableError):
            return True
        seen = seen.__cause__
    return False


def process_job(deps: Deps, queue_id: str) -> str:
    """Run one job if it is due; returns what happened (done, retry, held, failed, skipped,
    early, or lost: its lease ran out before it finished, and what it did is not recorded)."""
    settings = deps.live()
    with deps.pool.connection() as conn:
        job = store.claim(
            conn,
            queue_id,
            settings.extraction_queue_lease_seconds,
            settings.extraction_queue_max_attempts,
        )
    if job is None:
        return _not_claimed(deps, queue_id)
    if job["status"] == "failed":  # its worker was lost (killed, out of time) once too often
        logger.warning(
            "deferred extraction failed",
            extra={"queue_id": queue_id, "error": job_claims.LOST_WORKER},
        )
        return "failed"
    lease = job["lease_until"]
    from chalicelib.registry import call

    caller = Caller(
        org=job["org"],
        role="writer",
        read_scope="own_user" if job["read_user_id"] else "namespace",
        read_user_id=job["read_user_id"],
        agent=job["token_agent"],
        principal=job["principal"],
    )
    # Dated when it was asked for (a job queued before requests kept their time: its row's).
    body = {
        "request_time": job["created_at"].isoformat(),
        **job["request"],
        "defer": False,
        "request_id": queue_id,
    }
    try:
        held = deps.model_calls_off(job["org"])
        out = {} if held else call("memory.set_from_messages", body, caller, deps).body
    except Exception as exc:
        _erase_again(deps, job)
        return _not_run(deps, job, exc)
    if held:  # no model call, no attempt spent: it waits for the switch to come back on
        with deps.pool.connection() as conn:
            kept = store.hold(conn, queue_id, lease=lease, reason=model_calls.REASON)
        return "held" if kept else _lost(queue_id)
    _erase_again(deps, job)
    result = {"written": out["written"], "pipeline_errors": out["pipeline_errors"]}
    with deps.pool.connection() as conn:
        finished = store.finish(conn, queue_id, result, lease)
    return "done" if finished else _lost(queue_id)


def _not_claimed(deps: Deps, queue_id: str) -> str:
    """A message for a job no claim took: one that came before its time (or before the end of
    a gateway hold on it or on its enqueuer) is sent again for then; any other is skipped."""
    with deps.pool.connection() as conn:
        state = store.claimable_at(conn, queue_id)
    if state and state[0] in ("pending", "held") and state[1] is not None:
        wait = (state[1] - deps.clock()).total_seconds()
        deps.queue.send(queue_id, min(SQS_MAX_DELAY, max(1, int(wait))))
        return "early"
    return "skipped"


def _not_run(deps: Deps, job: dict[str, Any], exc: Exception) -> str:
    """A replay that raised: held when the gateway held its model call, else tried again
    later (an attempt spent unless the provider or the policies could not be reached), or
    failed once its attempts ran out."""
    settings = deps.live()
    queue_id, lease = job["queue_id"], job["lease_until"]
    gateway = _gateway_hold(exc)
    if gateway is not None:
        return _hold_for_gateway(deps, queue_id, lease, gateway)
    unreachable = _unreachable(exc)
    error = _stored_error(exc, queue_id)
    base = (
        UNREACHABLE_DELAY
        if unreachable
        else job_claims.backoff(BACKOFF_SECONDS, job["attempts"] + 1)
    )
    delay = base * settings.extraction_queue_delay_scale
    with deps.pool.connection() as conn:
        status = store.retry_later(
            conn,
            queue_id,
            lease=lease,
            delay_seconds=delay,
            error=error,
            spend_attempt=not unreachable,
            max_attempts=settings.extraction_queue_max_attempts,
        )
    if status is None:
        return _lost(queue_id)
    if status == "pending":
        deps.queue.send(queue_id, int(delay))
    logger.warning("deferred extraction failed", extra={"queue_id": queue_id, "error": error})
    return "retry" if status == "pending" else "failed"


def _gateway_hold(exc: BaseException) -> LLMHeldError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, LLMHeldError):
            return seen
        seen = seen.__cause__
    return None


def hold_seconds(settings: Settings, held: LLMHeldError) -> float:
    """How long the gateway holds a job: a wait as long as its Retry-After asked (the
    configured wait when it named none), a refusal until it is asked again; at most a day."""
    if held.reason == GATEWAY_WAIT:
        wanted = held.retry_after
        if wanted is None:
            wanted = settings.extraction_queue_gateway_wait_seconds
    else:
        wanted = settings.extraction_queue_gateway_refused_seconds
    return min(max(wanted, 1.0), GATEWAY_MAX_HOLD_SECONDS)


def _hold_for_gateway(deps: Deps, queue_id: str, lease: Any, held: LLMHeldError) -> str:
    """Held with the gateway's reason until the hold ends, no attempt spent; its message comes
    back then (SQS), and the worker claims none of its enqueuer's requests in the namespace
    meanwhile."""
    seconds = hold_seconds(deps.live(), held)
    with deps.pool.connection() as conn:
        kept = store.hold(
            conn, queue_id, lease=lease, reason=held.reason, seconds=seconds, error=str(held)
        )
    if not kept:
        return _lost(queue_id)
    deps.queue.send(queue_id, min(SQS_MAX_DELAY, int(seconds) + 1))
    logger.warning(
        "deferred extraction held by the model gateway",
        extra={"queue_id": queue_id, "reason": held.reason, "seconds": seconds},
    )
    return "held"


def _stored_error(exc: Exception, queue_id: str) -> str:
    """The last_error the batch's tenant reads (memory.extraction_status_mine): a LoomError's
    own message (written for the caller), else only the error's type; its text, which may
    carry what no tenant should read, goes to the log."""
    if isinstance(exc, LoomError):
        return exc.message
    logger.error(
        "deferred extraction raised", extra={"queue_id": queue_id, "error": repr(exc)[:2000]}
    )
    return f"internal error ({type(exc).__name__}); see the server log"


def _erase_again(deps: Deps, job: dict[str, Any]) -> None:
    """An erasure of the job's user that finished after the claim took the request out of the
    table ran before the replay wrote (the handler's own check starts later, once it runs):
    it runs again, so nothing it erased comes back."""
    with deps.pool.connection() as conn:
        erasure_jobs.erase_again(
            conn,
            org=job["org"],
            namespace=job["namespace"],
            user_id=job["user_id"],
            since=job["claimed_at"],
        )


def _lost(queue_id: str) -> str:
    """The claim's lease ran out before this worker finished, and the job is another's now:
    its outcome is that worker's to record."""
    logger.warning("deferred extraction outlived its lease", extra={"queue_id": queue_id})
    return "lost"


def _paused(deps: Deps, queue_id: str) -> str:
    """The worker is switched off: the job stays as it is, and its message comes back later."""
    with deps.pool.connection() as conn:
        state = store.not_before(conn, queue_id)
    if state is None or state[0] in ("done", "failed"):
        return "skipped"
    deps.queue.send(queue_id, SQS_MAX_DELAY)
    return "paused"


def handle_sqs_batch(deps: Deps, event: dict[str, Any]) -> dict[str, Any]:
    """An SQS batch with partial batch responses: one bad record never fails the rest."""
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        process_partial_response,
    )

    enabled = deps.live().extraction_queue_enabled

    def record_handler(record: Any) -> str:
        queue_id = json.loads(record.body)["queue_id"]
        return process_job(deps, queue_id) if enabled else _paused(deps, queue_id)

    processor = BatchProcessor(event_type=EventType.SQS)
    answer = process_partial_response(
        event=event, record_handler=record_handler, processor=processor
    )
    return dict(answer)


def drain_due(deps: Deps) -> dict[str, int]:
    """The local worker: run due jobs straight from the table (no SQS needed)."""
    counts: dict[str, int] = {}
    settings = deps.live()
    if not settings.extraction_queue_enabled:
        return counts
    release_held(deps)
    with deps.pool.connection() as conn:
        due = store.due_jobs(conn, settings.extraction_queue_batch)
    for queue_id in due:
        outcome = process_job(deps, queue_id)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def expire_stale_jobs(deps: Deps) -> int:
    """A request still waiting a day before the queue's 30-day TTL is dropped, with a record;
    a job past the TTL is removed, its transcript with it. The jobs dropped."""
    with deps.pool.connection() as conn:
        expired = store.expire_old(conn, TTL_DAYS - 1)
        for _, org, namespace in expired:
            record_drops(conn, org, namespace, [Drop("extraction_queue", "expired", 1, "")])
        store.drop_past_ttl(conn, TTL_DAYS)
    return len(expired)


def release_held(deps: Deps, org: str | None = None) -> list[str]:
    """Jobs held by a model-calls switch that is back on go back to pending and are sent: the
    org's, or every org's whose switch is on in the table. The server that took the switch
    releases the org's at once; each worker pass releases any that a server still reading the
    switch off held since."""
    off = frozenset() if org is not None else _orgs_off(deps)
    with deps.pool.connection() as conn:
        ids = store.release_held(conn, model_calls.REASON, org=org, still_held=off)
    for queue_id in ids:
        deps.queue.send(queue_id)
    return ids


def _orgs_off(deps: Deps) -> frozenset[str]:
    with deps.pool.connection() as conn:
        return model_calls.orgs_off(conn)


def resend_stranded(deps: Deps) -> int:
    """Send again the message of jobs due for five minutes and still pending (a send that
    failed after its row committed, or a message lost), and take back the jobs of workers lost
    long ago (an attempt spent) and send them, and release the jobs held by a model-calls
    switch now back on: the table is the truth. Nothing while the worker is switched off."""
    settings = deps.live()
    if not settings.extraction_queue_enabled:
        return 0
    released = len(release_held(deps))
    with deps.pool.connection() as conn:
        taken = store.take_back_lost(
            conn, LOST_AFTER_SECONDS, settings.extraction_queue_max_attempts, 500
        )
        ids = [q for q, status in taken if status == "pending"]
        ids += store.stranded(conn, 300, 500)
    for queue_id in ids:
        deps.queue.send(queue_id)
    return released + len(ids)
