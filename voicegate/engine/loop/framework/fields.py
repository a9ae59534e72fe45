"""``set_fields`` and ``correct``: the model records values the user gave (contract §4.3, §7.5).

Only the active skill's settable fields may be written (``llm_settable`` or owned by a collect
step); anything else is ``set_fields.not_eligible`` [ex R-COFFEE]; an empty call is
``{"error": "No fields provided to set_fields."}`` [ex R-CIVIC]. Each write is a top-level
write: the field's ``run_after_setting_<entry>`` hook runs after it and may roll it back.

Values are coerced to the declared type where the intent is plain (§11 question 7, our
choice): ``"42"`` for an ``int``, ``"yes"``/``"no"`` for a ``bool``, an enum value in another
case for a ``categorical``, a number for ``text``. Anything else is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voicegate.engine.loop.framework_calls import PostWriteHooks
from voicegate.engine.loop.toolbox import settable_fields
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.coercion import coerce
from voicegate.engine.memory.schema import FieldRef

NOT_ELIGIBLE = "set_fields.not_eligible"


async def set_fields(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Record a batch of values; each one's hook runs after it."""
    if not arguments:
        return {"error": "No fields provided to set_fields."}
    written: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, raw in arguments.items():
        error = await _write(turn, str(name), raw)
        if error is None:
            written[str(name)] = raw
        else:
            errors[str(name)] = error
    result: dict[str, Any] = {"set": sorted(written)}
    if errors:
        result["errors"] = errors
    if not written:
        result["error"] = "; ".join(f"{name}: {error}" for name, error in errors.items())
    return result


async def correct(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Replace a value the user gave earlier."""
    name = arguments.get("field")
    if not isinstance(name, str) or "value" not in arguments:
        return {"error": "correct takes a field name and its new value"}
    ref = _ref(turn, name)
    if ref is not None and turn.session.memory.value(ref) is None:
        return {"error": f"{name!r} holds no value yet; record it with set_fields"}
    error = await _write(turn, name, arguments["value"])
    if error is not None:
        return {"error": error}
    return {"corrected": name}


async def _write(turn: Turn, name: str, raw: Any) -> str | None:
    frame = turn.dialogue.active
    if frame is None:
        return "no skill is active"
    entry = name.rsplit(".", 1)[-1]
    eligible = {ref.entry for ref in settable_fields(turn.session, frame.skill_id)}
    if entry not in eligible or name not in (entry, f"{frame.skill_id}.{entry}"):
        settable = sorted(eligible)
        return f"{NOT_ELIGIBLE}: {name!r} is not a field the model may set (settable: {settable})"
    declared = turn.session.memory.schema.skills[frame.skill_id].fields[entry]
    value, problem = coerce(declared, raw)
    if problem is not None:
        return problem
    hooks = PostWriteHooks(turn.session, turn.channel)
    return await hooks.write(frame.skill_id, entry, value)


def _ref(turn: Turn, name: str) -> FieldRef | None:
    frame = turn.dialogue.active
    return None if frame is None else FieldRef(frame.skill_id, name.rsplit(".", 1)[-1])
