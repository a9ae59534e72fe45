"""Small helpers for reading YAML documents whose mappings and lists remember their lines."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from voicegate.engine.yamlfile import LineDict, LineList, line_of


def key_line(mapping: Any, key: Any) -> int | None:
    """The line ``key`` sits on in ``mapping`` (else the mapping's line, else None)."""
    if isinstance(mapping, LineDict):
        return mapping.line_of_key(key)
    return line_of(mapping)


def text_locator(mapping: Any, key: Any, text: str) -> Callable[[int], int | None] | None:
    """Offset in ``text`` (the string value of ``key``) -> its source line, when known."""
    if not isinstance(mapping, LineDict):
        return None
    return lambda offset: mapping.line_in_text(key, text, offset)


def item_line(sequence: Any, index: int) -> int | None:
    """The line item ``index`` of ``sequence`` starts on, if known."""
    if isinstance(sequence, LineList):
        return sequence.line_of_item(index)
    return None


def is_text(value: Any) -> bool:
    """Whether ``value`` is a non-blank string."""
    return isinstance(value, str) and bool(value.strip())


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def mapping_or_empty(value: Any) -> Mapping[Any, Any]:
    """``value`` when it is a mapping, else an empty mapping (the caller reported the type)."""
    return value if isinstance(value, Mapping) else {}
