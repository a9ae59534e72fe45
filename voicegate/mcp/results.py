"""What the model reads back from an MCP ``tools/call`` (contract §10.3, §11 q27).

The structured result (``structuredContent``) when the server sends one, otherwise the text
content items: one text as a string, several as a list. Other content kinds (images, audio,
resources) cannot be spoken and are named, not passed on. A result flagged ``isError`` is a
tool failure whose message is its text, so ``on_failure`` applies as for a local tool.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

#: The failure message when an error result carries no text.
NO_ERROR_TEXT = "the tool reported an error without a message"


def llm_response_of(result: CallToolResult) -> Any:
    """The value the model reads for a successful call."""
    if result.structured_content is not None:
        return result.structured_content
    texts = [item.text for item in result.content if isinstance(item, TextContent)]
    others = [item.type for item in result.content if not isinstance(item, TextContent)]
    if others:
        texts.append(f"[{len(others)} non-text content item(s) omitted: {', '.join(others)}]")
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else texts


def error_text_of(result: CallToolResult) -> str:
    """The message of an error result."""
    texts = [item.text.strip() for item in result.content if isinstance(item, TextContent)]
    return "; ".join(text for text in texts if text) or NO_ERROR_TEXT
