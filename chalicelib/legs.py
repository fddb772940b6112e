"""Work run beside the request's own thread: a search's legs (each on its own pooled
connection), a model call waited for only so long."""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal, TypeVar

T = TypeVar("T")
Lane = Literal["search", "model"]
# Search legs and model calls run on runners of their own: a model call left running past its
# timeout never holds up a search's leg.
_WORKERS: dict[Lane, int] = {"search": 8, "model": 4}


@functools.cache
def _runner(lane: Lane) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_WORKERS[lane], thread_name_prefix=f"loom-{lane}")


def beside(leg: Callable[[], T], *, lane: Lane = "search") -> Future[T]:
    """Start a leg on its lane's runner; the caller runs another meanwhile."""
    return _runner(lane).submit(leg)
