"""The scheduled workers and their cadence; `loom serve` runs them beside `chalice local`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chalicelib.deps import Deps
from chalicelib.observability import logger


@dataclass(frozen=True)
class ScheduledWorker:
    name: str
    every_seconds: Callable[[Deps], float]
    run: Callable[[Deps], object]


def scheduled_workers() -> list[ScheduledWorker]:
    """Every scheduled worker; Lambda gets one @app.schedule entrypoint per item."""
    from chalicelib.workers.erasure import run_erasure_jobs
    from chalicelib.workers.extraction_queue import drain_due, expire_stale_jobs
    from chalicelib.workers.guard_sweep import sweep_indexed_text
    from chalicelib.workers.memory_maintenance import embed_missing, extract_entities
    from chalicelib.workers.observe_extract import distil_sessions
    from chalicelib.workers.retention import purge_expired_conversations
    from chalicelib.workers.titler import title_threads

    return [
        ScheduledWorker(
            "extraction_queue",
            lambda deps: deps.live().extraction_queue_poll_seconds,
            drain_due,
        ),
        ScheduledWorker("extraction_queue_expiry", lambda deps: 3600.0, expire_stale_jobs),
        ScheduledWorker(
            "observe_extract",
            lambda deps: deps.live().observe_extract_interval_seconds,
            distil_sessions,
        ),
        ScheduledWorker(
            "entity_extractor",
            lambda deps: deps.live().memory_workers_interval_seconds,
            extract_entities,
        ),
        ScheduledWorker(
            "embedding_worker",
            lambda deps: deps.live().memory_workers_interval_seconds,
            embed_missing,
        ),
        ScheduledWorker(
            "conversation_titler",
            lambda deps: deps.live().conversation_titler_interval_minutes * 60.0,
            title_threads,
        ),
        ScheduledWorker(
            "conversation_retention",
            lambda deps: deps.live().retention_interval_minutes * 60.0,
            purge_expired_conversations,
        ),
        ScheduledWorker("erasure_worker", lambda deps: 60.0, run_erasure_jobs),
        ScheduledWorker("guard_sweep", lambda deps: 3600.0, sweep_indexed_text),
    ]


RETRY_CADENCE_SECONDS = 60.0  # a worker's next pass when its cadence cannot be read


def run_forever(
    deps: Deps, stop: threading.Event, workers: Sequence[ScheduledWorker] | None = None
) -> None:
    """Run each worker (every scheduled one by default) at its cadence until `stop` is set; a
    failing pass is logged, not fatal, and so is a cadence that cannot be read (its live
    setting, while the database is away): the worker tries again a minute later."""
    workers = scheduled_workers() if workers is None else workers
    due = {w.name: 0.0 for w in workers}
    elapsed = 0.0
    while not stop.is_set():
        for worker in workers:
            if elapsed >= due[worker.name]:
                try:
                    result = worker.run(deps)
                    logger.info("worker pass", extra={"worker": worker.name, "result": result})
                except Exception:
                    logger.exception("worker pass failed", extra={"worker": worker.name})
                try:
                    every = worker.every_seconds(deps)
                except Exception:
                    logger.exception("worker cadence unread", extra={"worker": worker.name})
                    every = RETRY_CADENCE_SECONDS
                due[worker.name] = elapsed + every
        stop.wait(1.0)
        elapsed += 1.0
