"""The dialogue state of one call: the skill stack, block step pointers, pending confirmation.

Contract §7.1 ("state tracked per control level"): a prose skill has its frame on the stack;
an ordered block adds a step pointer to that frame; a gated tool call waiting for approval is
the pending confirmation record. The top frame is the active skill. A frame below it was
*parked* when another frame was pushed above it, either as a delegation (``@skill.``, a
``call:`` step: it resumes by itself when the frame above ends) or as a digression (the user
changed topic: the engine offers to resume it, §5.5).

Blocks nest inside a frame: the last cursor runs. ``return_to`` says what its ``END`` does:
``prose`` hands control back to the skill's prose (entered with ``@block.``), ``call`` resumes
the ``call:`` step of the cursor below, ``entry`` completes the skill (the routable block of a
blocks-only skill). A cursor only moves after its step finished, so a step interrupted by a
cancellation stays pending and runs again on the next turn (design §4 point 3).

The state lives with the session (memory is the durable part, design §4 point 4).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: Separates a skill id from a block id in a flow id, e.g. ``card_replace__pick_card`` (the
#: compiled flow id format of tracker events, contract §5.1).
FLOW_SEPARATOR = "__"

BlockReturn = Literal["prose", "call", "entry"]


class Parked(enum.Enum):
    """Why a frame below the top is waiting (contract §5.5)."""

    DELEGATION = "delegation"  # resumes by itself when the frame above ends
    DIGRESSION = "digression"  # the engine offers to resume it; the user decides


@dataclass
class BlockCursor:
    """The step pointer of one running ordered block.

    ``engaged`` marks a step that started and waits for something: a collect step that asked,
    an instructions step the model works on, a call step whose callee runs.
    """

    block_id: str
    index: int = 0
    return_to: BlockReturn = "prose"
    engaged: bool = False


@dataclass
class SkillFrame:
    """One skill on the stack, with its running blocks (innermost last)."""

    skill_id: str
    blocks: list[BlockCursor] = field(default_factory=list)
    parked: Parked | None = None

    @property
    def cursor(self) -> BlockCursor | None:
        """The running block's cursor, None while the skill's prose is in control."""
        return self.blocks[-1] if self.blocks else None


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """A gated tool call held until the user approves it (contract §7.5 b).

    ``from_step`` is set when an ``execute_tool`` step asked for the approval.
    """

    skill_id: str
    tool: str
    arguments: Mapping[str, Any]
    call_id: str
    from_step: bool = False


@dataclass
class DialogueState:
    """Everything the loop tracks between turns, besides memory and history."""

    stack: list[SkillFrame] = field(default_factory=list)
    pending: PendingConfirmation | None = None
    # The user's answer to a confirmation an execute_tool step asked for, until the step
    # acts on it: "approved" runs the tool, "denied" skips it (§11 question 20, our choice).
    step_decision: Literal["approved", "denied"] | None = None
    resume_offered: bool = False
    # Last truth value of each ``utter: when:`` trigger, keyed (skill id, response name), so
    # a response fires only on the write that makes its condition true (contract §2.5).
    utter_truth: dict[tuple[str, str], bool] = field(default_factory=dict)
    # The triggers that already spoke since their skill was activated: a ``when:`` response
    # fires "the first time" its condition becomes true (skill.md reference), not again after
    # the condition went false and true again.
    utter_fired: set[tuple[str, str]] = field(default_factory=set)

    @property
    def top(self) -> SkillFrame | None:
        """The frame on top of the stack (the active skill unless a resume is offered)."""
        return self.stack[-1] if self.stack else None

    @property
    def active(self) -> SkillFrame | None:
        """The active skill's frame: the top one, unless it waits for a resume decision."""
        top = self.top
        return None if top is None or self.resume_offered else top

    def frame_of(self, skill_id: str) -> SkillFrame | None:
        """The frame of ``skill_id`` on the stack, if any."""
        return next((frame for frame in self.stack if frame.skill_id == skill_id), None)


def flow_id(skill_id: str, block_id: str | None = None) -> str:
    """The id ``activate`` takes: the skill id, or ``<skill>__<block>`` for one block."""
    return skill_id if block_id is None else f"{skill_id}{FLOW_SEPARATOR}{block_id}"


def split_flow(flow: str) -> tuple[str, str | None]:
    """A flow id as (skill id, block id or None)."""
    skill_id, separator, block_id = flow.partition(FLOW_SEPARATOR)
    return (skill_id, block_id) if separator and block_id else (flow, None)
