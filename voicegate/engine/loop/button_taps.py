"""``set:`` button taps: memory written on tap, without the model (contract §2.7, §7.1).

A payload ``set:session.<skill_id|project>.<entry>=<value>`` (from a response's static buttons
or a dynamic ``Button`` with ``ref``) writes the value, coerced with the field's type, to the
active skill's field (a top-level write: its post-write hook runs) or to a project field
(write-once unless ``mutable``). A pending collect then advances on its own. A stale or
invalid tap (another skill's namespace, an undeclared field, a value that does not coerce, a
project field already set, a hook that refuses it) speaks ``utter_set_memory_button_skipped``
and the turn ends without the model. voicegate's reading of "not on the latest agent message":
any ``set:`` tap for the active skill or the project is accepted.
"""

from __future__ import annotations

import re

from voicegate.engine.loop.framework_calls import PostWriteHooks
from voicegate.engine.loop.responses import BUTTON_SKIPPED, deliver
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.fields import PROJECT
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.responses import coerce_button_value
from voicegate.errors import MemoryWriteError

_SET_PAYLOAD = re.compile(r"^set:session\.(?P<ns>[\w-]+)\.(?P<entry>\w+)=(?P<value>.*)$", re.DOTALL)


def is_set_payload(payload: str) -> bool:
    """Whether a button payload is a ``set:`` memory write."""
    return _SET_PAYLOAD.match(payload.strip()) is not None


async def apply_tap(turn: Turn, payload: str) -> bool:
    """Write a ``set:`` tap; False (after the skip notice) when it cannot be applied."""
    match = _SET_PAYLOAD.match(payload.strip())
    problem = "malformed payload" if match is None else await _write(turn, match)
    if problem is None:
        return True
    frame = turn.dialogue.active
    await deliver(turn, BUTTON_SKIPPED, frame.skill_id if frame else None)
    turn.wait = True
    return False


async def _write(turn: Turn, match: re.Match[str]) -> str | None:
    ref = FieldRef(match["ns"], match["entry"])
    frame = turn.dialogue.active
    if ref.namespace != PROJECT and (frame is None or frame.skill_id != ref.namespace):
        return f"{ref.qualified} is not the active skill's"
    declared = turn.session.memory.schema.field(ref)
    if declared is None:
        return f"{ref.qualified} is not declared"
    value, problem = coerce_button_value(declared, match["value"])
    if problem is not None:
        return problem
    if ref.namespace != PROJECT:
        return await PostWriteHooks(turn.session, turn.channel).write(
            ref.namespace, ref.entry, value
        )
    writer = turn.session.tool_context(turn.channel, frame.skill_id if frame else None).memory
    try:
        writer.set(ref.qualified, value)
    except MemoryWriteError as error:  # e.g. a write-once project field already set
        return str(error)
    return None
