"""The default pipeline's steps, in the spec's order."""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime
from typing import Any

from chalicelib.concurrent_work import run_concurrently
from chalicelib.config import Settings
from chalicelib.errors import UpstreamError, ValidationFailedError
from chalicelib.extraction import prompts
from chalicelib.extraction.durable import is_activity_narration, non_durable_reason
from chalicelib.extraction.pipeline import (
    DEFAULT_STEPS,
    ExtractionFailedError,
    Fact,
    Run,
    is_coding_capture,
    step,
)
from chalicelib.providers.embedder import EmbedderError
from chalicelib.providers.llm import LLMError, ModelNotFoundError, UnparsableAnswerError
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.memory_writer import Entry, canonical_hash, mint_key, write_entries
from chalicelib.storable import unstorable
from chalicelib.store import memories as memory_store
from chalicelib.store.extraction_support import Drop, cache_response, cached_response
from chalicelib.store.pool import autocommit_connection

_WORD = re.compile(r"[a-z0-9]+")
# Model text PostgreSQL cannot store (a NUL, a lone surrogate): dropped, counted as a parse loss.
UNSTORABLE = "text the database cannot hold"
FACT_VALUE_CHARS = 10_000  # an extracted fact's value is cut here (counted as a drop)
FORGET_BY_CONTENT = 50  # a window's latest forget requests matched by content


def cache_key(run: Run, model: str, system: str, user: str) -> str:
    """The response cache's key: the run's org, namespace and user, the model and the whole
    prompt, so no one reads an answer cached for another (a hit would tell them another
    tenant or user sent the text)."""
    subject = [run.org, run.namespace, run.user_id]
    return hashlib.sha256(json.dumps([*subject, model, system, user]).encode()).hexdigest()


def call_model(
    run: Run,
    system: str,
    user: str,
    model: str | None = None,
    stage: str = "loom.llm_extract",
) -> dict[str, Any]:
    """A JSON model call through the org's response cache, keyed on the whole prompt. An
    answer that does not parse still cost its tokens: they are counted, and the loss is a
    `parse` drop of `stage` that names them."""
    llm = run.deps.llm
    digest = cache_key(run, model or llm.name, system, user)
    ttl_days = run.live.extraction_cache_ttl_days
    with autocommit_connection(run.deps.pool) as conn:
        cached = cached_response(conn, digest, ttl_days)
    if cached is not None:
        text, tokens_in, _ = cached
        run.response_cache_hits += 1
        run.response_cache_tokens_in += tokens_in
        return dict(json.loads(text))
    # The request was refused up front if its plan needed more; this holds the ceiling for
    # an operator's own steps too.
    ceiling = run.live.memory_extract_max_model_calls
    if run.model_calls >= ceiling:
        raise ValidationFailedError(
            f"this request reached its ceiling of {ceiling} model calls"
            " (LOOM_MEMORY_EXTRACT_MAX_MODEL_CALLS)"
        )
    run.model_calls += 1
    try:
        result = llm.complete(system, user, json_output=True, model=model)
    except UnparsableAnswerError as exc:
        run.tokens_in += exc.tokens_in
        run.tokens_out += exc.tokens_out
        run.cached_tokens_in += exc.cached_tokens_in
        said = "model answer is not a JSON object"
        run.drops.append(Drop(stage, "parse", 1, said, exc.tokens_in, exc.tokens_out))
        raise
    run.tokens_in += result.tokens_in
    run.tokens_out += result.tokens_out
    run.cached_tokens_in += result.cached_tokens_in
    with run.deps.pool.connection() as conn:
        cache_response(
            conn,
            (run.org, run.namespace, run.user_id),
            digest,
            result.text,
            result.tokens_in,
            result.tokens_out,
            ttl_days,
        )
    return result.data or {}


@step("loom.fetch_namespace_categories")
def fetch_namespace_categories(run: Run) -> None:
    with autocommit_connection(run.deps.pool) as conn:
        run.categories = memory_store.namespace_categories(conn, run.org, run.namespace)


