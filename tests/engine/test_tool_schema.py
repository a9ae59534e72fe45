"""Schema derivation exactly as the reference's table (contract §8.2)."""

from typing import Optional

import pytest

from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import tool
from voicegate.engine.tools.result import ToolResult
from voicegate.engine.tools.schema import json_type, validate_arguments


class Account:
    """Some class the table does not know."""


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list, {"type": "array"}),
        (Optional[int], {"type": "integer"}),  # noqa: UP045 - the typing spelling is the point
        (int | None, {"type": "integer"}),
        (list[str] | None, {"type": "array", "items": {"type": "string"}}),
        (dict, {"type": "string"}),
        (Account, {"type": "string"}),
        (int | str, {"type": "string"}),
    ],
)
def test_type_table(annotation: object, expected: dict[str, object]) -> None:
    assert json_type(annotation) == expected


def test_list_of_other_types_keeps_the_item_type() -> None:
    assert json_type(list[int]) == {"type": "array", "items": {"type": "integer"}}
    assert json_type(list[list[float]]) == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "number"}},
    }


def test_a_list_of_items_the_table_has_no_row_for_is_a_plain_array() -> None:
    # list[dict] (order lines, say): items typed as strings would make the model send
    # strings to a tool that expects objects, or have its objects refused
    assert json_type(list[dict[str, int]]) == {"type": "array"}
    assert json_type(list[Account]) == {"type": "array"}
    assert json_type(list[int | str]) == {"type": "array"}


def test_full_schema_of_a_tool() -> None:
    @tool(description="Move money between accounts")
    async def transfer(
        source: str,
        amount: float,
        tags: list[str],
        note: str | None = None,
        urgent: bool = False,
        context: ToolContext = None,  # type: ignore[assignment]
    ) -> ToolResult:
        return ToolResult()

    assert transfer.spec.as_json() == {
        "name": "transfer",
        "description": "Move money between accounts",
        "parameters": {
            "type": "object",
            "properties": {
                "source": {"type": "string"},
                "amount": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string"},
                "urgent": {"type": "boolean"},
            },
            "required": ["source", "amount", "tags"],
            "additionalProperties": False,
        },
    }


def test_context_never_appears_in_the_schema() -> None:
    @tool(description="Only context")
    async def only_context(context: ToolContext) -> ToolResult:
        return ToolResult()

    assert only_context.spec.parameters["properties"] == {}
    assert only_context.spec.parameters["required"] == []
    assert only_context.takes_context


def test_unannotated_parameter_is_a_string_and_not_required() -> None:
    @tool(description="Loose")
    async def loose(anything) -> ToolResult:  # type: ignore[no-untyped-def]
        return ToolResult()

    assert loose.spec.parameters["properties"] == {"anything": {"type": "string"}}
    assert loose.spec.parameters["required"] == []


def test_string_annotations_resolve() -> None:
    namespace: dict[str, object] = {}
    source = (
        "from __future__ import annotations\n"
        "from voicegate.engine.tools.decorator import tool\n"
        "@tool(description='x')\n"
        "async def later(count: int, names: list[str]) -> None: ...\n"
    )
    exec(source, namespace)
    spec = namespace["later"].spec  # type: ignore[attr-defined]
    assert spec.parameters["properties"]["count"] == {"type": "integer"}
    assert spec.parameters["properties"]["names"]["items"] == {"type": "string"}


@tool(description="Arguments check")
async def lookup(account: str, limit: int, amounts: list[float], flag: bool = False) -> ToolResult:
    return ToolResult()


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"account": "A", "limit": 1, "amounts": [1.5]}, None),
        ({"account": "A", "limit": 1, "amounts": [], "flag": None}, None),
        ({"account": "A", "limit": 1}, "missing required arguments ['amounts']"),
        ({"account": "A", "limit": 1, "amounts": [], "extra": 1}, "unexpected arguments"),
        ({"account": "A", "limit": "1", "amounts": []}, "expected integer"),
        ({"account": "A", "limit": True, "amounts": []}, "expected integer"),
        ({"account": "A", "limit": 1, "amounts": ["x"]}, "item expected number"),
        ({"account": 5, "limit": 1, "amounts": []}, "expected string"),
    ],
)
def test_arguments_are_checked_against_the_schema(
    arguments: dict[str, object], problem: str | None
) -> None:
    found = validate_arguments(lookup.spec, arguments)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found
