"""An embedded lexical knowledge index: Okapi BM25 over reference chunks.

The default :class:`~voicegate.engine.project.references.ReferenceIndex`: no model and no
network, built at load in a few milliseconds. Words are lower-cased runs of letters and
digits; scores use the usual ``k1 = 1.5``, ``b = 0.75`` and the non-negative idf
``ln(1 + (N - df + 0.5) / (df + 0.5))``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from voicegate.engine.project.references import ReferenceChunk, ReferenceHit

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The index terms of a text."""
    return [word.lower() for word in _WORD.findall(text)]


class Bm25Index:
    """BM25 over a fixed list of chunks; immutable once built."""

    def __init__(self, chunks: Sequence[ReferenceChunk], k1: float = 1.5, b: float = 0.75) -> None:
        self._chunks = tuple(chunks)
        self._k1 = k1
        self._b = b
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths: list[int] = []
        for index, chunk in enumerate(self._chunks):
            counts = Counter(words(chunk.text))
            self._lengths.append(sum(counts.values()))
            for term, count in counts.items():
                self._postings.setdefault(term, []).append((index, count))
        total = sum(self._lengths)
        self._average_length = total / len(self._lengths) if total else 1.0

    @property
    def chunks(self) -> Sequence[ReferenceChunk]:
        """Every indexed chunk, in file order."""
        return self._chunks

    def search(self, query: str, limit: int = 5) -> list[ReferenceHit]:
        """The best ``limit`` chunks sharing words with ``query``, best first."""
        scores: dict[int, float] = {}
        for term in dict.fromkeys(words(query)):
            postings = self._postings.get(term, [])
            idf = self._idf(len(postings))
            for index, count in postings:
                scores[index] = scores.get(index, 0.0) + idf * self._weight(count, index)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [ReferenceHit(self._chunks[index], score) for index, score in ranked[:limit]]

    def _idf(self, document_frequency: int) -> float:
        total = len(self._chunks)
        return math.log(1 + (total - document_frequency + 0.5) / (document_frequency + 0.5))

    def _weight(self, count: int, index: int) -> float:
        norm = 1 - self._b + self._b * self._lengths[index] / self._average_length
        return count * (self._k1 + 1) / (count + self._k1 * norm)
