"""Chat models: `openai` (any OpenAI-compatible server), the stock `fake`, and a scripted fake."""

from __future__ import annotations

import email.utils
import json
import math
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from chalicelib.observability import logger
from chalicelib.providers.openai_client import LazyOpenAI, failure_text


class LLMError(Exception):
    """The model call failed or its answer did not parse."""


class ModelNotFoundError(LLMError):
    """The provider does not serve the model asked for (404, model_not_found): a caller that
    named its own model treats it as one without a key (the deployment's answers, or none)."""


class LLMUnavailableError(LLMError):
    """The provider could not be reached (no connection, a timeout, 502, 503 or 504): worth
    trying again later, and no attempt of a queued job is spent on it."""


class LLMHeldError(LLMError):
    """The model gateway held the call for the identity it was made under: asked to wait
    (429, `reason` gateway_wait, `retry_after` seconds when it said so in Retry-After) or
    refused (403, gateway_refused). A queued job waits held, no attempt spent."""

    def __init__(self, message: str, *, reason: str, retry_after: float | None = None):
        super().__init__(message)
        self.reason, self.retry_after = reason, retry_after


GATEWAY_WAIT = "gateway_wait"
GATEWAY_REFUSED = "gateway_refused"


class UnparsableAnswerError(LLMError):
    """The model answered, but not the JSON object asked for: the call was still paid for, so
    it carries the tokens the provider counted."""

    def __init__(self, message: str, *, tokens_in: int, tokens_out: int, cached_tokens_in: int):
        super().__init__(message)
        self.tokens_in, self.tokens_out = tokens_in, tokens_out
        self.cached_tokens_in = cached_tokens_in


@dataclass(frozen=True)
class LLMResult:
    text: str
    data: dict[str, Any] | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""
    cached_tokens_in: int = 0  # of tokens_in, what the provider served from its prompt cache


class LLM(Protocol):
    name: str
    answers: bool  # False for the stock fake: callers skip work that needs a model

    def complete(
        self, system: str, user: str, *, json_output: bool = False, model: str | None = None
    ) -> LLMResult: ...


class FakeLLM:
    """The stock fake: answers nothing, so it extracts nothing and titles nothing."""

    name = "fake"
    answers = False

    def complete(
        self, system: str, user: str, *, json_output: bool = False, model: str | None = None
    ) -> LLMResult:
        return LLMResult(text="", data={} if json_output else None, model=self.name)


@dataclass
class ScriptedLLM:
    """A test fake that answers from a queue and records every prompt it was sent."""

    replies: deque[str | Exception] = field(default_factory=deque)
    prompts: list[tuple[str, str]] = field(default_factory=list)
    name: str = "scripted"
    answers: bool = True

    def complete(
        self, system: str, user: str, *, json_output: bool = False, model: str | None = None
    ) -> LLMResult:
        self.prompts.append((system, user))
        reply = self.replies.popleft() if self.replies else ""
        if isinstance(reply, Exception):
            raise reply
        return _result(reply, json_output, len(system + user) // 4, len(reply) // 4, self.name)


class OpenAILLM:
    """Any OpenAI-compatible chat-completions server, reached through the `openai` client."""

    answers = True

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        timeout_seconds: float = 60.0,
    ):
        self.name = model
        self._openai = LazyOpenAI(base_url, api_key, timeout_seconds)

    def complete(
        self, system: str, user: str, *, json_output: bool = False, model: str | None = None
    ) -> LLMResult:
        extra = {"response_format": {"type": "json_object"}} if json_output else {}
        try:
            resp = self._openai().chat.completions.create(
                model=model or self.name,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                **extra,
            )
        except Exception as exc:
            said = failure_text(exc, "model provider")  # reaches tenants: no provider text
            if _unreachable(exc):
                raise LLMUnavailableError(said) from exc
            held = _gateway_hold(exc)
            if held is not None:
                raise LLMHeldError(said, reason=held, retry_after=_retry_after(exc)) from exc
            if _model_not_served(exc):
                raise ModelNotFoundError(said) from exc
            raise LLMError(said) from exc
        text = resp.choices[0].message.content or ""
        usage = resp.usage
        return _result(
            text,
            json_output,
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
            resp.model or self.name,
            _cached_tokens(usage),
        )


def _cached_tokens(usage: Any) -> int:
    """The prompt tokens the provider served from its cache, where it says
    (usage.prompt_tokens_details.cached_tokens); 0 where it does not."""
    details = getattr(usage, "prompt_tokens_details", None)
    return int(getattr(details, "cached_tokens", None) or 0)


def _unreachable(exc: Exception) -> bool:
    import openai

    if isinstance(exc, openai.APIConnectionError | openai.APITimeoutError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code in (502, 503, 504)


def _gateway_hold(exc: Exception) -> str | None:
    """429: the gateway asks the caller to wait; 403: it refuses the caller's identity."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return None
    return {429: GATEWAY_WAIT, 403: GATEWAY_REFUSED}.get(exc.status_code)


def _retry_after(exc: Any) -> float | None:
    """The wait a 429 asked for, in seconds: Retry-After-Ms, Retry-After as seconds or as an
    HTTP date; None when it named none (or one that does not parse)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            if header == "retry-after-ms":
                continue
            return _http_date_wait(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def _http_date_wait(value: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _model_not_served(exc: Exception) -> bool:
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return False
    return exc.status_code == 404 or getattr(exc, "code", None) == "model_not_found"


def _result(
    text: str, json_output: bool, tokens_in: int, tokens_out: int, model: str, cached: int = 0
) -> LLMResult:
    data = None
    if json_output:
        spent = {"tokens_in": tokens_in, "tokens_out": tokens_out, "cached_tokens_in": cached}
        try:
            data = json.loads(text)
        except ValueError as exc:
            # What the model said stays in the log: an answer may echo what it was sent.
            logger.warning("model answer is not JSON", extra={"model": model, "answer": text[:200]})
            said = "the model's answer is not JSON; see the server log"
            raise UnparsableAnswerError(said, **spent) from exc
        if not isinstance(data, dict):
            raise UnparsableAnswerError("model answer is JSON but not an object", **spent)
    return LLMResult(text, data, tokens_in, tokens_out, model, cached)


def build_llm(settings: Any) -> LLM:
    """The chat model the settings name."""
    if settings.llm_provider == "openai":
        return OpenAILLM(
            model=settings.llm_model,
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            timeout_seconds=settings.llm_timeout_seconds,
        )
    return FakeLLM()
