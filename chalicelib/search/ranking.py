"""Reciprocal rank fusion and excerpts centred on matched terms: pure functions."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

RRF_K = 60


def rrf(
    legs: Sequence[tuple[Sequence[Hashable], float]], k: int = RRF_K
) -> list[tuple[Hashable, float]]:
    """Fuse ranked lists: each item scores the sum of weight / (k + rank) over the lists that
    hold it (rank from 1); best first, ties in the order items first appeared."""
    scores: dict[Hashable, float] = {}
    for ranked, weight in legs:
        if weight <= 0:
            continue
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def centred_excerpt(text: str, terms: Sequence[str], width: int, *, stems: bool = False) -> str:
    """`width` characters of `text` around the first match of any term (case-blind), else its
    start; with `stems`, a term also matches a word it begins, as a stemmer's lexemes do."""
    if len(text) <= width or not terms:
        return text[:width]
    pattern = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True) if t)
    # Letters and digits bound a term, not underscores: "ledger" is found in ledger_entries_v2.
    end = "[a-z0-9]*" if stems else "(?![a-z0-9])"
    bounded = rf"(?<![a-z0-9])(?:{pattern}){end}"
    match = re.search(bounded, text, re.IGNORECASE) if pattern else None
    if match is None:
        return text[:width]
    slack = width - (match.end() - match.start())
    start = max(0, min(match.start() - slack // 2, len(text) - width))
    return text[start : start + width]
