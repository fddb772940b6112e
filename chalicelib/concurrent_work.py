"""Work run beside the request's own thread: a search's legs (each on its own pooled
connection), a model call waited for only so long."""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal, TypeVar

T = TypeVar("T")
Runner = Literal["search", "model"]
# Search legs and model calls run on runners of their own: a model call left running past its
# timeout never holds up a search's leg.
_THREADS: dict[Runner, int] = {"search": 8, "model": 4}


@functools.cache
def _executor(runner: Runner) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_THREADS[runner], thread_name_prefix=f"loom-{runner}")


def run_concurrently(work: Callable[[], T], *, runner: Runner = "search") -> Future[T]:
    """Start `work` on the runner's threads; the caller goes on with its own meanwhile."""
    return _executor(runner).submit(work)
