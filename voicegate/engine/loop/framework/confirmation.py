"""``resolve_tool_confirmation``: the user's answer to a held tool call (contract §7.5 b).

Approved: the stored call runs, its ``tool_constraints`` ``requires`` checked once more (§11
question 23, our choice: yes), then its ``on_success``/``on_failure`` response. Denied: the call
is dropped and ``utter_on_user_denial`` is spoken, after which the engine waits; without a
named response the model phrases the denial. A confirmation an ``execute_tool`` step asked for
is handed back to that step (it runs, or it is skipped, on the next deterministic pass).

CONF-CAN (issue 17, our decision; docs/contract-decisions.md): a barge-in while the approved
call runs cancels it, and the call goes back to awaiting confirmation, in both paths. The
question is not spoken again: the caller's next words answer it (the model sees the pending
call and resolves it), since cutting in on "sending it now" often means "stop". An approval
is never carried over to a retry the caller did not confirm again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from voicegate.engine.llm.port import ToolCall
from voicegate.engine.loop.calls import run_tool
from voicegate.engine.loop.responses import deliver
from voicegate.engine.loop.toolbox import callable_tool, constraint
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.coercion import coerce_bool


async def resolve_tool_confirmation(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Run or drop the call waiting for approval."""
    dialogue = turn.dialogue
    pending = dialogue.pending
    if pending is None:
        return {"error": "no tool call is waiting for confirmation"}
    confirmed = coerce_bool(arguments.get("confirmed"))
    if confirmed is None:
        return {"error": "confirmed must be true or false"}
    dialogue.pending = None
    if pending.from_step:
        dialogue.step_decision = "approved" if confirmed else "denied"
    if not confirmed:
        await _deny(turn, pending.skill_id, pending.tool)
        return {"confirmed": False, "cancelled": pending.tool}
    if pending.from_step:
        return {"confirmed": True}
    bound = callable_tool(turn.session, pending.skill_id, pending.tool)
    if bound is None:
        return {"error": f"{pending.tool!r} may no longer be called; nothing was done"}
    call = ToolCall(f"{pending.call_id}-confirmed", pending.tool, pending.arguments)
    try:
        message = await run_tool(turn, bound, call)
    except asyncio.CancelledError:
        dialogue.pending = pending  # CONF-CAN: back to awaiting the caller's answer
        raise
    return {"confirmed": True, "result": json.loads(message.content)}


async def _deny(turn: Turn, skill_id: str, tool: str) -> None:
    gate = constraint(turn.skill(skill_id), tool)
    confirmation = gate.confirmation if gate is not None else None
    if confirmation is None or confirmation.utter_on_user_denial is None:
        return  # the model phrases the denial
    if await deliver(turn, confirmation.utter_on_user_denial, skill_id) is not None:
        turn.wait = True
