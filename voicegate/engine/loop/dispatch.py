"""Dispatching the model's tool calls (contract §7.5, tools reference "Cancellation").

A call that completes, successfully or not, is recorded in the history and its result goes
back to the model, unless a memory write it made failed in the store: that ``StoreError``
ends the turn and the call (docs/redis.md), even if the tool caught it. A call cancelled
mid-await is not recorded: ``ToolCancelled`` is emitted for the timeline and the
cancellation propagates, so the step stays pending.

The execution loop resolves the tool itself (the active skill's, gated by its
``tool_constraints``) and passes it as ``tool``, or passes the ``refusal`` the model reads
when the call may not run (contract §7.5 a: the function is not called, fail closed).
"""

from __future__ import annotations

import asyncio
import json

from voicegate.engine.history import ToolExecuted
from voicegate.engine.llm.port import ToolCall, ToolResultMessage
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.seam import ToolCancelled, ToolFinished, ToolStarted
from voicegate.engine.tools.catalog import BoundTool
from voicegate.engine.tools.invocable import ToolSource
from voicegate.engine.tools.invoke import ToolOutcome, invoke_tool
from voicegate.errors import ToolExecutionError


async def dispatch_call(
    session: Session,
    channel: TurnChannel,
    call: ToolCall,
    *,
    tool: BoundTool | None = None,
    refusal: str | None = None,
) -> ToolResultMessage:
    """Run one model-requested call and return the message carrying its result."""
    turn_id = channel.turn_id
    channel.emit(ToolStarted(turn_id, call.call_id, call.name, dict(call.arguments)))
    try:
        outcome = await _run(session, channel, call, tool, refusal)
    except asyncio.CancelledError:
        channel.emit(ToolCancelled(turn_id, call.call_id, call.name))
        raise
    session.memory.check()
    session.history.append(
        ToolExecuted(
            turn_id,
            call.call_id,
            call.name,
            dict(call.arguments),
            outcome.kind,
            outcome.llm_response,
            tool.tool.source if tool is not None else _source(session, call.name),
        )
    )
    channel.emit(ToolFinished(turn_id, call.call_id, call.name, outcome.kind, outcome.llm_response))
    return ToolResultMessage(call.call_id, call.name, json.dumps(outcome.llm_response))


async def _run(
    session: Session,
    channel: TurnChannel,
    call: ToolCall,
    tool: BoundTool | None,
    refusal: str | None,
) -> ToolOutcome:
    if refusal is not None:
        return ToolOutcome.failure(ToolExecutionError(refusal))
    bound = tool if tool is not None else session.catalog.find(call.name)
    if bound is None:
        offered = ", ".join(tool.name for tool in session.catalog.offered()) or "none"
        return ToolOutcome.failure(
            ToolExecutionError(f"there is no tool {call.name!r} (offered: {offered})")
        )
    context = session.tool_context(channel, bound.skill_id)
    return await invoke_tool(
        bound.tool, call.arguments, context, session.tool_timeout, tool_loops=session.tool_loops
    )


def _source(session: Session, name: str) -> ToolSource:
    bound = session.catalog.find(name)
    return bound.tool.source if bound is not None else "local"
