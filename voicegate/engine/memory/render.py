"""How memory values appear in prompts and timelines: PII as ``[set]``, long values cut.

Contract §4.6: a ``pii: true`` value is never shown; a set PII field renders as ``[set]``.
Values are truncated to 100 characters in prompts [ex: a public helpdesk project].
"""

from __future__ import annotations

import json
from typing import Any

from voicegate.engine.memory.fields import MemoryField
from voicegate.engine.memory.state import MemoryState

PII_MASK = "[set]"
PROMPT_VALUE_LIMIT = 100
#: Shorter PII values are not looked for in text: "1" or "no" would mask unrelated words.
MIN_MASKED_CHARS = 3


def render_value(value: Any, declared: MemoryField | None) -> str:
    """One value as prompt text: masked when PII, JSON for structures, cut to 100 characters."""
    if declared is not None and declared.pii:
        return PII_MASK
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > PROMPT_VALUE_LIMIT:
        return text[: PROMPT_VALUE_LIMIT - 1] + "…"
    return text


def masked(value: Any, declared: MemoryField | None) -> Any:
    """The value itself, or ``[set]`` for a PII field (for events leaving the engine)."""
    if declared is not None and declared.pii and value is not None:
        return PII_MASK
    return value


def project_memory_lines(state: MemoryState) -> list[str]:
    """``project.<entry>: <value>`` for every set project field (the ``### Project Memory``)."""
    lines = []
    for ref, value in sorted(state.set_values().items(), key=lambda item: item[0].qualified):
        if ref.namespace == "project":
            lines.append(f"{ref.qualified}: {render_value(value, state.schema.field(ref))}")
    return lines


def mask_pii_in_text(text: str, state: MemoryState) -> str:
    """``text`` with every set PII value in it replaced by ``[set]``.

    Contract §4.6: a PII value is never placed in a prompt. A response that speaks one
    (``{member_email}``) puts it into what the bot said, which the prompt ("Already said")
    and the model's history (what the caller heard) carry on: both pass through here.
    """
    for ref, value in state.set_values().items():
        declared = state.schema.field(ref)
        if declared is None or not declared.pii or isinstance(value, bool):
            continue
        if isinstance(value, str | int | float):
            shown = value if isinstance(value, str) else json.dumps(value)
            if len(shown.strip()) >= MIN_MASKED_CHARS:
                text = text.replace(shown.strip(), PII_MASK)
    return text
