"""The one wiring point: builds the pool, providers and live settings lazily, on first use."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from chalicelib.config import Settings, setting_name, with_overrides
from chalicelib.errors import UnavailableError
from chalicelib.hooks import Hooks
from chalicelib.observability import logger
from chalicelib.search.tuning import SearchCaches, SearchTuning

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from chalicelib.policies import PolicyCache
    from chalicelib.providers.embedder import Embedder
    from chalicelib.providers.llm import LLM
    from chalicelib.providers.queue import JobQueue


def utcnow() -> datetime:
    return datetime.now(UTC)


class Deps:
    """What handlers and workers need; anything not passed in is built from the settings."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        pool: ConnectionPool | None = None,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        hooks: Hooks | None = None,
        vector_indexes: set[int] | None = None,
        policy_lookup: Callable[[str, str], str | None] | None = None,
        policy_reader: Callable[[], dict[tuple[str, str], str]] | None = None,
        queue: JobQueue | None = None,
        search_tuning: SearchTuning | None = None,
        search_caches: SearchCaches | None = None,
    ):
        self.settings = settings or Settings()
        self.search_tuning = search_tuning or SearchTuning()
        # What search remembers of scopes lives and dies with this Deps.
        self.search_caches = search_caches or SearchCaches()
        self.clock = clock
        self.monotonic = monotonic  # what a worker's time budget is measured on
        self.hooks = hooks or Hooks()
        # The dimensions whose vector index is known built (None: the process's own record).
        self.vector_indexes = vector_indexes
        self._policy_lookup = policy_lookup
        self._policy_reader = policy_reader
        self._policies: PolicyCache | None = None
        self._queue = queue
        self._pool = pool
        self._embedder = embedder
        self._llm = llm
        self._lock = threading.RLock()
        self._live: Settings | None = None
        self._live_read_at = 0.0

    def database_url(self) -> str:
        """The configured database (a URL, or a Secrets Manager secret in the cloud), or the
        embedded one started in LOOM_DATA_DIR."""
        if self.settings.database_url:
            return self.settings.database_url
        if self.settings.database_secret_arn:
            from chalicelib.secrets import database_url

            return database_url(self.settings.database_secret_arn, self.settings.database_host)
        from chalicelib.store.embedded import start_embedded

        try:
            return start_embedded(self.settings.data_dir)
        except (OSError, subprocess.SubprocessError) as exc:
            raise UnavailableError(
                f"cannot start the embedded PostgreSQL in LOOM_DATA_DIR={self.settings.data_dir}"
                f" ({exc}): set LOOM_DATA_DIR to a directory you can write, or LOOM_DATABASE_URL"
                " to a running PostgreSQL"
            ) from exc

    @property
    def pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                from chalicelib.store.migrate import migrate
                from chalicelib.store.pool import open_pool

                url = self.database_url()
                if self.settings.migrate_on_start:
                    migrate(url)
                self._pool = open_pool(
                    url,
                    max_size=self.settings.pool_max_size,
                    prepare=self.settings.database_prepare,
                    timeout=self.settings.pool_timeout_seconds,
                    lock_timeout=self.settings.database_lock_timeout_seconds,
                )
            return self._pool

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                from chalicelib.providers.embed_batcher import build_embedder

                self._embedder = build_embedder(self._with_secret_key("embed_api_key"))
            return self._embedder

    def _with_secret_key(self, field: str) -> Settings:
        """The settings with a provider key read from Secrets Manager when one is named."""
        if not self.settings.llm_api_key_secret_arn or getattr(self.settings, field):
            return self.settings
        from chalicelib.secrets import api_key

        key = api_key(self.settings.llm_api_key_secret_arn)
        return self.settings.model_copy(update={field: key})

    @property
    def llm(self) -> LLM:
        with self._lock:
            if self._llm is None:
                from chalicelib.providers.llm import build_llm

                self._llm = build_llm(self._with_secret_key("llm_api_key"))
            return self._llm

    def live(self) -> Settings:
        """Settings with the database's live values applied, re-read every refresh interval."""
        now = time.monotonic()
        with self._lock:
            fresh = now - self._live_read_at < self.settings.settings_refresh_seconds
            if self._live is not None and fresh:
                return self._live
        from chalicelib.store.live_settings import load_settings

        with self.pool.connection() as conn:
            stored = load_settings(conn)
        stored_live = {setting_name(k): v for k, v in stored.items()}
        live = with_overrides(self.settings, stored_live, strict=False)
        with self._lock:
            self._live, self._live_read_at = live, now
        return live

    @property
    def queue(self) -> JobQueue:
        """Where deferred jobs are delivered: SQS when LOOM_EXTRACTION_QUEUE_URL is set."""
        with self._lock:
            if self._queue is None:
                from chalicelib.providers.queue import SqsQueue, TableQueue

                url = self.settings.extraction_queue_url
                self._queue = SqsQueue(url) if url else TableQueue()
            return self._queue

    @property
    def policies(self) -> PolicyCache:
        with self._lock:
            if self._policies is None:
                from chalicelib.policies import PolicyCache

                self._policies = PolicyCache(
                    self._policy_reader or self._read_policies,
                    refresh_seconds=lambda: self.settings.model_calls_policy_refresh_seconds,
                    max_stale_seconds=lambda: self.settings.model_calls_policy_max_stale_seconds,
                    read_off=self._read_calls_off,
                )
            return self._policies

    def _read_policies(self) -> dict[tuple[str, str], str]:
        from chalicelib.store.extraction_policies import all_policies

        with self.pool.connection() as conn:
            return all_policies(conn)

    def _read_calls_off(self) -> frozenset[str]:
        from chalicelib.store.model_calls import orgs_off

        self.hooks.at("model_calls.read")
        with self.pool.connection() as conn:
            return orgs_off(conn)

    def model_calls_off(self, org: str) -> bool:
        """Whether an org admin switched the org's model calls off, as this server last read
        it (within LOOM_MODEL_CALLS_POLICY_REFRESH_SECONDS); 503 when unread for too long."""
        return self.policies.calls_off(org)

    def orgs_with_calls_off(self) -> frozenset[str]:
        """Every org whose model calls are switched off, as this server last read it; 503 when
        unread for too long."""
        return self.policies.orgs_off()

    def require_model_calls(self, org: str) -> None:
        """503 (code model_calls_off) while the org's model calls are switched off: the client
        sends the request again once they are back on."""
        from chalicelib.errors import UnavailableError

        if self.model_calls_off(org):
            raise UnavailableError(
                f"the model calls of org {org!r} are switched off by its admin; send the"
                " request again once they are back on",
                code="model_calls_off",
            )

    def extraction_policy(self, org: str, namespace: str) -> str | None:
        """The operator's extraction policy in force for a namespace, if any; 503 when the
        policies could not be read for too long."""
        if self._policy_lookup is not None:
            return self._policy_lookup(org, namespace)
        return self.policies.effective(org, namespace)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


_current: Deps | None = None
_current_lock = threading.Lock()


def get_deps() -> Deps:
    """The process-wide Deps, built from the environment on first use."""
    global _current
    with _current_lock:
        if _current is None:
            try:
                _current = Deps()
            except ValidationError as exc:
                # Settings that refuse to serve (LOOM_AUTH=off inside Lambda among them): every
                # request fails, and the log says why in one line before the traceback.
                said = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                logger.error(f"refusing to serve: {said}")
                raise
        return _current


def current_deps() -> Deps | None:
    """The process-wide Deps if one is built (None: get_deps would build one)."""
    with _current_lock:
        return _current


def set_deps(deps: Deps | None) -> None:
    """Swap the process-wide Deps (tests, the CLI)."""
    global _current
    with _current_lock:
        _current = deps
