"""Work run beside the request's own thread: a search's legs (each on its own pooled
connection), a model call waited for only so long."""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


@functools.cache
def _runner() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="loom-legs")


def beside(leg: Callable[[], T]) -> Future[T]:
    """Start a leg on the shared runner; the caller runs another meanwhile (one after the
    other on a pool of one, as in Lambda)."""
    return _runner().submit(leg)
