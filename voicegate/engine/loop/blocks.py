"""The deterministic phase: running ordered-block steps that need no model (contract §6, §7.1).

:func:`run_ready_steps` runs steps until the model is needed (``Phase.MODEL``) or the turn
must wait for the user (``Phase.WAIT``). Per step kind (§6.5):

- ``execute_tool``: held (model) while its ``requires`` does not hold; a confirmation gate asks
  first; then the tool runs, its outcome response is spoken, the step advances. Cancelled
  mid-await, it does not advance: it runs again next turn (design §4 point 3);
- ``set_memory``: literal writes (an already-set project field is skipped); ``noop``: jump;
- ``action``: the response is spoken; ``action_listen`` advances and waits;
- ``collect``: a known value (and no ``ask_before_filling``) is skipped; otherwise the
  ``utterance`` is asked and the engine waits, or the model asks when there is none; once
  asked, each turn is a guided-collect model call until the value is set;
- ``instructions``: the model works on it until ``complete_when`` holds; without one the step
  completes once the model answered it (§11 question 17, our choice);
- ``call``: runs a block of this skill or another skill (its ``requires`` must hold, else the
  step is skipped), then continues with this step's ``next``;
- ``link``: ends this skill and starts the target (no return);
- ``END``: ends the block (back to prose, to the calling step, or the skill completes).

``next`` branches are tried in order, the first whose condition holds wins (fail closed).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Any

from voicegate.engine.llm.port import ToolCall
from voicegate.engine.loop.calls import ask_confirmation, run_tool
from voicegate.engine.loop.dialogue import (
    BlockCursor,
    Parked,
    PendingConfirmation,
    SkillFrame,
    split_flow,
)
from voicegate.engine.loop.flows import skill_flows
from voicegate.engine.loop.responses import deliver
from voicegate.engine.loop.skills import (
    activate_skill,
    completion_due,
    end_top,
    enter_block,
    fire_utters,
)
from voicegate.engine.loop.toolbox import callable_tool, constraint, skill_tool
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.step_model import (
    ACTION_LISTEN,
    END,
    ActionStep,
    Branch,
    CallStep,
    CollectStep,
    EndStep,
    ExecuteToolStep,
    InstructionsStep,
    LinkStep,
    NoopStep,
    SetMemoryStep,
    Step,
)
from voicegate.errors import EngineError, MemoryWriteError

log = logging.getLogger(__name__)

#: Steps one deterministic phase may run before the engine stops a block that loops.
MAX_STEPS = 200


class Phase(enum.Enum):
    """What the loop does after the deterministic phase."""

    MODEL = "model"  # ask the model
    WAIT = "wait"  # end the turn; the next user input continues


async def run_ready_steps(turn: Turn) -> Phase:
    """Run every step that is ready; say whether the model is needed or the turn waits."""
    for _ in range(MAX_STEPS):
        await fire_utters(turn)
        if turn.wait:
            return Phase.WAIT
        phase = await _advance(turn)
        if phase is not None:
            return Phase.WAIT if turn.wait else phase
    raise EngineError(f"ordered blocks ran {MAX_STEPS} steps without waiting (a next: loop?)")


async def _advance(turn: Turn) -> Phase | None:
    """One step of progress; None when the phase should look again."""
    if turn.dialogue.resume_offered:
        return Phase.MODEL  # the user's answer to the resume offer goes to the model
    frame = turn.dialogue.active
    if frame is None:
        return Phase.MODEL
    cursor = frame.cursor
    if cursor is None and not completion_due(turn, frame):
        return Phase.MODEL
    # Every step may write memory or run a tool: a speculative turn waits for its go-ahead.
    await turn.channel.go_ahead()
    if cursor is None:
        # A complete_when completion the caller's words find due (its turn was cut short
        # before the model told a tool's result) asks nothing: the model reads the words.
        await end_top(turn, "completed", ask=not turn.words_unanswered)
        return None
    steps = turn.skill(frame.skill_id).body.blocks[cursor.block_id].steps
    if cursor.index >= len(steps):
        await end_block(turn, frame)
        return None
    return await _run_step(turn, frame, cursor, steps[cursor.index])


async def _run_step(turn: Turn, frame: SkillFrame, cursor: BlockCursor, step: Step) -> Phase | None:
    match step:
        case EndStep():
            await end_block(turn, frame)
        case NoopStep():
            await jump(turn, frame, step)
        case SetMemoryStep():
            _set_memory(turn, frame.skill_id, step)
            await jump(turn, frame, step)
        case ActionStep():
            return await _action(turn, frame, step)
        case ExecuteToolStep():
            return await _execute(turn, frame, step)
        case CollectStep():
            return await _collect(turn, frame, cursor, step)
        case InstructionsStep():
            return await _instructions(turn, frame, cursor, step)
        case CallStep():
            await _call(turn, frame, cursor, step)
        case LinkStep():
            await _link(turn, step)
    return None


async def jump(turn: Turn, frame: SkillFrame, step: Step) -> None:
    """Move the frame's cursor past ``step``: its first matching ``next`` branch, else below."""
    cursor = frame.cursor
    assert cursor is not None
    cursor.engaged = False
    target = _next_target(turn, step)
    steps = turn.skill(frame.skill_id).body.blocks[cursor.block_id].steps
    if target is None:
        cursor.index += 1
    elif target == END:
        cursor.index = len(steps)
    else:
        cursor.index = next(i for i, candidate in enumerate(steps) if candidate.step_id == target)


