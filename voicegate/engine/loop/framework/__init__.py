"""The built-in framework tools (tools reference, "Built-in framework tools"; contract §7.3).

:func:`run_framework_call` handles one call: a tool not offered on this model call is refused
with a tool error (``complete_skill`` inside a block says why). Framework calls are recorded in
the history with ``source="framework"`` and emit no ``ToolStarted``/``ToolFinished``: they are
the engine's own bookkeeping, visible through their effects (memory writes, speech).
``listen`` is handled by the loop, which alone knows whether it came alone.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from voicegate.engine.history import ToolExecuted
from voicegate.engine.llm.port import ToolCall, ToolResultMessage
from voicegate.engine.loop.framework import confirmation, fields, knowledge, lifecycle
from voicegate.engine.loop.framework.offer import COMPLETE_SKILL, LISTEN, framework_offer
from voicegate.engine.loop.turn import Turn
from voicegate.engine.tools.reserved import FRAMEWORK_TOOL_NAMES

Handler = Callable[[Turn, Mapping[str, Any]], Awaitable[Any]]

_HANDLERS: dict[str, Handler] = {
    "activate": lifecycle.activate,
    "complete_skill": lifecycle.complete_skill,
    "cancel_skill": lifecycle.cancel_skill,
    "set_fields": fields.set_fields,
    "correct": fields.correct,
    "resolve_tool_confirmation": confirmation.resolve_tool_confirmation,
    "search_knowledge": knowledge.search_knowledge,
    "cannot_help": knowledge.cannot_help,
}


def is_framework_tool(name: str) -> bool:
    """Whether ``name`` is one of the engine's reserved tools."""
    return name in FRAMEWORK_TOOL_NAMES


async def run_framework_call(turn: Turn, call: ToolCall) -> ToolResultMessage:
    """Handle one framework call and record it; the result is what the model reads.

    Whether the tool is available is judged on the live state: an ``activate`` earlier in
    the same batch makes the new skill's ``set_fields`` available to the next call.
    """
    arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
    if call.name == LISTEN:
        result: Any = {"ignored": "listen was mixed with text or other tool calls"}
    elif call.name not in framework_offer(turn).names:
        result = {"error": _unavailable(turn, call.name)}
    else:
        result = await _HANDLERS[call.name](turn, arguments)
    failed = isinstance(result, Mapping) and result.get("error") is not None
    turn.session.history.append(
        ToolExecuted(
            turn.turn_id,
            call.call_id,
            call.name,
            dict(arguments),
            "error" if failed else "ok",
            result,
            "framework",
        )
    )
    return ToolResultMessage(call.call_id, call.name, json.dumps(result))


def _unavailable(turn: Turn, name: str) -> str:
    frame = turn.dialogue.active
    cursor = frame.cursor if frame is not None else None
    if name == COMPLETE_SKILL and cursor is not None:
        return (
            f"complete_skill is refused while the ordered block {cursor.block_id!r} runs: the "
            "engine finishes it at END (cancel_skill abandons the skill)"
        )
    return f"{name} is not available now"
