"""One turn of the execution loop (contract §7.1).

The user's input is recorded, then, until the engine waits:

1. the deterministic phase runs ready ordered-block steps, completes and resumes skills and
   fires ``utter: when:`` responses (:func:`~voicegate.engine.loop.blocks.run_ready_steps`);
2. the prompt is built from live state and the tools offered are chosen (skill tools that
   pass their gates, framework tools by their offering rules);
3. the model is asked; its text is spoken sentence by sentence as it streams;
4. its tool calls are dispatched one after the other against the live state (an ``activate``
   changes which tools the next call of the same batch may use), then back to 1;
5. a reply without tool calls ends the turn: the engine waits for the user.

``/session_start`` runs the project's ``default_session_start`` skill, when it has one (the
channel sends it to make the agent speak first, contract §5.7). A ``set:`` button tap is
written before the loop starts (contract §7.1); a stale one is
answered with the skip notice and the turn ends. The engine also waits when a step or a
framework tool says so (a collect that asked, an
``action_listen``, a confirmation asked, a completed conversation, a decline), and when the
model calls ``listen`` alone. Once the turn must wait, the rest of a tool batch is not run
(each gets a tool error, so every call keeps its result).
"""

from __future__ import annotations

import json
from typing import Any

from voicegate.engine.history import ToolCallSource, ToolExecuted, UserUttered
from voicegate.engine.llm.port import AssistantMessage, Message, ToolCall, ToolResultMessage
from voicegate.engine.loop.blocks import Phase, held_for_answer, model_answered, run_ready_steps
from voicegate.engine.loop.button_taps import apply_tap, is_set_payload
from voicegate.engine.loop.calls import call_tool, owner_of
from voicegate.engine.loop.flows import SESSION_START, skill_flows
from voicegate.engine.loop.framework import is_framework_tool, run_framework_call
from voicegate.engine.loop.framework.offer import LISTEN, Offer, framework_offer
from voicegate.engine.loop.model_step import ask_model
from voicegate.engine.loop.prompt import build_prompt
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.skills import activate_skill, fire_utters
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.loop.toolbox import offered_tools, skill_tool
from voicegate.engine.loop.turn import Turn
from voicegate.engine.seam import (
    SESSION_START_INPUT,
    ButtonPress,
    SilenceTimeout,
    TurnEnded,
    UserInput,
    user_text,
)
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import EngineError, StoreError

#: Model steps one user turn may take before the engine stops it (a looping model).
MAX_MODEL_STEPS = 10


async def run_turn(session: Session, user: UserInput, channel: TurnChannel) -> None:
    """Run the turn to its end, emitting its events into ``channel``."""
    tap = user.payload if isinstance(user, ButtonPress) and is_set_payload(user.payload) else None
    # A set: tap's raw payload stays out of the model's view (contract §2.7)
    text = (user.title or "(tapped a button)") if isinstance(user, ButtonPress) and tap else None
    session.history.append(UserUttered(channel.turn_id, text or user_text(user)))
    turn = Turn(session, channel, words=_words(user, tap))
    try:
        if tap is not None:
            await apply_tap(turn, tap)
        if user_text(user) == SESSION_START_INPUT:
            await _start_session(turn)
        problem = await _loop(turn)
    except StoreError:
        raise  # a write was not kept: the gateway ends the call with the reason
    except EngineError as error:  # LLMError included: the provider failed
        channel.emit(TurnEnded(channel.turn_id, "error", str(error)))
        return
    if problem is not None:
        channel.emit(TurnEnded(channel.turn_id, "error", problem))
        return
    channel.emit(TurnEnded(channel.turn_id, "completed"))


def _words(user: UserInput, tap: str | None) -> bool:
    """Whether the input is words for the model: said, typed, keyed or a plain button."""
    silent = isinstance(user, SilenceTimeout) or user_text(user) == SESSION_START_INPUT
    return tap is None and not silent


