"""Filing the rules a bot states about itself in the learnings review queue, never as memories
(extraction.txt, "Rules the assistant states about itself"; decision 0027)."""

from __future__ import annotations

import hashlib
import json

from chalicelib.blacklist import blacklisted
from chalicelib.extraction.pipeline import Fact, Run
from chalicelib.sensitivity import is_sensitive
from chalicelib.services.memory_writer import fold_statement
from chalicelib.store import learnings as store
from chalicelib.store import memories as memory_store
from chalicelib.store.pool import autocommit_connection

STAGE = "learnings.file"
USER_QUOTE_CHARS = 200
RULE_QUOTE_CHARS = 400


def candidate_id(agent: str, key: str, text: str) -> str:
    """A candidate's id: its agent, key and rule with only case and spacing folded, so each
    statement of one rule meets the same row."""
    ident = json.dumps([agent, key, fold_statement(text)])
    return hashlib.sha256(ident.encode()).hexdigest()[:32]


def file_agent_rules(run: Run) -> None:
    """File each of the run's agent rules: a supporter row with the user's quotes, then the
    candidate. A rule not filed is counted in loom.memory_drops under its reason."""
    rules, run.agent_rules = run.agent_rules, []
    if not rules:
        return
    with autocommit_connection(run.deps.pool) as conn:
        patterns = memory_store.blacklist_patterns(conn, run.org, run.namespace)
    agent = run.caller.speaks_for(run.agent)
    for rule in rules:
        reason = _refusal(run, rule, agent, patterns)
        if reason is None:
            assert agent is not None
            reason = _file(run, rule, agent, patterns)
        if reason is None:
            run.learning_candidates += 1
        elif reason != "already_supported":
            run.drop(STAGE, reason, [rule])


def _refusal(run: Run, rule: Fact, agent: str | None, patterns: list[str]) -> str | None:
    """Why a rule is never filed, if it is not."""
    if not _assistant_turns(run, rule):
        return "no_assistant_turn"  # not something the assistant said
    if is_sensitive(rule.value) or blacklisted(rule.value, patterns):
        return "sensitive"
    if agent is None:
        return "no_agent"  # a pinned token that names no bot
    return None


def _file(run: Run, rule: Fact, agent: str, patterns: list[str]) -> str | None:
    """Write the statement; None when it wrote a new candidate or this session's support."""
    user_quote, rule_quote = _quotes(run, rule)
    cid = candidate_id(agent, rule.key, rule.value)
    row = store.Rule(
        org=run.org,
        namespace=run.namespace,
        candidate_id=cid,
        agent=agent,
        key=rule.key,
        text=rule.value,
        user_id=run.user_id,
        session_id=run.session_id,
        asked_quote=_shown(user_quote, patterns),
        rule_quote=_shown(rule_quote, patterns),
    )
    try:
        with run.deps.pool.connection() as conn:
            filed = store.file_rule(
                conn,
                row,
                lambda: run.deps.hooks.at("learnings.supporter_written", candidate_id=cid),
            )
    except Exception as exc:  # a failed queue write drops the rule, named in pipeline_errors
        run.pipeline_errors.append(f"{STAGE}:{type(exc).__name__}")
        return "queue_write_failed"
    return None if filed in ("new", "supported") else filed


def _assistant_turns(run: Run, rule: Fact) -> list[int]:
    n = len(run.messages)
    return [i for i in rule.indices if 0 <= i < n and run.messages[i]["role"] == "assistant"]


def _quotes(run: Run, rule: Fact) -> tuple[str, str]:
    """The user turn before the cited assistant turn, and the rule as said: the cited span
    when a cited assistant turn contains it, else that assistant turn."""
    cited = _assistant_turns(run, rule)
    span = rule.span.strip()
    holding = [i for i in cited if span and span in run.messages[i]["content"]]
    turn = (holding or cited)[0]
    said = span if holding else run.messages[turn]["content"]
    before = [m for m in run.messages[:turn] if m["role"] == "user"]
    asked = before[-1]["content"] if before else ""
    return asked[:USER_QUOTE_CHARS], said[:RULE_QUOTE_CHARS]


def _shown(quote: str, patterns: list[str]) -> str:
    """A quote as stored: blank when it reads as high or matches a blacklist pattern."""
    return "" if is_sensitive(quote) or blacklisted(quote, patterns) else quote
