"""The `openai` client both OpenAI-compatible providers use: made on first use (the import
is heavy for a cold start), one retry, every try bounded."""

from __future__ import annotations

from typing import Any

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
