"""Settings read from LOOM_* environment variables; no I/O beyond the environment."""

from __future__ import annotations

import ipaddress
import json
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BeforeValidator,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from chalicelib.names import is_name

# Settings that shape the process itself: read once at start, never from the database.
BOOT_ONLY = frozenset(
    {
        "auth",
        "org",
        "host",
        "lambda_function_name",
        "port",
        "data_dir",
        "database_url",
        "migrate_on_start",
        "database_prepare",
        "database_secret_arn",
        "database_host",
        "llm_api_key_secret_arn",
        "llm_provider",
        "llm_model",
        "llm_base_url",
        "llm_api_key",
        "embedder",
        "embed_model",
        "embed_base_url",
        "embed_api_key",
        "embed_dim",
        "pool_max_size",
        "pool_timeout_seconds",
        "database_lock_timeout_seconds",
        "llm_timeout_seconds",
        "embed_timeout_seconds",
        "embed_slots",
        "embed_max_batch",
        "extraction_queue_url",
        # The live-settings reader and the policy cache take these from the boot settings.
        "settings_refresh_seconds",
        "model_calls_policy_refresh_seconds",
        "model_calls_policy_max_stale_seconds",
        # Checked before a request is parsed, without reading the live settings.
        "max_request_bytes",
        # Checked against the database at start (Aurora has no tablespaces).
        "tiering_warm_tablespace",
    }
)