@step("loom.fetch_existing_memories")
def fetch_existing_memories(run: Run) -> None:
    # A turn that reads as high is never sent to the embedder, nor is a query that reads as
    # high once the others are joined and cut.
    plain = [m["content"] for m in run.messages if m["role"] == "user"]
    said = " ".join(c for c in plain if not is_sensitive(c))[:2000]
    if not said.strip() or is_sensitive(said):
        return
    try:
        query_vec = run.deps.embedder.embed_query(said)
    except EmbedderError as exc:
        raise UpstreamError(f"embedder unavailable: {exc}") from exc
    with autocommit_connection(run.deps.pool) as conn:
        rows = memory_store.vector_leg(
            conn,
            org=run.org,
            namespace=run.namespace,
            users=[run.user_id, "-"],
            model=run.deps.embedder.name,
            query_vec=query_vec,
            depth=20,
            kinds=["fact", "record"],
        )
    run.existing = [(r["key"], r["value"]) for r in rows]


Segment = list[tuple[int, dict[str, Any]]]


def segment_messages(messages: list[dict[str, Any]], live: Settings) -> tuple[list[Segment], str]:
    """Turns cut into windows of LOOM_MEMORY_EXTRACT_SIZE_SEGMENT_CHARS (turn-aligned), and
    the segmenter that cut them (whole or size)."""
    indexed = list(enumerate(messages))
    limit = live.memory_extract_size_segment_chars
    total = sum(len(m["content"]) for m in messages)
    if not live.memory_extract_size_segment_enabled or total <= limit:
        return [indexed], "whole"
    out: list[Segment] = [[]]
    size = 0
    for i, m in indexed:
        if out[-1] and size + len(m["content"]) > limit:
            out.append([])
            size = 0
        out[-1].append((i, m))
        size += len(m["content"])
    return out, "size"


def planned_model_calls(
    messages: list[dict[str, Any]], extra_tags: list[str], steps: list[str] | None, live: Settings
) -> int:
    """The most model calls a run of these steps makes: each loom.llm_extract one a segment
    and the coverage sweep's, each loom.verify_durable one a verifier model (coding captures
    only). What the response cache answers is no call, so a run may make fewer."""
    segments = len(segment_messages(messages, live)[0])
    sweep = 1 if live.memory_extract_coverage_sweep_enabled else 0
    verifiers = len(live.memory_extract_verify_models) if is_coding_capture(extra_tags) else 0
    names = steps or list(DEFAULT_STEPS)
    extracts = names.count("loom.llm_extract")
    return extracts * (segments + sweep) + names.count("loom.verify_durable") * verifiers


def _parse_facts(run: Run, answer: dict[str, Any]) -> list[Fact]:
    facts, malformed, unstored, spans, cut = [], 0, 0, 0, 0
    for raw in answer.get("facts") or []:
        try:
            subject, attribute = str(raw["subject"]).strip(), str(raw["attribute"]).strip()
            value = str(raw["value"]).strip()
            if not (subject and attribute and value):
                raise ValueError("empty")
            indices = [int(i) for i in raw.get("source_message_indices") or []]
            tags = [str(t)[:100] for t in raw.get("tags") or []][:20]
        except (KeyError, TypeError, ValueError):
            malformed += 1
            continue
        if unstorable([value, tags]) is not None:
            unstored += 1  # text the database cannot hold (a NUL, a lone surrogate)
            continue
        cut += len(value) > FACT_VALUE_CHARS
        span = str(raw.get("span") or "")[:1000]
        if unstorable(span) is not None:
            spans += 1
            span = ""
        facts.append(
            Fact(
                key=mint_key(subject, attribute),
                value=value[:FACT_VALUE_CHARS],
                tags=sorted(set(tags) | set(run.extra_tags)),
                indices=[i for i in indices if 0 <= i < len(run.messages)],
                span=span,
                about=str(raw.get("about") or "user"),
                valid_at=_anchor(run, indices),
            )
        )
    if malformed:
        run.drops.append(Drop("loom.llm_extract", "parse", malformed, "fact without subject/value"))
    if unstored:
        run.drops.append(Drop("loom.llm_extract", "parse", unstored, UNSTORABLE + ": fact"))
    if spans:
        run.drops.append(Drop("loom.llm_extract", "parse", spans, UNSTORABLE + ": span (blanked)"))
    if cut:
        run.drops.append(
            Drop(
                "loom.llm_extract",
                "truncation",
                cut,
                f"fact value cut to {FACT_VALUE_CHARS:,} chars",
            )
        )
    return facts


