"""Structured JSON logs (Powertools Logger): one line per op with op, org, namespace, status."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from aws_lambda_powertools.logging import Logger

logger = Logger(service="loom")


@contextmanager
def logging_to_stderr() -> Iterator[None]:
    """Log lines go to stderr while a command runs: its stdout holds only its result, for
    scripts to read. Restored after, since chalice configures its own logging (the same
    `loom` logger) unless ours writes to stdout."""
    handler = logger.registered_handler
    if not isinstance(handler, logging.StreamHandler):
        yield
        return
    old = handler.setStream(sys.stderr)
    try:
        yield
    finally:
        if old is not None:
            handler.setStream(old)
