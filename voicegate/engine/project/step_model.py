"""Ordered blocks and their steps (contract §6), one frozen class per step kind.

The kind of a step is the one kind key it carries (§6.2); the loader turns that into the class.
``next`` is normalised to a tuple of :class:`Branch`: empty means "fall through to the step
below" (the last step falls through to ``END``), a plain ``next: <id>`` is one unconditioned
branch, and a branch list keeps its order with ``else`` as the final unconditioned branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.conditions import Condition
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.token_model import ProseToken

#: The reserved id of the terminal step, also a valid ``next`` target (contract §6.4).
END = "END"
#: ``action: action_listen`` is the wait step, not a response (contract §6.2).
ACTION_LISTEN = "action_listen"


@dataclass(frozen=True, slots=True)
class Branch:
    """Go to ``target`` (a step id or ``END``) when ``condition`` holds (always when None)."""

    target: str
    condition: Condition | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class InstructionsStep:
    """``instructions:`` — the LLM converses with this text until ``complete_when`` holds.

    ``tokens`` are the ``@memory``/``@block``/``@skill`` tokens of the text.
    """

    step_id: str
    instructions: str
    complete_when: Condition | None = None
    tokens: tuple[ProseToken, ...] = ()
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class CollectStep:
    """``collect: <entry>`` — the framework collects one field of this skill from the user."""

    step_id: str
    entry: str
    utterance: str | None = None
    ask_before_filling: bool = False
    description: str | None = None
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ActionStep:
    """``action: <response>`` — deliver a response; ``action_listen`` waits for the user."""

    step_id: str
    action: str
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ParameterValue:
    """An ``execute_tool`` argument: a literal, or a ``session.<ns>.<entry>`` binding (``ref``).

    Documented choice (§11 question 15): a string that is exactly a three-segment
    ``session.*`` reference is read from memory at call time; any other value is literal.
    """

    value: Any
    ref: FieldRef | None = None


@dataclass(frozen=True, slots=True)
class ExecuteToolStep:
    """``execute_tool: <tool>`` — the framework calls the tool directly (no LLM)."""

    step_id: str
    tool: str
    parameters: Mapping[str, ParameterValue] = field(default_factory=dict)
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class NoopStep:
    """``noop: true`` — evaluate ``next`` and jump, with no visible effect."""

    step_id: str
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class SetMemoryStep:
    """``set_memory: {<entry>: <literal>}`` — write literal values (names as tools write them)."""

    step_id: str
    values: Mapping[str, Any] = field(default_factory=dict)
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class CallStep:
    """``call: <block_id | skill_id>`` — run it, then continue with this step's ``next``."""

    step_id: str
    target: str
    next: tuple[Branch, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class LinkStep:
    """``link: <flow>`` — hand off for good; always the last step, never with ``next``."""

    step_id: str
    target: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class EndStep:
    """``- id: END`` — terminate the block."""

    step_id: str = END
    line: int | None = None


Step = (
    InstructionsStep
    | CollectStep
    | ActionStep
    | ExecuteToolStep
    | NoopStep
    | SetMemoryStep
    | CallStep
    | LinkStep
    | EndStep
)


@dataclass(frozen=True, slots=True)
class OrderedBlock:
    """A ``:::ordered_block id=<id>`` fence: its steps in order and the fence's line."""

    block_id: str
    steps: tuple[Step, ...]
    line: int | None = None
