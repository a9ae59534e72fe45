"""The syntax tree of a parsed condition (contract §3.2): small frozen nodes, no behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from typing import Literal as TypingLiteral

from voicegate.engine.memory.schema import FieldRef

#: The comparison operators of the grammar (``comp_op``).
ComparisonOperator = TypingLiteral["==", "!=", "<", "<=", ">", ">="]


@dataclass(frozen=True, slots=True)
class Literal:
    """A string, number, ``True``, ``False`` or ``None``."""

    value: Any


@dataclass(frozen=True, slots=True)
class MemoryRead:
    """``session.<namespace>.<entry>``: the current value of a memory field (None if unset)."""

    ref: FieldRef


@dataclass(frozen=True, slots=True)
class Comparison:
    """``a < b <= c``: Python-style chained comparison of two or more operands."""

    first: Node
    rest: tuple[tuple[ComparisonOperator, Node], ...]


@dataclass(frozen=True, slots=True)
class Negation:
    """``not x``."""

    operand: Node


@dataclass(frozen=True, slots=True)
class BooleanOp:
    """``a and b and c`` or ``a or b`` (``operator`` is ``"and"`` or ``"or"``)."""

    operator: TypingLiteral["and", "or"]
    operands: tuple[Node, ...]


Node = Literal | MemoryRead | Comparison | Negation | BooleanOp


@dataclass(frozen=True, slots=True)
class Condition:
    """A parsed condition: its source text and syntax tree."""

    source: str
    root: Node

    def references(self) -> tuple[FieldRef, ...]:
        """Every memory field the condition reads, in order of appearance, without repeats."""
        return tuple(dict.fromkeys(_refs(self.root)))


def _refs(node: Node) -> Iterator[FieldRef]:
    if isinstance(node, MemoryRead):
        yield node.ref
    elif isinstance(node, Comparison):
        yield from _refs(node.first)
        for _, operand in node.rest:
            yield from _refs(operand)
    elif isinstance(node, Negation):
        yield from _refs(node.operand)
    elif isinstance(node, BooleanOp):
        for operand in node.operands:
            yield from _refs(operand)
