"""Cutting streamed model text into sentences, so speech can start before the model ends.

Design §4: ``Say`` is streamed as soon as a sentence is ready. A sentence ends at ``.``, ``!``,
``?`` or ``…`` followed by white space, or at a line break; a few common abbreviations
("Dr.", "e.g.") do not end one, and neither does a decimal point (no space follows it).
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_ABBREVIATIONS = frozenset({"mr.", "mrs.", "ms.", "dr.", "st.", "vs.", "etc.", "e.g.", "i.e."})


class SentenceSplitter:
    """Feed text deltas, get back the sentences they complete."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, delta: str) -> list[str]:
        """Add a delta; return every sentence it completed."""
        self._buffer += delta
        sentences = []
        start = 0
        for boundary in _BOUNDARY.finditer(self._buffer):
            candidate = self._buffer[start : boundary.end()].strip()
            if _ends_with_abbreviation(candidate):
                continue
            if candidate:
                sentences.append(candidate)
            start = boundary.end()
        self._buffer = self._buffer[start:]
        return sentences

    def flush(self) -> list[str]:
        """The text left when the stream ends."""
        rest, self._buffer = self._buffer.strip(), ""
        return [rest] if rest else []


def _ends_with_abbreviation(sentence: str) -> bool:
    words = sentence.split()
    return bool(words) and words[-1].lower() in _ABBREVIATIONS
