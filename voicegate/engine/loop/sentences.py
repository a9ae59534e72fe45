"""Cutting streamed model text into sentences, so speech can start before the model ends.

Design §4: ``Say`` is streamed as soon as a sentence is ready. A sentence ends at ``.``, ``!``,
``?`` or ``…`` followed by white space, or at a line break; a few common abbreviations
("Dr.", "e.g.") do not end one, and neither does a decimal point (no space follows it).

A "sentence" is also cut at a space once it passes :data:`MAX_SENTENCE_CHARS`: text without
punctuation (a list, a model that never ends its sentence) would otherwise be synthesised in
one piece only once the whole answer is in, which the caller hears as silence, and which a
speech service may refuse (OpenAI's speech endpoint takes 4096 characters at most).
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_ABBREVIATIONS = frozenset({"mr.", "mrs.", "ms.", "dr.", "st.", "vs.", "etc.", "e.g.", "i.e."})


#: The longest piece of text spoken as one sentence (about half a minute of speech).
MAX_SENTENCE_CHARS = 400


class SentenceSplitter:
    """Feed text deltas, get back the sentences they complete."""

    def __init__(self, max_chars: int = MAX_SENTENCE_CHARS) -> None:
        self._buffer = ""
        self._max = max_chars
        # The word a hard cut (no space within the bound) split, as far as it was spoken: the
        # buffer goes on with the rest of it. Whether that word is an abbreviation depends on
        # all of it, however the text streamed ("HiHiHi.Dr. " cut after "HiHiHi." is no
        # "Dr." that goes on; found by tests/engine/test_sentences.py's streaming property).
        self._split_word = ""

    def feed(self, delta: str) -> list[str]:
        """Add a delta; return every sentence it completed."""
        self._buffer += delta
        sentences = []
        start = 0
        for boundary in _BOUNDARY.finditer(self._buffer):
            candidate = self._buffer[start : boundary.end()].strip()
            if _ends_with_abbreviation(self._split_word + candidate):
                continue
            sentences.extend(self._pieces(candidate))
            start = boundary.end()
            self._split_word = ""
        # What is left starts the next sentence (leading space is no part of it); with no end
        # in sight, what passes the bound is spoken in pieces now.
        pieces, self._buffer = self._cut_long(self._buffer[start:].lstrip())
        return [*sentences, *pieces]

    def flush(self) -> list[str]:
        """The text left when the stream ends."""
        rest, self._buffer = self._buffer.strip(), ""
        pieces = self._pieces(rest)
        self._split_word = ""
        return pieces

    def _pieces(self, sentence: str) -> list[str]:
        """A sentence, cut as :meth:`feed` cuts text that has not ended yet."""
        pieces, rest = self._cut_long(sentence)
        return [*pieces, rest] if rest else pieces

    def _cut_long(self, text: str) -> tuple[list[str], str]:
        """Pieces cut off ``text`` until what is left is within the bound, and that rest."""
        pieces = []
        while len(text) > self._max:
            piece, text = self._cut(text)
            pieces.append(piece)
        return pieces, text

    def _cut(self, text: str) -> tuple[str, str]:
        """The first piece of a too-long text (up to its last space within the bound, if
        that is past half of it), and the rest."""
        space = text.rfind(" ", self._max // 2, self._max + 1)
        if space > 0:
            self._split_word = ""
            return text[:space].rstrip(), text[space:].lstrip()
        piece = text[: self._max]
        self._split_word = piece.split()[-1] if not text[self._max].isspace() else ""
        return piece.rstrip(), text[self._max :].lstrip()


def _ends_with_abbreviation(sentence: str) -> bool:
    words = sentence.split()
    return bool(words) and words[-1].lower() in _ABBREVIATIONS
