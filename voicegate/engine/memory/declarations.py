"""Parsing ``memory.yml`` files into field declarations (contract §2.3, §2.4).

Project memory is a flat ``entry: field`` map; a skill's file nests entries under
``schema.public`` / ``schema.private``. Unknown top-level keys of a skill file are ignored
(contract §9.2), unknown keys inside a field are refused so that a typo such as ``pii_: true``
does not silently leak a value into prompts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from voicegate.engine.memory.coercion import converted
from voicegate.engine.memory.fields import FieldType, MemoryField, SkillMemory, Visibility
from voicegate.engine.yamlfile import line_of
from voicegate.errors import ProjectError

_FIELD_KEYS = frozenset(
    {
        "type",
        "description",
        "enum_values",
        "initial_value",
        "llm_settable",
        "pii",
        "anonymization",
        "mutable",
        "seed",
        "correctable",  # seen on a project field [ex R-SARA]; meaning unknown (§11 question 6)
    }
)
_ENTRY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_project_memory(data: Any, path: str) -> dict[str, MemoryField]:
    """The root ``memory.yml``: a flat map of project fields."""
    if data is None:
        return {}
    entries = _mapping(data, path, "the project memory.yml must be a mapping of entries")
    fields = {}
    for name, spec in entries.items():
        declared = _field(name, spec, path, Visibility.PUBLIC)
        if declared.llm_settable:
            raise ProjectError(
                f"project field {name!r}: llm_settable is skill-only (the LLM never writes "
                "project memory)",
                path=path,
                line=line_of(spec),
            )
        fields[name] = declared
    return fields


def parse_skill_memory(skill_id: str, data: Any, path: str) -> SkillMemory:
    """A skill's ``memory.yml``: ``schema.public`` and ``schema.private`` entries."""
    if data is None:
        return SkillMemory(skill_id)
    document = _mapping(data, path, "a skill memory.yml must be a mapping with a 'schema' key")
    schema = _mapping(document.get("schema") or {}, path, "'schema' must be a mapping")
    fields: dict[str, MemoryField] = {}
    for visibility in Visibility:
        section = _mapping(
            schema.get(visibility.value) or {}, path, f"'schema.{visibility.value}' must map"
        )
        for name, spec in section.items():
            if name in fields:
                raise ProjectError(
                    f"entry {name!r} is declared both public and private",
                    path=path,
                    line=line_of(spec),
                )
            fields[name] = _skill_field(name, spec, path, visibility)
    access = _mapping(document.get("access") or {}, path, "'access' must be a mapping")
    return SkillMemory(
        skill_id,
        fields,
        deny_read=tuple(str(item) for item in access.get("deny_read") or ()),
        deny_write=tuple(str(item) for item in access.get("deny_write") or ()),
    )


def _skill_field(name: Any, spec: Any, path: str, visibility: Visibility) -> MemoryField:
    declared = _field(name, spec, path, visibility)
    for project_only in ("mutable", "seed"):
        if getattr(declared, project_only):
            raise ProjectError(
                f"skill field {name!r}: {project_only!r} is only valid on project fields",
                path=path,
                line=line_of(spec),
            )
    return declared


def _field(name: Any, spec: Any, path: str, visibility: Visibility) -> MemoryField:
    if not isinstance(name, str) or not _ENTRY_NAME.match(name):
        raise ProjectError(f"{name!r} is not a valid memory entry name", path=path)
    line = line_of(spec)
    if not isinstance(spec, Mapping):
        raise ProjectError(f"entry {name!r} must be a mapping with a 'type'", path=path, line=line)
    unknown = sorted(set(spec) - _FIELD_KEYS)
    if unknown:
        raise ProjectError(f"entry {name!r}: unknown keys {unknown}", path=path, line=line)
    declared = MemoryField(
        name=name,
        type=_field_type(name, spec.get("type"), path, line),
        description=_optional_str(name, spec, "description", path, line),
        enum_values=tuple(spec.get("enum_values") or ()),
        initial_value=spec.get("initial_value"),
        llm_settable=_flag(name, spec, "llm_settable", path, line),
        pii=_flag(name, spec, "pii", path, line),
        mutable=_flag(name, spec, "mutable", path, line),
        seed=_flag(name, spec, "seed", path, line),
        anonymization=spec.get("anonymization"),
        visibility=visibility,
    )
    return replace(declared, initial_value=_initial_value(declared, path, line))


def _initial_value(declared: MemoryField, path: str, line: int | None) -> Any:
    """The declared ``initial_value`` as the field's type, or a validation error.

    Coerced as ``set_fields`` coerces (docs/contract-decisions.md #7): ``"0"`` in an ``int``
    field is 0, ``"false"`` in a ``bool`` field is False, and ``initial_value: 0`` on a
    ``float`` field is 0.0 (issue 17). Stored as written, a string "false" was truthy in
    conditions and "0" failed every comparison.
    """
    if declared.initial_value is None:
        return None
    value = declared.normalized(converted(declared, declared.initial_value))
    problem = declared.value_problem(value)
    if problem is not None:
        raw = declared.initial_value
        message = f"entry {declared.name!r}: initial_value {raw!r} does not fit: {problem}"
        raise ProjectError(message, path=path, line=line)
    return value


def _field_type(name: str, raw: Any, path: str, line: int | None) -> FieldType:
    try:
        return FieldType(raw)
    except ValueError:
        allowed = ", ".join(kind.value for kind in FieldType)
        raise ProjectError(
            f"entry {name!r}: type {raw!r} is not one of {allowed}", path=path, line=line
        ) from None


def _flag(name: str, spec: Mapping[str, Any], key: str, path: str, line: int | None) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise ProjectError(f"entry {name!r}: {key!r} must be true or false", path=path, line=line)
    return value


def _optional_str(
    name: str, spec: Mapping[str, Any], key: str, path: str, line: int | None
) -> str | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise ProjectError(f"entry {name!r}: {key!r} must be text", path=path, line=line)
    return value


def _mapping(data: Any, path: str, message: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ProjectError(message, path=path, line=line_of(data))
    return data