def _forget_requests(run: Run, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's forget requests; one holding text the database cannot hold is dropped."""
    asked = [f for f in answer.get("forget") or [] if isinstance(f, dict)]
    kept = [f for f in asked if unstorable(f) is None]
    if len(kept) < len(asked):
        lost = len(asked) - len(kept)
        run.drops.append(Drop("loom.llm_extract", "parse", lost, UNSTORABLE + ": forget"))
    return kept


def _anchor(run: Run, indices: list[int]) -> datetime | None:
    """A fact is valid from the time of the first turn it cites; else the request's
    `valid_at` fallback."""
    for i in indices:
        if 0 <= i < len(run.messages) and run.messages[i].get("timestamp"):
            stamp = run.messages[i]["timestamp"]
            return stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp))
    return run.valid_at


def _extract(run: Run, segment: Segment, system: str) -> None:
    user = prompts.transcript_prompt(
        segment=segment,
        context=run.last_messages,
        categories=run.categories,
        existing=run.existing,
        observation_date=run.observation_date,
    )
    try:
        answer = call_model(run, system, user)
    except (LLMError, ValueError) as exc:
        raise ExtractionFailedError(f"the extraction call failed: {exc}") from exc
    run.facts.extend(_parse_facts(run, answer))
    requests = _forget_requests(run, answer)
    # Any request naming a subject and attribute retires its key; a window's latest
    # FORGET_BY_CONTENT are also matched by content.
    first = len(requests) - FORGET_BY_CONTENT
    run.forget.extend({**f, "by_content": i >= first} for i, f in enumerate(requests))
    digest = answer.get("digest")
    if isinstance(digest, str) and digest.strip():
        if unstorable(digest) is not None:
            run.drops.append(Drop("loom.llm_extract", "parse", 1, UNSTORABLE + ": digest"))
        else:
            run.digest = (run.digest + "\n" + digest.strip()).strip()


@step("loom.llm_extract")
def llm_extract(run: Run) -> None:
    """One call per segment; then a coverage sweep over user turns nothing cited, if on."""
    if not run.deps.llm.answers:
        return  # the stock fake extracts nothing
    system = prompts.system_prompt(
        prompts.EXTRACT_SYSTEM, run.instructions, run.policy, agent_learnings=run.agent_learnings
    )
    segments, run.segmenter = segment_messages(run.messages, run.live)
    run.segments = len(segments)
    for segment in segments:
        _extract(run, segment, system)
    if run.live.memory_extract_coverage_sweep_enabled:
        cited = {i for f in run.facts for i in f.indices}
        missed = [(i, m) for i, m in enumerate(run.messages) if m["role"] == "user"]
        missed = [(i, m) for i, m in missed if i not in cited]
        if len(missed) >= run.live.memory_extract_coverage_sweep_min_turns:
            _extract(run, missed, system)
    # Never written as memories: filed in the learnings review queue after the pipeline, or
    # dropped when agent learnings are off for this request.
    agent_rules = [f for f in run.facts if f.about == "agent"]
    if run.agent_learnings:
        run.agent_rules = agent_rules
        run.facts = [f for f in run.facts if f.about != "agent"]
    else:
        run.drop("learnings.file", "not_filed", agent_rules)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


_GENERIC_SUBJECTS = {"user", "users", "me", "i", "agent", "assistant", "the", "a"}


def subject_words(key: str) -> set[str]:
    """A served key's subject words: its segments before the attribute, less generic words
    like "user"; a key whose subject is only generic ("user/drink") keeps its attribute."""
    *subject, attribute = key.split("/") if "/" in key else ("", key)
    words = _words(" ".join(subject)) - _GENERIC_SUBJECTS
    return words or (_words(attribute) - _GENERIC_SUBJECTS)


@step("loom.drop_recall_echoes")
def drop_recall_echoes(run: Run) -> None:
    """A fact whose key carries a served key's subject words restates what was served."""
    served = [w for w in (subject_words(k) for k in run.recalled_keys) if w]
    echoes = [f for f in run.facts if any(s <= _words(f.key) for s in served)]
    run.drop("loom.drop_recall_echoes", "recall_echo", echoes)