def _text_list(value: Any) -> Any:
    """A list written as text, in the environment or a live setting: a JSON array, or
    comma-separated names (`*`, `bot-a,bot-b`)."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        return parsed
    return [part.strip() for part in value.split(",") if part.strip()]


# NoDecode: pydantic-settings would read a list variable as JSON only.
TextList = Annotated[list[str], NoDecode, BeforeValidator(_text_list)]


class Settings(BaseSettings):
    """Every LOOM_* setting, with the spec's names and defaults."""

    model_config = SettingsConfigDict(
        env_prefix="LOOM_", extra="ignore", validate_default=True, populate_by_name=True
    )

    # Process and deployment.
    # Where the process serves, declared before `auth`, which is checked against them.
    host: str = Field(default="127.0.0.1", min_length=1)  # where `loom serve` listens
    # Set by AWS Lambda in every function it runs.
    lambda_function_name: str | None = Field(
        default=None, validation_alias=AliasChoices("AWS_LAMBDA_FUNCTION_NAME")
    )
    auth: Literal["off", "tokens"] = "off"
    org: str = "local"
    port: int = Field(default=7777, ge=1, le=65535)
    data_dir: str = Field(default=".loom", min_length=1)  # "" would be the working directory
    database_url: str | None = None
    migrate_on_start: bool = True
    database_prepare: bool = True  # false behind RDS Proxy or a transaction pooler
    database_secret_arn: str | None = None  # the cloud: credentials from Secrets Manager
    database_host: str | None = None  # with the secret: the RDS Proxy endpoint
    llm_api_key_secret_arn: str | None = None
    pool_max_size: int = Field(default=8, ge=1, le=100)
    # How long a request waits for a database connection before it answers 503.
    pool_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    # How long a request waits for a lease (a thread's, a brief's) another transaction holds
    # before it answers 503.
    database_lock_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    settings_refresh_seconds: float = Field(default=5.0, ge=0)

    # Providers.
    llm_provider: Literal["fake", "openai"] = "fake"
    # One model call's bound (each of the client's two tries): a stalled provider fails the
    # call instead of holding the request.
    llm_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    # One embedding call's bound (each of two tries): an append fails open (stored, not yet
    # embedded) instead of waiting on a stalled embedding server.
    embed_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    llm_model: str = "gpt-4o-mini"
    llm_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LOOM_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("LOOM_LLM_API_KEY", "OPENAI_API_KEY")
    )
    embedder: Literal["local", "openai", "fake"] = "local"
    embed_model: str = ""
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    # pgvector's HNSW index holds vectors of up to 2,000 dimensions (OpenAI's v3 models
    # shorten theirs when asked: LOOM_EMBED_DIM=1536 for text-embedding-3-large).
    embed_dim: int = Field(default=0, ge=0, le=2000)
    # Model calls that may run at once (0: one a core for the local model, 4 for a remote
    # endpoint, one inside Lambda); concurrent requests share each call, up to this many texts.
    embed_slots: int = Field(default=0, ge=0, le=64)
    embed_max_batch: int = Field(default=32, ge=1, le=2048)

    # Conversations.
    conversation_search_min_similarity: float | None = Field(default=None, ge=-1.0, le=1.0)
    conversation_search_excerpt_chars: int = Field(default=240, ge=1, le=2048)
    conversation_compact_prompt_chars: int = Field(default=32000, ge=1000)
    conversation_compact_summary_chars: int = Field(default=8000, ge=500)
    conversation_titler_enabled: bool = True
    conversation_titler_interval_minutes: int = Field(default=15, ge=1)
    conversation_titler_window_hours: int = Field(default=168, ge=1)
    conversation_titler_min_turns: int = Field(default=4, ge=1)
    conversation_titler_max_threads_per_pass: int = Field(default=10, ge=1)
    # Up to a hundred years: a date further back is outside what a timestamp can hold.
    retention_conversations_days: int = Field(default=0, ge=0, le=36500)
    tiering_conversations_warm_days: int = Field(default=0, ge=0, le=36500)
    # The tablespace (a cheaper volume) month partitions older than the warm bound move to.
    tiering_warm_tablespace: str = Field(
        default="", max_length=63, pattern=r"^([a-z_][a-z0-9_]*)?$"
    )
    # UTC hours a partition may be moved in, as START-END (end excluded; 22-4 wraps midnight);
    # empty: any hour.
    tiering_offpeak_hours: str = Field(
        default="", pattern=r"^(([01]?\d|2[0-3])-([01]?\d|2[0-4]))?$"
    )
    retention_interval_minutes: int = Field(default=60, ge=1)
    memory_search_fanout_max_namespaces: int = Field(default=16, ge=1, le=1000)

    # Session briefs.
    session_brief_llm: bool = True
    session_brief_llm_model: str = ""
    session_brief_window_chars: int = Field(default=24000, ge=1000)
    session_brief_max_windows: int = Field(default=4, ge=1)

    # Extraction.
    model_calls_policy_refresh_seconds: float = Field(default=30.0, ge=0)
    model_calls_policy_max_stale_seconds: float = Field(default=300.0, ge=0)
    extraction_policy_max_namespaces: int = Field(default=1000, ge=0)
    memory_extract_observation_date_default: Literal["request_time"] = "request_time"
    memory_extract_size_segment_enabled: bool = True
    memory_extract_size_segment_chars: int = Field(default=12000, ge=1000)
    memory_extract_coverage_sweep_enabled: bool = False
    memory_extract_coverage_sweep_min_turns: int = Field(default=2, ge=1)
    memory_extract_value_updates: bool = False
    memory_extract_agent_learnings: bool = False
    memory_extract_verify_models: TextList = Field(default_factory=list)
    memory_extract_verify_timeout_s: float = Field(default=20.0, ge=0)
    memory_chunks_max_per_call: int = Field(default=20, ge=0)
    memory_chunk_chars: int = Field(default=1500, ge=200)
    extraction_defer_agents: TextList = Field(default_factory=list)
    extraction_queue_url: str | None = None  # unset: the local worker polls the table
    extraction_queue_enabled: bool = True
    extraction_queue_max_attempts: int = Field(default=8, ge=1)
    extraction_queue_lease_seconds: float = Field(default=300.0, gt=0)
    extraction_queue_poll_seconds: float = Field(default=2.0, gt=0)
    extraction_queue_batch: int = Field(default=10, ge=1, le=100)
    # Multiplies every retry delay (15 s, 1, 5, 30 min); below 1 only in tests and benchmarks.
    extraction_queue_delay_scale: float = Field(default=1.0, gt=0, le=1.0)
    # A replay the model gateway asked to wait (429) with no Retry-After waits held this long;
    # one it refused (403) is held this long, then its model call is tried again.
    extraction_queue_gateway_wait_seconds: float = Field(default=60.0, ge=1)
    extraction_queue_gateway_refused_seconds: float = Field(default=900.0, ge=1)
    # How long the extraction response cache (loom.extraction_cache) serves an answer; the
    # retention worker removes older ones.
    extraction_cache_ttl_days: int = Field(default=30, ge=1, le=36500)

    # Workers of the memory and observe planes.
    observe_extract_enabled: bool = False
    observe_extract_max_sessions_per_pass: int = Field(default=5, ge=1)
    observe_extract_interval_seconds: float = Field(default=60.0, gt=0)
    entity_extractor_enabled: bool = True
    embedding_worker_enabled: bool = True
    memory_workers_interval_seconds: float = Field(default=60.0, gt=0)

    # MCP.
    mcp_session_run_idle_seconds: int = Field(default=1800, ge=1)

    # Request bounds.
    # A body over this answers 413 before it is parsed: API Gateway's own limit (10 MB), so a
    # local server refuses what a deployed one would.
    max_request_bytes: int = Field(default=10_485_760, ge=1)
    # The turns' bytes one conversation.get or conversation.list page answers (at least one
    # turn, however large): a page of 1,000 turns of up to 2 MB each would not fit an answer.
    conversation_page_max_bytes: int = Field(default=1_048_576, ge=1)
    # The model calls one memory.set_from_messages request may make; one that would need more
    # is refused before the first.
    memory_extract_max_model_calls: int = Field(default=100, ge=1)

    @field_validator("auth")
    @classmethod
    def _auth_off_serves_this_machine_only(cls, auth: str, info: ValidationInfo) -> str:
        """Refuse at start LOOM_AUTH=off where other machines reach the server. A field check
        (not a model one): its error shows this value only, never the other settings."""
        host, function = info.data.get("host", "127.0.0.1"), info.data.get("lambda_function_name")
        refusal = auth_off_refusal(auth, host, function)
        if refusal is not None:
            raise ValueError(refusal)
        return auth

    @field_validator("org")
    @classmethod
    def _org_name(cls, org: str) -> str:
        """Refuse at start an org no op accepts: with LOOM_AUTH=off every call runs as it."""
        if not is_name(org):
            raise ValueError("an org is 1-256 characters, no spaces")
        return org

    @field_validator("database_url")
    @classmethod
    def _connection_string(cls, url: str | None) -> str | None:
        """Refuse at start a URL libpq cannot parse (parsing only: nothing is connected)."""
        if url:
            from psycopg import ProgrammingError
            from psycopg.conninfo import conninfo_to_dict

            try:
                conninfo_to_dict(url)
            except ProgrammingError as exc:
                raise ValueError(
                    f"not a PostgreSQL URL ({str(exc).strip()}); write it as"
                    " postgresql://USER:PASSWORD@HOST:PORT/DBNAME"
                ) from exc
        return url


