"""``activate``, ``complete_skill`` and ``cancel_skill``: moving skills on and off the stack.

``activate(flow_id)`` (contract §5.1, §5.5): resumes the skill whose resume is offered; enters
a block of the active skill its prose names (``@block.``: same-skill reference); brings a
parked skill back on top; otherwise starts the skill, parking the active one as a delegation
when its visible prose names the target (``@skill.``) and as a digression when not. Calling it
for the skill already active changes nothing (a model repeating itself after a barge-in).

``complete_skill`` ends the active skill's prose flow; inside an ordered block it is refused
with a tool error (skill.md reference, ``complete_when``). ``cancel_skill`` abandons the active
skill, blocks included, and drops a call it left waiting for confirmation; while a resume is
offered it declines the offer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voicegate.engine.loop.dialogue import Parked
from voicegate.engine.loop.flows import delegates_to
from voicegate.engine.loop.framework.offer import activatable
from voicegate.engine.loop.skills import (
    activate_skill,
    bring_to_top,
    drop_offered,
    end_top,
    enter_block,
    resume_top,
)
from voicegate.engine.loop.turn import Turn


async def activate(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Start, switch to, enter or resume a flow."""
    # 3.19 named the argument target_id (contract §5.1 [drift]); models prompted for those
    # projects still send it, so it is read when flow_id is absent.
    requested = arguments.get("flow_id", arguments.get("target_id"))
    flows = {flow.flow_id: flow for flow in activatable(turn)}
    flow = flows.get(requested) if isinstance(requested, str) else None
    if flow is None:
        return {"error": f"flow {requested!r} cannot be started now (startable: {sorted(flows)})"}
    dialogue = turn.dialogue
    top = dialogue.top
    if dialogue.resume_offered and top is not None and top.skill_id == flow.skill_id:
        resume_top(turn)
        return {"resumed": flow.skill_id}
    active = dialogue.active
    if active is not None and active.skill_id == flow.skill_id:
        if flow.jump and flow.block_id is not None and active.cursor is None:
            enter_block(turn, active, flow.block_id, "prose")
            return {"entered_block": flow.block_id}
        return {"active": flow.skill_id, "note": "this skill is already active"}
    parked = dialogue.frame_of(flow.skill_id)
    if parked is not None:
        bring_to_top(turn, parked)
        return {"resumed": flow.skill_id}
    delegation = active is not None and delegates_to(turn, flow.skill_id)
    park = Parked.DELEGATION if delegation else Parked.DIGRESSION
    await activate_skill(turn, flow.skill_id, block_id=flow.block_id, park=park)
    return {"activated": flow.flow_id}


async def complete_skill(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Mark the active skill finished (refused while one of its blocks runs)."""
    frame = turn.dialogue.active
    if frame is None:
        return {"error": "no skill is active"}
    if frame.cursor is not None:
        return {
            "error": f"complete_skill is refused while the ordered block "
            f"{frame.cursor.block_id!r} runs: the engine finishes it at END "
            "(cancel_skill abandons the skill)"
        }
    await end_top(turn, "completed")
    return {"completed": frame.skill_id}


async def cancel_skill(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Abandon the active skill, or decline the resume offer."""
    dialogue = turn.dialogue
    top = dialogue.top
    if dialogue.resume_offered and top is not None:
        await drop_offered(turn)
        return {"dropped": top.skill_id}
    frame = dialogue.active
    if frame is None:
        return {"error": "no skill is active"}
    if dialogue.pending is not None and dialogue.pending.skill_id == frame.skill_id:
        dialogue.pending = None
        dialogue.step_decision = None
    await end_top(turn, "cancelled")
    return {"cancelled": frame.skill_id}
