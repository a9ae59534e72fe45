"""Declared memory entries (``memory.yml``, mantle contract §2.3, §2.4) and their value rules."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Namespace of project-root memory (contract §4.1).
PROJECT = "project"
#: Engine-reserved namespace; never readable or writable by tools (contract §4.1).
SYSTEM = "system"


class FieldType(enum.Enum):
    """The ``type`` of a memory entry (contract §2.3; older ``string``/``boolean`` are refused)."""

    TEXT = "text"
    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    LIST = "list"
    JSON = "json"
    CATEGORICAL = "categorical"
    ANY = "any"


class Visibility(enum.Enum):
    """Who may read a field (contract §4.2)."""

    PUBLIC = "public"  # the owning skill, every other skill (skills' "API"), and project fields
    PRIVATE = "private"  # only the owning skill


@dataclass(frozen=True, slots=True)
class MemoryField:
    """One declared entry of a ``memory.yml`` file."""

    name: str
    type: FieldType
    description: str | None = None
    enum_values: tuple[Any, ...] = ()
    initial_value: Any = None
    llm_settable: bool = False
    pii: bool = False
    mutable: bool = False
    seed: bool = False
    anonymization: Mapping[str, Any] | None = None
    visibility: Visibility = Visibility.PUBLIC

    def normalized(self, value: Any) -> Any:
        """``value`` with its number fitted to the declared type, for every writer alike
        (§11 question 7, issue 17): an int stored in a ``float`` field becomes a float
        (``50`` -> ``50.0``), an integral float in an ``int`` field an int (``3.0`` -> ``3``).
        Anything else is returned unchanged for :meth:`value_problem` to judge."""
        if not _is_number(value):
            return value
        if self.type is FieldType.FLOAT and isinstance(value, int):
            return float(value)
        if self.type is FieldType.INT and isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def value_problem(self, value: Any) -> str | None:
        """Why ``value`` cannot be stored in this field, or None when it can.

        ``None`` always clears a field. Beyond :meth:`normalized` numbers, tool writes are
        checked strictly (no coercion): the contract leaves coercion open (§11 question 7);
        a wrong type is an authoring bug better reported at the write than in a prompt.
        """
        if value is None:
            return None
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            return f"a {type(value).__name__} value cannot be stored (not JSON-serialisable)"
        expected = _TYPE_CHECKS[self.type]
        if not expected(value):
            return f"{self.type.value!r} field cannot hold a {type(value).__name__} value"
        categorical = self.type is FieldType.CATEGORICAL and self.enum_values
        if categorical and value not in self.enum_values:
            allowed = ", ".join(repr(option) for option in self.enum_values)
            return f"{value!r} is not one of the declared enum_values ({allowed})"
        return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPE_CHECKS: dict[FieldType, Callable[[Any], bool]] = {
    FieldType.TEXT: lambda value: isinstance(value, str),
    FieldType.BOOL: lambda value: isinstance(value, bool),
    FieldType.INT: _is_int,
    FieldType.FLOAT: _is_number,
    FieldType.LIST: lambda value: isinstance(value, list | tuple),
    FieldType.JSON: lambda value: True,
    FieldType.CATEGORICAL: lambda value: isinstance(value, str | int | float | bool),
    FieldType.ANY: lambda value: True,
}


@dataclass(frozen=True, slots=True)
class SkillMemory:
    """A skill's ``memory.yml``: public and private entries, plus the parsed ``access:`` block.

    ``access.deny_read``/``deny_write`` are kept but not enforced: the newest docs say they
    parse and are ignored (contract §2.3 [drift], §11 question 3).
    """

    skill_id: str
    fields: Mapping[str, MemoryField] = field(default_factory=dict)
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()

    def get(self, entry: str) -> MemoryField | None:
        """The declared field ``entry``, if any."""
        return self.fields.get(entry)