def is_loopback(host: str) -> bool:
    """Whether a listening address reaches this machine only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def auth_off_refusal(auth: str, host: str, lambda_function_name: str | None) -> str | None:
    """Why LOOM_AUTH=off may not serve here, if it may not. With it no token is asked for and
    every caller acts as the install's org_admin, so only this machine may reach it."""
    if auth != "off":
        return None
    if lambda_function_name:
        return (
            f"LOOM_AUTH=off is refused inside AWS Lambda (function {lambda_function_name}):"
            " every caller would act as org_admin without a token; set LOOM_AUTH=tokens"
        )
    if not is_loopback(host):
        return (
            f"LOOM_AUTH=off is refused on host {host}, which other machines reach: every caller"
            " would act as org_admin without a token; listen on 127.0.0.1 or set"
            " LOOM_AUTH=tokens"
        )
    return None


def setting_name(raw: str) -> str:
    """Normalise `LOOM_FOO_BAR` or `foo_bar` to the field name `foo_bar`."""
    name = raw.strip().lower()
    return name[len("loom_") :] if name.startswith("loom_") else name


def with_overrides(base: Settings, overrides: dict[str, Any], strict: bool = True) -> Settings:
    """A copy of `base` with live values applied and validated; boot-only names are skipped.
    With strict=False a value that does not validate is left out instead of raising."""
    live = {k: v for k, v in overrides.items() if k in Settings.model_fields and k not in BOOT_ONLY}
    while live:
        try:
            return Settings.model_validate({**base.model_dump(), **live})
        except ValidationError as exc:
            if strict:
                raise
            bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
            if not bad & set(live):
                raise
            live = {k: v for k, v in live.items() if k not in bad}
    return base
