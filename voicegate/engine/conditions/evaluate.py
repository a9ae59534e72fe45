"""Evaluating a parsed condition against memory (contract §3.3).

An unset entry reads as ``None``; ``and``/``or``/``not`` and chained comparisons follow Python,
and the result is coerced with ``bool()``. A comparison that cannot be made (``None < 3``)
raises ConditionError from :func:`evaluate`; :func:`holds` treats that as false and logs it,
so a gated tool stays hidden, a paragraph omitted, a variant skipped (fail closed).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from typing import Any

from voicegate.engine.conditions.nodes import (
    BooleanOp,
    Comparison,
    Condition,
    Literal,
    MemoryRead,
    Negation,
    Node,
)
from voicegate.engine.memory.schema import FieldRef
from voicegate.errors import ConditionError

log = logging.getLogger(__name__)

#: Reads the current value of a memory field; None when it is unset.
MemoryReader = Callable[[FieldRef], Any]

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def evaluate(condition: Condition, read: MemoryReader) -> bool:
    """The truth of ``condition``; raises ConditionError when a comparison cannot be made."""
    return bool(_value(condition.root, read))


def holds(condition: Condition, read: MemoryReader) -> bool:
    """The truth of ``condition``, false when it cannot be evaluated (fail closed, §3.3)."""
    try:
        return evaluate(condition, read)
    except ConditionError as error:
        # An unset field in an ordering comparison is the everyday case the contract names
        # (§3.3: "None < 3" fails closed), not a mistake: a warning on every evaluation
        # would bury the real ones (a text field compared with a number).
        level = logging.DEBUG if error.unset else logging.WARNING
        log.log(level, "condition %r treated as false: %s", condition.source, error)
        return False


def _value(node: Node, read: MemoryReader) -> Any:
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, MemoryRead):
        return read(node.ref)
    if isinstance(node, Negation):
        return not _value(node.operand, read)
    if isinstance(node, BooleanOp):
        return _boolean(node, read)
    return _comparison(node, read)


def _boolean(node: BooleanOp, read: MemoryReader) -> Any:
    # Python semantics: ``and`` yields the first falsy operand, ``or`` the first truthy one,
    # so later operands are not evaluated (``x and x > 3`` never compares an unset x).
    result: Any = None
    for operand in node.operands:
        result = _value(operand, read)
        if bool(result) == (node.operator == "or"):
            return result
    return result


def _comparison(node: Comparison, read: MemoryReader) -> bool:
    left = _value(node.first, read)
    for symbol, operand in node.rest:
        right = _value(operand, read)
        try:
            outcome = bool(_COMPARE[symbol](left, right))
        except TypeError:
            raise ConditionError(
                f"cannot compare {left!r} {symbol} {right!r} ({type(left).__name__} with "
                f"{type(right).__name__})",
                unset=left is None or right is None,
            ) from None
        if not outcome:
            return False
        left = right
    return True