def _fold(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


@step("loom.drop_session_echoes")
def drop_session_echoes(run: Run) -> None:
    """A fact quoting what the session's own Loom calls carried is an echo."""
    values = [_fold(v) for v in run.session_values if len(_fold(v)) >= 8]
    echoes = [f for f in run.facts if any(v in _fold(f.value) for v in values)]
    run.drop("loom.drop_session_echoes", "session_echo", echoes)


@step("loom.drop_activity_narration")
def drop_activity_narration(run: Run) -> None:
    narration = [f for f in run.facts if is_activity_narration(f.value)]
    run.drop("loom.drop_activity_narration", "activity_narration", narration)


@step("loom.drop_non_durable")
def drop_non_durable(run: Run) -> None:
    """Coding captures only: status snapshots, housekeeping, plans, in-batch repeats."""
    if not run.coding_capture:
        return
    seen: set[str] = set()
    for f in list(run.facts):
        reason = non_durable_reason(f.value)
        h = canonical_hash(f.value)
        if reason is None and h in seen:
            reason = "in_batch_repeat"
        seen.add(h)
        if reason:
            run.drop("loom.drop_non_durable", reason, [f])


VERIFIER_SYSTEM = "You judge facts for a memory."


@step("loom.verify_durable")
def verify_durable(run: Run) -> None:
    """Coding captures only: drop what every verifier model calls non-durable; fails open."""
    models = run.live.memory_extract_verify_models
    if not run.coding_capture or not models or not run.facts or not run.deps.llm.answers:
        return
    verdicts: list[set[int]] = []
    timeout = run.live.memory_extract_verify_timeout_s
    prompt = prompts.verify_prompt([f.value for f in run.facts])
    for model in models:

        def ask(model: str = model) -> dict[str, Any]:
            return call_model(
                run, VERIFIER_SYSTEM, prompt, model=model, stage="loom.verify_durable"
            )

        asked = run_concurrently(ask, runner="model")
        try:
            answer = asked.result(timeout=timeout)
        except FutureTimeout:
            run.pipeline_errors.append(f"loom.verify_durable:timeout:{model}")
            return  # a verifier that does not answer in time keeps every fact
        except ModelNotFoundError:
            continue  # a model the provider does not serve is skipped, as one without its key
        verdicts.append({int(i) for i in answer.get("non_durable") or []})
    every = set.intersection(*verdicts) if verdicts else set()
    non_durable = [run.facts[i] for i in sorted(every) if i < len(run.facts)]
    run.drop("loom.verify_durable", "non_durable", non_durable)


@step("loom.hash_dedup")
def hash_dedup(run: Run) -> None:
    """Drop facts whose canonical content is already stored (or repeated in this batch)."""
    if not run.facts:
        return
    hashes = [canonical_hash(f.value) for f in run.facts]
    with autocommit_connection(run.deps.pool) as conn:
        stored = memory_store.stored_hashes(conn, run.org, run.namespace, run.user_id, hashes)
    seen: set[str] = set()
    repeats = []
    for f, h in zip(list(run.facts), hashes, strict=True):
        if h in stored or h in seen:
            repeats.append(f)
        seen.add(h)
    run.drop("loom.hash_dedup", "duplicate", repeats)


@step("loom.bulk_write")
def bulk_write(run: Run) -> None:
    """Write through the memory plane: blacklist, locks, pins and a verdict per row."""
    if not run.facts:
        return
    by_key: dict[str, Fact] = {}
    for f in run.facts:
        by_key[f.key] = f  # one attribute stated twice: the later statement wins
    run.facts = list(by_key.values())
    run.written_from = dict(by_key)
    run.written = write_entries(
        run.deps,
        org=run.org,
        namespace=run.namespace,
        user_id=run.user_id,
        entries=[
            Entry(
                key=f.key,
                value=f.value,
                tags=f.tags,
                valid_at=f.valid_at,
                observation_date=run.observation_date,
            )
            for f in run.facts
        ],
        source="extraction",
        agent=run.agent,
        session_id=run.session_id,
        principal=run.caller.principal or "local",
        value_updates=run.live.memory_extract_value_updates,
        timings=run.stage_ms,
    )
