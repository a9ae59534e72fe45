"""@tool rules (tools reference, "Defining a tool")."""

import asyncio

import pytest

from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import Tool, tool
from voicegate.engine.tools.result import ToolResult
from voicegate.errors import ToolDefinitionError


def test_tool_with_keyword_description_makes_a_tool() -> None:
    @tool(description="Say hello")
    async def greet(name: str, context: ToolContext = None) -> ToolResult:  # type: ignore[assignment]
        return ToolResult(llm_response=f"hello {name}")

    assert isinstance(greet, Tool)
    assert greet.name == "greet"
    assert greet.description == "Say hello"
    assert greet.takes_context


def test_bare_tool_decorator_raises() -> None:
    with pytest.raises(ToolDefinitionError, match="keyword argument"):

        @tool  # type: ignore[arg-type]
        async def greet() -> ToolResult:
            return ToolResult()


def test_positional_description_raises() -> None:
    with pytest.raises(ToolDefinitionError, match="keyword argument"):
        tool("Say hello")


@pytest.mark.parametrize("description", [None, "", "   "])
def test_missing_or_blank_description_raises(description: str | None) -> None:
    with pytest.raises(ToolDefinitionError, match="description"):
        tool(description=description)


def test_sync_function_raises() -> None:
    with pytest.raises(ToolDefinitionError, match="async"):

        @tool(description="Not async")
        def sync_tool() -> ToolResult:  # type: ignore[arg-type]
            return ToolResult()


def test_context_must_be_named_context() -> None:
    @tool(description="Misnamed context")
    async def misnamed(account: str, ctx: ToolContext) -> ToolResult:
        return ToolResult()

    with pytest.raises(ToolDefinitionError, match="name the injected parameter 'context'"):
        _ = misnamed.spec


def test_positional_only_parameters_are_refused() -> None:
    @tool(description="Positional only")
    async def positional(account: str, /) -> ToolResult:
        return ToolResult()

    with pytest.raises(ToolDefinitionError, match="positional-only"):
        _ = positional.spec


async def test_the_tool_object_stays_callable_like_the_function() -> None:
    @tool(description="Double")
    async def double(value: int) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult(llm_response=value * 2)

    assert await double(value=4) == ToolResult(llm_response=8)
    assert not double.takes_context


def test_tool_result_defaults_to_no_response() -> None:
    assert ToolResult().llm_response is None
    assert ToolResult(llm_response={"ok": True}).llm_response == {"ok": True}
