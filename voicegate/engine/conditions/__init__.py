"""Conditions: the one expression grammar of requires, if:, when:, complete_when and next:.

Contract §3: ``session.<namespace>.<entry>`` memory references, string/number/``True``/
``False``/``None`` literals, chained comparisons, ``and``/``or``/``not`` and parentheses; the
result is coerced with ``bool()``. :func:`parse_condition` turns text into a
:class:`Condition`; :func:`evaluate` computes it against memory and :func:`holds` does the
same but fails closed.
"""

from voicegate.engine.conditions.evaluate import evaluate, holds
from voicegate.engine.conditions.nodes import (
    BooleanOp,
    Comparison,
    Condition,
    Literal,
    MemoryRead,
    Negation,
    Node,
)
from voicegate.engine.conditions.parser import parse_condition

__all__ = [
    "BooleanOp",
    "Comparison",
    "Condition",
    "Literal",
    "MemoryRead",
    "Negation",
    "Node",
    "evaluate",
    "holds",
    "parse_condition",
]
