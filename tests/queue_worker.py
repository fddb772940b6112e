"""A deferred-extraction worker in its own process, for the kill test: `python -m
tests.queue_worker DATABASE_URL SECONDS_PER_CALL`. Its model answers one fact per request."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import chalicelib.ops  # noqa: F401  (registers every op: this process is an entrypoint)
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.providers.llm import LLMResult
from chalicelib.providers.queue import FakeQueue
from chalicelib.workers.extraction_queue import drain_due


class OneFactLLM:
    """Answers one fact naming the first user turn's first word; sleeps like a model."""

    name = "one-fact"
    answers = True

    def __init__(self, seconds: float):
        self.seconds = seconds

    def complete(
        self, system: str, user: str, *, json_output: bool = False, model: str | None = None
    ) -> LLMResult:
        time.sleep(self.seconds)
        line = user.split("Conversation:\n", 1)[-1].splitlines()[0]
        word = line.split(": ", 1)[-1].split()[0].lower()
        data: dict[str, Any] = {
            "facts": [
                {
                    "subject": "user",
                    "attribute": f"topic {word}",
                    "value": f"The user talked about {word}.",
                    "source_message_indices": [0],
                }
            ]
        }
        return LLMResult(json.dumps(data), data, 10, 5, self.name)


def worker_deps(url: str, seconds: float, pool: Any = None) -> Deps:
    settings = Settings.model_validate(
        {
            "database_url": url,
            "auth": "tokens",
            "embedder": "fake",
            "settings_refresh_seconds": 0,
            "extraction_queue_lease_seconds": 1.0,
            "migrate_on_start": False,
        }
    )
    return Deps(
        settings, pool=pool, embedder=FakeEmbedder(), llm=OneFactLLM(seconds), queue=FakeQueue()
    )


if __name__ == "__main__":
    deps = worker_deps(sys.argv[1], float(sys.argv[2]))
    while True:
        drain_due(deps)
        time.sleep(0.05)
