"""Splitting a condition into tokens (contract §3.2).

Names are dotted words (``session.card_replace.selected_card_id``; a skill id may contain
``-``). Numbers are written as Python writes them, since conditions "behave like Python"
(contract §3.2): ``10``, ``-2``, ``2.5``, ``.5``, ``5.``, ``1e3``, ``1.5E-2``, ``1_000``. A
number may carry a leading sign: there is no arithmetic, so a sign can only start a literal. A
number with a point or an exponent is a float, as in Python. Strings are single- or
double-quoted, with ``\\`` escaping the next character.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from voicegate.errors import ConditionError


class TokenKind(enum.Enum):
    """What a token is."""

    NAME = "name"
    NUMBER = "number"
    STRING = "string"
    OPERATOR = "operator"
    OPEN = "("
    CLOSE = ")"
    END = "end"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Token:
    """One token and the 1-based column it starts at."""

    kind: TokenKind
    text: str
    column: int
    value: object = None


_SEGMENT = r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*"
_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*(?:\.{_SEGMENT})*")
_DIGITS = r"\d(?:_?\d)*"
_NUMBER = re.compile(
    rf"[-+]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][-+]?{_DIGITS})?"
    r"(?![A-Za-z0-9_.])"
)
_OPERATOR = re.compile(r"==|!=|<=|>=|<|>")


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an END token, or with an ERROR token at a stray char.

    The ERROR token carries the message; the parser raises it when it reaches that point, so
    a mistake it finds earlier in the text is reported first (``x in ["a", "b"]`` is told
    about ``in``, not about ``[``).
    """
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char.isspace():
            position += 1
            continue
        try:
            token = _token_at(text, position)
        except ConditionError as error:
            return [*tokens, Token(TokenKind.ERROR, text[position:], position + 1, str(error))]
        tokens.append(token)
        position += len(token.text)
    tokens.append(Token(TokenKind.END, "", len(text) + 1))
    return tokens


def _token_at(text: str, position: int) -> Token:
    column = position + 1
    char = text[position]
    if char in "()":
        return Token(TokenKind.OPEN if char == "(" else TokenKind.CLOSE, char, column)
    if char in "'\"":
        return _string(text, position)
    for pattern, kind in ((_NUMBER, TokenKind.NUMBER), (_NAME, TokenKind.NAME)):
        match = pattern.match(text, position)
        if match:
            return _with_value(Token(kind, match.group(), column))
    match = _OPERATOR.match(text, position)
    if match:
        return Token(TokenKind.OPERATOR, match.group(), column)
    if char == "=":
        raise ConditionError(f"'=' at column {column} is not a comparison; write '=='")
    raise ConditionError(f"unexpected character {char!r} at column {column}")


def _with_value(token: Token) -> Token:
    if token.kind is not TokenKind.NUMBER:
        return token
    is_float = any(mark in token.text for mark in ".eE")
    number: float | int = float(token.text) if is_float else int(token.text)
    return Token(token.kind, token.text, token.column, number)


def _string(text: str, start: int) -> Token:
    quote = text[start]
    chars: list[str] = []
    position = start + 1
    while position < len(text):
        char = text[position]
        if char == "\\" and position + 1 < len(text):
            chars.append(text[position + 1])
            position += 2
            continue
        if char == quote:
            raw = text[start : position + 1]
            return Token(TokenKind.STRING, raw, start + 1, "".join(chars))
        chars.append(char)
        position += 1
    raise ConditionError(f"string starting at column {start + 1} is not closed with {quote}")
