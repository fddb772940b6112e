"""A document cut into overlapping chunks at paragraph, then sentence, then word bounds: a pure
function (docs/decisions/0023-knowledge.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK_CHARS = 3_200
OVERLAP_CHARS = 200
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE = re.compile(r"[.!?。][\"')\]]*\s+")
_WORD = re.compile(r"\s+")


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    start: int
    end: int
    text: str


def _last_bound(pattern: re.Pattern[str], text: str, lo: int, hi: int) -> int | None:
    """The end of the last match of `pattern` ending in (lo, hi], if any."""
    best = None
    for m in pattern.finditer(text, lo, hi):
        if m.end() > lo:
            best = m.end()
    return best


def _cut(text: str, start: int, size: int) -> int:
    """Where the chunk starting at `start` ends: the last paragraph bound past its middle, else
    the last sentence bound, else the last space, else `size` characters on (a run without
    bounds)."""
    hi = start + size
    lo = start + size // 2  # a bound in the first half would leave a small chunk
    for pattern in (_PARAGRAPH, _SENTENCE, _WORD):
        end = _last_bound(pattern, text, lo, hi)
        if end is not None:
            return end
    return hi


def _next_start(text: str, end: int, overlap: int) -> int:
    """About `overlap` characters before `end`, moved on to a word's start when one is near."""
    start = max(0, end - overlap)
    space = _WORD.search(text, start, end)
    if space is not None and space.end() < end and space.end() - start < overlap // 2:
        return space.end()
    return start


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    """Chunks of at most `size` characters covering `text`, each overlapping the one before by
    at most `overlap` characters (and at least one)."""
    chunks: list[Chunk] = []
    start = 0
    while start < len(text):
        end = len(text) if len(text) - start <= size else _cut(text, start, size)
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        if end >= len(text):
            break
        start = _next_start(text, end, overlap)
    return chunks
