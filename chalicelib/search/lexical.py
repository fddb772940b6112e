"""The lexical leg's plan: BM25 statistics of the caller's scope, exact for a small scope and
sampled for a large one. Why: docs/decisions/0013-search-modes.md."""

from __future__ import annotations

import math
from typing import Any

from psycopg import Connection

from chalicelib.search.store_vectors import TurnFilter, filter_params, filter_shape
from chalicelib.search.store_windows import (
    Bm25Read,
    count_windows,
    query_lexemes,
    sample_lexicon,
    sample_terms,
    scope_size,
)
from chalicelib.search.tuning import SearchCaches, SearchTuning

Counted = dict[str, tuple[float, bool]]  # term -> (document frequency, rare)


def plan_window_search(
    conn: Connection,
    f: TurnFilter,
    *,
    model: str,
    query: str,
    k: int,
    tuning: SearchTuning,
    caches: SearchCaches,
) -> Bm25Read | None:
    """The query's lexemes, their statistics in the caller's scope (counted or recalled) and the
    windows to gather; None when no window can match."""
    shape = filter_shape(f)
    _, params = filter_params(f, "e")
    params.update(model=model, query=query, max_terms=tuning.max_terms)
    terms = query_lexemes(conn, params)
    if not terms:
        return None  # no searchable word in the query
    key = (f, model)
    large = caches.fresh(caches.stats, key)
    if large is None:
        params.update(terms=terms, cap=tuning.sample_rows + 1)
        n, avgdl, hits = sample_terms(conn, shape, params)
    if large is None and n <= tuning.sample_rows:  # the whole scope: exact statistics
        df = hits
        gather, op = [t for t, h in hits.items() if h > 0], "|"
        budget = tuning.sample_rows + 1  # every window holding a term
    else:
        if large is None:
            large = scope_size(conn, shape, params)
            _keep(caches, tuning, {key: large})
        n, avgdl = large
        known = _estimate(conn, shape, params, key, terms, n, tuning, caches)
        df = {t: known[t][0] for t in terms}
        gather, op = _gather([t for t in terms if known[t][1]], df, tuning.candidates_max)
        if op == "&" and len(gather) > 1 and tuning.fallback_candidates:
            # No window may hold every common term: then some of those holding the rarest few.
            rarest = sorted(gather, key=lambda t: df[t])[: tuning.fallback_terms]
            params.update(fallback=_tsquery(rarest, "|"), fallback_cand=tuning.fallback_candidates)
        # Windows holding every common term are many and rank alike: a sample of them.
        budget = tuning.candidates_max if op == "|" else tuning.candidates_max // 3
    if not gather or n == 0:
        return None
    params.update(
        terms=list(df),
        lexemes=[_tsquery([t], "|") for t in df],
        idf=[math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df.values()],
        gather=_tsquery(gather, op),
        avgdl=max(avgdl, 1.0),
        k=k,
        cand=budget,
        k1=tuning.bm25_k1,
        b=tuning.bm25_b,
    )
    return Bm25Read(shape, params)


def _estimate(
    conn: Connection,
    shape: tuple[str, ...],
    params: dict[str, Any],
    key: Any,
    terms: list[str],
    n: float,
    tuning: SearchTuning,
    caches: SearchCaches,
) -> Counted:
    """Each term's frequency in a large scope of n windows: recalled, else scaled up from the
    scope's sample (drawn once a TTL, so queries meeting new terms count them in the same rows)."""
    known: Counted = {
        t: v for t in terms if (v := caches.fresh(caches.stats, (*key, t))) is not None
    }
    unknown = [t for t in terms if t not in known]
    if not unknown:
        return known
    drawn = caches.fresh(caches.lexicons, key)
    if drawn is None:
        drawn = sample_lexicon(conn, shape, {**params, "cap": tuning.large_sample_rows})
        caches.samples_drawn += 1
        caches.keep(caches.lexicons, {key: drawn}, tuning.stats_ttl_seconds, tuning.lexicons_max)
    sampled, lexicon = drawn
    # A term is rare when some sampled window holds it and it is estimated under the rare line.
    per_row, line = n / max(sampled, 1.0), _rare_line(n, tuning)
    counted: Counted = {}
    for t in unknown:
        d = lexicon.get(t, 0) * per_row
        counted[t] = (d, 0 < d < line)
    # A word the sample never met may still be in a few windows: the rarest words are the ones a
    # query is most about, so they are counted through the index.
    unseen = [t for t in unknown if not lexicon.get(t)]
    if unseen and tuning.unseen_count_max:
        line = min(line, tuning.unseen_count_max)
        for t, d in count_windows(conn, shape, params, unseen, line).items():
            counted[t] = (d, 0 < d < line)
    _keep(caches, tuning, {(*key, t): v for t, v in counted.items()})
    return {**known, **counted}


def _rare_line(n: float, t: SearchTuning) -> int:
    """Under this many windows a term is rare in a scope of n."""
    return min(t.rare_df, max(t.rare_df_min, int(n * t.rare_share)))


def _keep(caches: SearchCaches, tuning: SearchTuning, entries: dict[Any, Any]) -> None:
    caches.keep(caches.stats, entries, tuning.stats_ttl_seconds, tuning.stats_max)


def _tsquery(terms: list[str], op: str) -> str:
    return f" {op} ".join("'" + t.replace("'", "''") + "'" for t in terms)


def _gather(rare: list[str], df: dict[str, float], budget: float) -> tuple[list[str], str]:
    """The rarest terms while their windows fit the candidate budget, any of them; with no rare
    term, every term at once (but those no window holds: they would make it match nothing)."""
    if not rare:
        return [t for t, n in df.items() if n > 0], "&"
    rare = sorted(rare, key=lambda t: df[t])
    gather, total = rare[:1], df[rare[0]]
    for t in rare[1:]:
        total += df[t]
        if total > budget:
            break
        gather.append(t)
    return gather, "|"
