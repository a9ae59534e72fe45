"""The rules orchestrator's words: responses from ``responses.yml``, else short fallbacks.

A response is chosen like the engine chooses one (first conditioned variant that holds, else
the default), with conditions and ``{placeholders}`` read from the memory the prompt lists
(PII values there read ``[set]``, so they are never spoken back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from voicegate.engine.conditions import holds
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.response_model import Placeholder, Response, Variant

#: Fallback wording when the project has no response of the conventional name.
FALLBACKS = {
    "utter_greet": "Hello! How can I help you?",
    "utter_goodbye": "Goodbye!",
    "utter_ask_rephrase": "Sorry, I did not get that. Could you say it another way?",
    "utter_ask_yes_no": "Sorry, was that a yes or a no?",
    "utter_done": "Done.",
    "utter_failed": "Sorry, that did not work.",
    "utter_cancelled": "Okay.",
}


class Speech:
    """Finds and fills responses for the orchestrator."""

    def __init__(self, responses: Mapping[str, Response]) -> None:
        self._responses = responses

    def has(self, name: str) -> bool:
        """Whether the project declares ``name``."""
        return name in self._responses

    def say(self, name: str, memory: Mapping[str, Any], skill: str | None = None) -> str:
        """The text of response ``name`` (or its fallback, or "")."""
        response = self._responses.get(name)
        if response is None:
            return FALLBACKS.get(name, "")
        variant = _select(response, memory)
        if variant is None:
            return FALLBACKS.get(name, "")
        return _fill(variant.text, variant.placeholders, memory, skill)


def _select(response: Response, memory: Mapping[str, Any]) -> Variant | None:
    def read(ref: FieldRef) -> Any:
        return memory.get(ref.qualified)

    for variant in response.variants:
        if variant.condition is not None and holds(variant.condition, read):
            return variant
    return next((v for v in response.variants if v.condition is None), None)


def _fill(
    text: str, placeholders: tuple[Placeholder, ...], memory: Mapping[str, Any], skill: str | None
) -> str:
    for placeholder in placeholders:
        if placeholder.ref is not None:
            value = memory.get(placeholder.ref.qualified)
        else:
            value = memory.get(
                f"{skill}.{placeholder.entry}", memory.get(f"project.{placeholder.entry}")
            )
        if value is not None:
            text = text.replace(
                placeholder.text, value if isinstance(value, str) else json.dumps(value)
            )
    return text
