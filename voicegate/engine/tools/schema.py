"""The JSON schema the model sees for a tool, derived from its signature (contract §8.2).

Tools reference, "How the schema is derived": the name is the function's, the description
comes from ``@tool``, property types from annotations, ``required`` lists every annotated
parameter without a default, ``context`` never appears, and ``additionalProperties`` is false.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicegate.errors import ToolDefinitionError

CONTEXT_PARAMETER = "context"

JsonSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The function-calling form ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def json_type(annotation: Any) -> JsonSchema:
    """The schema of one annotation, per the reference's type table.

    ``list[T]`` with a ``T`` other than ``str`` is read as an array of ``T``'s type: the table
    lists only ``list[str]`` and ``list``, and mapping ``list[int]`` to a string would send the
    model a wrong shape (§11 has no answer; this is the generalisation of the two listed rows).
    For the same reason a ``T`` the table has no row for (``list[dict]``, a class) gives a
    plain array, the ``list`` row: items typed as strings would refuse the objects the tool
    expects.
    """
    annotation = _unwrap_optional(annotation)
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if annotation is list:
        return {"type": "array"}
    if typing.get_origin(annotation) is list:
        item_types = typing.get_args(annotation)
        if not item_types or not _has_row(item_types[0]):
            return {"type": "array"}
        return {"type": "array", "items": json_type(item_types[0])}
    return {"type": "string"}


_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _has_row(annotation: Any) -> bool:
    """Whether the type table maps ``annotation`` to a type of its own (not the fallback)."""
    annotation = _unwrap_optional(annotation)
    return annotation in _SIMPLE or annotation is list or typing.get_origin(annotation) is list


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def derive_spec(
    function: Callable[..., Any], description: str, context_type: type
) -> tuple[ToolSpec, bool]:
    """The tool's spec, and whether it takes the injected ``context`` keyword."""
    name = getattr(function, "__name__", "<tool>")
    try:
        hints = typing.get_type_hints(function)
    except Exception as error:  # an annotation that does not resolve, e.g. a NameError
        raise ToolDefinitionError(f"tool {name!r}: cannot read its annotations: {error}") from None
    properties: JsonSchema = {}
    required: list[str] = []
    takes_context = False
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        _check_parameter(name, parameter, hints.get(parameter.name), context_type)
        if parameter.name == CONTEXT_PARAMETER:
            takes_context = True
            continue
        annotated = parameter.name in hints
        properties[parameter.name] = json_type(hints.get(parameter.name, str))
        if annotated and parameter.default is parameter.empty:
            required.append(parameter.name)
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return ToolSpec(name, description, parameters), takes_context


def _check_parameter(
    tool_name: str, parameter: inspect.Parameter, hint: Any, context_type: type
) -> None:
    if parameter.kind is parameter.POSITIONAL_ONLY:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: parameter {parameter.name!r} is positional-only; "
            "the runtime passes arguments by keyword"
        )
    misnamed_context = hint is not None and _unwrap_optional(hint) is context_type
    if parameter.name != CONTEXT_PARAMETER and misnamed_context:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: name the injected parameter 'context', not "
            f"{parameter.name!r} (the runtime passes it as context=)"
        )


def validate_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not fit the schema, or None when they do (no coercion)."""
    properties: Mapping[str, JsonSchema] = spec.parameters["properties"]
    required: Sequence[str] = spec.parameters["required"]
    unexpected = sorted(set(arguments) - set(properties))
    if unexpected:
        return f"unexpected arguments {unexpected} (allowed: {sorted(properties)})"
    missing = [name for name in required if arguments.get(name) is None]
    if missing:
        return f"missing required arguments {missing}"
    for name, value in arguments.items():
        if value is None:
            continue  # an optional argument left empty
        problem = _type_problem(properties[name], value)
        if problem:
            return f"argument {name!r}: {problem}"
    return None


def _type_problem(schema: Mapping[str, Any], value: Any) -> str | None:
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
    }
    if kind in checks and not checks[kind](value):
        return f"expected {kind}, got {type(value).__name__} {value!r}"
    if kind == "array" and "items" in schema:
        for item in value:
            problem = _type_problem(schema["items"], item)
            if problem:
                return f"item {problem}"
    return None
