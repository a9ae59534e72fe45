"""What the model reads back from an MCP tool call (contract §10.3)."""

from mcp.types import CallToolResult, ImageContent, TextContent

from voicegate.mcp.results import NO_ERROR_TEXT, error_text_of, llm_response_of


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def test_structured_content_wins_over_text() -> None:
    result = CallToolResult(content=[text('{"sum": 5}')], structured_content={"sum": 5})
    assert llm_response_of(result) == {"sum": 5}


def test_text_items_become_a_string_or_a_list() -> None:
    assert llm_response_of(CallToolResult(content=[text("open 9-17")])) == "open 9-17"
    assert llm_response_of(CallToolResult(content=[text("a"), text("b")])) == ["a", "b"]
    assert llm_response_of(CallToolResult(content=[])) is None


def test_other_content_is_named_not_passed_on() -> None:
    image = ImageContent(type="image", data="aGk=", mime_type="image/png")
    response = llm_response_of(CallToolResult(content=[text("map:"), image]))
    assert response == ["map:", "[1 non-text content item(s) omitted: image]"]


def test_error_text_joins_the_texts() -> None:
    result = CallToolResult(content=[text("no such branch "), text("try another")], is_error=True)
    assert error_text_of(result) == "no such branch; try another"
    assert error_text_of(CallToolResult(content=[], is_error=True)) == NO_ERROR_TEXT
