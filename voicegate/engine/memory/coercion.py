"""Values as the declared type, where the intent is plain (contract §11 question 7, our choice).

``"42"`` for an ``int``, ``"yes"``/``"no"`` for a ``bool``, an enum value in another case for
a ``categorical``, a number for ``text``. Used by ``set_fields``/``correct`` and for a memory
declaration's ``initial_value``; tool writes are checked strictly instead (fields.py).
"""

from __future__ import annotations

from typing import Any

from voicegate.engine.memory.fields import FieldType, MemoryField

_TRUE = frozenset({"true", "yes", "y", "1"})
_FALSE = frozenset({"false", "no", "n", "0"})


def coerce(declared: MemoryField, raw: Any) -> tuple[Any, str | None]:
    """``raw`` as a value of the field's type, or the reason it is not one."""
    value = converted(declared, raw)
    problem = declared.value_problem(value)
    if problem is not None:
        return raw, f"{declared.name}: {problem}"
    return value, None


def converted(declared: MemoryField, raw: Any) -> Any:
    """``raw`` converted to the field's type where the intent is plain; else unchanged."""
    kind = declared.type
    if isinstance(raw, str):
        text = raw.strip()
        if kind is FieldType.INT and _is_integer(text):
            return int(text)
        if kind is FieldType.FLOAT and _is_number(text):
            return float(text)
        if kind is FieldType.BOOL and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        if kind is FieldType.CATEGORICAL:
            return _enum_member(declared, text)
        return text
    if kind is FieldType.TEXT and isinstance(raw, int | float) and not isinstance(raw, bool):
        return str(raw)
    if kind is FieldType.INT and isinstance(raw, float) and raw.is_integer():
        return int(raw)
    return raw


def _enum_member(declared: MemoryField, text: str) -> Any:
    for option in declared.enum_values:
        if str(option).lower() == text.lower():
            return option
    return text


def _is_integer(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def coerce_bool(raw: Any) -> bool | None:
    """A yes/no answer as a bool (``true``, ``"yes"``, ``"no"``, ...), None when unclear."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
        return raw.strip().lower() in _TRUE
    return None
