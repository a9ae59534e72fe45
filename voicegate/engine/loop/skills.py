"""The skill stack: activation, completion, cancellation, resume (contract §5.2, §5.4, §5.5).

Activation parks the active skill (as a delegation or a digression), pushes a frame, resets the
skill's memory to its initial values, records ``skill_activated`` and speaks its
``utter: on: activate`` responses at once, before the next model call (§5.2 [drift] choice).

When the top frame ends, the frame below takes over: a delegation resumes by itself; a
digression is offered back (``utter_ask_wants_to_continue``) and the user decides, with
``activate`` (resume) or ``cancel_skill`` (drop it). When the last frame *completes*, the bundled
completion question (``utter_anything_else``) is asked and the engine waits; a cancellation
leaves the word to the model.

``utter: when:`` triggers are edge-triggered: the baseline is taken at activation, and a
response fires on the write that turns its condition from false to true, once per activation
("the first time the condition becomes true", skill.md reference): not again when it turns
false and true again. voicegate's choice: only the active skill's triggers speak; a
condition that turned true while the skill was parked fires when it resumes. An entry with
both ``on: activate`` and ``when:`` ("an entry may set both") speaks once per activation: at
activation when its condition holds then, else on the write that first makes it true.
"""

from __future__ import annotations

from typing import Literal

from voicegate.engine.loop.dialogue import BlockCursor, BlockReturn, Parked, SkillFrame
from voicegate.engine.loop.flows import engine_managed
from voicegate.engine.loop.responses import ANYTHING_ELSE, ASK_TO_CONTINUE, deliver
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.skill_model import UtterTrigger

EndOutcome = Literal["completed", "cancelled"]


async def activate_skill(
    turn: Turn, skill_id: str, *, block_id: str | None = None, park: Parked = Parked.DIGRESSION
) -> SkillFrame:
    """Push a frame for ``skill_id`` (entering ``block_id`` as its entry block, if given)."""
    dialogue = turn.dialogue
    top = dialogue.top
    if top is not None and top.parked is None:
        top.parked = park
        turn.record("skill_interrupted", top.skill_id, *_position(turn, top))
    dialogue.resume_offered = False
    frame = SkillFrame(skill_id)
    dialogue.stack.append(frame)
    reset_memory(turn, skill_id)
    turn.record("skill_activated", skill_id)
    _take_utter_baseline(turn, skill_id)
    for key, trigger in _keyed_utters(turn, skill_id):
        if trigger.on_activate and _fires_on_activation(turn, key, trigger):
            await deliver(turn, trigger.response, skill_id)
    if block_id is not None:
        enter_block(turn, frame, block_id, "entry")
    return frame


def enter_block(turn: Turn, frame: SkillFrame, block_id: str, return_to: BlockReturn) -> None:
    """Start an ordered block of the frame's skill at its first step."""
    frame.blocks.append(BlockCursor(block_id, 0, return_to))
    turn.record("ordered_block_entered", frame.skill_id, block_id)


def reset_memory(turn: Turn, skill_id: str) -> None:
    """Set the skill's fields back to their initial values (contract §4.5)."""
    declared = turn.session.memory.schema.skills.get(skill_id)
    if declared is None:
        return
    memory = turn.session.memory
    recorder = turn.session.write_recorder(turn.channel)
    for entry, spec in declared.fields.items():
        ref = FieldRef(skill_id, entry)
        if memory.value(ref) != spec.initial_value:
            memory.write(ref, spec.initial_value)
            recorder(ref, spec.initial_value, spec)


def bring_to_top(turn: Turn, frame: SkillFrame) -> None:
    """Resume a parked frame by moving it on top of the stack (no memory reset)."""
    dialogue = turn.dialogue
    top = dialogue.top
    if top is not None and top is not frame and top.parked is None:
        top.parked = Parked.DIGRESSION
        turn.record("skill_interrupted", top.skill_id, *_position(turn, top))
    dialogue.stack.remove(frame)
    dialogue.stack.append(frame)
    resume_top(turn)


def resume_top(turn: Turn) -> None:
    """The top frame takes control again (a delegation returning, or an accepted offer)."""
    dialogue = turn.dialogue
    dialogue.resume_offered = False
    frame = dialogue.top
    if frame is not None:
        frame.parked = None
        turn.record("skill_resumed", frame.skill_id, *_position(turn, frame))


async def end_top(turn: Turn, outcome: EndOutcome, *, ask: bool = True) -> None:
    """Pop the top frame (completed or cancelled) and hand control to the frame below.

    ``ask=False`` leaves out the completion question when the stack empties.
    """
    frame = turn.dialogue.stack.pop()
    turn.dialogue.resume_offered = False
    for cursor in reversed(frame.blocks):
        if outcome == "cancelled":
            turn.record("ordered_block_cancelled", frame.skill_id, cursor.block_id)
    turn.record("skill_completed" if outcome == "completed" else "skill_cancelled", frame.skill_id)
    # a lifecycle skill (session start, ...) ending is not the user's task being done
    lifecycle = engine_managed(turn.skill(frame.skill_id))
    await _after_pop(turn, "cancelled" if lifecycle else outcome, ask=ask)