def _next_target(turn: Turn, step: Step) -> str | None:
    branches: tuple[Branch, ...] = getattr(step, "next", ())
    for branch in branches:
        if turn.holds(branch.condition):
            return branch.target
    if branches:
        log.warning("step %r: no next: branch holds; falling through", step.step_id)
    return None


async def end_block(turn: Turn, frame: SkillFrame) -> None:
    """The running block reached END: return where it was entered from."""
    cursor = frame.blocks.pop()
    turn.record("ordered_block_completed", frame.skill_id, cursor.block_id)
    if cursor.return_to == "entry":
        await end_top(turn, "completed")


def _set_memory(turn: Turn, skill_id: str, step: SetMemoryStep) -> None:
    # Names resolve as a tool's do; an already-set project field is left alone (§4.4).
    writer = turn.session.tool_context(turn.channel, skill_id, hook=True).memory
    for name, value in step.values.items():
        try:
            writer.set(name, value)
        except MemoryWriteError as error:
            raise EngineError(f"set_memory step {step.step_id!r}: {error}") from None


async def _action(turn: Turn, frame: SkillFrame, step: ActionStep) -> Phase | None:
    if step.action == ACTION_LISTEN:
        await jump(turn, frame, step)
        return Phase.WAIT
    await deliver(turn, step.action, frame.skill_id)
    await jump(turn, frame, step)
    return None


async def _execute(turn: Turn, frame: SkillFrame, step: ExecuteToolStep) -> Phase | None:
    skill_id = frame.skill_id
    if skill_tool(turn.session, skill_id, step.tool) is None:
        raise EngineError(
            f"execute_tool step {step.step_id!r}: tool {step.tool!r} is not available "
            "(an MCP import whose server is not connected?)"
        )
    bound = callable_tool(turn.session, skill_id, step.tool)
    if bound is None:
        return Phase.MODEL  # requires: does not hold yet: the step is held (§6.5)
    gate = constraint(turn.skill(skill_id), step.tool)
    if gate is not None and gate.confirmation is not None and gate.confirmation.enabled:
        decision = turn.dialogue.step_decision
        if decision is None:
            return await _ask_step_confirmation(turn, frame, step)
        turn.dialogue.step_decision = None
        if decision == "denied":
            await jump(turn, frame, step)
            return None
    call = ToolCall(_step_call_id(turn, frame, step), step.tool, _parameters(turn, step))
    try:
        await run_tool(turn, bound, call)
    except asyncio.CancelledError:
        if gate is not None and gate.confirmation is not None and gate.confirmation.enabled:
            # CONF-CAN, as for a model call (framework/confirmation.py): the interrupted
            # approved call awaits the caller's answer again, without asking again.
            pending = PendingConfirmation(skill_id, step.tool, call.arguments, call.call_id, True)
            turn.dialogue.pending = pending
        raise
    await jump(turn, frame, step)
    return None


async def _ask_step_confirmation(turn: Turn, frame: SkillFrame, step: ExecuteToolStep) -> Phase:
    dialogue = turn.dialogue
    if dialogue.pending is None:
        arguments = _parameters(turn, step)
        call_id = _step_call_id(turn, frame, step)
        dialogue.pending = PendingConfirmation(frame.skill_id, step.tool, arguments, call_id, True)
        gate = constraint(turn.skill(frame.skill_id), step.tool)
        assert gate is not None
        if await ask_confirmation(turn, frame.skill_id, gate):
            return Phase.WAIT
    return Phase.MODEL


