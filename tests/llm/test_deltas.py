"""Chunk payloads -> text deltas and assembled tool calls, without HTTP."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.llm.chat_server import call_arguments, call_start, chunk
from voicegate.engine.llm.openai_chat.deltas import ChunkAssembler
from voicegate.engine.llm.port import TextDelta, ToolCall
from voicegate.errors import LLMError


def assemble(payloads: list[str]) -> tuple[list[TextDelta], tuple[ToolCall, ...]]:
    assembler = ChunkAssembler()
    texts = [delta for payload in payloads for delta in assembler.feed(payload)]
    return texts, assembler.tool_calls()


@settings(max_examples=300)
@given(
    arguments=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.text(max_size=12), st.integers(), st.booleans(), st.none()),
        max_size=5,
    ),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_arguments_cut_anywhere_assemble_to_the_same_object(
    arguments: dict[str, object], cuts: list[int]
) -> None:
    text = json.dumps(arguments)
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    fragments = [text[a:b] for a, b in itertools.pairwise(bounds)]
    payloads = [call_start(0, "call_x", "tool"), *(call_arguments(0, f) for f in fragments)]
    _, calls = assemble([*payloads, chunk({}, "tool_calls"), "[DONE]"])
    assert calls == (ToolCall("call_x", "tool", arguments),)


def test_calls_come_out_in_index_order_whatever_order_they_started() -> None:
    payloads = [
        call_start(1, "second", "b", "{}"),
        call_start(0, "first", "a", '{"n": 1}'),
        chunk({}, "tool_calls"),
    ]
    _, calls = assemble(payloads)
    assert [call.call_id for call in calls] == ["first", "second"]


def test_no_arguments_at_all_mean_an_empty_object() -> None:
    _, calls = assemble([call_start(0, "c", "listen"), chunk({}, "tool_calls")])
    assert calls == (ToolCall("c", "listen", {}),)


def test_pieces_without_an_index_follow_their_ids() -> None:
    def piece(call_id: str | None, name: str | None, arguments: str) -> str:
        function = {"arguments": arguments} | ({"name": name} if name else {})
        return chunk({"tool_calls": [{"id": call_id, "function": function}]})

    payloads = [
        piece("a", "first", '{"x":'),
        piece(None, None, " 1}"),
        piece("b", "second", '{"y": 2}'),
        chunk({}, "tool_calls"),
    ]
    _, calls = assemble(payloads)
    assert calls == (ToolCall("a", "first", {"x": 1}), ToolCall("b", "second", {"y": 2}))


def test_a_missing_call_id_gets_one_from_its_index() -> None:
    payload = chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]})
    _, calls = assemble([payload, chunk({}, "tool_calls")])
    assert calls == (ToolCall("call_0", "f", {}),)


def test_usage_chunks_and_other_choices_are_ignored() -> None:
    usage_only = json.dumps({"choices": [], "usage": {"total_tokens": 9}})
    other_choice = chunk({"content": "not me"}, index=1)
    texts, calls = assemble([chunk({"content": "me"}), other_choice, usage_only, "[DONE]"])
    assert texts == [TextDelta("me")]
    assert calls == ()


def test_length_with_text_only_ends_normally() -> None:
    texts, calls = assemble([chunk({"content": "cut sh"}), chunk({}, "length")])
    assert texts == [TextDelta("cut sh")]
    assert calls == ()


def test_data_after_done_is_ignored() -> None:
    texts, calls = assemble(
        [chunk({"content": "Hi."}), "[DONE]", "garbage", chunk({"content": "x"})]
    )
    assert texts == [TextDelta("Hi.")]
    assert calls == ()


def test_arguments_sent_as_an_object_rather_than_its_text_are_taken() -> None:
    # Some OpenAI-compatible gateways put the arguments object itself in the delta.
    piece = {"index": 0, "id": "c1", "function": {"name": "tool", "arguments": {"n": 2}}}
    _, calls = assemble([chunk({"tool_calls": [piece]}), chunk({}, "tool_calls")])
    assert calls == (ToolCall("c1", "tool", {"n": 2}),)


def test_arguments_sent_as_a_list_are_refused() -> None:
    piece = {"index": 0, "id": "c1", "function": {"name": "tool", "arguments": [1, 2]}}
    with pytest.raises(LLMError, match="not a JSON object"):
        assemble([chunk({"tool_calls": [piece]}), chunk({}, "tool_calls")])
