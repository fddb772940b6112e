"""The `openai` client both OpenAI-compatible providers use: made on first use (the import
is heavy for a cold start), one retry, every try bounded."""

from __future__ import annotations

from typing import Any

from chalicelib.observability import logger

MAX_RETRIES = 1  # a call is tried at most twice, each try bounded by the timeout


class LazyOpenAI:
    def __init__(self, base_url: str | None, api_key: str | None, timeout: float):
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._client: Any = None

    def __call__(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self._base_url,
                api_key=self._api_key or "unset",
                max_retries=MAX_RETRIES,
                timeout=self._timeout,
            )
        return self._client


def failure_text(exc: Exception, provider: str) -> str:
    """What a failed call may say to the tenant it was made for: the provider's status code, or
    the kind of failure. Never the provider's own words, which can quote part of the platform's
    API key ("Incorrect API key provided: sk-...") or name its account: they are logged here,
    where only an operator reads them."""
    import openai

    status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
    logger.warning(
        f"{provider} call failed",
        extra={"provider_status": status, "error_type": type(exc).__name__, "error": str(exc)},
    )
    if status is not None:
        return f"the {provider} answered {status}; see the server log"
    if isinstance(exc, openai.APITimeoutError):  # a kind of APIConnectionError: asked first
        return f"the {provider} did not answer in time; see the server log"
    if isinstance(exc, openai.APIConnectionError):
        return f"the {provider} could not be reached; see the server log"
    return f"the {provider} call failed ({type(exc).__name__}); see the server log"
