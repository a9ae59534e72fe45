"""Reading values out of an utterance by declared type, without a model.

Pure functions over text: yes/no, numbers (digits or number words up to the nineties),
enumerated values, identifiers (a token holding a digit, such as ``A-17`` or ``1990-04-01``),
free text, and the content words of a sentence for lexical matching.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_TOKEN = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_IDENTIFIER = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:[-_/.][A-Za-z0-9]+)*(?![\w-])")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w])")

_YES = ("yes", "yeah", "yep", "yup", "sure", "ok", "okay", "correct", "right", "affirmative")
_YES_PHRASES = ("go ahead", "please do", "do it", "of course", "absolutely", "that's right")
_NO = ("no", "nope", "nah", "don't", "dont", "not", "cancel", "stop", "never")
_NO_PHRASES = ("never mind", "do not", "no thanks", "forget it")
_NOT_NO = ("no problem", "no worries")

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip

#: Words that carry no topic (for matching an utterance to a skill description).
_STOP_TEXT = """a an and are as at be but by can could do does for from have how i i'd i'm in is
it it's me my of on or our please so that the their them there they this to up us want was we
what when where which who will with would you your yes no hi hello hey thanks thank ok okay
just like need get know some any one"""
STOPWORDS = frozenset(_STOP_TEXT.split())

#: Field or argument names whose values are identifiers, not prose.
_IDENTIFIER_HINTS = ("id", "number", "code", "phone", "date", "pin", "zip", "account", "reference")
_LEADING_FILLER = re.compile(
    r"^(?:(?:it|that)(?:'s| is| was)|(?:i think|i guess|um+|uh+|well|so),?"
    r"|my \w+ is|to|i'm|i am)\s+",
    re.IGNORECASE,
)


def words(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _TOKEN.findall(text.lower())


def stem(word: str) -> str:
    """A crude stem, so "cards", "carded" and "card" match (plural and -ing/-ed endings;
    "travelling" -> "travel", "stopped" -> "stop")."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            doubled = suffix in ("ing", "ed") and base[-1] == base[-2] and base[-1] not in "aeiou"
            return base[:-1] if doubled and base[-1] != "s" else base
    return word


def content_stems(text: str) -> list[str]:
    """The stems of a text's topic words (stopwords dropped)."""
    return [stem(word) for word in words(text) if word not in STOPWORDS]


def yes_or_no(text: str) -> bool | None:
    """True for a yes, False for a no, None when the utterance is neither (or both)."""
    lowered = " ".join(words(text))
    for phrase in _NOT_NO:
        lowered = lowered.replace(phrase, "")
    tokens = set(lowered.split())
    no = bool(tokens & set(_NO)) or any(phrase in lowered for phrase in _NO_PHRASES)
    yes = bool(tokens & set(_YES)) or any(phrase in lowered for phrase in _YES_PHRASES)
    if yes == no:
        return None
    return yes


def number(text: str, integer: bool) -> int | float | None:
    """The first number in the text, written in digits or words ("twenty five")."""
    match = _NUMBER.search(text)
    if match is not None:
        value = float(match.group().replace(",", ""))
        if integer:
            return int(value) if value.is_integer() else None
        return value
    return _number_words(words(text))


def _number_words(tokens: Sequence[str]) -> int | None:
    for index, token in enumerate(tokens):
        parts = token.split("-")
        if parts[0] in _TENS:
            value = _TENS[parts[0]]
            unit = (
                parts[1]
                if len(parts) > 1
                else (tokens[index + 1] if index + 1 < len(tokens) else "")
            )
            return value + (_UNITS.get(unit, 0) if 0 < _UNITS.get(unit, 0) < 10 else 0)
        if token in _UNITS:
            return _UNITS[token]
    return None


def enum_value(text: str, options: Sequence[Any]) -> Any:
    """The option the text names (``not_received`` also as "not received"), longest first."""
    lowered = " ".join(words(text))
    stems = {stem(word) for word in lowered.split()}
    for option in sorted(options, key=lambda item: -len(str(item))):
        spoken = " ".join(words(str(option).replace("_", " ")))
        if not spoken:
            continue
        if re.search(rf"\b{re.escape(spoken)}\b", lowered):
            return option
        if " " not in spoken and stem(spoken) in stems:
            return option
    return None


def identifier(text: str) -> str | None:
    """The first token that holds a digit (an account, card or order id, a date)."""
    for match in _IDENTIFIER.finditer(text):
        if any(char.isdigit() for char in match.group()):
            return match.group()
    return None


def free_text(text: str) -> str | None:
    """The utterance as a value, without leading filler ("it's", "my name is", ...)."""
    value = text.strip().rstrip(".!?").strip()
    while True:
        shorter = _LEADING_FILLER.sub("", value, count=1)
        if shorter == value:
            break
        value = shorter
    return value or None


def wants_identifier(name: str, schema: Mapping[str, Any]) -> bool:
    """Whether a string field holds an identifier rather than prose (by its name)."""
    parts = set(name.lower().split("_"))
    description = str(schema.get("description", "")).lower()
    return bool(parts & set(_IDENTIFIER_HINTS)) or "yyyy" in description


def value_for(name: str, schema: Mapping[str, Any], text: str, *, open_text: bool) -> Any:
    """A value of ``schema``'s type read from ``text``, or None.

    ``open_text``: a free-text string field takes the whole utterance (only for the value the
    engine is asking for right now; other text fields are too easy to fill by mistake).
    """
    if "enum" in schema:
        return enum_value(text, schema["enum"])
    kind = schema.get("type")
    if kind == "boolean":
        return yes_or_no(text)
    if kind in ("integer", "number"):
        return number(text, integer=kind == "integer")
    if kind == "string":
        if wants_identifier(name, schema):
            return identifier(text)
        return free_text(text) if open_text else None
    return None
