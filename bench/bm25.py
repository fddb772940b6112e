"""Pure-Python Okapi BM25 ranking."""

from __future__ import annotations

import math
import re
from collections import Counter

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric word tokens."""
    return _TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 index over a fixed list of documents."""

    def __init__(self, docs: list[str], k1: float = 1.2, b: float = 0.75):
        self.k1 = k1
        self.b = b
        self.tfs = [Counter(tokenize(d)) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avg_len = (sum(self.lengths) / len(docs)) if docs else 0.0
        self.idf = self._idf()

    def _idf(self) -> dict[str, float]:
        """Smoothed, non-negative inverse document frequency per term."""
        df = Counter(term for tf in self.tfs for term in tf)
        n = len(self.tfs)
        return {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def score(self, query: str) -> list[float]:
        """BM25 score of every document for the query."""
        terms = [t for t in tokenize(query) if t in self.idf]
        scores = []
        for tf, length in zip(self.tfs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.avg_len or 1.0))
            s = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            scores.append(s)
        return scores

    def top_k(self, query: str, k: int) -> list[int]:
        """Indexes of the k best-scoring documents, best first."""
        scores = self.score(query)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return order[:k]
