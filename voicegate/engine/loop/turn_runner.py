"""One turn of the execution loop (contract §7.1), as far as issue 3 goes.

The user's input is recorded, then the model is asked for a step; its tool calls are dispatched
and the model asked again, until it answers without a tool call. Issue 6 puts the deterministic
phase (ordered blocks, skill routing, framework tools) around this loop.
"""

from __future__ import annotations

from voicegate.engine.history import UserUttered
from voicegate.engine.llm.port import Message
from voicegate.engine.loop.dispatch import dispatch_call
from voicegate.engine.loop.messages import system_message
from voicegate.engine.loop.model_step import model_step
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.seam import TurnEnded, UserInput, user_text
from voicegate.errors import LLMError

#: Model steps one user turn may take before the engine stops it (a looping model).
MAX_MODEL_STEPS = 10


async def run_turn(session: Session, user: UserInput, channel: TurnChannel) -> None:
    """Run the turn to its end, emitting its events into ``channel``."""
    session.history.append(UserUttered(channel.turn_id, user_text(user)))
    earlier = session.conversation.messages(session.history.snapshot())
    this_turn: list[Message] = []
    tools = [bound.tool.spec for bound in session.catalog.offered()]
    try:
        for _ in range(MAX_MODEL_STEPS):
            prompt = system_message(session.project.agent, session.memory)
            reply = await model_step(session.llm, [prompt, *earlier, *this_turn], tools, channel)
            this_turn.append(reply)
            if not reply.tool_calls:
                channel.emit(TurnEnded(channel.turn_id, "completed"))
                return
            for call in reply.tool_calls:
                this_turn.append(await dispatch_call(session, channel, call))
    except LLMError as error:
        channel.emit(TurnEnded(channel.turn_id, "error", str(error)))
        return
    detail = f"the model took {MAX_MODEL_STEPS} steps without answering"
    channel.emit(TurnEnded(channel.turn_id, "error", detail))
