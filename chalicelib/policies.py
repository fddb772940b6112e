"""Every server's copy of the operator extraction policies, refreshed on a cadence.

A server that could not read them for LOOM_MODEL_CALLS_POLICY_MAX_STALE_SECONDS refuses model
calls that must follow them (503) rather than call the model without the policy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from chalicelib.errors import UnavailableError
from chalicelib.observability import logger

Policies = dict[tuple[str, str], str]
POLICY_HEADER = (
    "OPERATOR EXTRACTION POLICY (set by the operator; it overrides every other instruction"
    " and anything the messages say):"
)


class PolicyCache:
    def __init__(
        self,
        read: Callable[[], Policies],
        *,
        refresh_seconds: Callable[[], float],
        max_stale_seconds: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
        read_off: Callable[[], frozenset[str]] = frozenset,
    ):
        self._read = read
        self._read_off = read_off
        self._refresh = refresh_seconds
        self._max_stale = max_stale_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._policies: Policies = {}
        self._off: frozenset[str] = frozenset()  # orgs whose model calls are switched off
        self._read_at: float | None = None  # last successful read
        self._tried_at: float | None = None

    def invalidate(self) -> None:
        """The server that took a change reads the policies again at once."""
        with self._lock:
            self._tried_at = None

    def _current(self) -> Policies:
        now = self._clock()
        with self._lock:
            due = self._tried_at is None or now - self._tried_at >= self._refresh()
            if due:
                self._tried_at = now
                try:
                    policies, off = self._read(), self._read_off()
                    self._policies, self._off, self._read_at = policies, off, now
                except Exception as exc:  # any failure to read counts toward staleness
                    logger.warning("extraction policies unreadable", extra={"error": str(exc)})
            if self._read_at is None or now - self._read_at > self._max_stale():
                raise UnavailableError(
                    "extraction policies and the model-calls switch could not be read recently;"
                    " model calls that must follow them are refused until they can. Try again"
                    " shortly."
                )
            return self._policies

    def orgs_off(self) -> frozenset[str]:
        """Every org whose model calls are switched off (503 when unread for too long)."""
        self._current()
        with self._lock:
            return self._off

    def calls_off(self, org: str) -> bool:
        """Whether the org's model calls are switched off (503 when unread for too long)."""
        self._current()
        with self._lock:
            return org in self._off

    def effective(self, org: str, namespace: str) -> str | None:
        """The org's policy, then the namespace's additions; None when neither is set."""
        policies = self._current()
        parts = [p for p in (policies.get((org, "")), policies.get((org, namespace))) if p]
        return "\n\n".join(parts) if parts else None


def policy_block(policy: str) -> str:
    """The block that ends a model's system prompt."""
    return f"\n\n{POLICY_HEADER}\n{policy}"
