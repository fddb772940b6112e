"""Sentence-shape rules: narration of tool activity and non-durable coding-session facts.

They match how a sentence is built, not what it is about: what a release changed is kept;
whether its CI was green at the time is dropped.
"""

from __future__ import annotations

import re

_ACTOR = r"^(?:the\s+)?(?:user|assistant|agent|claude|codex|cursor|i|we)\s+"
_NARRATION = re.compile(
    _ACTOR + r"(?:read|viewed|opened|listed|ran|executed|searched|grepped|looked\s+at|checked|"
    r"inspected|fetched|scrolled|browsed|called|invoked|used)\b",
    re.IGNORECASE,
)
_OUTCOME = re.compile(
    r"\b(?:found|because|so that|which|showed|shows|revealed|confirmed|returned|turned out|"
    r"fixed|caused|means|decided|to fix|resolved)\b",
    re.IGNORECASE,
)
_STATUS = re.compile(
    r"\b(?:tests?\s+(?:are|is|were|was)\s+(?:now\s+)?(?:passing|failing|green|red)|"
    r"(?:ci|the build|the pipeline)\s+(?:is|was)\s+(?:now\s+)?(?:green|red|passing|failing)|"
    r"currently|right now|at the moment|in progress|is running|still running)\b",
    re.IGNORECASE,
)
_CHORE = (
    r"(?:committed|pushed|force-pushed|rebased|stashed|cleaned up|reformatted|"
    r"ran the formatter|bumped the lockfile|opened a pr|opened a pull request)\b"
)
# A chore told as what someone did (the actor named or left out: "Committed the fix"), or what
# was done to the work ("the branch was rebased"); "Release 3.1 pushed the minimum Python
# version to 3.11" is what a release changed.
_HOUSEKEEPING = re.compile(
    r"^(?:(?:the\s+)?(?:user|assistant|agent|claude|codex|cursor|i|we)\s+)?(?:just\s+|then\s+)?"
    + _CHORE
    + r"|\b(?:was|were|been|got)\s+(?:just\s+)?"
    + _CHORE,
    re.IGNORECASE,
)
_PLAN = re.compile(
    r"^(?:(?:i|we)\s*(?:will|'ll|am going to|are going to|plan to|intend to|need to)|let me|"
    r"let's|next,?\s+(?:i|we))\b",
    re.IGNORECASE,
)


def is_activity_narration(text: str) -> bool:
    """ "User read lines 1-1000 of X": activity with no outcome."""
    return bool(_NARRATION.search(text.strip())) and not _OUTCOME.search(text)


def non_durable_reason(text: str) -> str | None:
    """Why a coding-session fact will not matter tomorrow, or None when it may."""
    t = text.strip()
    if _PLAN.search(t):
        return "first_person_plan"
    if _STATUS.search(t):
        return "status_snapshot"
    if _HOUSEKEEPING.search(t):
        return "housekeeping"
    return None