def _step_call_id(turn: Turn, frame: SkillFrame, step: ExecuteToolStep) -> str:
    cursor = frame.cursor
    block = cursor.block_id if cursor is not None else ""
    return f"{turn.turn_id}-{frame.skill_id}-{block}-{step.step_id}"


def _parameters(turn: Turn, step: ExecuteToolStep) -> dict[str, Any]:
    arguments = {}
    for name, parameter in step.parameters.items():
        value = parameter.value
        if parameter.ref is not None:
            value = turn.session.memory.value(parameter.ref)
        if value is not None:
            arguments[name] = value
    return arguments


async def _collect(
    turn: Turn, frame: SkillFrame, cursor: BlockCursor, step: CollectStep
) -> Phase | None:
    ref = FieldRef(frame.skill_id, step.entry)
    memory = turn.session.memory
    if cursor.engaged:
        if memory.value(ref) is None:
            return Phase.MODEL  # a guided-collect call reads the user's answer
        await jump(turn, frame, step)
        return None
    if memory.value(ref) is not None:
        if not step.ask_before_filling:
            await jump(turn, frame, step)
            return None
        _clear(turn, ref)
    if step.utterance is not None:
        await deliver(turn, step.utterance, frame.skill_id)
        cursor.engaged = True
        return Phase.WAIT
    cursor.engaged = True
    return Phase.MODEL  # no utterance: the model phrases the question


def _clear(turn: Turn, ref: FieldRef) -> None:
    declared = turn.session.memory.schema.field(ref)
    assert declared is not None
    turn.session.memory.write(ref, None)
    turn.session.write_recorder(turn.channel)(ref, None, declared)


async def _instructions(
    turn: Turn, frame: SkillFrame, cursor: BlockCursor, step: InstructionsStep
) -> Phase | None:
    if step.complete_when is not None and turn.holds(step.complete_when):
        if cursor.engaged and turn.unspoken_results:
            return Phase.MODEL  # the model tells the tool's result first (as completion_due)
        await jump(turn, frame, step)
        return None
    cursor.engaged = True
    return Phase.MODEL


def held_for_answer(turn: Turn) -> bool:
    """Whether a completion held until the model answered (tool results unspoken) is due."""
    frame = turn.dialogue.active
    if frame is None:
        return False
    cursor = frame.cursor
    if cursor is None:
        return completion_due(turn, frame)
    steps = turn.skill(frame.skill_id).body.blocks[cursor.block_id].steps
    step = steps[cursor.index] if cursor.index < len(steps) else None
    return (
        isinstance(step, InstructionsStep)
        and step.complete_when is not None
        and turn.holds(step.complete_when)
    )


async def model_answered(turn: Turn) -> None:
    """The model replied without tool calls: an instructions step with no ``complete_when``
    has been carried out."""
    frame = turn.dialogue.active
    cursor = frame.cursor if frame is not None else None
    if frame is None or cursor is None or not cursor.engaged:
        return
    steps = turn.skill(frame.skill_id).body.blocks[cursor.block_id].steps
    step = steps[cursor.index] if cursor.index < len(steps) else None
    if isinstance(step, InstructionsStep) and step.complete_when is None:
        await jump(turn, frame, step)


async def _call(turn: Turn, frame: SkillFrame, cursor: BlockCursor, step: CallStep) -> None:
    if cursor.engaged:
        await jump(turn, frame, step)  # the callee finished: continue with this step's next
        return
    skill = turn.skill(frame.skill_id)
    if step.target in skill.body.blocks:
        cursor.engaged = True
        enter_block(turn, frame, step.target, "call")
        return
    target = turn.session.project.skills.get(step.target)
    if target is None or not turn.holds(target.frontmatter.requires):
        log.warning("call step %r: skill %r cannot start now; skipped", step.step_id, step.target)
        await jump(turn, frame, step)
        return
    cursor.engaged = True
    entry = skill_flows(target)[0].block_id
    await activate_skill(turn, step.target, block_id=entry, park=Parked.DELEGATION)


async def _link(turn: Turn, step: LinkStep) -> None:
    skill_id, block_id = split_flow(step.target)
    target = turn.session.project.skills.get(skill_id)
    if target is None or not turn.holds(target.frontmatter.requires):
        log.warning("link step %r: %r cannot start now", step.step_id, step.target)
        await end_top(turn, "completed")
        return
    frame = turn.dialogue.stack.pop()  # hand off for good: no return to this skill
    turn.record("skill_completed", frame.skill_id)
    entry = block_id or skill_flows(target)[0].block_id
    await activate_skill(turn, skill_id, block_id=entry, park=Parked.DELEGATION)