async def drop_offered(turn: Turn) -> None:
    """The user declined the resume offer: drop the paused skill (contract §5.5)."""
    frame = turn.dialogue.stack.pop()
    turn.dialogue.resume_offered = False
    turn.record("skill_dropped", frame.skill_id)
    await _after_pop(turn, "cancelled")


async def _after_pop(turn: Turn, outcome: EndOutcome, *, ask: bool = True) -> None:
    top = turn.dialogue.top
    if top is None:
        if outcome == "completed" and ask and await deliver(turn, ANYTHING_ELSE, None):
            turn.wait = True  # the stack is empty after a delivered response (§7.6)
        return
    if top.parked is Parked.DELEGATION:
        resume_top(turn)
        return
    turn.dialogue.resume_offered = True
    name = turn.skill(top.skill_id).frontmatter.name or top.skill_id
    if await deliver(turn, ASK_TO_CONTINUE, top.skill_id, skill=name):
        turn.wait = True


def completion_due(turn: Turn, frame: SkillFrame) -> bool:
    """Whether the skill's ``complete_when`` condition marks its prose flow complete.

    With ``criteria`` the skill ends only through ``complete_skill`` (contract §2.5). When the
    model has not yet read results of its tool calls that no response presented, a completion
    after which the engine would wait (the completion question, a resume offer) is held for
    one more model request: a tool's ``llm_response`` "is what the LLM reads" (tools
    reference), and the caller should hear it before "anything else?". A delegating parent
    resumes at once, as its model call reads the results.
    """
    completion = turn.skill(frame.skill_id).frontmatter.complete_when
    if completion is None or completion.condition is None or completion.criteria:
        return False
    if frame.cursor is not None or not turn.holds(completion.condition):
        return False
    return not (turn.unspoken_results and _ending_waits(turn, frame))


def _ending_waits(turn: Turn, frame: SkillFrame) -> bool:
    """Whether ending ``frame`` leaves the engine asking the user (no delegating parent)."""
    stack = turn.dialogue.stack
    position = next(i for i, on_stack in enumerate(stack) if on_stack is frame)
    below = stack[position - 1] if position > 0 else None
    return below is None or below.parked is not Parked.DELEGATION


async def fire_utters(turn: Turn) -> None:
    """Speak the active skill's ``utter: when:`` responses whose condition just turned true."""
    frame = turn.dialogue.active
    if frame is None:
        return
    for key, trigger in _keyed_utters(turn, frame.skill_id):
        if trigger.when is None:
            continue
        now = turn.holds(trigger.when)
        before = turn.dialogue.utter_truth.get(key, False)
        turn.dialogue.utter_truth[key] = now
        if now and not before and key not in turn.dialogue.utter_fired:
            turn.dialogue.utter_fired.add(key)
            await deliver(turn, trigger.response, frame.skill_id)


def _keyed_utters(turn: Turn, skill_id: str) -> list[tuple[tuple[str, str], UtterTrigger]]:
    """Each ``utter`` entry with the key its state is kept under: (skill id, response name).

    A response named by several entries (one per condition) keys its later entries
    ``<name>#2``, ``#3``..., so each fires on its own condition.
    """
    seen: dict[str, int] = {}
    keyed = []
    for trigger in turn.skill(skill_id).frontmatter.utter:
        count = seen[trigger.response] = seen.get(trigger.response, 0) + 1
        name = trigger.response if count == 1 else f"{trigger.response}#{count}"
        keyed.append(((skill_id, name), trigger))
    return keyed


def _fires_on_activation(turn: Turn, key: tuple[str, str], trigger: UtterTrigger) -> bool:
    """``on: activate`` speaks now; with ``when:`` too, only if the condition holds now.

    An entry with both speaks once per activation: now if its condition holds, else on the
    write that first makes it true (``fire_utters``), never twice (contract-decisions.md).
    """
    if trigger.when is None:
        return True
    if not turn.holds(trigger.when):
        return False
    turn.dialogue.utter_fired.add(key)
    return True


def _take_utter_baseline(turn: Turn, skill_id: str) -> None:
    for key, trigger in _keyed_utters(turn, skill_id):
        if trigger.when is not None:
            turn.dialogue.utter_truth[key] = turn.holds(trigger.when)
            turn.dialogue.utter_fired.discard(key)


def _position(turn: Turn, frame: SkillFrame) -> tuple[str, str]:
    cursor = frame.cursor
    if cursor is None:
        return "", ""
    steps = turn.skill(frame.skill_id).body.blocks[cursor.block_id].steps
    step = steps[cursor.index].step_id if cursor.index < len(steps) else ""
    return cursor.block_id, step
