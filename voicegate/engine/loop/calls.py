"""Calling a skill's tools: gating, confirmation pause, outcome responses (contract §7.5).

For a call the model makes (and for an ``execute_tool`` step):

a. the tool must be attached to the active skill (or a tool container) and its
   ``tool_constraints`` ``requires`` must hold *now* (re-checked at dispatch); otherwise the
   model reads a tool error and the function is not called (fail closed);
b. a tool with ``requires_confirmation.enabled`` is held: the call is stored as the pending
   confirmation, the model reads ``{"status": "awaiting_confirmation"}`` (every tool call keeps
   its result message, for providers that insist on pairs [ex R-COFFEE]) and
   ``utter_for_confirmation`` is spoken, after which the engine waits; without a named response
   the model phrases the question. ``resolve_tool_confirmation`` then runs or drops it;
c. the call runs with the wall-clock timeout (``invoke_tool``), is recorded and streamed;
e. ``on_success`` / ``on_failure`` is spoken. A call *failed* when it raised, timed out, or
   returned a mapping with a non-null ``error`` or with ``ok: false`` (§11 question 21: the
   hook convention plus the one projects rely on [ex R-CIVIC]).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from voicegate.engine.llm.port import ToolCall, ToolResultMessage
from voicegate.engine.loop.dialogue import PendingConfirmation
from voicegate.engine.loop.dispatch import dispatch_call
from voicegate.engine.loop.responses import deliver
from voicegate.engine.loop.toolbox import (
    button_sources,
    callable_tool,
    constraint,
    containers,
    skill_tool,
)
from voicegate.engine.loop.turn import Turn
from voicegate.engine.project.skill_model import ToolConstraint
from voicegate.engine.tools.catalog import BoundTool


def owner_of(turn: Turn, name: str) -> str | None:
    """The skill a tool name belongs to now: the active skill's, else a tool container's."""
    frame = turn.dialogue.active
    if frame is not None and skill_tool(turn.session, frame.skill_id, name) is not None:
        return frame.skill_id
    for skill in containers(turn.session.project):
        if skill_tool(turn.session, skill.skill_id, name) is not None:
            return skill.skill_id
    return None


async def call_tool(turn: Turn, call: ToolCall) -> ToolResultMessage:
    """Dispatch one model call of a skill tool (steps a-f above)."""
    if call.name in button_sources(turn.session.project):
        # BTN-01: a button source is hidden from the model, and refused if named anyway
        # (tools reference, "Gating a tool"), as post-write hooks are.
        return await _refuse(turn, call, _unknown(turn, call.name))
    owner = owner_of(turn, call.name)
    if owner is None:
        return await _refuse(turn, call, _unknown(turn, call.name))
    bound = callable_tool(turn.session, owner, call.name)
    if bound is None:
        return await _refuse(turn, call, _gated(turn, owner, call.name))
    gate = constraint(turn.skill(owner), call.name)
    if gate is not None and gate.confirmation is not None and gate.confirmation.enabled:
        return await _hold(turn, owner, call, gate)
    return await run_tool(turn, bound, call)


async def run_tool(turn: Turn, bound: BoundTool, call: ToolCall) -> ToolResultMessage:
    """Run a tool the checks let through, then speak its outcome response, if any."""
    message = await dispatch_call(turn.session, turn.channel, call, tool=bound)
    if bound.skill_id is not None:
        gate = constraint(turn.skill(bound.skill_id), bound.name)
        if gate is not None:
            response = gate.on_failure if failed(message) else gate.on_success
            if response is not None:
                await deliver(turn, response, bound.skill_id)
    return message


def failed(message: ToolResultMessage) -> bool:
    """Whether a tool result counts as a failure for ``on_failure``."""
    result = json.loads(message.content)
    return isinstance(result, Mapping) and (
        result.get("error") is not None or result.get("ok") is False
    )


async def _refuse(turn: Turn, call: ToolCall, reason: str) -> ToolResultMessage:
    return await dispatch_call(turn.session, turn.channel, call, refusal=reason)


def _unknown(turn: Turn, name: str) -> str:
    # The tools the model was offered, framework tools included: naming only the skill's
    # would tell a model that was offered ``activate`` that it has no tools at all.
    listed = ", ".join(turn.offered) or "none"
    return f"there is no tool {name!r} (offered: {listed})"


def _gated(turn: Turn, owner: str, name: str) -> str:
    gate = constraint(turn.skill(owner), name)
    source = gate.requires.source if gate is not None and gate.requires is not None else "?"
    return f"tool {name!r} is not available now: its condition {source!r} does not hold"


async def _hold(turn: Turn, owner: str, call: ToolCall, gate: ToolConstraint) -> ToolResultMessage:
    dialogue = turn.dialogue
    if dialogue.pending is not None:
        waiting = dialogue.pending.tool
        return _result(call, {"error": f"a call of {waiting!r} is already waiting for approval"})
    dialogue.pending = PendingConfirmation(owner, call.name, dict(call.arguments), call.call_id)
    asked = await ask_confirmation(turn, owner, gate)
    if asked is False:
        dialogue.pending = None
        return _result(call, {"error": "the confirmation question is empty; not calling"})
    return _result(call, {"status": "awaiting_confirmation", "tool": call.name})


async def ask_confirmation(turn: Turn, owner: str, gate: ToolConstraint) -> bool | None:
    """Speak ``utter_for_confirmation`` and wait; None when the model is to phrase the ask.

    False when the named response resolves to blank text: dispatch then fails closed instead
    of pausing silently (contract §7.5 b).
    """
    confirmation = gate.confirmation
    if confirmation is None or confirmation.utter_for_confirmation is None:
        return None
    if await deliver(turn, confirmation.utter_for_confirmation, owner) is None:
        return False
    turn.wait = True
    return True


def _result(call: ToolCall, content: Any) -> ToolResultMessage:
    return ToolResultMessage(call.call_id, call.name, json.dumps(content))
