"""Word accuracy of transcripts: normalisation and word-level edit distance.

The labels (fixtures/audio/transcripts.tsv) are lower case, without punctuation, with digits
spelled out; Whisper writes "Front, right.", "10 of clubs" and "$1,250.75". Both sides are
normalised the same way before comparing: lower case, money and digit strings spelled out
("$1,250.75" -> "one thousand two hundred fifty point seven five dollars"), punctuation and
hyphens to spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ((1_000_000_000, "billion"), (1_000_000, "million"), (1_000, "thousand"))
_MONEY = re.compile(r"\$(\d[\d,]*(?:\.\d+)?)")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def integer_words(value: int) -> list[str]:
    """``1250`` -> ["one", "thousand", "two", "hundred", "fifty"] (no "and")."""
    if value < 20:
        return [_ONES[value]]
    if value < 100:
        tens, ones = divmod(value, 10)
        return [_TENS[tens]] + ([_ONES[ones]] if ones else [])
    if value < 1000:
        hundreds, rest = divmod(value, 100)
        return [_ONES[hundreds], "hundred"] + (integer_words(rest) if rest else [])
    for scale, name in _SCALES:
        if value >= scale:
            high, rest = divmod(value, scale)
            return integer_words(high) + [name] + (integer_words(rest) if rest else [])
    raise AssertionError("unreachable")


def number_words(token: str) -> str:
    """A digit string ("1,250.75") spelled out; the fraction digit by digit after "point"."""
    whole, _, fraction = token.replace(",", "").partition(".")
    words = integer_words(int(whole))
    if fraction:
        words += ["point", *(_ONES[int(d)] for d in fraction)]
    return " ".join(words)


def normalise(text: str) -> list[str]:
    """The words of ``text`` in the labels' convention."""
    text = _MONEY.sub(lambda m: f"{m.group(1)} dollars", text.lower())
    text = _NUMBER.sub(lambda m: f" {number_words(m.group(0).rstrip(',.'))} ", text)
    text = text.replace("'", "")
    return re.sub(r"[^a-z]+", " ", text).split()


def edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    """Substitutions + deletions + insertions turning ``reference`` into ``hypothesis``."""
    previous = list(range(len(hypothesis) + 1))
    for i, word in enumerate(reference, start=1):
        current = [i]
        for j, other in enumerate(hypothesis, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
            )
        previous = current
    return previous[-1]


@dataclass(frozen=True, slots=True)
class Score:
    """Word errors against the number of reference words, summed over utterances."""

    errors: int = 0
    words: int = 0

    @property
    def accuracy(self) -> float:
        """1 - word error rate."""
        return 1.0 - self.errors / self.words if self.words else 1.0

    def add(self, reference: str, hypothesis: str) -> Score:
        """This score plus one utterance."""
        ref, hyp = normalise(reference), normalise(hypothesis)
        return Score(self.errors + edit_distance(ref, hyp), self.words + len(ref))
