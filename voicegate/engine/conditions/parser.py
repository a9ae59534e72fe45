"""A recursive-descent parser for the condition grammar of contract §3.2.

```
condition   := or_expr
or_expr     := and_expr ( "or" and_expr )*
and_expr    := not_expr ( "and" not_expr )*
not_expr    := "not" not_expr | comparison
comparison  := operand ( comp_op operand )*
operand     := memory_ref | literal | "(" condition ")"
memory_ref  := "session" "." namespace "." entry_name
```

Decisions where the contract is open (§11 question 1), chosen for what an author expects:

- ``True``/``False``/``None`` are the documented spellings; lower-case ``true``/``false`` are
  accepted too, because YAML authors write them and their meaning is not in doubt.
- ``in``, ``is``, function calls, arithmetic and indexing are refused with a message saying
  what to write instead (membership as ``x == "a" or x == "b"``, ``is None`` as ``== None``).
- Any other name that is not a three-segment ``session.<namespace>.<entry>`` reference fails
  with the documented ``Unknown name '<key>' in condition expression``.
- ``session.system.*`` is refused: the system namespace is reserved to the engine (§3.2 [inf]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from voicegate.engine.conditions.lexer import Token, TokenKind, tokenize
from voicegate.engine.conditions.nodes import (
    BooleanOp,
    Comparison,
    ComparisonOperator,
    Condition,
    Literal,
    MemoryRead,
    Negation,
    Node,
)
from voicegate.engine.memory.fields import SYSTEM
from voicegate.engine.memory.schema import FieldRef
from voicegate.errors import ConditionError

_KEYWORD_VALUES: dict[str, object] = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
}
_ADVICE = {
    "in": '\'in\' is not supported; write membership as x == "a" or x == "b"',
    "is": "'is' is not supported; compare with == None, == True or == False",
}


def parse_condition(text: str) -> Condition:
    """Parse one condition; raises ConditionError saying what is wrong and where."""
    if not isinstance(text, str) or not text.strip():
        raise ConditionError("the condition is empty")
    parser = _Parser(tokenize(text))
    root = parser.condition()
    parser.expect_end()
    return Condition(text.strip(), root)


class _Parser:
    """Walks the token list once; each method parses one grammar rule."""

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tokens
        self._index = 0

    @property
    def _current(self) -> Token:
        token = self._tokens[self._index]
        if token.kind is TokenKind.ERROR:
            raise ConditionError(str(token.value))
        return token

    def _advance(self) -> Token:
        token = self._current
        self._index += 1
        return token

    def _at_word(self, word: str) -> bool:
        return self._current.kind is TokenKind.NAME and self._current.text == word

    def condition(self) -> Node:
        """``condition := or_expr``."""
        return self._boolean("or", self._and)

    def _and(self) -> Node:
        return self._boolean("and", self._not)

    def _boolean(self, word: str, operand: Callable[[], Node]) -> Node:
        operands = [operand()]
        while self._at_word(word):
            self._advance()
            operands.append(operand())
        if len(operands) == 1:
            return operands[0]
        return BooleanOp("and" if word == "and" else "or", tuple(operands))

    def _not(self) -> Node:
        if self._at_word("not"):
            self._advance()
            return Negation(self._not())
        return self._comparison()

    def _comparison(self) -> Node:
        first = self._operand()
        rest: list[tuple[ComparisonOperator, Node]] = []
        while self._current.kind is TokenKind.OPERATOR:
            operator = cast(ComparisonOperator, self._advance().text)
            rest.append((operator, self._operand()))
        self._refuse_not_in()
        return Comparison(first, tuple(rest)) if rest else first

    def _refuse_not_in(self) -> None:
        # ``x not in [...]`` would otherwise be told about ``not``, not about ``in``
        after = self._tokens[self._index + 1] if self._index + 1 < len(self._tokens) else None
        if self._at_word("not") and after is not None and after.text == "in":
            raise ConditionError(f"{_ADVICE['in']} (column {after.column})")

    def _operand(self) -> Node:
        token = self._current
        if token.kind is TokenKind.OPEN:
            self._advance()
            inner = self.condition()
            if self._current.kind is not TokenKind.CLOSE:
                raise ConditionError(f"expected ')' at column {self._current.column}")
            self._advance()
            return inner
        if token.kind in (TokenKind.NUMBER, TokenKind.STRING):
            self._advance()
            return Literal(token.value)
        if token.kind is TokenKind.NAME:
            self._advance()
            return self._name(token)
        raise ConditionError(_unexpected(token))

    def _name(self, token: Token) -> Node:
        if token.text in _KEYWORD_VALUES:
            return Literal(_KEYWORD_VALUES[token.text])
        if token.text in _ADVICE:
            raise ConditionError(f"{_ADVICE[token.text]} (column {token.column})")
        if token.text in ("and", "or", "not"):
            raise ConditionError(_unexpected(token))
        if self._current.kind is TokenKind.OPEN:
            raise ConditionError(f"function calls such as {token.text}(...) are not supported")
        parts = token.text.split(".")
        if len(parts) != 3 or parts[0] != "session":
            raise ConditionError(
                f"Unknown name '{token.text}' in condition expression "
                "(memory is read as session.<skill_id>.<entry> or session.project.<entry>)",
                name=token.text,
            )
        if parts[1] == SYSTEM:
            raise ConditionError(f"'{token.text}': the system namespace is reserved to the engine")
        return MemoryRead(FieldRef(parts[1], parts[2]))

    def expect_end(self) -> None:
        """Refuse anything after a complete condition."""
        if self._current.kind is not TokenKind.END:
            raise ConditionError(_unexpected(self._current))


def _unexpected(token: Token) -> str:
    if token.kind is TokenKind.END:
        return "the condition ends too early"
    if token.kind is TokenKind.NAME and token.text in _ADVICE:
        return f"{_ADVICE[token.text]} (column {token.column})"
    return f"unexpected {token.text!r} at column {token.column}"
