"""Chat models: `openai` (any OpenAI-compatible server), the stock `fake`, and a scripted fake."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
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
