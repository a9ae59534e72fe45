"""Chat Completions stream chunks -> text deltas and whole tool calls (sans-I/O).

Per the OpenAI API reference, "The chat completion chunk object" (streaming): each SSE event's
data is a JSON chunk ``{"choices": [{"index", "delta", "finish_reason"}], ...}`` and the stream
ends with ``data: [DONE]``. ``delta.content`` is a piece of text. ``delta.tool_calls`` is a list
of pieces ``{"index", "id"?, "type"?, "function": {"name"?, "arguments"?}}``: a call's first
piece carries its ``id`` and ``name``, later pieces of the same ``index`` carry further
fragments of its JSON ``arguments`` string (cut anywhere, even inside a token). Parallel calls
have distinct indexes. ``finish_reason`` is ``stop``, ``tool_calls``, ``length`` or
``content_filter`` on the last content chunk. A provider error in the middle of a stream comes
as a chunk ``{"error": {...}}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.llm.port import TextDelta, ToolCall
from voicegate.errors import LLMError

DONE = "[DONE]"
#: Bounds on one answer's tool calls (names and arguments, all calls together, in characters;
#: and how many): a voice agent's calls are small, and a stream that keeps adding to them
#: would otherwise hold ever more memory and make the turn run a call per piece.
MAX_TOOL_CHARS = 1 << 20
MAX_TOOL_CALLS = 64


@dataclass(slots=True)
class _PartialCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChunkAssembler:
    """Feed each event's data; text comes back at once, tool calls once the stream is over."""

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.done = False
        #: Characters of text, tool names and arguments so far: what counts as progress.
        self.received = 0
        self._tool_chars = 0

    def feed(self, data: str) -> list[TextDelta]:
        """Take one event's data; return the text it carries."""
        if self.done or data.strip() == DONE:  # nothing after [DONE] belongs to the answer
            self.done = True
            return []
        texts: list[TextDelta] = []
        for choice in _choices(_parse_chunk(data)):
            delta = _mapping(choice.get("delta"), "a choice's 'delta'")
            content = delta.get("content")
            if isinstance(content, str) and content:
                texts.append(TextDelta(content))
                self.received += len(content)
            for piece in delta.get("tool_calls") or ():
                self._add_piece(_mapping(piece, "a 'tool_calls' item"))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return texts

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The assembled calls, in index order; call it once the stream has ended."""
        if not self.done and self.finish_reason is None:
            raise LLMError("the model's stream ended early (no finish_reason and no [DONE])")
        if self.finish_reason == "content_filter":
            raise LLMError("the provider's content filter stopped the model's answer")
        if self.finish_reason == "length" and self._calls:
            raise LLMError(
                "the model reached its output token limit in the middle of a tool call "
                "(finish_reason 'length')"
            )
        return tuple(_complete(partial, index) for index, partial in sorted(self._calls.items()))

    def _add_piece(self, piece: dict[str, Any]) -> None:
        index = self._index_of(piece)
        if index not in self._calls and len(self._calls) >= MAX_TOOL_CALLS:
            raise LLMError(f"the model asked for more than {MAX_TOOL_CALLS} tool calls at once")
        partial = self._calls.setdefault(index, _PartialCall())
        function = _mapping(piece.get("function") or {}, "a tool call's 'function'")
        if piece.get("id"):
            partial.call_id = str(piece["id"])
        if function.get("name"):
            # the name arrives whole in the first piece; repeated, it is not a fragment
            partial.name = partial.name or str(function["name"])
            self._count(len(partial.name))
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            # Some gateways send the arguments as a JSON value, not as its text: taken as the
            # text it stands for (anything but an object is then refused, as text would be).
            arguments = json.dumps(arguments)
        if arguments is not None:
            partial.arguments.append(arguments)
            self._count(len(arguments))

    def _count(self, chars: int) -> None:
        self.received += chars
        self._tool_chars += chars
        if self._tool_chars > MAX_TOOL_CHARS:
            raise LLMError(
                f"the model's tool calls passed {MAX_TOOL_CHARS} characters of names and arguments"
            )

    def _index_of(self, piece: dict[str, Any]) -> int:
        index = piece.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        # A server that leaves out ``index``: a piece with a new id starts a call, any other
        # piece continues the latest one.
        call_id = piece.get("id")
        if call_id:
            known = (i for i, partial in self._calls.items() if partial.call_id == call_id)
            return next(known, len(self._calls))
        return max(self._calls, default=0)


def _complete(partial: _PartialCall, index: int) -> ToolCall:
    if not partial.name:
        raise LLMError(f"the model's tool call #{index} has no function name")
    text = "".join(partial.arguments).strip() or "{}"  # no arguments at all: an empty object
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as error:
        raise LLMError(
            f"the model called {partial.name!r} with arguments that are not valid JSON "
            f"({error.msg} at character {error.pos}): {excerpt(text)}"
        ) from None
    if not isinstance(arguments, dict):
        raise LLMError(
            f"the model called {partial.name!r} with arguments that are not a JSON object: "
            f"{excerpt(text)}"
        )
    return ToolCall(partial.call_id or f"call_{index}", partial.name, arguments)


def _parse_chunk(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        raise LLMError(f"the model's stream sent data that is not JSON: {excerpt(data)}") from None
    chunk = _mapping(chunk, "a stream chunk")
    error = chunk.get("error")
    if error:
        message = error.get("message", error) if isinstance(error, dict) else error
        raise LLMError(f"the provider reported an error mid-stream: {excerpt(str(message))}")
    return chunk


def _choices(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    """The first choice (voicegate asks for one); a usage-only chunk has none."""
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise LLMError(f"a stream chunk's 'choices' is not a list: {excerpt(str(choices))}")
    firsts = [_mapping(choice, "a choice") for choice in choices]
    return [choice for choice in firsts if choice.get("index", 0) == 0]


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LLMError(f"{what} in the model's stream is not a JSON object: {excerpt(str(value))}")
    return value


def excerpt(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters (for error messages)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
