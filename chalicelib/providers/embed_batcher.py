"""Concurrent callers share model calls: one batch a call, one call at a time per model slot.

A caller that finds a slot free runs the batch itself at once (a lone request never waits).
Callers arriving while every slot is busy queue up; when a slot frees, the first of them takes
what is queued (up to `max_batch` texts) as one call. So under load each call carries every
text that arrived during the last one, and with one slot per core (the local model) or a few
(a remote endpoint) every core stays busy. No thread of its own: the callers run the calls.

A query asked for while the same query is queued or being embedded waits for that one's
vector instead of making a call of its own: the legs of one read (context.pack's memories and
knowledge) embed the request's query once. Nothing is kept once the call is done.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from chalicelib.config import Settings
from chalicelib.providers.embedder import (
    Embedder,
    EmbedderError,
    FakeEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
)

Kind = Literal["documents", "query"]


@dataclass
class _Job:
    kind: Kind
    texts: list[str]
    done: bool = False
    vectors: list[np.ndarray] = field(default_factory=list)
    error: EmbedderError | None = None


class BatchingEmbedder:
    """An Embedder over `slots` instances made by `make` (the same object may serve every
    slot: a remote client), whose concurrent calls are batched."""

    def __init__(self, make: Callable[[], Embedder], *, slots: int, max_batch: int = 32):
        first = make()
        self.name, self.dim, self.default_floor = first.name, first.dim, first.default_floor
        self._make = make
        self._idle: list[Embedder] = [first]
        self._unmade = max(slots, 1) - 1  # made when first needed
        self._max_batch = max(max_batch, 1)
        self._queue: list[_Job] = []
        self._queries: dict[str, _Job] = {}  # query jobs queued or running, by their text
        self._cond = threading.Condition()
        self.calls = 0  # model calls made (what the batching saves is read against appends)

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self._run(_Job("documents", list(texts))) if texts else []

    def embed_query(self, text: str) -> np.ndarray:
        return self._run(_Job("query", [text]))[0]

    def _run(self, job: _Job) -> list[np.ndarray]:
        with self._cond:
            twin = self._queries.get(job.texts[0]) if job.kind == "query" else None
            if twin is not None:
                while not twin.done:
                    self._cond.wait()
                if twin.error is not None:
                    raise twin.error
                return [v.copy() for v in twin.vectors]
            if job.kind == "query":
                self._queries[job.texts[0]] = job
            self._queue.append(job)
            while not job.done:
                # Nothing queued: this job is in a call another caller runs.
                slot = self._free_slot() if self._queue else None
                if slot is None:
                    self._cond.wait()
                    continue
                batch = self._take()
                self._cond.release()
                try:
                    self._call(slot, batch)
                finally:
                    self._cond.acquire()
                    self._idle.append(slot)
                    for done in batch:
                        if done.kind == "query":
                            self._queries.pop(done.texts[0], None)
                    self._cond.notify_all()
        if job.error is not None:
            raise job.error
        return job.vectors

    def _free_slot(self) -> Embedder | None:
        if self._idle:
            return self._idle.pop()
        if self._unmade:
            self._unmade -= 1
            return self._make()
        return None

    def _take(self) -> list[_Job]:
        """The queued jobs of the first one's kind, in order, while they fit one call (the
        first always goes, whatever its size)."""
        kind = self._queue[0].kind
        batch: list[_Job] = []
        size = 0
        for job in list(self._queue):
            if job.kind != kind or (batch and size + len(job.texts) > self._max_batch):
                continue
            batch.append(job)
            size += len(job.texts)
            self._queue.remove(job)
            if kind == "query" or size >= self._max_batch:
                break
        return batch

    def _call(self, slot: Embedder, batch: list[_Job]) -> None:
        texts = [t for job in batch for t in job.texts]
        try:
            self.calls += 1
            if batch[0].kind == "query":
                vectors = [slot.embed_query(texts[0])]
            else:
                vectors = list(slot.embed_documents(texts))
            error = None
        except EmbedderError as exc:
            vectors, error = [], exc
        except Exception as exc:  # a slot's failure reaches its callers as the embedder's
            vectors, error = [], EmbedderError(f"embedder failed: {type(exc).__name__}")
        start = 0
        for job in batch:
            job.error = error
            job.vectors = vectors[start : start + len(job.texts)]
            start += len(job.texts)
            job.done = True


def build_embedder(settings: Settings, cores: int | None = None) -> Embedder:
    """The embedder the settings name; the local model and a remote endpoint share their
    calls among concurrent requests (a BatchingEmbedder). `cores`: this machine's, unless given."""
    if settings.embedder == "fake":
        return FakeEmbedder(settings.embed_dim or 256)
    slots = settings.embed_slots or _default_slots(settings, cores or os.cpu_count() or 1)
    if settings.embedder == "openai":
        remote = OpenAIEmbedder(
            model=settings.embed_model or "text-embedding-3-small",
            dim=settings.embed_dim or 1536,
            ask_dimensions=bool(settings.embed_dim),
            base_url=settings.embed_base_url or settings.llm_base_url,
            api_key=settings.embed_api_key or settings.llm_api_key,
            timeout=settings.embed_timeout_seconds,
        )
        return BatchingEmbedder(lambda: remote, slots=slots, max_batch=settings.embed_max_batch)
    # One model instance a slot: the engine's buffers are its own.
    return BatchingEmbedder(LocalEmbedder, slots=slots, max_batch=settings.embed_max_batch)


def _default_slots(settings: Settings, cores: int) -> int:
    if settings.lambda_function_name:  # one request at a time in a Lambda sandbox
        return 1
    if settings.embedder == "openai":
        return 4
    return cores