async def _loop(turn: Turn) -> str | None:
    session = turn.session
    earlier = session.conversation.messages(session.history.snapshot())
    this_turn: list[Message] = []
    while await run_ready_steps(turn) is Phase.MODEL:
        if turn.channel.ending:
            # A response ended the call: the deterministic phase settled the state (a block
            # that finished completes its skill), but nothing said now could be heard.
            return None
        if turn.model_calls >= MAX_MODEL_STEPS:
            return f"the model took {MAX_MODEL_STEPS} steps without answering"
        offer = framework_offer(turn)
        prompt = build_prompt(turn, offer, first_call=turn.model_calls == 0)
        turn.model_calls += 1
        messages = [prompt, *earlier, *this_turn]
        tools = _tools(turn, offer)
        turn.offered = tuple(spec.name for spec in tools)
        # This request reads the results: whatever the model does next, nothing waits longer.
        held, turn.unspoken_results = turn.unspoken_results, False
        reply = await ask_model(session.llm, messages, tools, turn.channel, fresh=not this_turn)
        this_turn.append(reply)
        if not reply.tool_calls:
            await model_answered(turn)
            if held and held_for_answer(turn):
                continue  # what waited for the model to tell a tool's result goes on now
            return None
        if _listens(reply):
            _record(turn, reply.tool_calls[0], {"listening": True}, "ok")
            return None
        for call in reply.tool_calls:
            this_turn.append(await _dispatch(turn, call))
            if not turn.channel.ending:
                # "on the memory write that first makes it true" (contract §7.5 step 5):
                # before the next call of the batch speaks its own on_success
                await fire_utters(turn)
    return None


async def _start_session(turn: Turn) -> None:
    """``/session_start`` runs the project's ``default_session_start`` skill (contract §5.7)."""
    skill = turn.session.project.skills.get(SESSION_START)
    if skill is None or turn.dialogue.stack:
        return
    await activate_skill(turn, SESSION_START, block_id=skill_flows(skill)[0].block_id)
    phase = await run_ready_steps(turn)
    if phase is Phase.WAIT or not turn.dialogue.stack:
        turn.wait = True  # it greeted (or asked): the model has nothing to answer yet


def _tools(turn: Turn, offer: Offer) -> list[ToolSpec]:
    if turn.searched:
        return list(offer.specs)  # the collapsed list: the skill's tools return next turn
    frame = turn.dialogue.active
    skill_tools = offered_tools(turn.session, frame.skill_id if frame is not None else None)
    return [bound.tool.spec for bound in skill_tools] + list(offer.specs)


def _listens(reply: AssistantMessage) -> bool:
    """``listen`` alone, with no text: a silent wait (``listen`` is ignored otherwise)."""
    calls = reply.tool_calls
    return len(calls) == 1 and calls[0].name == LISTEN and not reply.text.strip()


async def _dispatch(turn: Turn, call: ToolCall) -> ToolResultMessage:
    if turn.wait or turn.channel.ending:
        reason = "the call is ending" if turn.channel.ending else "the turn is waiting for the user"
        return _record(turn, call, {"error": f"not run: {reason}"}, "error")
    if not _runs_early(turn, call):
        await turn.channel.go_ahead()  # a speculative turn runs no effect before confirmed
    if is_framework_tool(call.name):
        return await run_framework_call(turn, call)
    responses = len(turn.said)
    message = await call_tool(turn, call)
    if len(turn.said) == responses:
        turn.unspoken_results = True  # no on_success/on_failure presented what it returned
    if not _recorded(turn, call):
        # A held call (awaiting confirmation): recorded with its interim result, so the
        # conversation the model reads on later turns keeps every call paired.
        return _record(turn, call, json.loads(message.content), "ok")
    return message


def _runs_early(turn: Turn, call: ToolCall) -> bool:
    """A tool the project marked ``run_early`` (framework tools never are: they write state)."""
    if is_framework_tool(call.name):
        return False
    owner = owner_of(turn, call.name)
    bound = None if owner is None else skill_tool(turn.session, owner, call.name)
    return bound is not None and bound.tool.run_early


def _recorded(turn: Turn, call: ToolCall) -> bool:
    history = turn.session.history.snapshot()
    return any(isinstance(e, ToolExecuted) and e.call_id == call.call_id for e in history)


def _record(turn: Turn, call: ToolCall, result: Any, outcome: str) -> ToolResultMessage:
    source: ToolCallSource = "framework" if is_framework_tool(call.name) else "local"
    turn.session.history.append(
        ToolExecuted(
            turn.turn_id,
            call.call_id,
            call.name,
            dict(call.arguments),
            "error" if outcome == "error" else "ok",
            result,
            source,
        )
    )
    return ToolResultMessage(call.call_id, call.name, json.dumps(result))
