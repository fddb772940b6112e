"""conversation.search's tuning values, and what a process remembers of the scopes it searched.
The figures behind each value: docs/decisions/0013-search-modes.md."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SearchTuning:
    """Every value the search legs are tuned by; a Deps carries one (`deps.search_tuning`)."""

    # BM25 (the lexical leg).
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    max_terms: int = 64  # a query's lexemes read
    # A scope of up to sample_rows windows is read whole: exact statistics.
    sample_rows: int = 5000
    # A larger one estimates its terms from a sample of its first windows, drawn once a TTL.
    large_sample_rows: int = 2000
    # A term the sample puts in fewer windows than rare_share of the scope (within rare_df_min
    # and rare_df) is rare: documents are gathered through it.
    rare_df: int = 500
    rare_df_min: int = 100
    rare_share: float = 0.005
    candidates_max: int = 1500  # windows a BM25 read ranks
    # A word a large scope's sample never met is counted through the index up to this many
    # windows (and the rare line); under it, it is rare (0: not counted, held by none).
    unseen_count_max: int = 500
    # A query of common terms alone that no window holds whole ranks this many windows holding
    # any of its fallback_terms rarest (0: none).
    fallback_candidates: int = 150
    fallback_terms: int = 3
    stats_ttl_seconds: float = 60.0
    lexicons_max: int = 16  # large scopes' samples kept
    stats_max: int = 50_000  # statistics kept before they are emptied
    # The vector leg: a scope up to this many embedded turns is ranked exactly.
    exact_scan_max_rows: int = 5000
    # Or up to exact_scan_ceiling while it is at most exact_scan_share of the table: an HNSW
    # scan would pass over the rest to find its rows.
    exact_scan_ceiling: int = 20_000
    exact_scan_share: float = 0.02
    large_scope_ttl_seconds: float = 60.0
    large_scopes_max: int = 10_000
    # Hybrid's fusion: the turns each leg hands it (top_k when larger), and the weight of each
    # of a turn's two vector rankings (BM25's weighs 1).
    vector_leg_depth: int = 20
    bm25_leg_depth: int = 15
    vector_leg_weight: float = 0.5
    substring_pages: int = 5  # substring pages read to fill top_k past turns that read as high


Table = dict[Any, tuple[float, Any]]  # key -> (until, value)


class SearchCaches:
    """What this process remembers of the scopes it searched, each entry (until, value); a Deps
    owns one (`deps.search_caches`), so a fresh Deps starts with none."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.large: Table = {}  # (filter, model, dim) of vector scopes over the exact-scan bound
        self.table_rows: Table = {}  # the embedding table's estimated rows (one key)
        # A large lexical scope's (n, avgdl) by (filter, model), and each term's (df, rare)
        # by (filter, model, term).
        self.stats: Table = {}
        self.lexicons: Table = {}  # a large scope's sample: (rows, lexeme -> windows holding it)
        self.samples_drawn = 0  # large scopes' samples drawn, for tests to read

    def fresh(self, table: Table, key: Any) -> Any:
        """An entry's value while its TTL lasts, else None."""
        entry = table.get(key)
        return entry[1] if entry is not None and entry[0] > self.clock() else None

    def keep(self, table: Table, entries: dict[Any, Any], ttl: float, bound: int) -> None:
        """Keep entries for `ttl` seconds; a table grown to `bound` entries is emptied first."""
        if len(table) >= bound:
            table.clear()
        until = self.clock() + ttl
        table.update({key: (until, value) for key, value in entries.items()})
